// The lower bound: hand-checked values on series-parallel graphs, and never
// above a simulated step on random graphs and placements.
#include "costmodel/lower_bound.h"

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "costmodel/simulator.h"
#include "gtest/gtest.h"
#include "tests/costmodel/unit_graphs.h"

namespace autopar::costmodel {
namespace {

using testing::TestCluster;
using Edge = testing::UnitEdge;

// Units with these times (kind 1, if any, `slow_factor` times slower); each
// edge its own tensor; free units without inputs are Constants.
CostGraph Build(const std::vector<double>& compute_us, const std::vector<Edge>& edges,
                int kinds = 1, double slow_factor = 1) {
  return testing::BuildUnitGraph(
      compute_us, edges,
      {.kinds = kinds, .slow_factor = slow_factor, .free_sources_are_constants = true});
}

TEST(LowerBoundTest, MicrobatchesMultiplyTheWorkButNotTheCriticalPath) {
  CostGraph g = Build({30, 50}, {{0, 1, 1000}});
  Cluster c = TestCluster(2);
  const LowerBound one = ComputeLowerBound(g, c, 1);
  EXPECT_DOUBLE_EQ(one.critical_path_us, 80);
  EXPECT_DOUBLE_EQ(one.balanced_work_us, 40);
  EXPECT_DOUBLE_EQ(one.phased_latency_us, 80);
  const LowerBound four = ComputeLowerBound(g, c, 4);
  EXPECT_DOUBLE_EQ(four.critical_path_us, 80);
  EXPECT_DOUBLE_EQ(four.balanced_work_us, 160);
  EXPECT_DOUBLE_EQ(four.phased_latency_us, 80);
  EXPECT_DOUBLE_EQ(one.pipelined_unit_us, 80);
  // The 50 µs unit runs four times on one device, from 30 µs at the
  // earliest: 30 + 4 × 50. A unit per device takes only the transfer more.
  EXPECT_DOUBLE_EQ(four.pipelined_unit_us, 230);
  EXPECT_DOUBLE_EQ(four.bound_us, 230);
  Simulator simulator(g, c);
  EXPECT_DOUBLE_EQ(simulator.Run({.device = {0, 1}}, {.microbatches = 4}).step_time_us, 231);
}

// Three diamonds in a row: a 1 µs join, four branches of 10, 10, 5 and 5 µs,
// the next join. On 2 devices each diamond's branches take 15 µs at best.
CostGraph DiamondChain(int diamonds) {
  std::vector<double> times = {1};
  std::vector<Edge> edges;
  for (int d = 0; d < diamonds; ++d) {
    const uint32_t top = static_cast<uint32_t>(times.size()) - 1;
    for (double t : {10.0, 10.0, 5.0, 5.0}) {
      times.push_back(t);
      edges.push_back({top, static_cast<uint32_t>(times.size()) - 1});
    }
    times.push_back(1);
    const uint32_t join = static_cast<uint32_t>(times.size()) - 1;
    for (uint32_t b = top + 1; b < join; ++b) edges.push_back({b, join});
  }
  return Build(times, edges);
}

TEST(LowerBoundTest, DiamondChainIsBoundedPhaseByPhase) {
  CostGraph g = DiamondChain(3);
  Cluster c = TestCluster(2);
  const LowerBound bound = ComputeLowerBound(g, c);
  EXPECT_DOUBLE_EQ(bound.critical_path_us, 1 + 3 * 11);          // 34
  EXPECT_DOUBLE_EQ(bound.balanced_work_us, (1 + 3 * 31) / 2.0);  // 47
  EXPECT_DOUBLE_EQ(bound.phased_latency_us, 1 + 3 * 16);         // 49
  EXPECT_DOUBLE_EQ(bound.bound_us, 49);
  // The optimum reaches it: joins on device 0, a 10 and a 5 on each device.
  Placement p;
  for (uint32_t u = 0; u < g.num_units(); ++u) {
    const uint32_t in_diamond = (u - 1) % 5;  // 0, 1: the 10s; 2, 3: the 5s; 4: the join
    p.device.push_back(u == 0 || in_diamond == 4 ? 0 : static_cast<int32_t>(in_diamond % 2));
  }
  Simulator sim(g, c);
  EXPECT_DOUBLE_EQ(sim.Run(p).step_time_us, 49);
}

TEST(LowerBoundTest, LateSourceLeavesTheChainBeforeItUncut) {
  // u0 → u1 → u2 → u4 and u3 (30 µs) → u4: u3 runs beside the chain, so
  // only u4 is a cut; 40 µs on 2 devices, the optimum.
  CostGraph g = Build({10, 10, 10, 30, 10}, {{0, 1}, {1, 2}, {2, 4}, {3, 4}});
  Cluster c = TestCluster(2);
  const LowerBound bound = ComputeLowerBound(g, c);
  EXPECT_DOUBLE_EQ(bound.phased_latency_us, 40);
  Simulator sim(g, c);
  EXPECT_DOUBLE_EQ(sim.Run({.device = {0, 0, 0, 1, 0}}).step_time_us, 40);
}

TEST(LowerBoundTest, SideOutputLeavesTheChainAfterItUncut) {
  // u0 → u1 → u2 → u3 → u4 and u1 → u5 (30 µs), a side output: u0 and u1
  // are cuts, u2..u4 are not (u5 runs beside them).
  CostGraph g = Build({10, 10, 10, 10, 10, 30}, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {1, 5}});
  Cluster c = TestCluster(2);
  const LowerBound bound = ComputeLowerBound(g, c);
  EXPECT_DOUBLE_EQ(bound.phased_latency_us, 50);
  Simulator sim(g, c);
  EXPECT_DOUBLE_EQ(sim.Run({.device = {0, 0, 0, 0, 0, 1}}).step_time_us, 50);
}

TEST(LowerBoundTest, FreeSourcesAndSinksDoNotHideCuts) {
  // A free source u0 read by the last unit and a free sink u5 fed by the
  // first real one: the chain u1 → u2 ⇉ u3 → u4 still has its cuts, so the
  // parallel pair u2a/u2b (20 µs each) on 1 device adds up.
  CostGraph g = Build({0, 5, 20, 20, 5, 0}, {{0, 4}, {1, 2}, {1, 3}, {2, 4}, {3, 4}, {1, 5}});
  Cluster c = TestCluster(1);
  const LowerBound bound = ComputeLowerBound(g, c);
  EXPECT_DOUBLE_EQ(bound.phased_latency_us, 50);
  Cluster two = TestCluster(2);
  EXPECT_DOUBLE_EQ(ComputeLowerBound(g, two).phased_latency_us, 30);
}

TEST(LowerBoundTest, WholeStagesPayOneStageRun) {
  CostGraph g = DiamondChain(1);
  Cluster c = TestCluster(2);
  c.execution = {.whole_stages = true, .stage_run_us = 7};
  EXPECT_DOUBLE_EQ(ComputeLowerBound(g, c).phased_latency_us, 7 + 1 + 15 + 1);
}

TEST(LowerBoundTest, SlowerKindSpreadsLess) {
  // One phase of two 10 µs units between cuts; a device twice as slow takes
  // a third of the work: 20 / (1 + 1/2).
  CostGraph g = Build({1, 10, 10, 1}, {{0, 1}, {0, 2}, {1, 3}, {2, 3}}, /*kinds=*/2, 2);
  Cluster c = TestCluster(2);
  c.kinds.push_back(c.kinds[0]);
  c.devices[1].kind = 1;
  EXPECT_DOUBLE_EQ(ComputeLowerBound(g, c).phased_latency_us, 1 + 40.0 / 3 + 1);
}

TEST(LowerBoundTest, ForkAndJoinPayATransfer) {
  // u0 (10 µs) feeds u1 and u2 (90 µs each), both feed u3 (40 µs); every
  // tensor takes 20 µs between devices. Together u1 and u2 take 180 µs of one
  // device (230 µs in all); apart, the one beside u0 or u3 pays a transfer
  // before and the other after it: 160 µs. The split search of the one phase
  // finds that optimum; the transfers alone find it too.
  CostGraph g =
      Build({10, 90, 90, 40}, {{0, 1, 20000}, {0, 2, 20000}, {1, 3, 20000}, {2, 3, 20000}});
  Cluster c = TestCluster(2);
  const LowerBound bound = ComputeLowerBound(g, c);
  EXPECT_DOUBLE_EQ(bound.phased_latency_us, 160);
  EXPECT_DOUBLE_EQ(bound.transfer_latency_us, 160);
  EXPECT_DOUBLE_EQ(bound.bound_us, 160);
  Simulator sim(g, c);
  EXPECT_DOUBLE_EQ(sim.Run({.device = {0, 0, 1, 1}}).step_time_us, 160);
  EXPECT_DOUBLE_EQ(sim.Run({.device = {0, 0, 1, 0}}).step_time_us, 180);
  // On one device nothing is sent: the sum.
  EXPECT_DOUBLE_EQ(ComputeLowerBound(g, TestCluster(1)).bound_us, 230);
}

// One encoder layer as in the bench's transformer family: LN, Q, K and V,
// scores, softmax, context, projection, residual add, LN, the FFN and its
// add; 20 µs to send an activation between devices.
CostGraph EncoderLayer() {
  return Build({20, 10, 90, 90, 90, 40, 25, 40, 90, 6, 10, 360, 20, 360, 6}, {{0, 1, 20000},
                                                                              {1, 2, 20000},
                                                                              {1, 3, 20000},
                                                                              {1, 4, 20000},
                                                                              {2, 5, 20000},
                                                                              {3, 5, 20000},
                                                                              {5, 6, 60000},
                                                                              {6, 7, 60000},
                                                                              {4, 7, 20000},
                                                                              {7, 8, 20000},
                                                                              {8, 9, 20000},
                                                                              {0, 9, 20000},
                                                                              {9, 10, 20000},
                                                                              {10, 11, 20000},
                                                                              {11, 12, 80000},
                                                                              {12, 13, 80000},
                                                                              {13, 14, 20000},
                                                                              {9, 14, 20000}});
}

TEST(LowerBoundTest, EncoderLayerIsBoundedByItsBestSplit) {
  // Q, K and V side by side: the path alone (1,077 µs) misses that K beside
  // Q pays a transfer in and one out. With the split search of the attention
  // phase the bound is 1,117 µs, 0.45% under the best of all 2^15
  // placements.
  CostGraph g = EncoderLayer();
  Cluster c = TestCluster(2);
  const LowerBound bound = ComputeLowerBound(g, c);
  EXPECT_DOUBLE_EQ(bound.critical_path_us, 1077);
  Simulator sim(g, c);
  double best = std::numeric_limits<double>::infinity();
  Placement p;
  p.device.resize(g.num_units());
  for (uint32_t mask = 0; mask < (1u << g.num_units()); ++mask) {
    for (uint32_t u = 0; u < g.num_units(); ++u) p.device[u] = static_cast<int32_t>(mask >> u & 1);
    best = std::min(best, sim.Run(p).step_time_us);
  }
  EXPECT_DOUBLE_EQ(best, 1122);
  EXPECT_DOUBLE_EQ(bound.bound_us, 1117);
}

TEST(LowerBoundTest, WholeStagesCopyConstantsFree) {
  // A Constant read by two units: sending it takes 1 ms, so they run one
  // after the other beside it; with whole stages it is copied into each
  // stage for free and they run side by side.
  CostGraph::Builder b(1);
  b.AddUnit({.name = "c", .op = "Constant", .compute_us = {0}});
  for (int i = 0; i < 2; ++i) b.AddUnit({.name = "u", .op = "Op", .compute_us = {50}});
  for (uint32_t dst : {1u, 2u})
    b.AddUse(b.AddTensor({.name = "t", .producer = 0, .bytes = 1000000}), dst);
  CostGraph g = *std::move(b).Build();
  Cluster c = TestCluster(2);
  EXPECT_DOUBLE_EQ(ComputeLowerBound(g, c).transfer_latency_us, 100);
  c.execution = {.whole_stages = true};
  EXPECT_DOUBLE_EQ(ComputeLowerBound(g, c).transfer_latency_us, 50);
}

// With whole stages a Constant's M runs still take its device, but a reader
// in another stage has its own copy and never waits for them: the Constant
// counts M times its time and nothing after it.
TEST(LowerBoundTest, WholeStagesPipelineAConstantWithoutItsReaders) {
  CostGraph::Builder b(1);
  b.AddUnit({.name = "c", .op = "Constant", .compute_us = {40}});
  b.AddUnit({.name = "u", .op = "Op", .compute_us = {10}});
  b.AddUse(b.AddTensor({.name = "t", .producer = 0, .bytes = 1000}), 1);
  CostGraph g = *std::move(b).Build();
  Cluster c = TestCluster(2);
  c.execution = {.whole_stages = true};
  const LowerBound bound = ComputeLowerBound(g, c, 4);
  EXPECT_DOUBLE_EQ(bound.pipelined_unit_us, 160);
  Simulator simulator(g, c);
  EXPECT_DOUBLE_EQ(simulator.Run({.device = {0, 1}}, {.microbatches = 4}).step_time_us, 160);
}

// Random DAGs with late sources and side outputs: each unit reads up to
// three earlier ones, or none.
CostGraph RandomGraph(std::mt19937& rng, uint32_t n, int kinds) {
  std::vector<double> times;
  std::vector<Edge> edges;
  std::uniform_real_distribution<double> time(0, 100);
  std::uniform_int_distribution<int64_t> bytes(0, 50000);
  for (uint32_t u = 0; u < n; ++u) {
    times.push_back(rng() % 8 == 0 ? 0 : time(rng));
    if (u == 0 || rng() % 6 == 0) continue;
    const int fan_in = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < fan_in; ++k) {
      // Mostly the previous few units: long series stretches with cuts.
      const uint32_t back = 1 + (rng() % 4 == 0 ? rng() % u : rng() % std::min(u, 3u));
      edges.push_back({u - back, u, bytes(rng)});
    }
  }
  return Build(times, edges, kinds, 1.5);
}

TEST(LowerBoundPropertyTest, NeverAboveASimulatedStep) {
  int above_old = 0, transfers_above = 0, split_above = 0, pipelined_above = 0;
  for (uint32_t seed = 0; seed < 600; ++seed) {
    std::mt19937 rng(seed);
    const int kinds = 1 + static_cast<int>(seed % 2);
    CostGraph g = RandomGraph(rng, 4 + rng() % 30, kinds);
    const int devices = 1 + static_cast<int>(rng() % 4);
    Cluster c = TestCluster(devices, seed % 3 == 0 ? 1 : 0);
    if (kinds == 2) {
      c.kinds.push_back(c.kinds[0]);
      for (int d = 1; d < devices; d += 2) c.devices[d].kind = 1;
    }
    if (seed % 5 == 0) c.execution = {.whole_stages = true, .stage_run_us = 3};
    if (seed % 10 == 5) c.execution = {.whole_stages = true, .hop_us = 4, .hop_busy_us = 1};
    if (seed % 7 == 0 && devices > 2) c.SetLink(0, 1, 1e10, 0.5);  // one faster link
    Simulator sim(g, c);
    for (int trial = 0; trial < 10; ++trial) {
      Placement p;
      for (uint32_t u = 0; u < g.num_units(); ++u) {
        p.device.push_back(static_cast<int32_t>(rng() % devices));
        if (trial % 2 == 1) p.priority.push_back(static_cast<double>(rng() % 100));
      }
      const int m = 1 + trial % 4;
      const LowerBound bound = ComputeLowerBound(g, c, m);
      const SimulationResult& run = sim.Run(p, {.microbatches = m, .record_timeline = true});
      const double step = run.step_time_us;
      // Every unit instance ran (Constants copied into stages wait for none).
      ASSERT_EQ(std::count_if(
                    run.timeline.begin(), run.timeline.end(),
                    [](const TimelineEntry& e) { return e.kind == TimelineEntry::Kind::kCompute; }),
                static_cast<int64_t>(g.num_units()) * m)
          << "seed " << seed << ", trial " << trial;
      ASSERT_GE(step * (1 + 1e-12) + 1e-9, bound.bound_us)
          << "seed " << seed << ", trial " << trial << ", " << m << " micro-batches";
      EXPECT_GE(bound.phased_latency_us + 1e-9, bound.critical_path_us);
      EXPECT_GE(bound.transfer_latency_us + 1e-9, bound.phased_latency_us);
      const LowerBound unsplit = ComputeLowerBound(g, c, m, 0);
      EXPECT_GE(bound.phased_latency_us + 1e-9, unsplit.phased_latency_us);
      if (bound.bound_us > unsplit.bound_us * (1 + 1e-9)) ++split_above;
      const double old_us = std::max(bound.critical_path_us, bound.balanced_work_us);
      if (bound.phased_latency_us > old_us * (1 + 1e-9)) ++above_old;
      if (bound.transfer_latency_us > std::max(old_us, bound.phased_latency_us) * (1 + 1e-9))
        ++transfers_above;
      if (bound.pipelined_unit_us > std::max(old_us, bound.transfer_latency_us) * (1 + 1e-9)) {
        ++pipelined_above;
      }
    }
  }
  // The phases, the transfers, the split search and the pipelined unit each
  // tighten the bound on some of these graphs.
  EXPECT_GT(above_old, 200);
  EXPECT_GT(transfers_above, 300);
  EXPECT_GT(split_above, 80);
  EXPECT_GT(pipelined_above, 500);
}

}  // namespace
}  // namespace autopar::costmodel
