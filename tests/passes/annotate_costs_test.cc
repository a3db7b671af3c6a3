#include "passes/annotate_costs.h"

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

}  // namespace
}  // namespace autopar::passes
