// m-TOPO: the topological order in runs of a balanced share per device,
// within each device's memory.
#include "search/m_topo.h"

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
using testing::Chain;
using ::testing::ElementsAre;
using testing::ExpectFeasible;
using testing::TestCluster;

constexpr int64_t kGiB = int64_t{1} << 30;

TEST(MTopoTest, SplitsTheOrderIntoEqualShares) {
  CostGraph g = BuildGraph(Chain({100, 100, 100}));
  Cluster c = TestCluster(2, kGiB);
  absl::StatusOr<Placement> p = PlaceMTopo(g, c, {});
  // 0–1 on device 0, 2–3 on device 1: 20 µs each, one 1.1 µs transfer.
  EXPECT_NEAR(ExpectFeasible(g, c, p), 41.1, 1e-9);
  EXPECT_THAT(p->device, ElementsAre(0, 0, 1, 1));
  EXPECT_THAT(p->priority, ElementsAre(0, 1, 2, 3));
}

TEST(MTopoTest, AFasterDeviceTakesALargerShare) {
  // Six 10 µs units; device 1 takes 20 µs each. Share T = 1 / (1/60 + 1/120)
  // = 40 µs: four units on device 0, two on device 1.
  CostGraph g = BuildGraph(Chain({100, 100, 100, 100, 100}), /*kinds=*/2, /*slowdown=*/2);
  Cluster c = TestCluster(2, kGiB);
  c.kinds.push_back(c.kinds[0]);
  c.devices[1].kind = 1;
  absl::StatusOr<Placement> p = PlaceMTopo(g, c, {});
  ExpectFeasible(g, c, p);
  EXPECT_THAT(p->device, ElementsAre(0, 0, 0, 0, 1, 1));
}

TEST(MTopoTest, ADeviceWithoutRoomForItsSharePassesItOn) {
  // Units of 1,000 parameter bytes and 100-byte tensors, share two units per
  // device; device 0 holds one unit: 1 100 bytes, a second would need 2 200.
  CostGraph g = BuildGraph(Chain({100, 100, 100, 100, 100}, 10, 1000));
  Cluster c = TestCluster(3, kGiB);
  c.devices[0].memory_bytes = 1500;
  absl::StatusOr<Placement> p = PlaceMTopo(g, c, {});
  ExpectFeasible(g, c, p);
  EXPECT_THAT(p->device, ElementsAre(0, 1, 1, 2, 2, 2));
}

TEST(MTopoTest, FallsBackToFillingDevicesByMemory) {
  // Shares of two units leave two for device 1, which holds one; filled by
  // memory, device 0 takes three.
  CostGraph g = BuildGraph(Chain({100, 100, 100}, 10, 1000));
  Cluster c = TestCluster(2, 3500);
  c.devices[1].memory_bytes = 1500;
  absl::StatusOr<Placement> p = PlaceMTopo(g, c, {});
  ExpectFeasible(g, c, p);
  EXPECT_THAT(p->device, ElementsAre(0, 0, 0, 1));
}

TEST(MTopoTest, SaysWhenTheModelDoesNotFit) {
  CostGraph g = BuildGraph(Chain({100, 100, 100}, 10, 1000));
  testing::ExpectDoesNotFit(g, TestCluster(2, 1500), PlaceMTopo);
}

TEST(MTopoTest, FitsTightMemoryAndIsDeterministic) {
  CostGraph g = BuildGraph(testing::RandomDag(300, 11));
  Cluster c = TestCluster(4, MinimumMemoryBytes(g) / 2);
  testing::ExpectFeasibleAndDeterministic(g, c, PlaceMTopo);
}

}  // namespace
}  // namespace autopar::search
