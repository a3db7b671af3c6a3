#include "passes/coarsen.h"

#include <random>
#include <set>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace autopar::passes {
namespace {

constexpr int64_t kMemory = int64_t{1} << 30;

costmodel::Cluster TestCluster(int64_t memory = kMemory) {
  costmodel::DeviceSpec d;
  d.name = "test";
  d.memory_bytes = memory;
  return costmodel::MakeHomogeneousCluster(d, 2, memory, 1e9, 1);
}

struct NodeSpec {
  double compute_us;
  std::vector<uint32_t> inputs;  // producing nodes
  int64_t out_bytes = 4096;
  int64_t param_bytes = 0;
};

costmodel::CostGraph Build(const std::vector<NodeSpec>& nodes) {
  costmodel::CostGraph::Builder b(1);
  std::vector<uint32_t> tensor_of(nodes.size());
  for (uint32_t u = 0; u < nodes.size(); ++u) {
    costmodel::CostGraph::UnitSpec unit{
        .name = "n" + std::to_string(u), .op = "Op", .compute_us = {nodes[u].compute_us}};
    if (nodes[u].param_bytes > 0) unit.params.push_back(b.AddParameter(nodes[u].param_bytes));
    b.AddUnit(std::move(unit));
    tensor_of[u] = b.AddTensor({.name = "t" + std::to_string(u),
                                .producer = u,
                                .bytes = nodes[u].out_bytes,
                                .is_graph_output = u + 1 == nodes.size()});
    for (uint32_t in : nodes[u].inputs) b.AddUse(tensor_of[in], u);
  }
  absl::StatusOr<costmodel::CostGraph> g = std::move(b).Build();
  EXPECT_TRUE(g.ok()) << g.status();
  return *std::move(g);
}

// Every node in one unit, units topologically ordered (Build checks it),
// compute preserved.
void ExpectValid(const costmodel::CostGraph& nodes, const Coarsening& c) {
  ASSERT_EQ(c.unit_of_node.size(), nodes.num_units());
  double node_total = 0;
  double unit_total = 0;
  for (uint32_t u = 0; u < nodes.num_units(); ++u) {
    ASSERT_LT(c.unit_of_node[u], c.graph.num_units());
    node_total += nodes.compute_us(u, 0);
  }
  for (uint32_t u = 0; u < c.graph.num_units(); ++u) unit_total += c.graph.compute_us(u, 0);
  EXPECT_NEAR(node_total, unit_total, 1e-6);
  for (uint32_t e = 0; e < nodes.num_edges(); ++e) {
    EXPECT_LE(c.unit_of_node[nodes.edge_src(e)], c.unit_of_node[nodes.edge_dst(e)]);
  }
}

TEST(CoarsenTest, ChainMergesUpToTheCap) {
  std::vector<NodeSpec> chain;
  for (uint32_t u = 0; u < 10; ++u)
    chain.push_back({10, u == 0 ? std::vector<uint32_t>{} : std::vector<uint32_t>{u - 1}});
  costmodel::CostGraph g = Build(chain);
  absl::StatusOr<Coarsening> c = Coarsen(g, TestCluster(), {.target_units = 5});
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectValid(g, *c);
  EXPECT_EQ(c->graph.num_units(), 5u);
  EXPECT_EQ(c->graph.num_edges(), 4u);
  for (uint32_t u = 0; u < 5; ++u) EXPECT_DOUBLE_EQ(c->graph.compute_us(u, 0), 20);
}

TEST(CoarsenTest, ReportsProgressUpToItsTotal) {
  std::vector<NodeSpec> chain;
  for (uint32_t u = 0; u < 10000; ++u)
    chain.push_back({1, u == 0 ? std::vector<uint32_t>{} : std::vector<uint32_t>{u - 1}});
  costmodel::CostGraph g = Build(chain);
  std::vector<std::pair<int64_t, int64_t>> reports;
  CoarsenOptions options{.target_units = 16};
  options.on_progress = [&](int64_t done, int64_t total) { reports.emplace_back(done, total); };
  ASSERT_TRUE(Coarsen(g, TestCluster(), options).ok());
  // Three passes over 10,000 nodes, reported every 4,096 and at the end.
  ASSERT_GE(reports.size(), 7u);
  EXPECT_LE(reports.size(), 12u);
  for (size_t i = 0; i < reports.size(); ++i) EXPECT_EQ(reports[i].second, 30000);
  for (size_t i = 1; i < reports.size(); ++i) EXPECT_LT(reports[i - 1].first, reports[i].first);
  EXPECT_EQ(reports.back().first, 30000);
}

TEST(CoarsenTest, DiamondFoldsIntoOneUnit) {
  // x → mean → sub(x, mean) → pow → mean2 → sqrt → div(sub, sqrt): a LayerNorm.
  costmodel::CostGraph g =
      Build({{5, {}}, {1, {0}}, {1, {0, 1}}, {1, {2}}, {1, {3}}, {1, {4}}, {1, {2, 5}}});
  absl::StatusOr<Coarsening> c = Coarsen(g, TestCluster(), {.target_units = 1});
  ASSERT_TRUE(c.ok());
  ExpectValid(g, *c);
  EXPECT_EQ(c->graph.num_units(), 1u);
}

TEST(CoarsenTest, HeavyParallelBranchesStayApart) {
  // x → {a, b, c} → join, each branch as heavy as a quarter of the graph.
  costmodel::CostGraph g = Build({{1, {}}, {100, {0}}, {100, {0}}, {100, {0}}, {1, {1, 2, 3}}});
  absl::StatusOr<Coarsening> c = Coarsen(g, TestCluster(), {.target_units = 4});
  ASSERT_TRUE(c.ok());
  ExpectValid(g, *c);
  std::set<uint32_t> branch_units = {c->unit_of_node[1], c->unit_of_node[2], c->unit_of_node[3]};
  EXPECT_EQ(branch_units.size(), 3u);
}

TEST(CoarsenTest, ShapeComputationsJoinTheirConsumer) {
  // n0 (heavy) → shape (tiny output) → reshape(n0, shape); the shape node has
  // two predecessors' worth of fan-in nowhere, so only rule 1 can fold it.
  costmodel::CostGraph g = Build({{50, {}}, {50, {}}, {1, {1}, /*out_bytes=*/16}, {50, {0, 2}}});
  absl::StatusOr<Coarsening> c = Coarsen(g, TestCluster(), {.target_units = 100});
  ASSERT_TRUE(c.ok());
  ExpectValid(g, *c);
  EXPECT_EQ(c->unit_of_node[2], c->unit_of_node[3]);
  EXPECT_NE(c->unit_of_node[0], c->unit_of_node[1]);
}

TEST(CoarsenTest, AUnitJoinsItsPredecessorOnlyWhenAllItsMembersInputsComeFromThere) {
  // n0 → tiny n1 → n3 ← n2 ← n0, n2 the heaviest node. Rule 1 folds n1 into
  // n3; n1's only input is n0's, but n3 also reads n2, which stays apart
  // (n0 + n2 is over the cap): {n1, n3} must not join n0, or n0 → n2 → n0.
  costmodel::CostGraph g =
      Build({{10, {}, 4096, 64}, {1, {0}, /*out_bytes=*/16}, {50, {0}}, {1, {1, 2}}});
  absl::StatusOr<Coarsening> c = Coarsen(g, TestCluster(), {.target_units = 100});
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectValid(g, *c);
  EXPECT_EQ(c->unit_of_node[1], c->unit_of_node[3]);
  EXPECT_NE(c->unit_of_node[0], c->unit_of_node[3]);
}

TEST(CoarsenTest, NoUnitOutgrowsTheLargestDevice) {
  // Two weights of 0.6× a device each: merged they would not fit anywhere.
  const int64_t big = kMemory * 6 / 10;
  costmodel::CostGraph g = Build({{1, {}, 64, big}, {1, {0}, 64, big}});
  absl::StatusOr<Coarsening> c = Coarsen(g, TestCluster(), {.target_units = 1});
  ASSERT_TRUE(c.ok());
  ExpectValid(g, *c);
  EXPECT_EQ(c->graph.num_units(), 2u);
}

TEST(CoarsenTest, RandomGraphsStayAcyclicWithEveryNodeOnce) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<NodeSpec> nodes;
    const uint32_t n = 20 + static_cast<uint32_t>(rng() % 200);
    for (uint32_t u = 0; u < n; ++u) {
      NodeSpec spec{static_cast<double>(1 + rng() % 50),
                    {},
                    static_cast<int64_t>(8 + rng() % 100000),
                    static_cast<int64_t>(rng() % 3 == 0 ? rng() % 1000000 : 0)};
      const uint32_t fan_in = u == 0 ? 0 : 1 + static_cast<uint32_t>(rng() % 3);
      for (uint32_t k = 0; k < fan_in; ++k) spec.inputs.push_back(static_cast<uint32_t>(rng() % u));
      nodes.push_back(spec);
    }
    costmodel::CostGraph g = Build(nodes);
    absl::StatusOr<Coarsening> c = Coarsen(g, TestCluster(), {.target_units = 1 + trial});
    ASSERT_TRUE(c.ok()) << c.status();
    ExpectValid(g, *c);
    EXPECT_LE(c->graph.num_units(), g.num_units());

    costmodel::Placement units;
    for (uint32_t u = 0; u < c->graph.num_units(); ++u)
      units.device.push_back(static_cast<int32_t>(u % 2));
    costmodel::Placement expanded = ExpandPlacement(*c, units);
    for (uint32_t u = 0; u < g.num_units(); ++u)
      EXPECT_EQ(expanded.device[u], units.device[c->unit_of_node[u]]);
  }
}

TEST(CoarsenTest, ColocatedNodesShareAUnitWithEveryNodeBetweenThem) {
  // 0 -> 1 -> 2 -> 3, all heavy: no merge rule joins them on its own. 0 and 2
  // must share a device, so 1, on the path between them, joins their unit.
  const costmodel::CostGraph g = Build({{10, {}}, {10, {0}}, {10, {1}}, {10, {2}}});
  ASSERT_EQ(Coarsen(g, TestCluster())->graph.num_units(), 4u);
  absl::StatusOr<Coarsening> c = Coarsen(g, TestCluster(), {.colocated = {{0, 2}}});
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectValid(g, *c);
  EXPECT_EQ(c->unit_of_node[0], c->unit_of_node[1]);
  EXPECT_EQ(c->unit_of_node[0], c->unit_of_node[2]);
  EXPECT_NE(c->unit_of_node[0], c->unit_of_node[3]);
}

TEST(CoarsenTest, ColocatedGroupsThatWouldFormACycleBecomeOneUnit) {
  // a1 -> b1 and b2 -> a2, with {a1, a2} and {b1, b2} each colocated: two
  // units would depend on each other, so all four share one.
  //   0 = a1, 1 = b2, 2 = b1 (reads a1), 3 = a2 (reads b2).
  const costmodel::CostGraph g = Build({{10, {}}, {10, {}}, {10, {0}}, {10, {1, 2}}});
  absl::StatusOr<Coarsening> c = Coarsen(g, TestCluster(), {.colocated = {{0, 3}, {1, 2}}});
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectValid(g, *c);
  EXPECT_EQ(c->graph.num_units(), 1u);
}

TEST(CoarsenTest, ColocatedUnitsIgnoreTheMemoryCap) {
  // Two nodes whose weights fill a device each must still share a unit.
  const costmodel::CostGraph g =
      Build({{10, {}, 4096, kMemory / 2 + 1}, {10, {0}, 4096, kMemory / 2 + 1}});
  absl::StatusOr<Coarsening> c = Coarsen(g, TestCluster(), {.colocated = {{0, 1}}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->unit_of_node[0], c->unit_of_node[1]);
}

TEST(CoarsenTest, ColocatedNodeOutsideTheGraphIsAnError) {
  const costmodel::CostGraph g = Build({{10, {}}, {10, {0}}});
  EXPECT_FALSE(Coarsen(g, TestCluster(), {.colocated = {{0, 7}}}).ok());
}

}  // namespace
}  // namespace autopar::passes
