// The search interface: dispatch by name, and the single-device baseline.
#include "search/search.h"

#include "costmodel/simulator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/feasibility.h"
#include "search/single_device.h"
#include "tests/search/test_graphs.h"

namespace autopar::search {
namespace {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;
using testing::BuildGraph;
using ::testing::Contains;
using ::testing::HasSubstr;
using testing::TestCluster;

constexpr int64_t kGiB = int64_t{1} << 30;

TEST(SearchTest, KnowsItsAlgorithms) {
  EXPECT_THAT(AlgorithmNames(), Contains("sgp"));
  EXPECT_THAT(AlgorithmNames(), Contains("single"));
  CostGraph g = BuildGraph(testing::RandomDag(30, 1));
  Cluster c = TestCluster(2, kGiB);
  for (const std::string& name : AlgorithmNames()) {
    absl::StatusOr<Placement> p = Place(name, g, c, {.max_iterations = 20});
    ASSERT_TRUE(p.ok()) << name << ": " << p.status();
    EXPECT_TRUE(costmodel::CheckPlacement(g, c, *p).ok()) << name;
  }
}

TEST(SearchTest, UnknownAlgorithmIsAnInvalidArgument) {
  CostGraph g = BuildGraph(testing::Chain({100}));
  absl::StatusOr<Placement> p = Place("nope", g, TestCluster(2, kGiB), {});
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("'nope'"));
  EXPECT_THAT(p.status().message(), HasSubstr("sgp"));
}

TEST(SingleDeviceTest, PicksTheFastestDeviceThatHoldsTheModel) {
  // Device 0 is fast but small, 1 slow and large, 2 fast and large.
  CostGraph g = BuildGraph(testing::Chain({100, 100, 100}, 10, 1000), /*kinds=*/2);
  const int64_t needed = MinimumMemoryBytes(g);
  Cluster c = TestCluster(3, needed);
  c.kinds.push_back(c.kinds[0]);
  c.devices[0].memory_bytes = needed - 1;
  c.devices[1].kind = 1;
  absl::StatusOr<Placement> p = PlaceSingleDevice(g, c, {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->device, std::vector<int32_t>(4, 2));
  // The simulator agrees that it fits exactly.
  costmodel::Simulator sim(g, c);
  const costmodel::SimulationResult& r = sim.Run(*p);
  EXPECT_EQ(r.devices[2].peak_memory_bytes, needed);
  EXPECT_FALSE(r.memory_overflow);
}

TEST(SingleDeviceTest, NoDeviceHoldsTheModel) {
  CostGraph g = BuildGraph(testing::Chain({100, 100, 100}, 10, 1000));
  absl::StatusOr<Placement> p = Place("single", g, TestCluster(2, 2500), {});
  ASSERT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(p.status().message(), HasSubstr(std::to_string(MinimumMemoryBytes(g))));
}

}  // namespace
}  // namespace autopar::search
