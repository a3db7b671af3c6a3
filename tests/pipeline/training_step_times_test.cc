// A training step measured model by model (tools/fidelity/measure_step.mjs's
// file, costmodel/node_times.h) planned on one device: the update model's
// node names are disjoint from the gradient model's and each has a source
// node as origin; planning charges every step node to its source node (Note
// [Step times on the source]); and the predicted step is M gradient runs and
// one update (Note [Measured one-device step]).
#include <cstdio>
#include <filesystem>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx_io/model.h"
#include "pipeline/split.h"
#include "tests/testing/temp_dir.h"

namespace autopar::pipeline {
namespace {

namespace fs = std::filesystem;

// Adam, MSE on `output`, two micro-batches, one CPU thread.
SplitRequest OneDeviceTraining(const fs::path& model, const std::string& output) {
  SplitRequest request;
  request.problem.model_path = model.string();
  request.problem.cluster.cluster = "cpu:1x1";
  request.problem.step.mode = costmodel::StepMode::kTraining;
  request.search.microbatches = 2;
  training::TrainingOptions options;
  options.loss = {.kind = training::LossKind::kMse, .value = output, .labels_name = ""};
  options.optimizer = training::DefaultOptimizerOptions(costmodel::Optimizer::kAdam);
  request.training = options;
  return request;
}

class TrainingStepTimesTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TrainingStepTimesTest, StepNodesAreChargedToSourceNodesAndPredictTheStep) {
  const fs::path path = fs::path(AUTOPAR_MODELS_DIR) / (std::string(GetParam()) + ".onnx");
  ASSERT_TRUE(fs::exists(path)) << path << ": run tools/export_models.py";
  absl::StatusOr<onnx_io::Model> source = onnx_io::LoadModel(path);
  ASSERT_TRUE(source.ok()) << source.status();
  SplitRequest request = OneDeviceTraining(path, source->proto.graph().output(0).name());
  absl::StatusOr<SplitResult> first = Split(request);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->measured_step.has_value());
  const training::TrainingStep& step = *first->training_step;
  absl::flat_hash_set<std::string> source_nodes;
  for (const ir::Node& n : first->problem.model->graph.nodes()) source_nodes.insert(n.name);

  // A synthetic measurement: 1 µs per gradient-model node, 2 per update-model
  // node, with the step's origin maps, as measure_step.mjs writes it.
  nlohmann::json file = {{"node_us", nlohmann::json::object()},
                         {"node_origin", nlohmann::json::object()},
                         {"update_origin", nlohmann::json::object()},
                         {"run_us", {{"gradient", 100}, {"update", 50}}}};
  absl::flat_hash_set<std::string> gradient_nodes;
  for (const onnx::NodeProto& n : step.gradient_model.graph().node()) {
    gradient_nodes.insert(n.name());
    file["node_us"][n.name()] = 1;
    auto origin = step.node_origin.find(n.name());
    if (origin != step.node_origin.end()) {
      EXPECT_TRUE(source_nodes.contains(origin->second)) << n.name() << " -> " << origin->second;
      file["node_origin"][n.name()] = origin->second;
    } else {
      EXPECT_TRUE(source_nodes.contains(n.name())) << n.name() << " has no origin";
    }
  }
  int update_nodes = 0;
  for (const onnx::NodeProto& n : step.update.proto.graph().node()) {
    EXPECT_FALSE(gradient_nodes.contains(n.name())) << n.name() << " is in both models";
    auto origin = step.update.node_origin.find(n.name());
    ASSERT_NE(origin, step.update.node_origin.end()) << n.name() << " has no origin";
    EXPECT_TRUE(source_nodes.contains(origin->second)) << n.name() << " -> " << origin->second;
    file["node_us"][n.name()] = 2;
    file["update_origin"][n.name()] = origin->second;
    ++update_nodes;
  }
  testing::TempDir dir;
  request.problem.node_times_path = dir.Write("times.json", file.dump()).string();
  absl::StatusOr<SplitResult> measured = Split(request);
  ASSERT_TRUE(measured.ok()) << measured.status();
  const costmodel::CostSource& costs = measured->problem.cost_source;
  EXPECT_TRUE(costs.measured);
  EXPECT_GT(costs.measured_nodes, 0);
  // Every source node on the loss's path is measured: the node graph's times
  // are the file's, each once.
  const costmodel::CostGraph& nodes = measured->problem.node_graph();
  double charged = 0;
  for (uint32_t u = 0; u < nodes.num_units(); ++u) charged += nodes.compute_us(u, 0);
  const double total = static_cast<double>(gradient_nodes.size()) + 2.0 * update_nodes;
  std::printf("%s: %lld nodes measured, %lld scaled\n", GetParam(),
              static_cast<long long>(costs.measured_nodes),
              static_cast<long long>(costs.scaled_nodes));
  if (costs.scaled_nodes == 0) {
    EXPECT_DOUBLE_EQ(charged, total);
  }

  ASSERT_TRUE(measured->measured_step.has_value());
  const costmodel::TrainingStepTimes& m = *measured->measured_step;
  EXPECT_EQ(m.microbatches, 2);
  EXPECT_DOUBLE_EQ(m.gradient_nodes_us, static_cast<double>(gradient_nodes.size()));
  EXPECT_DOUBLE_EQ(m.update_nodes_us, 2.0 * update_nodes);
  EXPECT_DOUBLE_EQ(m.step_us, 2 * (gradient_nodes.size() + 100.0) + 2.0 * update_nodes + 50);
}

INSTANTIATE_TEST_SUITE_P(Models, TrainingStepTimesTest,
                         ::testing::Values("lstm", "transformer_encoder"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace autopar::pipeline
