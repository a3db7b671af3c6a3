// With whole-stage execution (Note [Stage execution] in
// costmodel/simulator.h) the simulator judges a plan by the stages it forms
// itself; they must be the stages the rewriter writes (passes/partition.h),
// or the prediction is about a different program than the one the runner
// runs. Checked on exported models split for this host (cpu:2x1) by
// algorithms that cut few and many times; and the stages' costs steer the
// search.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "costmodel/host_cpu.h"
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
  // The point is the split's stages, even one predicted slower than one
  // device (Note [Do not split]).
  request.policy.allow_slower_split = true;
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

// What a stage run and a cut cost reaches the search: TGA, which judges its
// candidates by simulating them, stops cutting ResNet-18 into many
// alternating stages once each stage run costs a lot.
TEST(StageCostsTest, CostlyStagesSteerTgaToFewerStages) {
  auto stages_of_tga_plan = [](double stage_run_us, double cut_us) {
    costmodel::HostCalibration host = costmodel::DefaultHostCalibration();
    host.stage_run_us = stage_run_us;
    host.cut_us = cut_us;
    host.cut_bytes_per_s = 0;  // no cost by size: only the two above
    absl::StatusOr<PlanningProblem> prepared =
        PrepareModel((fs::path(AUTOPAR_MODELS_DIR) / "resnet18.onnx").string(), {},
                     costmodel::MakeHostCpuCluster(2, 1, host));
    EXPECT_TRUE(prepared.ok()) << prepared.status();
    search::SearchOptions options;
    options.microbatches = 8;
    options.max_iterations = 30;
    options.time_budget_s = 1e9;
    // The searched plan's stages, not one device's (Note [Do not split]).
    absl::StatusOr<Plan> plan =
        MakePlan(*prepared, "tga", options, {}, nullptr, {.allow_slower_split = true});
    EXPECT_TRUE(plan.ok()) << plan.status();
    costmodel::Simulator simulator(prepared->node_graph(), prepared->cluster);
    simulator.Run(plan->node_placement, {.microbatches = 8});
    return simulator.num_stages();
  };
  const uint32_t free_stages = stages_of_tga_plan(0, 0);
  const uint32_t costly_stages = stages_of_tga_plan(20000, 5000);
  std::printf("TGA on resnet18, cpu:2x1, 8 micro-batches: %u stages free, %u costly\n", free_stages,
              costly_stages);
  EXPECT_GT(free_stages, 2u);
  EXPECT_LE(costly_stages, 2u);
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
