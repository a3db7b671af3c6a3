// With whole-stage execution (Note [Stage execution] in
// costmodel/simulator.h) the simulator judges a plan by the stages it forms
// itself; they must be the stages the rewriter writes (passes/partition.h),
// or the prediction is about a different program than the one the runner
// runs. Checked on exported models split for this host (cpu:2x1) by
// algorithms that cut few and many times.
#include <filesystem>
#include <string>
#include <vector>

#include "costmodel/simulator.h"
#include "gtest/gtest.h"
#include "pipeline/split.h"

namespace autopar::pipeline {
namespace {

namespace fs = std::filesystem;

struct Case {
  const char* model;
  const char* algorithm;
};

class StageConsistencyTest : public ::testing::TestWithParam<Case> {};

TEST_P(StageConsistencyTest, SimulatedStagesAreTheWrittenStages) {
  const fs::path path = fs::path(AUTOPAR_MODELS_DIR) / (std::string(GetParam().model) + ".onnx");
  ASSERT_TRUE(fs::exists(path)) << path << ": run tools/export_models.py";
  SplitRequest request;
  request.problem.model_path = path.string();
  request.problem.cluster.cluster = "cpu:2x1";
  request.algorithm = GetParam().algorithm;
  request.search.microbatches = 2;
  request.search.max_iterations = 3;  // TGA: a few generations, reproducible
  request.partition.stages = true;
  absl::StatusOr<SplitResult> split = Split(request);
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_TRUE(split->problem.cluster.execution.whole_stages);

  costmodel::Simulator simulator(split->problem.node_graph(), split->problem.cluster);
  simulator.Run(split->plan.node_placement, {.microbatches = 2});
  const std::vector<passes::Stage>& written = split->deployment.stages;
  ASSERT_EQ(simulator.num_stages(), written.size());
  // Stage s of the simulator holds nodes of the written stage s's device.
  const std::vector<uint32_t>& stage_of = simulator.stage_of_unit();
  const std::vector<int32_t>& device = split->plan.node_placement.device;
  for (uint32_t node = 0; node < stage_of.size(); ++node) {
    EXPECT_EQ(device[node], written[stage_of[node]].device) << "node " << node;
  }
  std::printf("%s / %s: %zu stages\n", GetParam().model, GetParam().algorithm, written.size());
}

INSTANTIATE_TEST_SUITE_P(Models, StageConsistencyTest,
                         ::testing::Values(Case{"resnet18", "sgp"}, Case{"resnet18", "round-robin"},
                                           Case{"googlenet", "tga"},
                                           Case{"bert_tiny_like", "round-robin"},
                                           Case{"lstm", "round-robin"}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name =
                               std::string(info.param.model) + "_" + info.param.algorithm;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace autopar::pipeline
