// The shared memory repair: it makes a plan that overflows fit where a naive
// placement does not, keeps plans that already fit, gives up cleanly when
// nothing can fit; and the placers agree about feasibility (no placer says
// "does not fit" where another found a plan, and the devices the error
// message asks for do hold the model).
#include "search/memory_repair.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "costmodel/simulator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/feasibility.h"
#include "search/search.h"
#include "tests/search/placer_testing.h"
#include "tests/search/test_graphs.h"

namespace autopar::search {
namespace {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;
using testing::BuildGraph;
using testing::GraphSpec;
using testing::RandomDag;
using testing::TestCluster;

CostGraph Weighted(uint32_t units, uint64_t seed, int64_t param_bytes = 100000) {
  GraphSpec spec = RandomDag(units, seed, 6);
  for (GraphSpec::Unit& unit : spec.units) unit.param_bytes = param_bytes;
  return BuildGraph(spec);
}

int64_t Overflow(const CostGraph& graph, const Cluster& cluster, const Placement& placement) {
  costmodel::Simulator simulator(graph, cluster);
  return simulator.Run(placement).overflow_bytes;
}

TEST(MemoryRepairTest, MakesANaivePlacementFit) {
  // Everything on device 0 needs 2.5× what a device holds; three devices
  // hold it together.
  const CostGraph graph = Weighted(60, 7);
  const Cluster cluster = TestCluster(3, MinimumMemoryBytes(graph) * 4 / 10);
  Placement naive{.device = std::vector<int32_t>(graph.num_units(), 0)};
  ASSERT_GT(Overflow(graph, cluster, naive), 0);
  const std::optional<Placement> repaired = RepairMemory(graph, cluster, naive);
  ASSERT_TRUE(repaired.has_value());
  EXPECT_EQ(Overflow(graph, cluster, *repaired), 0);
  EXPECT_TRUE(costmodel::CheckPlacement(graph, cluster, *repaired).ok());
}

TEST(MemoryRepairTest, KeepsAPlanThatFitsAndItsPriorities) {
  const CostGraph graph = Weighted(30, 3);
  const Cluster cluster = TestCluster(2, int64_t{1} << 30);
  Placement plan{.device = std::vector<int32_t>(graph.num_units(), 1),
                 .priority = std::vector<double>(graph.num_units(), 0)};
  for (uint32_t u = 0; u < graph.num_units(); ++u) plan.priority[u] = -static_cast<double>(u);
  const std::optional<Placement> repaired = RepairMemory(graph, cluster, plan);
  ASSERT_TRUE(repaired.has_value());
  EXPECT_EQ(repaired->device, plan.device);
  EXPECT_EQ(repaired->priority, plan.priority);
}

TEST(MemoryRepairTest, GivesUpWhenTheClusterCannotHoldTheModel) {
  const CostGraph graph = Weighted(40, 5);
  const Cluster cluster = TestCluster(2, MinimumMemoryBytes(graph) / 4);
  Placement naive{.device = std::vector<int32_t>(graph.num_units(), 0)};
  EXPECT_FALSE(RepairMemory(graph, cluster, naive).has_value());
  const absl::StatusOr<Placement> none = RepairOrGiveUp(graph, cluster, 1, naive);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(MemoryRepairTest, BalancedSplitIsContiguousAndUsesEveryDevice) {
  const CostGraph graph = Weighted(90, 9);
  const Placement split = MemoryBalancedSplit(graph, TestCluster(3, int64_t{1} << 30));
  ASSERT_EQ(split.device.size(), 90u);
  EXPECT_EQ(split.device.front(), 0);
  EXPECT_EQ(split.device.back(), 2);
  for (uint32_t u = 1; u < 90; ++u) {
    EXPECT_GE(split.device[u], split.device[u - 1]);
    EXPECT_LE(split.device[u], split.device[u - 1] + 1);
  }
}

// The "about N devices" of an error message, 0 when it names none.
int DevicesAskedFor(const absl::Status& status) {
  const std::string message(status.message());
  const size_t at = message.find("about ");
  if (at == std::string::npos) return 0;
  int devices = 0;
  const size_t end = message.find(' ', at + 6);
  if (!absl::SimpleAtoi(message.substr(at + 6, end - at - 6), &devices)) return 0;
  return devices;
}

TEST(FeasibilityParityTest, NoPlacerGivesUpWhereAnotherFoundAPlan) {
  SearchOptions options;
  options.max_iterations = 5;
  options.time_budget_s = 60;
  int cases_with_a_plan = 0;
  for (uint64_t seed : {21, 22, 23}) {
    // Weights of uneven size, so that the segments' estimates matter.
    GraphSpec spec = RandomDag(80, seed, 6);
    for (uint32_t u = 0; u < spec.units.size(); ++u) {
      spec.units[u].param_bytes = 1000 + (u * 7919 + seed * 104729) % 200000;
    }
    const CostGraph graph = BuildGraph(spec);
    for (int devices : {2, 3, 4}) {
      // From roomy to hopeless: where some placers used to give up early.
      for (int percent : {112, 108, 105, 103, 101}) {
        const Cluster cluster =
            TestCluster(devices, MinimumMemoryBytes(graph) * percent / (100 * devices));
        std::vector<std::string> fitted, failed;
        absl::Status failure;
        for (const std::string& name : AlgorithmNames()) {
          if (name == "single") continue;  // one device by definition
          const absl::StatusOr<Placement> plan = Place(name, graph, cluster, options);
          if (plan.ok()) {
            EXPECT_EQ(Overflow(graph, cluster, *plan), 0) << name;
            fitted.push_back(name);
            continue;
          }
          ASSERT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted)
              << name << ": " << plan.status();
          failed.push_back(name);
          failure = plan.status();
        }
        SCOPED_TRACE(::testing::Message()
                     << "seed " << seed << ", " << devices << " devices, " << percent << "%");
        if (!fitted.empty()) {
          ++cases_with_a_plan;
          EXPECT_THAT(failed, ::testing::IsEmpty()) << "fitted: " << fitted.front();
          continue;
        }
        // Nobody fitted: the devices the message asks for do hold it.
        const int asked = DevicesAskedFor(failure);
        if (asked == 0) continue;
        EXPECT_GT(asked, devices);
        const Cluster larger = TestCluster(asked, cluster.device(0).memory_bytes);
        EXPECT_TRUE(Place("tga", graph, larger, options).ok()) << failure;
      }
    }
  }
  EXPECT_GT(cases_with_a_plan, 0);
}

}  // namespace
}  // namespace autopar::search
