// MemoryChecker's verdict against the simulator, and ParamBudgets by hand.
#include "search/memory_check.h"

#include "costmodel/simulator.h"
#include "gtest/gtest.h"
#include "tests/search/test_graphs.h"

namespace autopar::search {
namespace {

using costmodel::CostGraph;
using costmodel::Placement;
using testing::BuildGraph;
using testing::TestCluster;

TEST(MemoryCheckerTest, OverflowIsWhatTheSimulatorFindsAboveCapacity) {
  // Six units of 1,000 parameter bytes, 100-byte edges.
  const CostGraph g = BuildGraph(testing::Chain(std::vector<int64_t>(5, 100), 10, 1000));
  const Placement split{.device = {0, 0, 0, 0, 1, 1}};
  const Placement halves{.device = {0, 0, 0, 1, 1, 1}};
  const costmodel::Cluster c = TestCluster(2, 3500);
  costmodel::Simulator sim(g, c);
  const int64_t peak0 = sim.Run(split).devices[0].peak_memory_bytes;
  ASSERT_GT(peak0, 3500);

  MemoryChecker checker(g, c, /*microbatches=*/1);
  EXPECT_EQ(checker.OverflowBytes(split), (std::vector<int64_t>{peak0 - 3500, 0}));
  EXPECT_FALSE(Fits(checker.OverflowBytes(split)));
  EXPECT_TRUE(Fits(checker.OverflowBytes(halves)));
  // Loose memory: the bound vouches, no simulation needed.
  const costmodel::Cluster roomy = TestCluster(2, int64_t{1} << 30);
  MemoryChecker loose(g, roomy, 1);
  EXPECT_TRUE(Fits(loose.OverflowBytes(split)));
  EXPECT_EQ(loose.simulations(), 0);
}

TEST(ParamBudgetsTest, SharedBlocksCountOncePerDevice) {
  // Units 0 and 1 read one 600-byte block; unit 2 its own 500 bytes.
  costmodel::CostGraph::Builder b(1);
  const uint32_t shared = b.AddParameter(600), own = b.AddParameter(500);
  b.AddUnit({.name = "a", .op = "Op", .compute_us = {1}, .params = {shared}});
  b.AddUnit({.name = "b", .op = "Op", .compute_us = {1}, .params = {shared}});
  b.AddUnit({.name = "c", .op = "Op", .compute_us = {1}, .params = {own}});
  absl::StatusOr<CostGraph> g = std::move(b).Build();
  ASSERT_TRUE(g.ok()) << g.status();

  ParamBudgets budgets(*g, std::vector<int64_t>{1000, 600});
  EXPECT_TRUE(budgets.Fits(0, 0));
  budgets.Add(0, 0);
  EXPECT_TRUE(budgets.Fits(1, 0));  // the block is already there
  budgets.Add(1, 0);
  EXPECT_FALSE(budgets.Fits(2, 0));  // 600 + 500 > 1,000
  EXPECT_TRUE(budgets.Fits(2, 1));
  budgets.Add(2, 1);
  EXPECT_FALSE(budgets.Fits(1, 1));  // a second copy of the block: 500 + 600 > 600

  // Budgets that hold every parameter never refuse.
  ParamBudgets roomy(*g, std::vector<int64_t>{1100, 1100});
  roomy.Add(2, 0);
  EXPECT_TRUE(roomy.Fits(0, 0));
}

}  // namespace
}  // namespace autopar::search
