// The split of a training step (pipeline/training_split.h) on exported CNN,
// transformer and recurrent models, placed by an algorithm that cuts often
// (round-robin): every node of the step runs on the device of the source
// node it works for (Note [Gradient colocation]), every stage is a valid
// ONNX model, the stages are in a runnable order with forward before
// backward per device, and each device's update model updates exactly the
// weights whose gradients its stages make.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"
#include "onnx_io/checker.h"
#include "onnx_io/model.h"
#include "pipeline/split.h"

namespace autopar::pipeline {
namespace {

namespace fs = std::filesystem;

struct Case {
  const char* model;
  costmodel::PipelineSchedule schedule;
};

class TrainingSplitTest : public ::testing::TestWithParam<Case> {};

TEST_P(TrainingSplitTest, EveryNodeRunsWithTheSourceNodeItWorksFor) {
  const fs::path path = fs::path(AUTOPAR_MODELS_DIR) / (std::string(GetParam().model) + ".onnx");
  ASSERT_TRUE(fs::exists(path)) << path << ": run tools/export_models.py";
  absl::StatusOr<onnx_io::Model> source = onnx_io::LoadModel(path);
  ASSERT_TRUE(source.ok()) << source.status();
  const std::string output = source->proto.graph().output(0).name();

  SplitRequest request;
  request.problem.model_path = path.string();
  request.problem.cluster.cluster = "cpu:2x1";
  request.problem.step.mode = costmodel::StepMode::kTraining;
  request.algorithm = "round-robin";
  request.search.microbatches = 4;
  request.policy.allow_slower_split = true;
  request.partition.stages = false;
  training::TrainingOptions options;
  options.loss = {.kind = training::LossKind::kMse, .value = output, .labels_name = ""};
  options.optimizer = training::DefaultOptimizerOptions(costmodel::Optimizer::kSgd);
  request.training = options;
  request.schedule = GetParam().schedule;
  absl::StatusOr<SplitResult> result = Split(request);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->training_split.has_value());
  const SplitTrainingStep& split = *result->training_split;
  const training::TrainingStep& step = *result->training_step;
  EXPECT_EQ(split.devices.size(), 2u) << "round-robin uses both devices";

  absl::flat_hash_map<std::string, int32_t> device_of;
  const ir::Graph& graph = result->problem.model->graph;
  for (size_t i = 0; i < graph.num_nodes(); ++i)
    device_of[graph.nodes()[i].name] = result->plan.node_placement.device[i];
  absl::flat_hash_set<std::string> constants;
  for (const onnx::NodeProto& n : step.gradient_model.graph().node())
    if (n.op_type() == "Constant") constants.insert(n.name());

  std::vector<int32_t> first_backward(2, -1);
  int checked = 0;
  for (const TrainingStage& t : split.stages) {
    const passes::Stage& s = t.stage;
    EXPECT_TRUE(onnx_io::CheckModel(s.proto, path.parent_path()).ok()) << s.file;
    for (int32_t a : s.after) EXPECT_LT(a, s.id);
    if (t.kind == costmodel::StageKind::kBackward && first_backward[s.device] < 0)
      first_backward[s.device] = s.id;
    if (t.kind == costmodel::StageKind::kForward && first_backward[s.device] >= 0)
      ADD_FAILURE() << "forward stage " << s.id << " after a backward one on its device";
    for (const onnx::NodeProto& n : s.proto.graph().node()) {
      if (constants.contains(n.name())) continue;  // copied where read
      auto origin = step.node_origin.find(n.name());
      const std::string& name = origin == step.node_origin.end() ? n.name() : origin->second;
      ASSERT_TRUE(device_of.contains(name)) << n.name() << " works for unknown " << name;
      EXPECT_EQ(device_of[name], s.device) << n.name() << " (for " << name << ")";
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);

  // Each weight is updated on the device whose stage makes its gradient.
  ASSERT_EQ(split.weight_device.size(), step.weights.size());
  size_t updated = 0;
  for (const DeviceUpdate& u : split.updates) {
    for (const std::string& w : u.weights) {
      auto it = std::find_if(step.weights.begin(), step.weights.end(),
                             [&w](const training::TrainedWeight& x) { return x.name == w; });
      ASSERT_NE(it, step.weights.end());
      EXPECT_EQ(split.weight_device[it - step.weights.begin()], u.device) << w;
      ++updated;
    }
  }
  EXPECT_EQ(updated, step.weights.size());
  std::printf("%s: %zu stages, %zu updates, %d nodes checked, predicted %.0f us\n",
              GetParam().model, split.stages.size(), split.updates.size(), checked,
              split.predicted.step_us);
}

INSTANTIATE_TEST_SUITE_P(
    Models, TrainingSplitTest,
    ::testing::Values(Case{"resnet18", costmodel::PipelineSchedule::k1F1B},
                      Case{"transformer_encoder", costmodel::PipelineSchedule::kGPipe},
                      Case{"gpt2_tiny_like", costmodel::PipelineSchedule::k1F1B},
                      Case{"lstm", costmodel::PipelineSchedule::kGPipe}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.model); });

}  // namespace
}  // namespace autopar::pipeline
