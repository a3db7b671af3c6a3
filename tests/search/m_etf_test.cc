// m-ETF on schedules computed by hand, its memory limits, and its scale.
#include "search/m_etf.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/feasibility.h"
#include "tests/search/placer_testing.h"
#include "tests/search/test_graphs.h"
#include "tools/bench/graph_families.h"

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

TEST(MEtfTest, ForkJoinByHand) {
  // 0 → {1, 2} → 3, 10 µs each; 1,000-byte tensors take 2 µs between devices.
  //  - 0 on d0 at 0 (all tie; lowest device).
  //  - 1: d0 at 10 (free), d1 at 12 (transfer): d0 at 10.
  //  - 2: d0 at 20, d1 at 12: d1 at 12.
  //  - 3: d0 at max(20, 22 + 2) = 24, d1 at max(20 + 2, 22) = 22: d1 at 22.
  GraphSpec spec;
  spec.units.assign(4, {10, 0});
  spec.edges = {{0, 1, 1000}, {0, 2, 1000}, {1, 3, 1000}, {2, 3, 1000}};
  CostGraph g = BuildGraph(spec);
  Cluster c = TestCluster(2, kGiB);
  absl::StatusOr<Placement> p = PlaceMEtf(g, c, {});
  EXPECT_DOUBLE_EQ(ExpectFeasible(g, c, p), 32);
  EXPECT_THAT(p->device, ElementsAre(0, 0, 1, 1));
  EXPECT_THAT(p->priority, ElementsAre(0, 10, 12, 22));
}

TEST(MEtfTest, IndependentUnitsStartAsEarlyAsPossible) {
  CostGraph g = BuildGraph(Independent(4));
  Cluster c = TestCluster(2, kGiB);
  absl::StatusOr<Placement> p = PlaceMEtf(g, c, {});
  EXPECT_DOUBLE_EQ(ExpectFeasible(g, c, p), 20);
  EXPECT_THAT(p->device, ElementsAre(0, 1, 0, 1));
  EXPECT_THAT(p->priority, ElementsAre(0, 0, 10, 10));
}

TEST(MEtfTest, CostlyTransfersKeepAChainOnOneDevice) {
  CostGraph g = BuildGraph(testing::Chain({1000000, 1000000, 1000000, 1000000}));
  Cluster c = TestCluster(3, kGiB);
  absl::StatusOr<Placement> p = PlaceMEtf(g, c, {});
  EXPECT_DOUBLE_EQ(ExpectFeasible(g, c, p), 50);
  EXPECT_THAT(p->device, ElementsAre(0, 0, 0, 0, 0));
}

TEST(MEtfTest, EarliestStartNotEarliestFinish) {
  // ETF starts unit 1 at once on the idle device 1, ten times slower, though
  // device 0 would finish it sooner (HEFT's rule would).
  CostGraph g = BuildGraph(Independent(2), /*kinds=*/2, /*slowdown=*/10);
  Cluster c = TestCluster(2, kGiB);
  c.kinds.push_back(c.kinds[0]);
  c.devices[1].kind = 1;
  absl::StatusOr<Placement> p = PlaceMEtf(g, c, {});
  EXPECT_DOUBLE_EQ(ExpectFeasible(g, c, p), 100);
  EXPECT_THAT(p->device, ElementsAre(0, 1));
}

TEST(MEtfTest, ADeviceWithoutRoomIsPassedOver) {
  // Device 1 holds one unit: 0 → d0, 1 → d1, 2 → d0 (tie at 10), and 3,
  // which would start at 10 on d1, goes to d0 at 20.
  CostGraph g = BuildGraph(Independent(4, 1000));
  Cluster c = TestCluster(2, 3000);
  c.devices[1].memory_bytes = 1000;
  absl::StatusOr<Placement> p = PlaceMEtf(g, c, {});
  ExpectFeasible(g, c, p);
  EXPECT_THAT(p->device, ElementsAre(0, 1, 0, 0));
  EXPECT_THAT(p->priority, ElementsAre(0, 0, 10, 20));
}

TEST(MEtfTest, SaysWhenTheModelDoesNotFit) {
  CostGraph g = BuildGraph(Independent(4, 1000));
  testing::ExpectDoesNotFit(g, TestCluster(2, 1500), PlaceMEtf);
}

TEST(MEtfTest, FitsTightMemoryAndIsDeterministic) {
  CostGraph g = BuildGraph(testing::RandomDag(400, 3, /*window=*/30));
  Cluster c = TestCluster(4, MinimumMemoryBytes(g) / 2);
  testing::ExpectFeasibleAndDeterministic(g, c, PlaceMEtf);
}

TEST(MEtfTest, PlacesATenThousandUnitGraph) {
  // The scale the Python implementations take 18–85 s on
  // (tools/bench/baseline_bench prints the time; no timing is asserted).
  const CostGraph g = bench::MakeGraph(bench::GraphFamily::kLayeredDag, 10000, 1);
  Cluster c = TestCluster(4, kGiB * 64);
  absl::StatusOr<Placement> p = PlaceMEtf(g, c, {});
  ExpectFeasible(g, c, p);
}

}  // namespace
}  // namespace autopar::search
