// The earliest-finish list scheduler on graphs whose schedule is known by
// hand (rank order, ties, exits last) and its promises on random graphs: a
// feasible timeline, parameter budgets, determinism, and a topological order
// even for times the scheduler's rank argument does not cover.
#include "search/list_schedule.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "search/schedule_estimate.h"
#include "tests/search/test_graphs.h"
#include "tools/bench/graph_families.h"

namespace autopar::search {
namespace {

using costmodel::Cluster;
using costmodel::CostGraph;
using testing::BuildGraph;
using testing::GraphSpec;
using testing::RandomDag;
using testing::TestCluster;

constexpr int64_t kNoBudgetLimit = int64_t{1} << 50;

std::optional<ListSchedule> Schedule(const CostGraph& g, const Cluster& c,
                                     std::vector<int64_t> budget = {}) {
  if (budget.empty()) budget.assign(c.num_devices(), kNoBudgetLimit);
  return ScheduleByEarliestFinish(g, c, ComputeTypicalLink(c), budget);
}

double FinishUs(const CostGraph& g, const Cluster& c, const ListSchedule& s, uint32_t u) {
  return s.placement.priority[u] + g.compute_us(u, c.device(s.placement.device[u]).kind);
}

// Every unit starts after its inputs could have arrived (its producers'
// finish, plus the transfer from another device) and no device runs two
// units at once; the estimate's step is the last finish.
void ExpectFeasibleTimeline(const CostGraph& g, const Cluster& c, const ListSchedule& s) {
  const uint32_t n = g.num_units();
  ASSERT_EQ(s.placement.device.size(), n);
  ASSERT_EQ(s.placement.priority.size(), n);
  double last_finish = 0;
  std::vector<std::vector<uint32_t>> on_device(c.num_devices());
  for (uint32_t u = 0; u < n; ++u) {
    const int d = s.placement.device[u];
    ASSERT_GE(d, 0);
    ASSERT_LT(d, c.num_devices());
    on_device[d].push_back(u);
    last_finish = std::max(last_finish, FinishUs(g, c, s, u));
    for (uint32_t e : g.in_edges(u)) {
      const uint32_t src = g.edge_src(e);
      const double arrival =
          FinishUs(g, c, s, src) + c.TransferUs(s.placement.device[src], d, g.edge_bytes(e));
      EXPECT_GE(s.placement.priority[u], arrival * (1 - 1e-12)) << "unit " << u << " edge " << e;
    }
  }
  for (std::vector<uint32_t>& units : on_device) {
    std::sort(units.begin(), units.end(), [&](uint32_t a, uint32_t b) {
      return s.placement.priority[a] < s.placement.priority[b];
    });
    for (size_t i = 1; i < units.size(); ++i) {
      EXPECT_GE(s.placement.priority[units[i]], FinishUs(g, c, s, units[i - 1]) * (1 - 1e-12));
    }
  }
  EXPECT_DOUBLE_EQ(s.estimate.step_us, last_finish);
}

TEST(ListScheduleTest, HigherRankGoesFirst) {
  // 0 forks into a short branch 1 → 3 and a long one 2 → 4; both join in 5.
  // On one device the long branch's units outrank the short one's.
  GraphSpec spec;
  spec.units = {{10, 0}, {10, 0}, {10, 0}, {10, 0}, {10, 0}, {10, 0}};
  spec.edges = {{0, 1, 0}, {0, 2, 0}, {1, 3, 0}, {2, 4, 0}, {4, 5, 0}, {3, 5, 0}};
  spec.units[3].compute_us = 1;
  CostGraph g = BuildGraph(spec);
  Cluster c = TestCluster(1, kNoBudgetLimit);
  std::optional<ListSchedule> s = Schedule(g, c);
  ASSERT_TRUE(s.has_value());
  const std::vector<double>& start = s->placement.priority;
  // Ranks: 5: 10, 4: 20, 3: 11, 2: 30, 1: 21, 0: 40.
  EXPECT_EQ(start, (std::vector<double>{0, 20, 10, 40, 30, 41}));
}

TEST(ListScheduleTest, EqualRanksGoByIndex) {
  GraphSpec spec;
  spec.units.assign(4, {10, 0});
  spec.edges = {{0, 3, 0}, {1, 3, 0}, {2, 3, 0}};
  CostGraph g = BuildGraph(spec);
  std::optional<ListSchedule> s = Schedule(g, TestCluster(1, kNoBudgetLimit));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->placement.priority, (std::vector<double>{0, 10, 20, 30}));
}

TEST(ListScheduleTest, ExitsComeAfterEveryOtherUnit) {
  // Units 1, 3 and 4 are read by nobody. Unit 1, ready first and the
  // longest, still waits for 2; then the exits go longest first: 1, 3, 4.
  GraphSpec spec;
  spec.units = {{10, 0}, {100, 0}, {10, 0}, {10, 0}, {5, 0}};
  spec.edges = {{0, 1, 0}, {0, 2, 0}, {2, 3, 0}, {2, 4, 0}};
  CostGraph g = BuildGraph(spec);
  std::optional<ListSchedule> s = Schedule(g, TestCluster(1, kNoBudgetLimit));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->placement.priority, (std::vector<double>{0, 20, 10, 120, 130}));
}

TEST(ListScheduleTest, OneDeviceRunsTheUnitsInRankOrder) {
  // On one device the start times give the order the units were taken in:
  // rank descending, index ascending, exits last. A layered DAG is far from
  // index order, a branchy chain close to it.
  for (bench::GraphFamily family :
       {bench::GraphFamily::kLayeredDag, bench::GraphFamily::kInceptionBlocks}) {
    CostGraph g = bench::MakeGraph(family, 2000, /*seed=*/5);
    const uint32_t n = g.num_units();
    std::vector<double> rank(n, 0);
    for (uint32_t u = n; u-- > 0;) {
      double tail = 0;  // one device: transfers cost nothing
      for (uint32_t e : g.out_edges(u)) tail = std::max(tail, rank[g.edge_dst(e)]);
      rank[u] = g.compute_us(u, 0) + tail;
    }
    std::vector<uint32_t> expected(n), taken(n);
    for (uint32_t u = 0; u < n; ++u) expected[u] = taken[u] = u;
    std::stable_sort(expected.begin(), expected.end(), [&](uint32_t a, uint32_t b) {
      const bool a_exit = g.out_edges(a).empty(), b_exit = g.out_edges(b).empty();
      if (a_exit != b_exit) return b_exit;
      return rank[a] > rank[b];
    });
    std::optional<ListSchedule> s = Schedule(g, TestCluster(1, kNoBudgetLimit));
    ASSERT_TRUE(s.has_value());
    std::sort(taken.begin(), taken.end(), [&](uint32_t a, uint32_t b) {
      return s->placement.priority[a] < s->placement.priority[b];
    });
    EXPECT_EQ(taken, expected) << bench::GraphFamilyName(family);
  }
}

TEST(ListScheduleTest, IndependentChainsGoOnePerDevice) {
  // 1,000-byte edges cost 1 µs + 1 µs latency: more than staying.
  CostGraph g = BuildGraph(testing::InterleavedChains(12, 1000));
  Cluster c = TestCluster(2, kNoBudgetLimit);
  std::optional<ListSchedule> s = Schedule(g, c);
  ASSERT_TRUE(s.has_value());
  for (uint32_t u = 2; u < 12; ++u) EXPECT_EQ(s->placement.device[u], s->placement.device[u % 2]);
  EXPECT_NE(s->placement.device[0], s->placement.device[1]);
  EXPECT_DOUBLE_EQ(s->estimate.step_us, 60);
  EXPECT_DOUBLE_EQ(s->estimate.bottleneck_us, 60);
}

TEST(ListScheduleTest, TimelinesAreFeasibleOnRandomGraphs) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    CostGraph g = BuildGraph(RandomDag(30 + static_cast<uint32_t>(seed * 13 % 200), seed,
                                       1 + static_cast<uint32_t>(seed % 20)),
                             /*kinds=*/2);
    Cluster c = TestCluster(1 + static_cast<int>(seed % 6), kNoBudgetLimit, 2);
    c.kinds.push_back(c.kinds[0]);
    for (int d = 0; d < c.num_devices(); d += 2) c.devices[d].kind = 1;
    std::optional<ListSchedule> s = Schedule(g, c);
    ASSERT_TRUE(s.has_value());
    ExpectFeasibleTimeline(g, c, *s);
    std::optional<ListSchedule> again = Schedule(g, c);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->placement.device, s->placement.device);
    EXPECT_EQ(again->placement.priority, s->placement.priority);
  }
}

TEST(ListScheduleTest, ParameterBudgetsHold) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    CostGraph g = BuildGraph(RandomDag(120, seed, 6));
    int64_t total = 0;
    for (uint32_t p = 0; p < g.num_params(); ++p) total += g.param_bytes(p);
    const int devices = 2 + static_cast<int>(seed % 3);
    Cluster c = TestCluster(devices, kNoBudgetLimit);
    std::vector<int64_t> budget(devices, total * 3 / 2 / devices);  // each below the total
    std::optional<ListSchedule> s = Schedule(g, c, budget);
    ASSERT_TRUE(s.has_value());
    std::vector<int64_t> held(devices, 0);
    for (uint32_t u = 0; u < g.num_units(); ++u) {
      for (uint32_t p : g.params(u)) held[s->placement.device[u]] += g.param_bytes(p);
    }
    for (int d = 0; d < devices; ++d) EXPECT_LE(held[d], budget[d]) << "device " << d;
    ExpectFeasibleTimeline(g, c, *s);
  }
}

TEST(ListScheduleTest, UnitThatNoBudgetHoldsFailsTheSchedule) {
  GraphSpec spec = testing::Chain({100, 100}, 10, 100);
  spec.units[1].param_bytes = 5000;
  CostGraph g = BuildGraph(spec);
  EXPECT_FALSE(Schedule(g, TestCluster(2, kNoBudgetLimit), {4000, 4000}).has_value());
}

TEST(ListScheduleTest, ProducersGoFirstEvenWithNegativeTimes) {
  // Negative times break the rank argument (Note [Ranks fall along edges]);
  // every unit must still come after its producers.
  GraphSpec spec = RandomDag(60, 7, 5);
  for (size_t u = 0; u < spec.units.size(); u += 3) spec.units[u].compute_us = -20;
  CostGraph g = BuildGraph(spec);
  Cluster c = TestCluster(3, kNoBudgetLimit);
  std::optional<ListSchedule> s = Schedule(g, c);
  ASSERT_TRUE(s.has_value());
  for (uint32_t u = 0; u < g.num_units(); ++u) {
    for (uint32_t e : g.in_edges(u)) {
      EXPECT_GE(s->placement.priority[u], FinishUs(g, c, *s, g.edge_src(e)));
    }
  }
}

TEST(ListScheduleTest, EmptyGraph) {
  CostGraph g = BuildGraph(GraphSpec{});
  std::optional<ListSchedule> s = Schedule(g, TestCluster(2, kNoBudgetLimit));
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->placement.device.empty());
  EXPECT_EQ(s->estimate.step_us, 0);
}

// The estimator replays the units in the order it is given: a list schedule
// that runs the later of two independent units first is charged for that
// order, not for the units' index order.
TEST(ScheduleEstimatorTest, ReplaysInTheGivenOrder) {
  GraphSpec spec;
  spec.units = {{.compute_us = 10}, {.compute_us = 30}};
  const CostGraph graph = BuildGraph(spec);
  const Cluster cluster = TestCluster(1, int64_t{1} << 30);
  ScheduleEstimator estimator(graph, cluster);
  const std::vector<int32_t> device = {0, 0};
  EXPECT_DOUBLE_EQ(estimator.Run(device).step_us, 40);
  EXPECT_DOUBLE_EQ(estimator.start_us()[1], 10);
  const std::vector<uint32_t> order = {1, 0};
  EXPECT_DOUBLE_EQ(estimator.Run(device, order).step_us, 40);
  EXPECT_DOUBLE_EQ(estimator.start_us()[1], 0);
  EXPECT_DOUBLE_EQ(estimator.start_us()[0], 30);
}

}  // namespace
}  // namespace autopar::search
