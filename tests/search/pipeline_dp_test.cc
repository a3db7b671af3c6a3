// The contiguous pipeline partition on chains whose best split is known by
// hand, against brute force on small random graphs, and its memory promises.
#include "search/pipeline_dp.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "costmodel/simulator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/feasibility.h"
#include "search/schedule_estimate.h"
#include "tests/search/test_graphs.h"
#include "tools/bench/graph_families.h"

namespace autopar::search {
namespace {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;
using testing::BuildGraph;
using testing::Chain;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TestCluster;

constexpr int64_t kGiB = int64_t{1} << 30;

PipelineDpResult RunOrDie(const CostGraph& graph, const Cluster& cluster) {
  absl::StatusOr<PipelineDpResult> result = RunPipelineDp(graph, cluster, {});
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return {};
  EXPECT_TRUE(costmodel::CheckPlacement(graph, cluster, result->placement).ok());
  return *std::move(result);
}

TEST(PipelineDpTest, BalancesAChain) {
  // Eight units of 10 µs; a cut costs the 1 µs latency. Stages of four:
  // 40 and 40 + 1.
  const PipelineDpResult r =
      RunOrDie(BuildGraph(Chain(std::vector<int64_t>(7, 0))), TestCluster(2, kGiB));
  EXPECT_THAT(r.devices, ElementsAre(0, 1));
  EXPECT_THAT(r.bounds, ElementsAre(0, 4, 8));
  EXPECT_DOUBLE_EQ(r.max_stage_us, 41);
  EXPECT_THAT(r.placement.device, ElementsAre(0, 0, 0, 0, 1, 1, 1, 1));
}

TEST(PipelineDpTest, CutsWhereTransfersAreCheap) {
  // Cutting in the middle costs 1 + 30 µs; after the third unit 1 + 1 µs:
  // stages 30 and 10 + 2 beat 20 and 20 + 31, and one device's 40.
  const PipelineDpResult r = RunOrDie(BuildGraph(Chain({1000, 30000, 1000})), TestCluster(2, kGiB));
  EXPECT_THAT(r.bounds, ElementsAre(0, 3, 4));
  EXPECT_DOUBLE_EQ(r.max_stage_us, 30);
}

TEST(PipelineDpTest, FasterDeviceTakesMoreWork) {
  // Device 1 is twice as slow: four units on device 0 (40 µs), two on
  // device 1 (2 · 20 + 1 µs).
  const CostGraph graph = BuildGraph(Chain(std::vector<int64_t>(5, 0)), /*kinds=*/2);
  Cluster cluster = TestCluster(2, kGiB);
  cluster.kinds.push_back(cluster.kinds[0]);
  cluster.devices[1].kind = 1;
  const PipelineDpResult r = RunOrDie(graph, cluster);
  EXPECT_THAT(r.bounds, ElementsAre(0, 4, 6));
  EXPECT_DOUBLE_EQ(r.max_stage_us, 41);
}

TEST(PipelineDpTest, LeavesAVerySlowDeviceEmpty) {
  const CostGraph graph = BuildGraph(Chain(std::vector<int64_t>(5, 0)), /*kinds=*/2,
                                     /*slowdown=*/100);
  Cluster cluster = TestCluster(3, kGiB);
  cluster.kinds.push_back(cluster.kinds[0]);
  cluster.devices[1].kind = 1;
  const PipelineDpResult r = RunOrDie(graph, cluster);
  EXPECT_THAT(r.devices, ElementsAre(0, 2));
  EXPECT_THAT(r.bounds, ElementsAre(0, 3, 6));
}

// The least largest stage over every split into at most three stages on
// devices 0, 1, 2 in order, by enumeration.
double BruteForce(const CostGraph& graph, const Cluster& cluster) {
  const uint32_t n = graph.num_units();
  const TypicalLink link = ComputeTypicalLink(cluster);
  auto boundary_us = [&](uint32_t b) {
    double total = 0;
    for (uint32_t t = 0; t < graph.num_tensors(); ++t) {
      uint32_t last = graph.tensor_producer(t);
      for (uint32_t e : graph.tensor_uses(t)) last = std::max(last, graph.edge_dst(e));
      if (graph.tensor_producer(t) < b && b <= last)
        total += link.TransferUs(graph.tensor_bytes(t));
    }
    return total;
  };
  auto stage_us = [&](int device, uint32_t begin, uint32_t end) {
    if (begin == end) return 0.0;
    double compute = 0;
    for (uint32_t u = begin; u < end; ++u) {
      compute += graph.compute_us(u, cluster.device(device).kind);
    }
    return compute + boundary_us(begin);
  };
  double best = std::numeric_limits<double>::infinity();
  for (uint32_t b1 = 0; b1 <= n; ++b1) {
    for (uint32_t b2 = b1; b2 <= n; ++b2) {
      best =
          std::min(best, std::max({stage_us(0, 0, b1), stage_us(1, b1, b2), stage_us(2, b2, n)}));
    }
  }
  return best;
}

TEST(PipelineDpTest, MatchesBruteForce) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const CostGraph graph = BuildGraph(testing::RandomDag(14, seed, /*window=*/4), /*kinds=*/2);
    Cluster cluster = TestCluster(3, kGiB, /*latency_us=*/3);
    cluster.kinds.push_back(cluster.kinds[0]);
    cluster.devices[seed % 3].kind = 1;
    const PipelineDpResult r = RunOrDie(graph, cluster);
    const double expected = BruteForce(graph, cluster);
    EXPECT_NEAR(r.max_stage_us, expected, 1e-6 * expected) << "seed " << seed;
  }
}

TEST(PipelineDpTest, RespectsMemory) {
  // Nine units of 1,000 parameter bytes; each device holds about four.
  const CostGraph graph = BuildGraph(Chain(std::vector<int64_t>(8, 100), 10, 1000));
  const Cluster cluster = TestCluster(3, 4500);
  const PipelineDpResult r = RunOrDie(graph, cluster);
  EXPECT_EQ(r.devices.size(), 3u);
  for (size_t j = 0; j + 1 < r.bounds.size(); ++j) EXPECT_LE(r.bounds[j + 1] - r.bounds[j], 4u);
  costmodel::Simulator simulator(graph, cluster);
  EXPECT_FALSE(simulator.Run(r.placement).memory_overflow);
}

TEST(PipelineDpTest, SaysWhenNothingFits) {
  const CostGraph graph = BuildGraph(Chain(std::vector<int64_t>(8, 100), 10, 1000));
  absl::StatusOr<Placement> p = PlacePipelineDp(graph, TestCluster(2, 4500), {});
  ASSERT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(p.status().message(), HasSubstr("does not fit"));
}

TEST(PipelineDpTest, TightMemoryOnSyntheticGraphs) {
  for (bench::GraphFamily family : bench::AllGraphFamilies()) {
    const CostGraph graph = bench::MakeGraph(family, 3000, /*seed=*/1);
    const int64_t memory =
        static_cast<int64_t>(0.6 * static_cast<double>(MinimumMemoryBytes(graph)));
    const Cluster cluster = TestCluster(4, memory);
    absl::StatusOr<Placement> p = PlacePipelineDp(graph, cluster, {});
    ASSERT_TRUE(p.ok()) << bench::GraphFamilyName(family) << ": " << p.status();
    costmodel::Simulator simulator(graph, cluster);
    EXPECT_FALSE(simulator.Run(*p).memory_overflow) << bench::GraphFamilyName(family);
  }
}

TEST(PipelineDpTest, Deterministic) {
  const CostGraph graph = bench::MakeGraph(bench::GraphFamily::kTransformerStack, 5000, 3);
  const Cluster cluster = TestCluster(8, 64 * kGiB);
  const PipelineDpResult a = RunOrDie(graph, cluster);
  const PipelineDpResult b = RunOrDie(graph, cluster);
  EXPECT_EQ(a.bounds, b.bounds);
  EXPECT_EQ(a.placement.device, b.placement.device);
}

}  // namespace
}  // namespace autopar::search
