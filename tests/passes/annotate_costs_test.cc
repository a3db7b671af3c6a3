#include "passes/annotate_costs.h"

#include "costmodel/device.h"
#include "costmodel/lower_bound.h"
#include "costmodel/simulator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/builder.h"

namespace autopar::passes {
namespace {

using ir::DType;

TEST(AnnotateCostsTest, NodesBecomeUnitsAndWeightsBecomeSharedBlocks) {
  // x → MatMul(w) → Relu → MatMul(w): the same weight read twice.
  ir::GraphBuilder b;
  ir::ValueId x = b.Input("x", DType::kFloat, {8, 64});
  ir::ValueId w = b.Initializer("w", DType::kFloat, {64, 64});
  ir::ValueId h = b.Op("MatMul", {x, w}, {DType::kFloat, {8, 64}});
  ir::ValueId r = b.Op("Relu", {h}, {DType::kFloat, {8, 64}});
  ir::ValueId y = b.Op("MatMul", {r, w}, {DType::kFloat, {8, 64}});
  b.Output(y);
  absl::StatusOr<ir::Graph> graph = std::move(b).Build();
  ASSERT_TRUE(graph.ok());

  absl::StatusOr<costmodel::Cluster> cluster = costmodel::LookupClusterPreset("4xV100-nvlink");
  ASSERT_TRUE(cluster.ok());
  absl::StatusOr<AnnotatedGraph> a = AnnotateCosts(*graph, *cluster);
  ASSERT_TRUE(a.ok()) << a.status();
  const costmodel::CostGraph& g = a->graph;
  ASSERT_EQ(g.num_units(), 3u);
  EXPECT_EQ(g.num_params(), 1u);
  EXPECT_THAT(g.params(0), ::testing::ElementsAre(0u));
  EXPECT_THAT(g.params(2), ::testing::ElementsAre(0u));
  EXPECT_EQ(g.param_bytes(0), 64 * 64 * 4);
  EXPECT_EQ(g.num_edges(), 2u);
  EXPECT_EQ(g.edge_bytes(0), 8 * 64 * 4);
  EXPECT_TRUE(g.tensor_is_graph_output(g.outputs(2)[0]));
  EXPECT_GT(g.compute_us(0, 0), g.compute_us(1, 0));  // MatMul costs more than Relu
  EXPECT_EQ(a->costs[0].macs, 8 * 64 * 64);
}

// x [2,4] → MatMul(w1 [4,8]) → h → Relu → r → MatMul(w2 [8,3]) → y [2,3]
// (the chain of tests/costmodel/training_test.cc) as a training step.
TEST(AnnotateCostsTest, TrainingStepFlowsIntoTheCostGraph) {
  ir::GraphBuilder b;
  ir::ValueId x = b.Input("x", DType::kFloat, {2, 4});
  ir::ValueId w1 = b.Initializer("w1", DType::kFloat, {4, 8});
  ir::ValueId w2 = b.Initializer("w2", DType::kFloat, {8, 3});
  ir::ValueId h = b.Op("MatMul", {x, w1}, {DType::kFloat, {2, 8}});
  ir::ValueId r = b.Op("Relu", {h}, {DType::kFloat, {2, 8}});
  b.Output(b.Op("MatMul", {r, w2}, {DType::kFloat, {2, 3}}));
  absl::StatusOr<ir::Graph> graph = std::move(b).Build();
  ASSERT_TRUE(graph.ok());
  costmodel::DeviceSpec device = costmodel::CpuPreset(1);
  costmodel::Cluster cluster = costmodel::MakeHomogeneousCluster(device, 1, 1 << 20, 1e9, 1);

  absl::StatusOr<AnnotatedGraph> inference = AnnotateCosts(*graph, cluster);
  absl::StatusOr<AnnotatedGraph> training =
      AnnotateCosts(*graph, cluster, {}, {.mode = costmodel::StepMode::kTraining});
  ASSERT_TRUE(inference.ok()) << inference.status();
  ASSERT_TRUE(training.ok()) << training.status();
  EXPECT_FALSE(inference->training.has_value());
  ASSERT_TRUE(training->training.has_value());
  const costmodel::CostGraph& g = training->graph;

  // Weights hold gradients and two Adam moments: 4 × their bytes.
  ASSERT_EQ(g.num_params(), 2u);
  EXPECT_EQ(g.unit_param_bytes(0), 4 * (4 * 8 * 4));
  EXPECT_EQ(g.unit_param_bytes(2), 4 * (8 * 3 * 4));
  // Compute is forward + backward + update, and the FLOPs say so.
  for (uint32_t u = 0; u < 3; ++u) {
    EXPECT_DOUBLE_EQ(
        g.compute_us(u, 0),
        costmodel::TrainingTimeUs(training->costs[u], training->training->nodes[u], device));
    EXPECT_GT(g.compute_us(u, 0), inference->graph.compute_us(u, 0));
  }
  EXPECT_EQ(g.flops(2), 2 * 2 * 8 * 3 + 2 * (2 * 2 * 8 * 3) + 24 * 18);
  // r is saved for the backward (kept to the end); h is not.
  EXPECT_TRUE(g.tensor_is_graph_output(g.outputs(1)[0]));
  EXPECT_FALSE(g.tensor_is_graph_output(g.outputs(0)[0]));
  EXPECT_FALSE(inference->graph.tensor_is_graph_output(inference->graph.outputs(1)[0]));

  // One device, units in order; live activation bytes by hand:
  //   inference: h (64), + r (64) while Relu runs = 128, then r + y;
  //   training:  MatMul1 h + dh = 128; Relu h + r + (dr + dh) = 256;
  //              MatMul2 r (saved) + y + (dy + dr) = 64 + 24 + 88 = 176.
  costmodel::Placement one{.device = {0, 0, 0}};
  costmodel::Simulator inference_sim(inference->graph, cluster);
  const costmodel::SimulationResult& i = inference_sim.Run(one);
  EXPECT_EQ(i.devices[0].param_bytes, 128 + 96);
  EXPECT_EQ(i.devices[0].peak_activation_bytes, 128);
  costmodel::Simulator training_sim(g, cluster);
  const costmodel::SimulationResult& t = training_sim.Run(one);
  EXPECT_EQ(t.devices[0].param_bytes, 4 * (128 + 96));
  EXPECT_EQ(t.devices[0].peak_activation_bytes, 256);
  EXPECT_EQ(t.devices[0].peak_memory_bytes, 4 * (128 + 96) + 256);
  // One device runs the units in turn: the step is the sum of their times,
  // and the lower bound sees the same training compute.
  double sum = 0;
  for (uint32_t u = 0; u < 3; ++u) sum += g.compute_us(u, 0);
  EXPECT_DOUBLE_EQ(t.step_time_us, sum);
  EXPECT_DOUBLE_EQ(costmodel::ComputeLowerBound(g, cluster).bound_us, sum);

  // Plain SGD keeps no optimizer state.
  absl::StatusOr<AnnotatedGraph> sgd = AnnotateCosts(
      *graph, cluster, {},
      {.mode = costmodel::StepMode::kTraining, .optimizer = costmodel::Optimizer::kSgd});
  ASSERT_TRUE(sgd.ok());
  EXPECT_EQ(sgd->graph.unit_param_bytes(0), 2 * (4 * 8 * 4));
}

}  // namespace
}  // namespace autopar::passes
