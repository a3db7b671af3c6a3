#include "costmodel/cost_graph.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace autopar::costmodel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CostGraphTest, BuildsCsrAdjacencyAndDeduplicatesUses) {
  CostGraph::Builder b(2);
  for (int u = 0; u < 3; ++u)
    b.AddUnit({.name = "u" + std::to_string(u), .op = "Op", .compute_us = {1, 2}});
  uint32_t x = b.AddTensor({.name = "x", .producer = 0, .bytes = 100});
  uint32_t y = b.AddTensor({.name = "y", .producer = 1, .bytes = 30, .is_graph_output = true});
  b.AddUse(x, 2);
  b.AddUse(x, 1);
  b.AddUse(x, 2);  // the same reader twice (Add(x, x)): one edge
  b.AddUse(y, 2);
  absl::StatusOr<CostGraph> g = std::move(b).Build();
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_edges(), 3u);
  EXPECT_EQ(g->out_edges(0).size(), 2u);
  EXPECT_EQ(g->edge_dst(g->out_edges(0)[0]), 1u);  // ordered by destination
  EXPECT_EQ(g->in_edges(2).size(), 2u);
  EXPECT_THAT(g->outputs(1), ElementsAre(y));
  EXPECT_EQ(g->output_bytes(0), 100);
  EXPECT_EQ(g->tensor_uses(x).size(), 2u);
  EXPECT_TRUE(g->tensor_is_graph_output(y));
  EXPECT_DOUBLE_EQ(g->compute_us(2, 1), 2);
}

TEST(CostGraphTest, RejectsUnitsOutOfTopologicalOrder) {
  CostGraph::Builder b(1);
  b.AddUnit({.name = "a", .op = "Op", .compute_us = {1}});
  b.AddUnit({.name = "b", .op = "Op", .compute_us = {1}});
  uint32_t t = b.AddTensor({.name = "late", .producer = 1, .bytes = 4});
  b.AddUse(t, 0);
  EXPECT_THAT(std::string(std::move(b).Build().status().message()), HasSubstr("topological order"));
}

TEST(CostGraphTest, RejectsMissingDeviceKindTimes) {
  CostGraph::Builder b(2);
  b.AddUnit({.name = "a", .op = "Op", .compute_us = {1}});
  EXPECT_THAT(std::string(std::move(b).Build().status().message()), HasSubstr("2 device kinds"));
}

TEST(CostGraphTest, ParametersAreSummedPerUnit) {
  CostGraph::Builder b(1);
  uint32_t p = b.AddParameter(64);
  uint32_t q = b.AddParameter(16);
  b.AddUnit({.name = "a", .op = "MatMul", .compute_us = {1}, .params = {p, q}});
  absl::StatusOr<CostGraph> g = std::move(b).Build();
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->unit_param_bytes(0), 80);
  EXPECT_THAT(g->params(0), ElementsAre(p, q));
}

}  // namespace
}  // namespace autopar::costmodel
