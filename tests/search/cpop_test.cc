// CPOP on the example graph of its paper (the published priorities, critical
// path and its processor), the critical path kept on one device, memory
// limits, and the placer's shared checks.
#include "search/cpop.h"

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/simulator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/feasibility.h"
#include "tests/search/placer_testing.h"
#include "tests/search/test_graphs.h"

namespace autopar::search {
namespace {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;
using testing::BuildGraph;
using ::testing::ElementsAre;
using testing::OneDevicePerKind;
using testing::RandomDag;
using testing::TestCluster;
using testing::TopcuogluExample;

constexpr int64_t kGiB = int64_t{1} << 30;

TEST(CpopTest, PaperExamplePrioritiesCriticalPathAndProcessor) {
  const CpopPriorities p = ComputeCpopPriorities(TopcuogluExample(), OneDevicePerKind(3));
  // rank_u + rank_d as the paper tabulates them (Table 2): |CP| = 108.
  const std::vector<double> published = {108, 108, 105, 102, 93, 90.333, 105, 102.333, 108, 108};
  ASSERT_EQ(p.priority.size(), published.size());
  for (size_t u = 0; u < published.size(); ++u) {
    EXPECT_NEAR(p.priority[u], published[u], 1e-3) << "n" << u + 1;
  }
  // n1 → n2 → n9 → n10, on p2 (54 µs there; 66 on p1, 63 on p3).
  EXPECT_THAT(p.critical_path, ElementsAre(0, 1, 8, 9));
  EXPECT_EQ(p.critical_device, 1);
}

TEST(CpopTest, PaperExampleScheduleKeepsTheCriticalPathOnItsProcessor) {
  const CostGraph graph = TopcuogluExample();
  const Cluster cluster = OneDevicePerKind(3);
  std::optional<HeftSchedule> schedule = ScheduleCpop(graph, cluster, {});
  ASSERT_TRUE(schedule.has_value());
  for (uint32_t u : {0u, 1u, 8u, 9u}) EXPECT_EQ(schedule->placement.device[u], 1) << "n" << u + 1;
  // The published CPOP schedule (Fig. 3b) ends at 86.
  EXPECT_DOUBLE_EQ(schedule->makespan_us, 86);
  // Every unit starts after its inputs arrive.
  for (uint32_t u = 0; u < graph.num_units(); ++u) {
    for (uint32_t e : graph.in_edges(u)) {
      const uint32_t src = graph.edge_src(e);
      const double arrival = schedule->finish_us[src] +
                             cluster.TransferUs(schedule->placement.device[src],
                                                schedule->placement.device[u], graph.edge_bytes(e));
      EXPECT_GE(schedule->placement.priority[u], arrival - 1e-9) << "n" << u + 1;
    }
  }
}

TEST(CpopTest, PlacesWithinMemoryAndIsDeterministic) {
  for (uint64_t seed : {1, 2, 3}) {
    testing::GraphSpec spec = RandomDag(80, seed, 6);
    for (testing::GraphSpec::Unit& unit : spec.units) unit.param_bytes = 100000;
    const CostGraph graph = BuildGraph(spec);
    testing::ExpectFeasibleAndDeterministic(graph, TestCluster(3, kGiB), PlaceCpop);
    testing::ExpectFeasibleAndDeterministic(
        graph, TestCluster(3, MinimumMemoryBytes(graph) * 45 / 100), PlaceCpop);
  }
}

TEST(CpopTest, ModelThatFitsNowhereIsResourceExhausted) {
  testing::GraphSpec spec = RandomDag(20, 1, 4);
  for (testing::GraphSpec::Unit& unit : spec.units) unit.param_bytes = 1000;
  const CostGraph graph = BuildGraph(spec);
  const Cluster cluster = TestCluster(2, MinimumMemoryBytes(graph) / 4);
  EXPECT_EQ(PlaceCpop(graph, cluster, {}).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(CpopTest, ReachableByName) {
  const CostGraph graph = BuildGraph(RandomDag(30, 4));
  const Cluster cluster = TestCluster(2, kGiB);
  EXPECT_THAT(AlgorithmNames(), ::testing::Contains("cpop"));
  testing::ExpectFeasible(graph, cluster, Place("cpop", graph, cluster, {}));
}

}  // namespace
}  // namespace autopar::search
