// SGP on graphs whose best placement is known by hand, and its promises on
// random and synthetic graphs: memory caps, determinism, heterogeneous
// devices, layered DAGs near the lower bound.
#include "search/sgp.h"

#include <algorithm>
#include <set>

#include "costmodel/lower_bound.h"
#include "costmodel/simulator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/feasibility.h"
#include "search/memory_profile.h"
#include "tests/search/test_graphs.h"
#include "tools/bench/graph_families.h"

namespace autopar::search {
namespace {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;
using costmodel::SimulationResult;
using costmodel::Simulator;
using testing::BuildGraph;
using testing::Chain;
using testing::GraphSpec;
using ::testing::HasSubstr;
using testing::TestCluster;

constexpr int64_t kGiB = int64_t{1} << 30;

Placement PlaceOrDie(const CostGraph& graph, const Cluster& cluster,
                     const SearchOptions& options = {}) {
  absl::StatusOr<Placement> placement = PlaceSgp(graph, cluster, options);
  EXPECT_TRUE(placement.ok()) << placement.status();
  if (!placement.ok()) return {};
  EXPECT_TRUE(costmodel::CheckPlacement(graph, cluster, *placement).ok());
  return *std::move(placement);
}

std::set<int32_t> DevicesOf(const Placement& placement, uint32_t begin, uint32_t end) {
  return {placement.device.begin() + begin, placement.device.begin() + end};
}

double SingleDeviceStepUs(const CostGraph& graph) {
  double total = 0;
  for (uint32_t u = 0; u < graph.num_units(); ++u) total += graph.compute_us(u, 0);
  return total;
}

TEST(SgpTest, TwoIndependentChainsGoOnePerDevice) {
  // Units 0–4 form one chain, 5–9 another.
  GraphSpec spec;
  spec.units.assign(10, {10, 0});
  for (uint32_t u : {0u, 1u, 2u, 3u, 5u, 6u, 7u, 8u}) spec.edges.push_back({u, u + 1, 1000});
  CostGraph g = BuildGraph(spec);
  Cluster c = TestCluster(2, kGiB);
  Placement p = PlaceOrDie(g, c);
  ASSERT_EQ(DevicesOf(p, 0, 5).size(), 1u);
  ASSERT_EQ(DevicesOf(p, 5, 10).size(), 1u);
  EXPECT_NE(p.device[0], p.device[5]);
  Simulator sim(g, c);
  EXPECT_DOUBLE_EQ(sim.Run(p).step_time_us, 50);
}

TEST(SgpTest, InterleavedIndependentChainsGoOnePerDevice) {
  // The same two chains numbered alternately: a0 b0 a1 b1 … — contiguous
  // segments of this order would cut both; list scheduling must not.
  CostGraph g = BuildGraph(testing::InterleavedChains(12, 1000));
  Cluster c = TestCluster(2, kGiB);
  Placement p = PlaceOrDie(g, c);
  std::set<int32_t> even, odd;
  for (uint32_t u = 0; u < 12; ++u) (u % 2 == 0 ? even : odd).insert(p.device[u]);
  ASSERT_EQ(even.size(), 1u);
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_NE(*even.begin(), *odd.begin());
  Simulator sim(g, c);
  EXPECT_DOUBLE_EQ(sim.Run(p).step_time_us, 60);
}

TEST(SgpTest, ChainThatFitsStaysOnOneDevice) {
  CostGraph g = BuildGraph(Chain(std::vector<int64_t>(19, 4000), 10, 1000));
  Cluster c = TestCluster(4, kGiB);
  Placement p = PlaceOrDie(g, c);
  EXPECT_EQ(DevicesOf(p, 0, g.num_units()).size(), 1u);
  Simulator sim(g, c);
  EXPECT_DOUBLE_EQ(sim.Run(p).step_time_us, 200);
}

TEST(SgpTest, ChainThatDoesNotFitSplitsAtTheCheapestCutThatFits) {
  // Ten units of 1,000 parameter bytes; edge i joins u_i and u_{i+1}.
  // While u_v runs, edges v−1 and v are live (Note [In-order liveness]), at
  // most 100 + 100 bytes; with 6,200 bytes a device holds at most six units,
  // so the one cut lies at 4, 5 or 6 (the cut at c severs edge c−1). Edge 2
  // (cut 3) and edge 6 (cut 7) are the cheapest but leave seven units on one
  // side; of the cuts that fit, 4 (edge 3, 50 bytes) is cheapest — not the
  // balanced cut 5 (edge 4, 90 bytes).
  const std::vector<int64_t> edge_bytes = {100, 100, 5, 50, 90, 80, 10, 100, 100};
  CostGraph g = BuildGraph(Chain(edge_bytes, 10, 1000));
  Cluster c = TestCluster(4, 6200);
  Placement p = PlaceOrDie(g, c);
  ASSERT_EQ(DevicesOf(p, 0, 4).size(), 1u);
  ASSERT_EQ(DevicesOf(p, 4, 10).size(), 1u);
  EXPECT_NE(p.device[0], p.device[4]);
  Simulator sim(g, c);
  const SimulationResult& r = sim.Run(p);
  EXPECT_FALSE(r.memory_overflow);
  EXPECT_EQ(r.transfers, 1);
  EXPECT_EQ(r.comm_bytes, 50);
}

TEST(SgpTest, RespectsMemoryCapsOnRandomGraphs) {
  // Whenever the estimate says the cluster can hold the graph, SGP must place
  // it, and its placement must fit in the simulator too; otherwise it may
  // fail, but only with ResourceExhausted.
  int placed = 0;
  for (uint64_t seed = 1; seed <= 80; ++seed) {
    // Windows 1–8: from chains to fairly wide graphs.
    CostGraph g = BuildGraph(testing::RandomDag(40 + static_cast<uint32_t>(seed * 7 % 160), seed,
                                                1 + static_cast<uint32_t>(seed % 8)));
    const MemoryProfile profile = ComputeMemoryProfile(g);
    const int devices = 2 + static_cast<int>(seed % 3);
    const double fraction = 0.25 + 0.05 * static_cast<double>(seed % 20);  // 0.25–1.20
    const auto memory = static_cast<int64_t>(fraction * static_cast<double>(profile.peak_bytes()));
    Cluster c = TestCluster(devices, memory);
    SearchOptions options;
    options.microbatches = seed % 4 == 0 ? 4 : 1;
    absl::StatusOr<Placement> p = PlaceSgp(g, c, options);
    const int needed = DevicesNeeded(g, profile, memory);
    SCOPED_TRACE(::testing::Message() << "seed " << seed << ", " << devices << " devices of "
                                      << memory << " bytes, estimate needs " << needed);
    if (!p.ok()) {
      EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted) << p.status();
      EXPECT_TRUE(needed == 0 || needed > devices) << p.status();
      continue;
    }
    ++placed;
    Simulator sim(g, c);
    const SimulationResult& r =
        sim.Run(*p, costmodel::SimulationOptions{.microbatches = options.microbatches});
    EXPECT_FALSE(r.memory_overflow) << "over by " << r.overflow_bytes << " bytes";
  }
  EXPECT_GT(placed, 40);
}

TEST(SgpTest, ModelThatFitsNowhereFailsWithTheMemoryItNeeds) {
  CostGraph g = BuildGraph(Chain(std::vector<int64_t>(9, 100), 10, 1000));
  const int64_t needed = MinimumMemoryBytes(g);
  EXPECT_EQ(needed, 10 * 1000 + 200);
  Cluster c = TestCluster(2, 3500);  // three units a device: about four devices would do
  absl::StatusOr<Placement> p = PlaceSgp(g, c, {});
  ASSERT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(p.status().message(), HasSubstr(std::to_string(needed)));
  EXPECT_THAT(p.status().message(), HasSubstr("about 4 devices"));
}

TEST(SgpTest, UnitLargerThanEveryDeviceIsNamed) {
  GraphSpec spec = Chain({100, 100}, 10, 100);
  spec.units[1].param_bytes = 50000;
  CostGraph g = BuildGraph(spec);
  absl::StatusOr<Placement> p = PlaceSgp(g, TestCluster(4, 10000), {});
  ASSERT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(p.status().message(), HasSubstr("unit 'u1'"));
}

TEST(SgpTest, SameInputSamePlacement) {
  for (bench::GraphFamily family : bench::AllGraphFamilies()) {
    CostGraph a = bench::MakeGraph(family, 1500, /*seed=*/3);
    CostGraph b = bench::MakeGraph(family, 1500, /*seed=*/3);
    const int64_t tight = MinimumMemoryBytes(a) * 6 / 10;
    for (int64_t memory : {int64_t{1} << 50, tight}) {
      Cluster c = TestCluster(4, memory, 5);
      Placement first = PlaceOrDie(a, c);
      Placement again = PlaceOrDie(a, c);
      Placement other = PlaceOrDie(b, c);
      EXPECT_EQ(first.device, again.device) << bench::GraphFamilyName(family);
      EXPECT_EQ(first.priority, again.priority) << bench::GraphFamilyName(family);
      EXPECT_EQ(first.device, other.device) << bench::GraphFamilyName(family);
    }
  }
}

// Work per device in kind-0 µs: what "twice the work" means across kinds.
std::vector<double> WorkPerDevice(const CostGraph& g, const Placement& p, int devices) {
  std::vector<double> work(devices, 0);
  for (uint32_t u = 0; u < g.num_units(); ++u) work[p.device[u]] += g.compute_us(u, 0);
  return work;
}

Cluster FastAndSlow(int64_t memory) {
  Cluster c = TestCluster(2, memory, 5);
  costmodel::DeviceSpec slow = c.kinds[0];
  slow.name = "slow";
  c.kinds.push_back(slow);
  c.devices[1].kind = 1;
  c.InitLinks(100e9, 5);
  return c;
}

TEST(SgpTest, FastDeviceGetsTwiceTheWorkOnAWideGraph) {
  // Kind 1 takes twice as long on every unit (graph_families' convention).
  CostGraph g = bench::MakeGraph(bench::GraphFamily::kLayeredDag, 2000, 1, /*device_kinds=*/2);
  Placement p = PlaceOrDie(g, FastAndSlow(int64_t{1} << 50));
  std::vector<double> work = WorkPerDevice(g, p, 2);
  EXPECT_NEAR(work[0] / work[1], 2.0, 0.3);
}

TEST(SgpTest, FastDeviceGetsTwiceTheWorkOfAPipelinedChain) {
  // With micro-batches a chain gains from a pipeline; its segments are cut in
  // proportion to the devices' speeds.
  CostGraph g = bench::MakeGraph(bench::GraphFamily::kResNetChain, 1200, 1, /*device_kinds=*/2);
  SearchOptions options;
  options.microbatches = 8;
  Placement p = PlaceOrDie(g, FastAndSlow(int64_t{1} << 50), options);
  std::vector<double> work = WorkPerDevice(g, p, 2);
  EXPECT_NEAR(work[0] / work[1], 2.0, 0.2);
}

TEST(SgpTest, LayeredDagIsNearTheLowerBound) {
  CostGraph g = bench::MakeGraph(bench::GraphFamily::kLayeredDag, 2000, 1);
  Cluster c = TestCluster(4, int64_t{1} << 50, 5);
  c.InitLinks(100e9, 5);
  Placement p = PlaceOrDie(g, c);
  Simulator sim(g, c);
  const double ratio = sim.Run(p).step_time_us / costmodel::ComputeLowerBound(g, c).bound_us;
  EXPECT_LE(ratio, 1.10);
}

TEST(SgpTest, ChainsAndStacksAreNeverSlowerThanOneDevice) {
  for (bench::GraphFamily family :
       {bench::GraphFamily::kResNetChain, bench::GraphFamily::kTransformerStack,
        bench::GraphFamily::kInceptionBlocks}) {
    CostGraph g = bench::MakeGraph(family, 1000, 1);
    Cluster c = TestCluster(4, int64_t{1} << 50, 5);
    c.InitLinks(100e9, 5);
    Placement p = PlaceOrDie(g, c);
    Simulator sim(g, c);
    EXPECT_LE(sim.Run(p).step_time_us, SingleDeviceStepUs(g) * (1 + 1e-9))
        << bench::GraphFamilyName(family);
  }
}

TEST(SgpTest, TightMemorySplitsAStackWithinTheCap) {
  CostGraph g = bench::MakeGraph(bench::GraphFamily::kTransformerStack, 1000, 1);
  const int64_t memory = MinimumMemoryBytes(g) * 6 / 10;
  Cluster c = TestCluster(4, memory, 5);
  c.InitLinks(100e9, 5);
  absl::StatusOr<SgpResult> r = RunSgp(g, c, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(r->devices_used, 2);
  Simulator sim(g, c);
  const SimulationResult& result = sim.Run(r->placement);
  EXPECT_FALSE(result.memory_overflow);
  // The split costs no time: the attention branches overlap across devices.
  EXPECT_LE(result.step_time_us, SingleDeviceStepUs(g));
}

// A transformer stack's parallelism is only about 1.2 — the attention
// branches beside the main path — yet on fast links running them on another
// device shortens the step well below one device's (contiguous segments of
// the topological order could not).
TEST(SgpTest, BranchesBesideTheMainPathOverlapOnAnotherDevice) {
  CostGraph g = bench::MakeGraph(bench::GraphFamily::kTransformerStack, 1000, 1);
  Cluster c = TestCluster(4, int64_t{1} << 50, 5);
  c.InitLinks(100e9, 5);
  absl::StatusOr<SgpResult> r = RunSgp(g, c, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(r->strategy, "segments");
  Simulator sim(g, c);
  const double step_us = sim.Run(r->placement).step_time_us;
  EXPECT_LE(step_us, 0.95 * SingleDeviceStepUs(g));
  EXPECT_LE(step_us, 1.06 * costmodel::ComputeLowerBound(g, c).bound_us);
}

// M micro-batches through D contiguous stages idle for the fill and drain,
// (M + D - 1) / M of the balanced step: 1.75 for 4 and 4. Interleaved
// stages, chunk i of the order on device i mod D, cut the idle part.
TEST(SgpTest, PipelinedChainIsInterleavedAcrossDevices) {
  CostGraph g = BuildGraph(Chain(std::vector<int64_t>(63, 100)));
  Cluster c = TestCluster(4, kGiB);
  SearchOptions options;
  options.microbatches = 4;
  absl::StatusOr<SgpResult> r = RunSgp(g, c, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->strategy, "interleaved segments");
  int runs = 1;  // runs of one device along the chain
  for (uint32_t u = 1; u < g.num_units(); ++u)
    runs += r->placement.device[u] != r->placement.device[u - 1];
  EXPECT_GT(runs, 4);

  Placement contiguous;
  for (uint32_t u = 0; u < g.num_units(); ++u)
    contiguous.device.push_back(static_cast<int32_t>(u / 16));
  Simulator sim(g, c);
  const double contiguous_us = sim.Run(contiguous, {.microbatches = 4}).step_time_us;
  const double interleaved_us = sim.Run(r->placement, {.microbatches = 4}).step_time_us;
  EXPECT_LT(interleaved_us, 0.8 * contiguous_us);
  EXPECT_LE(interleaved_us, 1.3 * costmodel::ComputeLowerBound(g, c, 4).bound_us);
}

// On a long chain the interleaved candidates are fewer — their simulations
// are bounded — but still there.
TEST(SgpTest, LongPipelinedChainIsInterleavedWithinABoundedNumberOfSimulations) {
  CostGraph g = BuildGraph(Chain(std::vector<int64_t>(19999, 100)));
  SearchOptions options;
  options.microbatches = 4;
  absl::StatusOr<SgpResult> r = RunSgp(g, TestCluster(4, kGiB), options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->strategy, "interleaved segments");
  EXPECT_LE(r->simulations, 8);
}

// One micro-batch gains nothing from a pipeline: the chain stays on one
// device, as before interleaved stages existed.
TEST(SgpTest, ChainWithOneMicroBatchIsNotInterleaved) {
  CostGraph g = BuildGraph(Chain(std::vector<int64_t>(63, 100)));
  absl::StatusOr<SgpResult> r = RunSgp(g, TestCluster(4, kGiB), {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->strategy, "segments");
  EXPECT_EQ(DevicesOf(r->placement, 0, g.num_units()).size(), 1u);
}

TEST(SgpTest, EmptyGraphAndOneDevice) {
  CostGraph empty = BuildGraph({});
  EXPECT_TRUE(PlaceOrDie(empty, TestCluster(2, kGiB)).device.empty());
  CostGraph g = BuildGraph(testing::RandomDag(50, 7));
  Placement p = PlaceOrDie(g, TestCluster(1, kGiB));
  EXPECT_EQ(DevicesOf(p, 0, g.num_units()), std::set<int32_t>{0});
}

TEST(SgpTest, RejectsAClusterTheGraphHasNoTimesFor) {
  CostGraph g = BuildGraph(Chain({100}));
  Cluster c = FastAndSlow(kGiB);  // kind 1, but the graph has one kind
  EXPECT_EQ(PlaceSgp(g, c, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace autopar::search
