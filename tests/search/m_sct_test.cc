// m-SCT: the favourite-child rule, and favourites kept on their parents'
// devices where plain ETF would move them.
#include "search/m_sct.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/feasibility.h"
#include "search/m_etf.h"
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
using testing::TestCluster;

constexpr int64_t kGiB = int64_t{1} << 30;

// 0 → 1 (1,000 bytes: 2 µs between devices) and 0 → 2 (5,000 bytes: 6 µs),
// 10 µs each.
GraphSpec Fork() {
  GraphSpec spec;
  spec.units.assign(3, {10, 0});
  spec.edges = {{0, 1, 1000}, {0, 2, 5000}};
  return spec;
}

TEST(MSctTest, TheFavouriteIsTheChildOnTheLongestPath) {
  // Through 0 → 2 the path is 10 + 6 + 10, through 0 → 1 only 10 + 2 + 10.
  CostGraph g = BuildGraph(Fork());
  EXPECT_THAT(FavouriteChildren(g, TestCluster(2, kGiB)), ElementsAre(2, -1, -1));
}

TEST(MSctTest, AUnitIsTheFavouriteOfOneParentAtMost) {
  // 0 → 2 and 1 → 2: the heavier edge (1 → 2) wins, 0 has no favourite.
  GraphSpec spec;
  spec.units.assign(3, {10, 0});
  spec.edges = {{0, 2, 1000}, {1, 2, 3000}};
  CostGraph g = BuildGraph(spec);
  EXPECT_THAT(FavouriteChildren(g, TestCluster(2, kGiB)), ElementsAre(-1, 2, -1));
}

TEST(MSctTest, OneDeviceHasNoFavourites) {
  CostGraph g = BuildGraph(Fork());
  EXPECT_THAT(FavouriteChildren(g, TestCluster(1, kGiB)), ElementsAre(-1, -1, -1));
}

TEST(MSctTest, TheFavouriteRunsRightAfterItsParent) {
  // ETF: 1 (lower index, same level) follows 0 on d0 at 10; 2 waits for its
  // 6 µs transfer and runs on d1 at 16: step 26. SCT: 2, the favourite,
  // follows 0 at 10; 1 runs on d1 at 12: step 22.
  CostGraph g = BuildGraph(Fork());
  Cluster c = TestCluster(2, kGiB);
  absl::StatusOr<Placement> etf = PlaceMEtf(g, c, {});
  EXPECT_DOUBLE_EQ(ExpectFeasible(g, c, etf), 26);
  EXPECT_THAT(etf->device, ElementsAre(0, 0, 1));
  absl::StatusOr<Placement> sct = PlaceMSct(g, c, {});
  EXPECT_DOUBLE_EQ(ExpectFeasible(g, c, sct), 22);
  EXPECT_THAT(sct->device, ElementsAre(0, 1, 0));
  EXPECT_THAT(sct->priority, ElementsAre(0, 12, 10));
}

TEST(MSctTest, AFavouriteWithoutRoomCompetesLikeAnyUnit) {
  // Device 0 holds unit 0 (1,000 parameter bytes and its 6,000 bytes of
  // tensors) and then room for unit 1 (1,000) but not for the favourite 2
  // (2,000): 2 is not urgent; ETF puts 1 after 0 and 2 on device 1.
  GraphSpec spec = Fork();
  spec.units[0].param_bytes = 1000;
  spec.units[1].param_bytes = 1000;
  spec.units[2].param_bytes = 2000;
  CostGraph g = BuildGraph(spec);
  Cluster c = TestCluster(2, kGiB);
  c.devices[0].memory_bytes = 8000;
  absl::StatusOr<Placement> p = PlaceMSct(g, c, {});
  ExpectFeasible(g, c, p);
  EXPECT_THAT(p->device, ElementsAre(0, 0, 1));
}

TEST(MSctTest, SaysWhenTheModelDoesNotFit) {
  CostGraph g = BuildGraph(testing::Chain({100, 100, 100}, 10, 1000));
  testing::ExpectDoesNotFit(g, TestCluster(2, 1500), PlaceMSct);
}

TEST(MSctTest, FitsTightMemoryAndIsDeterministic) {
  CostGraph g = BuildGraph(testing::RandomDag(400, 5, /*window=*/30));
  Cluster c = TestCluster(4, MinimumMemoryBytes(g) / 2);
  testing::ExpectFeasibleAndDeterministic(g, c, PlaceMSct);
}

}  // namespace
}  // namespace autopar::search
