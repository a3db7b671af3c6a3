// Round-robin: units dealt in turn, devices without room skipped.
#include "search/round_robin.h"

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
using testing::ExpectFeasible;
using testing::GraphSpec;
using testing::Independent;
using testing::TestCluster;

constexpr int64_t kGiB = int64_t{1} << 30;

TEST(RoundRobinTest, DealsUnitsInTurnInTopologicalOrder) {
  CostGraph g = BuildGraph(testing::Chain({100, 100, 100, 100}));
  Cluster c = TestCluster(2, kGiB);
  absl::StatusOr<Placement> p = PlaceRoundRobin(g, c, {});
  ExpectFeasible(g, c, p);
  EXPECT_THAT(p->device, ElementsAre(0, 1, 0, 1, 0));
  EXPECT_THAT(p->priority, ElementsAre(0, 1, 2, 3, 4));
}

TEST(RoundRobinTest, SkipsADeviceWithoutRoom) {
  CostGraph g = BuildGraph(Independent(6, 1000));
  Cluster c = TestCluster(3, kGiB);
  c.devices[1].memory_bytes = 500;  // holds no unit
  absl::StatusOr<Placement> p = PlaceRoundRobin(g, c, {});
  ExpectFeasible(g, c, p);
  EXPECT_THAT(p->device, ElementsAre(0, 2, 0, 2, 0, 2));
}

TEST(RoundRobinTest, FullDevicesDropOutOfTheTurn) {
  // Device 0 holds two units, device 1 four: 0 1 0 1, then only 1 is left.
  CostGraph g = BuildGraph(Independent(6, 1000));
  Cluster c = TestCluster(2, 4000);
  c.devices[0].memory_bytes = 2000;
  absl::StatusOr<Placement> p = PlaceRoundRobin(g, c, {});
  ExpectFeasible(g, c, p);
  EXPECT_THAT(p->device, ElementsAre(0, 1, 0, 1, 1, 1));
}

TEST(RoundRobinTest, SaysWhenTheModelDoesNotFit) {
  CostGraph g = BuildGraph(Independent(4, 1000));
  testing::ExpectDoesNotFit(g, TestCluster(2, 1500), PlaceRoundRobin);
}

TEST(RoundRobinTest, FitsTightMemoryAndIsDeterministic) {
  CostGraph g = BuildGraph(testing::RandomDag(300, 7));
  Cluster c = TestCluster(4, MinimumMemoryBytes(g) / 2);
  testing::ExpectFeasibleAndDeterministic(g, c, PlaceRoundRobin);
}

TEST(RoundRobinTest, EmptyGraphGetsAnEmptyPlacement) {
  CostGraph g = BuildGraph(GraphSpec{});
  absl::StatusOr<Placement> p = PlaceRoundRobin(g, TestCluster(2, kGiB), {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->device.empty());
}

}  // namespace
}  // namespace autopar::search
