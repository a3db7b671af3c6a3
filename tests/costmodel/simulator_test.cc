// Schedules small enough to check by hand, and properties on random graphs.
#include "costmodel/simulator.h"

#include <random>

#include "costmodel/lower_bound.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/costmodel/unit_graphs.h"

namespace autopar::costmodel {
namespace {

using testing::kGiB;
using testing::TestCluster;
using testing::TestDevice;

// A graph from a list of units (compute µs) and edges (src, dst, bytes),
// each edge its own tensor.
struct GraphSpec {
  std::vector<double> compute_us;
  std::vector<testing::UnitEdge> edges;
};

CostGraph Build(const GraphSpec& spec, int kinds = 1, double slow_factor = 1) {
  return testing::BuildUnitGraph(spec.compute_us, spec.edges,
                                 {.kinds = kinds, .slow_factor = slow_factor});
}

TEST(SimulatorTest, SingleDeviceStepIsTheSumOfUnitTimes) {
  CostGraph g = Build({{10, 20, 30}, {{0, 1, 1000}, {1, 2, 1000}}});
  Cluster c = TestCluster(1);
  Simulator sim(g, c);
  const SimulationResult& r = sim.Run({.device = {0, 0, 0}});
  EXPECT_DOUBLE_EQ(r.step_time_us, 60);
  EXPECT_DOUBLE_EQ(r.devices[0].busy_us, 60);
  EXPECT_EQ(r.transfers, 0);
  EXPECT_EQ(r.comm_bytes, 0);
}

TEST(SimulatorTest, ChainSplitPaysOneTransfer) {
  // u0 on device 0; u1, u2 on device 1: 10 + 2 (2,000 bytes + 0.5 latency) + 20 + 30.
  CostGraph g = Build({{10, 20, 30}, {{0, 1, 2000}, {1, 2, 1000}}});
  Cluster c = TestCluster(2, /*latency_us=*/0.5);
  Simulator sim(g, c);
  const SimulationResult& r = sim.Run({.device = {0, 1, 1}});
  EXPECT_DOUBLE_EQ(r.step_time_us, 62.5);
  EXPECT_EQ(r.transfers, 1);
  EXPECT_EQ(r.link_bytes[0 * 2 + 1], 2000);
  EXPECT_EQ(r.link_bytes[1 * 2 + 0], 0);
}

TEST(SimulatorTest, DiamondOverlapsBranches) {
  // u0 → u1 (device 1), u0 → u2 (device 0), both → u3 (device 0).
  // Branch on device 1: 5 µs there, 30 µs work, 5 µs back = 40; local branch 35.
  CostGraph g = Build({{10, 30, 35, 10}, {{0, 1, 5000}, {0, 2, 1}, {1, 3, 5000}, {2, 3, 1}}});
  Cluster c = TestCluster(2);
  Simulator sim(g, c);
  const SimulationResult& r = sim.Run({.device = {0, 1, 0, 0}});
  EXPECT_DOUBLE_EQ(r.step_time_us, 10 + 40 + 10);
  EXPECT_EQ(r.transfers, 2);
}

TEST(SimulatorTest, TensorIsSentOncePerDestinationDevice) {
  // One tensor of u0 read by u1 and u2, both on device 1.
  CostGraph::Builder b(1);
  for (int u = 0; u < 3; ++u) b.AddUnit({.name = "u", .op = "Op", .compute_us = {10}});
  uint32_t t = b.AddTensor({.name = "x", .producer = 0, .bytes = 4000});
  b.AddUse(t, 1);
  b.AddUse(t, 2);
  CostGraph g = *std::move(b).Build();
  Cluster c = TestCluster(2);
  Simulator sim(g, c);
  const SimulationResult& r = sim.Run({.device = {0, 1, 1}});
  EXPECT_EQ(r.transfers, 1);
  EXPECT_EQ(r.comm_bytes, 4000);
  EXPECT_DOUBLE_EQ(r.step_time_us, 10 + 4 + 10 + 10);
}

TEST(SimulatorTest, ALinkCarriesOneTransferAtATime) {
  // u0 sends two 10,000-byte tensors to device 1: the second waits for the first.
  CostGraph g = Build({{1, 1, 1}, {{0, 1, 10000}, {0, 2, 10000}}});
  Cluster c = TestCluster(2);
  Simulator sim(g, c);
  SimulationOptions options{.record_timeline = true};
  const SimulationResult& r = sim.Run({.device = {0, 1, 1}}, options);
  // Arrivals at 11 and 21; u1 runs 11–12, u2 runs 21–22.
  EXPECT_DOUBLE_EQ(r.step_time_us, 22);
  int transfers = 0;
  for (const TimelineEntry& e : r.timeline) {
    if (e.kind != TimelineEntry::Kind::kTransfer) continue;
    EXPECT_DOUBLE_EQ(e.end_us - e.start_us, 10);
    ++transfers;
  }
  EXPECT_EQ(transfers, 2);
}

TEST(SimulatorTest, HeterogeneousDevicesUseTheirKindsTimes) {
  // Kind 1 is twice as slow. Two independent units, one per device.
  CostGraph g = Build({{10, 10}, {}}, /*kinds=*/2, /*slow_factor=*/2);
  Cluster c = TestCluster(2);
  c.kinds.push_back(TestDevice("slow"));
  c.devices[1].kind = 1;
  Simulator sim(g, c);
  const SimulationResult& r = sim.Run({.device = {0, 1}});
  EXPECT_DOUBLE_EQ(r.devices[0].busy_us, 10);
  EXPECT_DOUBLE_EQ(r.devices[1].busy_us, 20);
  EXPECT_DOUBLE_EQ(r.step_time_us, 20);
}

TEST(SimulatorTest, PriorityDecidesAmongReadyUnits) {
  // u0 and u1 are independent on one device; u1 feeds a long unit u2 on
  // device 1. Running u1 first hides u2 behind u0.
  CostGraph g = Build({{10, 10, 50}, {{1, 2, 0}}});
  Cluster c = TestCluster(2);
  Simulator sim(g, c);
  EXPECT_DOUBLE_EQ(sim.Run({.device = {0, 0, 1}, .priority = {0, 1, 2}}).step_time_us, 70);
  EXPECT_DOUBLE_EQ(sim.Run({.device = {0, 0, 1}, .priority = {1, 0, 2}}).step_time_us, 60);
  // The default (bottom level) finds the better order by itself.
  EXPECT_DOUBLE_EQ(sim.Run({.device = {0, 0, 1}}).step_time_us, 60);
}

TEST(SimulatorTest, MemoryPeakOfAChainByHand) {
  // u0 (out 100) → u1 (out 50) → u2 (out 10, a graph output), one device.
  // u1 running: its input and output are live: 150. u2 running: 50 + 10.
  CostGraph::Builder b(1);
  for (int u = 0; u < 3; ++u) b.AddUnit({.name = "u", .op = "Op", .compute_us = {1}});
  b.AddTensor({.name = "a", .producer = 0, .bytes = 100});
  b.AddTensor({.name = "b", .producer = 1, .bytes = 50});
  b.AddTensor({.name = "c", .producer = 2, .bytes = 10, .is_graph_output = true});
  b.AddUse(0, 1);
  b.AddUse(1, 2);
  CostGraph g = *std::move(b).Build();
  Cluster c = TestCluster(1);
  Simulator sim(g, c);
  const SimulationResult& r = sim.Run({.device = {0, 0, 0}});
  EXPECT_EQ(r.devices[0].peak_activation_bytes, 150);
  EXPECT_EQ(r.devices[0].param_bytes, 0);
}

TEST(SimulatorTest, SharedParametersCountOncePerDevice) {
  CostGraph::Builder b(1);
  uint32_t shared = b.AddParameter(1000);
  uint32_t own = b.AddParameter(300);
  b.AddUnit({.name = "a", .op = "MatMul", .compute_us = {1}, .params = {shared, own}});
  b.AddUnit({.name = "b", .op = "MatMul", .compute_us = {1}, .params = {shared}});
  b.AddUnit({.name = "c", .op = "MatMul", .compute_us = {1}, .params = {shared}});
  CostGraph g = *std::move(b).Build();
  Cluster c = TestCluster(2);
  Simulator sim(g, c);
  const SimulationResult& r = sim.Run({.device = {0, 0, 1}});
  EXPECT_EQ(r.devices[0].param_bytes, 1300);
  EXPECT_EQ(r.devices[1].param_bytes, 1000);
}

TEST(SimulatorTest, ReceivedCopyAndWorkspaceCountInMemory) {
  // u0 on device 0 sends 400 bytes to u1 on device 1, whose workspace is 25.
  CostGraph::Builder b(1);
  b.AddUnit({.name = "u0", .op = "Op", .compute_us = {1}});
  b.AddUnit({.name = "u1", .op = "Op", .compute_us = {1}, .temp_bytes = 25});
  b.AddTensor({.name = "x", .producer = 0, .bytes = 400});
  b.AddTensor({.name = "y", .producer = 1, .bytes = 8, .is_graph_output = true});
  b.AddUse(0, 1);
  CostGraph g = *std::move(b).Build();
  Cluster c = TestCluster(2);
  Simulator sim(g, c);
  const SimulationResult& r = sim.Run({.device = {0, 1}});
  EXPECT_EQ(r.devices[0].peak_activation_bytes, 400);
  EXPECT_EQ(r.devices[1].peak_activation_bytes, 400 + 25 + 8);
}

TEST(SimulatorTest, OverflowIsReported) {
  CostGraph::Builder b(1);
  uint32_t p = b.AddParameter(3 * kGiB / 2);
  b.AddUnit({.name = "big", .op = "MatMul", .compute_us = {1}, .params = {p}});
  CostGraph g = *std::move(b).Build();
  Cluster c = TestCluster(1);
  Simulator sim(g, c);
  const SimulationResult& r = sim.Run({.device = {0}});
  EXPECT_TRUE(r.memory_overflow);
  EXPECT_EQ(r.overflow_bytes, kGiB / 2);
}

TEST(SimulatorTest, MicrobatchesOnABalancedChainMatchThePipelineFormula) {
  // K stages of T µs each on K devices, free transfers: (K + M - 1) · T. The
  // model is one micro-batch (Note [Micro-batches]): M of them take M times
  // the work, so the step grows by one stage time per further micro-batch.
  constexpr int kStages = 4;
  constexpr double kStageUs = 100;
  GraphSpec spec;
  for (int s = 0; s < kStages; ++s) spec.compute_us.push_back(kStageUs);
  for (uint32_t s = 0; s + 1 < kStages; ++s) spec.edges.push_back({s, s + 1, 0});
  CostGraph g = Build(spec);
  Cluster c = TestCluster(kStages);
  Simulator sim(g, c);
  for (int m : {1, 2, 4, 8, 16}) {
    const SimulationResult& r = sim.Run({.device = {0, 1, 2, 3}}, {.microbatches = m});
    EXPECT_NEAR(r.step_time_us, (kStages + m - 1) * kStageUs, 1e-9) << m << " micro-batches";
  }
}

TEST(SimulatorTest, EachMicrobatchIsTheWholeModelFlowingThroughThePlacement) {
  // a (30 µs) on device 0 feeds b (50 µs) on device 1 with 1,000 bytes (1 µs).
  // One micro-batch: 30 + 1 + 50. Four: a runs back to back, each copy
  // arrives 1 µs after its a ends, and b (the bottleneck) runs the four in a
  // row from 31 µs: 31 + 4 x 50 = 231 µs; nothing is scaled by 1/M.
  CostGraph g = Build({{30, 50}, {{0, 1, 1000}}});
  Cluster c = TestCluster(2);
  Simulator sim(g, c);
  const Placement p{.device = {0, 1}};
  const SimulationResult& one = sim.Run(p, {.microbatches = 1});
  EXPECT_DOUBLE_EQ(one.step_time_us, 81);
  EXPECT_EQ(one.devices[1].peak_activation_bytes, 1000);
  const SimulationResult& four = sim.Run(p, {.microbatches = 4, .record_timeline = true});
  EXPECT_DOUBLE_EQ(four.step_time_us, 231);
  EXPECT_DOUBLE_EQ(four.devices[0].busy_us, 120);
  EXPECT_DOUBLE_EQ(four.devices[1].busy_us, 200);
  EXPECT_EQ(four.comm_bytes, 4000);
  // Every micro-batch has its own activations: device 0 holds a's output for
  // micro-batch m while m + 1 starts; device 1 holds the copies that wait for
  // b (micro-batches 1, 2 and 3 while b runs micro-batch 1).
  EXPECT_EQ(four.devices[0].peak_activation_bytes, 2000);
  EXPECT_EQ(four.devices[1].peak_activation_bytes, 3000);
  // Micro-batch m runs b from 31 + 50 m.
  for (const TimelineEntry& e : four.timeline) {
    if (e.kind == TimelineEntry::Kind::kCompute && e.unit == 1) {
      EXPECT_DOUBLE_EQ(e.start_us, 31 + 50 * e.microbatch);
    }
  }
}

TEST(SimulatorTest, WholeStagesRunAsTheRunnerRunsThemWithTheirOverheads) {
  // a (10 µs) on device 0 -> b (20 µs) on device 1 -> c (30 µs) on device 0,
  // 1,000 bytes (1 µs) each: three stages, (level 0, dev 0), (1, dev 1) and
  // (2, dev 0). A stage run costs 5 µs, each tensor read from another stage
  // 2 µs more.
  CostGraph g = Build({{10, 20, 30}, {{0, 1, 1000}, {1, 2, 1000}}});
  Cluster c = TestCluster(2);
  c.execution = {.whole_stages = true, .stage_run_us = 5, .cut_us = 2};
  Simulator sim(g, c);
  const Placement p{.device = {0, 1, 0}};
  // One micro-batch: s0 0-15, copy 15-16, s1 16-43 (b from 23), copy 43-44,
  // s2 44-81.
  const SimulationResult& one = sim.Run(p, {.microbatches = 1, .record_timeline = true});
  EXPECT_DOUBLE_EQ(one.step_time_us, 81);
  EXPECT_EQ(sim.num_stages(), 3u);
  EXPECT_EQ(sim.stage_of_unit(), (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_DOUBLE_EQ(one.devices[0].busy_us, 5 + 10 + 7 + 30);
  for (const TimelineEntry& e : one.timeline) {
    if (e.kind == TimelineEntry::Kind::kCompute && e.unit == 1) {
      EXPECT_DOUBLE_EQ(e.start_us, 23);
    }
  }
  // Two: device 0 runs s0 for both (key (0, 0) then (1, 0)) by 30, waits for
  // s2 of micro-batch 0 (ready at 44, ends 81); s1 of micro-batch 1 runs
  // 43-70 after s1 of micro-batch 0; its copy arrives at 71 and s2 of
  // micro-batch 1 runs 81-118.
  EXPECT_DOUBLE_EQ(sim.Run(p, {.microbatches = 2}).step_time_us, 118);
  // Without the overheads, whole stages of single units pipeline as units do.
  c.execution = {.whole_stages = true};
  Simulator plain(g, c);
  EXPECT_DOUBLE_EQ(plain.Run(p, {.microbatches = 1}).step_time_us, 62);
}

TEST(SimulatorTest, AHopIsLatencyAfterTheBytesAndWorkOncePerStageReadFrom) {
  // a (10 µs) and b (20 µs) on device 0, one stage; c (30 µs) on device 1
  // reads both, 1,000 bytes (1 µs on the link) each. The runner hands both
  // over in one message: each tensor holds the link for its bytes only and
  // arrives hop_us (50) later, in place of the link's 7 µs latency; c's stage
  // pays hop_busy_us (4) once, for the one stage it reads from.
  CostGraph g = Build({{10, 20, 30}, {{0, 2, 1000}, {1, 2, 1000}}});
  Cluster c = TestCluster(2, /*latency_us=*/7);
  c.execution = {.whole_stages = true, .hop_us = 50, .hop_busy_us = 4};
  Simulator sim(g, c);
  const Placement p{.device = {0, 0, 1}};
  // s0 0-30; a on the link 30-31, arrives 81; b 31-32, arrives 82; s1 82-116.
  const SimulationResult& r = sim.Run(p);
  EXPECT_DOUBLE_EQ(r.step_time_us, 116);
  EXPECT_DOUBLE_EQ(r.devices[1].busy_us, 4 + 30);
  // hop_us 0: the link's latency per tensor (a 30-38, b 38-46), the work stays.
  c.execution.hop_us = 0;
  Simulator by_link(g, c);
  EXPECT_DOUBLE_EQ(by_link.Run(p).step_time_us, 46 + 4 + 30);
  // Node by node (not whole stages) neither applies: a's copy leaves when a
  // ends, b's (30-38) when b does; c 38-68.
  c.execution.whole_stages = false;
  Simulator by_unit(g, c);
  EXPECT_DOUBLE_EQ(by_unit.Run(p).step_time_us, 68);
}

TEST(SimulatorTest, ACutCostsItsBytesHalfOnEachSide) {
  // a (10 µs) on device 0 -> b (20 µs) on device 1, 4,000 bytes (4 µs on the
  // link). Cutting it copies the bytes out of a's stage and into b's: at
  // 1 byte/µs (1e6 B/s) 4,000 µs, 2,000 on each side.
  CostGraph g = Build({{10, 20}, {{0, 1, 4000}}});
  Cluster c = TestCluster(2);
  c.execution = {.whole_stages = true, .cut_bytes_per_s = 1e6};
  Simulator sim(g, c);
  const SimulationResult& r = sim.Run(Placement{.device = {0, 1}});
  // s0: 2,000 + 10; copy 4; s1: 2,000 + 20.
  EXPECT_DOUBLE_EQ(r.step_time_us, 2010 + 4 + 2020);
  EXPECT_DOUBLE_EQ(r.devices[0].busy_us, 2010);
  EXPECT_DOUBLE_EQ(r.devices[1].busy_us, 2020);
  // On one device nothing is cut: no such cost.
  EXPECT_DOUBLE_EQ(sim.Run(Placement{.device = {0, 0}}).step_time_us, 30);
}

TEST(SimulatorTest, AStageStartsOnlyWhenAllItsInputsHaveArrived) {
  // Device 0 runs a (10 µs) then d (100 µs), both level 0; on device 1, b
  // reads a and e reads d: both level 1, one stage. Node by node, b starts
  // when a's copy arrives (11 µs); as a stage, only once d's has too, and
  // device 0's stage sends a and d when both have run.
  GraphSpec spec{{10, 30, 100, 40}, {{0, 1, 1000}, {2, 3, 1000}}};
  CostGraph g = Build(spec);
  Cluster c = TestCluster(2);
  Simulator by_unit(g, c);
  // a before d, b before e.
  const Placement p{.device = {0, 1, 0, 1}, .priority = {0, 0, 1, 1}};
  EXPECT_DOUBLE_EQ(by_unit.Run(p).step_time_us, 151);  // d ends 110, copy 111, e 111-151
  c.execution = {.whole_stages = true};
  Simulator by_stage(g, c);
  const SimulationResult& r = by_stage.Run(p, {.record_timeline = true});
  EXPECT_EQ(by_stage.num_stages(), 2u);
  // Stage 0 ends at 110; both copies share the link: 110-111, 111-112; the
  // stage of b and e runs 112-182.
  EXPECT_DOUBLE_EQ(r.step_time_us, 182);
  for (const TimelineEntry& e : r.timeline) {
    if (e.kind == TimelineEntry::Kind::kCompute && e.device == 1) {
      EXPECT_GE(e.start_us, 112);
    }
  }
}

TEST(SimulatorTest, StagesReadingEachOthersConstantsDoNotWait) {
  // u0 (10 µs, device 0) feeds u3 (20 µs, device 2) and u4 (30 µs, device
  // 1), 1,000 bytes (1 µs) each. Constants u1 (device 1) and u2 (device 2)
  // join their devices' only stages; u3 reads u1 and u4 reads u2. The
  // rewriter copies each Constant into its readers' stage, so neither stage
  // waits for the other (each would wait forever if they did) and nothing
  // but u0's output is sent.
  CostGraph g = testing::BuildUnitGraph({10, 0, 0, 20, 30},
                                        {{0, 3, 1000}, {1, 3, 1000}, {0, 4, 1000}, {2, 4, 1000}},
                                        {.free_sources_are_constants = true});
  Cluster c = TestCluster(3);
  c.execution = {.whole_stages = true};
  Simulator sim(g, c);
  const Placement p{.device = {0, 1, 2, 2, 1}};
  const SimulationResult& one = sim.Run(p);
  EXPECT_DOUBLE_EQ(one.step_time_us, 41);  // u4 runs 11-41
  EXPECT_EQ(one.transfers, 2);
  EXPECT_EQ(one.comm_bytes, 2000);
  // Micro-batch 1: u0 10-20, its copies arrive at 21, u4 runs 41-71.
  EXPECT_DOUBLE_EQ(sim.Run(p, {.microbatches = 2}).step_time_us, 71);
}

// Random layered DAGs for the properties below.
CostGraph RandomGraph(std::mt19937& rng, uint32_t n) {
  GraphSpec spec;
  std::uniform_real_distribution<double> time(1, 100);
  std::uniform_int_distribution<int64_t> bytes(0, 200000);
  for (uint32_t u = 0; u < n; ++u) {
    spec.compute_us.push_back(time(rng));
    if (u == 0) continue;
    int fan_in = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < fan_in; ++k)
      spec.edges.push_back({static_cast<uint32_t>(rng() % u), u, bytes(rng)});
  }
  return Build(spec);
}

TEST(SimulatorPropertyTest, StepTimeIsAtLeastTheLowerBound) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 50; ++trial) {
    CostGraph g = RandomGraph(rng, 20 + trial * 3);
    const int devices = 1 + trial % 4;
    Cluster c = TestCluster(devices, 1);
    Simulator sim(g, c);
    Placement p;
    for (uint32_t u = 0; u < g.num_units(); ++u)
      p.device.push_back(static_cast<int32_t>(rng() % devices));
    const SimulationResult& r = sim.Run(p);
    LowerBound bound = ComputeLowerBound(g, c);
    EXPECT_GE(r.step_time_us + 1e-9, bound.bound_us) << "trial " << trial;
    double busy = 0;
    for (const DeviceUsage& d : r.devices) busy += d.busy_us;
    double total = 0;
    for (uint32_t u = 0; u < g.num_units(); ++u) total += g.compute_us(u, 0);
    EXPECT_NEAR(busy, total, 1e-6);
    // M pipelined micro-batches never beat their bound.
    for (int m : {2, 4, 8}) {
      const double step = sim.Run(p, {.microbatches = m}).step_time_us;
      EXPECT_GE(step + 1e-9, ComputeLowerBound(g, c, m).bound_us)
          << "trial " << trial << ", " << m << " micro-batches";
    }
  }
}

TEST(SimulatorPropertyTest, OneDeviceRunsEverythingBackToBack) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    CostGraph g = RandomGraph(rng, 50);
    Cluster c = TestCluster(1);
    Simulator sim(g, c);
    double total = 0;
    for (uint32_t u = 0; u < g.num_units(); ++u) total += g.compute_us(u, 0);
    EXPECT_NEAR(sim.Run({.device = std::vector<int32_t>(g.num_units(), 0)}).step_time_us, total,
                1e-6);
  }
}

TEST(SimulatorPropertyTest, RunsAreRepeatable) {
  std::mt19937 rng(3);
  CostGraph g = RandomGraph(rng, 300);
  Cluster c = TestCluster(4, 2);
  Simulator sim(g, c);
  Placement p;
  for (uint32_t u = 0; u < g.num_units(); ++u) p.device.push_back(static_cast<int32_t>(u % 4));
  const double first = sim.Run(p).step_time_us;
  const int64_t first_peak = sim.Run(p).devices[2].peak_memory_bytes;
  Simulator fresh(g, c);
  EXPECT_EQ(fresh.Run(p).step_time_us, first);
  EXPECT_EQ(fresh.Run(p).devices[2].peak_memory_bytes, first_peak);
}

TEST(CheckPlacementTest, RejectsBadPlacements) {
  CostGraph g = Build({{1, 1}, {{0, 1, 1}}});
  Cluster c = TestCluster(2);
  EXPECT_TRUE(CheckPlacement(g, c, {.device = {0, 1}}).ok());
  EXPECT_FALSE(CheckPlacement(g, c, {.device = {0}}).ok());
  EXPECT_FALSE(CheckPlacement(g, c, {.device = {0, 2}}).ok());
  EXPECT_FALSE(CheckPlacement(g, c, {.device = {0, 1}, .priority = {1}}).ok());
}

}  // namespace
}  // namespace autopar::costmodel
