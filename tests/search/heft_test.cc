// HEFT on the example graph of its paper (the published ranks, schedule and
// makespan), the insertion policy, memory limits, and the schedule's own
// consistency on random graphs.
#include "search/heft.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/lower_bound.h"
#include "costmodel/simulator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/feasibility.h"
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
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::OneDevicePerKind;
using testing::TaskGraph;
using testing::TestCluster;
using testing::TopcuogluExample;

constexpr int64_t kGiB = int64_t{1} << 30;

TEST(HeftTest, PaperExampleRanks) {
  const std::vector<double> rank = HeftUpwardRanks(TopcuogluExample(), OneDevicePerKind(3));
  const std::vector<double> published = {108,    77,     80,     80,     69,
                                         63.333, 42.667, 35.667, 44.333, 14.667};
  ASSERT_EQ(rank.size(), published.size());
  for (size_t u = 0; u < rank.size(); ++u) EXPECT_NEAR(rank[u], published[u], 1e-3) << "n" << u + 1;
}

TEST(HeftTest, PaperExampleSchedule) {
  const CostGraph graph = TopcuogluExample();
  std::optional<HeftSchedule> schedule = ScheduleHeft(graph, OneDevicePerKind(3), {});
  ASSERT_TRUE(schedule.has_value());
  // The published makespan, and the published schedule (Fig. 3a): processor
  // and start of every task.
  EXPECT_DOUBLE_EQ(schedule->makespan_us, 80);
  EXPECT_THAT(schedule->placement.device, ElementsAre(2, 0, 2, 1, 2, 1, 2, 0, 1, 1));
  EXPECT_THAT(schedule->placement.priority, ElementsAre(0, 27, 9, 18, 28, 26, 38, 57, 56, 73));
}

TEST(HeftTest, InsertsIntoIdleIntervals) {
  // n1 runs fast on p1, n2 fast on p2 and waits 5 µs for n1's tensor: p2 idles
  // over [0, 15). The independent n3, n4, n5 (fast on p2, lower rank) go into
  // that interval, and n6 — no room left — after n2.
  const CostGraph graph =
      TaskGraph({{10, 100}, {100, 10}, {50, 5}, {50, 5}, {50, 5}, {50, 5}}, {{0, 1, 5}});
  std::optional<HeftSchedule> schedule = ScheduleHeft(graph, OneDevicePerKind(2), {});
  ASSERT_TRUE(schedule.has_value());
  EXPECT_THAT(schedule->placement.device, ElementsAre(0, 1, 1, 1, 1, 1));
  EXPECT_THAT(schedule->placement.priority, ElementsAre(0, 15, 0, 5, 10, 25));
  EXPECT_DOUBLE_EQ(schedule->makespan_us, 30);
}

// The schedule HEFT plans is consistent: no two units overlap on a device and
// every unit starts after its inputs arrived (the paper's link model).
void ExpectConsistent(const CostGraph& graph, const Cluster& cluster,
                      const HeftSchedule& schedule) {
  const std::vector<int32_t>& device = schedule.placement.device;
  const std::vector<double>& start = schedule.placement.priority;
  for (uint32_t u = 0; u < graph.num_units(); ++u) {
    ASSERT_GE(device[u], 0);
    EXPECT_DOUBLE_EQ(schedule.finish_us[u],
                     start[u] + graph.compute_us(u, cluster.device(device[u]).kind));
    for (uint32_t e : graph.in_edges(u)) {
      const uint32_t src = graph.edge_src(e);
      const double arrival =
          schedule.finish_us[src] + cluster.TransferUs(device[src], device[u], graph.edge_bytes(e));
      EXPECT_GE(start[u], arrival - 1e-6) << "unit " << u;
    }
  }
  for (int d = 0; d < cluster.num_devices(); ++d) {
    std::vector<std::pair<double, double>> busy;
    for (uint32_t u = 0; u < graph.num_units(); ++u) {
      if (device[u] == d) busy.emplace_back(start[u], schedule.finish_us[u]);
    }
    std::sort(busy.begin(), busy.end());
    for (size_t i = 1; i < busy.size(); ++i) {
      EXPECT_GE(busy[i].first, busy[i - 1].second - 1e-6) << "overlap on device " << d;
    }
  }
}

TEST(HeftTest, SchedulesAreConsistentOnRandomGraphs) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const CostGraph graph = BuildGraph(testing::RandomDag(400, seed, /*window=*/30), /*kinds=*/2);
    Cluster cluster = TestCluster(4, kGiB, /*latency_us=*/2);
    cluster.kinds.push_back(cluster.kinds[0]);
    cluster.devices[1].kind = cluster.devices[3].kind = 1;
    std::optional<HeftSchedule> schedule = ScheduleHeft(graph, cluster, {});
    ASSERT_TRUE(schedule.has_value());
    ExpectConsistent(graph, cluster, *schedule);
  }
}

TEST(HeftTest, WideGraphNearTheLowerBound) {
  // Links of 100 GB/s: transfers well below the 10–100 µs of compute.
  const CostGraph graph = bench::MakeGraph(bench::GraphFamily::kLayeredDag, 2000, /*seed=*/1);
  costmodel::DeviceSpec spec;
  spec.name = "test";
  const Cluster cluster = costmodel::MakeHomogeneousCluster(spec, 4, kGiB, 100e9, 5);
  absl::StatusOr<Placement> placement = PlaceHeft(graph, cluster, {});
  ASSERT_TRUE(placement.ok()) << placement.status();
  ASSERT_TRUE(costmodel::CheckPlacement(graph, cluster, *placement).ok());
  costmodel::Simulator simulator(graph, cluster);
  const double heft_us = simulator.Run(*placement).step_time_us;
  const double single_us =
      simulator.Run({.device = std::vector<int32_t>(graph.num_units(), 0)}).step_time_us;
  EXPECT_LT(heft_us, 0.3 * single_us);
  EXPECT_LT(heft_us, 1.05 * costmodel::ComputeLowerBound(graph, cluster).bound_us);
}

TEST(HeftTest, RespectsMemory) {
  // Six units of 1,000 parameter bytes: no device holds all of them.
  const CostGraph graph = BuildGraph(Chain({100, 100, 100, 100, 100}, 10, 1000));
  ASSERT_GT(MinimumMemoryBytes(graph), 4000);
  const Cluster cluster = TestCluster(2, 3600);
  absl::StatusOr<Placement> placement = PlaceHeft(graph, cluster, {});
  ASSERT_TRUE(placement.ok()) << placement.status();
  costmodel::Simulator simulator(graph, cluster);
  const costmodel::SimulationResult& result = simulator.Run(*placement);
  EXPECT_FALSE(result.memory_overflow);
  EXPECT_GT(result.devices[0].units, 0);
  EXPECT_GT(result.devices[1].units, 0);
}

TEST(HeftTest, SaysWhenNothingFits) {
  const CostGraph graph = BuildGraph(Chain({100, 100, 100, 100, 100}, 10, 1000));
  absl::StatusOr<Placement> placement = PlaceHeft(graph, TestCluster(2, 2500), {});
  ASSERT_EQ(placement.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(placement.status().message(), HasSubstr("does not fit"));
}

TEST(HeftTest, Deterministic) {
  const CostGraph graph = BuildGraph(testing::RandomDag(1000, 7, /*window=*/20));
  const Cluster cluster = TestCluster(4, kGiB);
  absl::StatusOr<Placement> a = PlaceHeft(graph, cluster, {});
  absl::StatusOr<Placement> b = PlaceHeft(graph, cluster, {.seed = 99});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_THAT(a->device, ElementsAreArray(b->device));
  EXPECT_THAT(a->priority, ElementsAreArray(b->priority));
}

TEST(HeftTest, EmptyGraph) {
  const CostGraph graph = BuildGraph(testing::GraphSpec{});
  absl::StatusOr<Placement> placement = PlaceHeft(graph, TestCluster(2, kGiB), {});
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_TRUE(placement->device.empty());
}

}  // namespace
}  // namespace autopar::search
