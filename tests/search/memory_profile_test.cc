// The memory estimates against the simulator, and SegmentEnds by hand.
#include "search/memory_profile.h"

#include <numeric>

#include "costmodel/simulator.h"
#include "gtest/gtest.h"
#include "search/feasibility.h"
#include "tests/search/test_graphs.h"

namespace autopar::search {
namespace {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;
using testing::BuildGraph;
using testing::TestCluster;

TEST(MemoryProfileTest, SingleDevicePeakIsTheSimulatorsInTopologicalOrder) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    CostGraph g = BuildGraph(testing::RandomDag(80, seed));
    Cluster c = TestCluster(1, int64_t{1} << 40);
    Placement p;
    p.device.assign(g.num_units(), 0);
    p.priority.resize(g.num_units());
    std::iota(p.priority.begin(), p.priority.end(), 0.0);
    costmodel::Simulator sim(g, c);
    EXPECT_EQ(sim.Run(p).devices[0].peak_memory_bytes, MinimumMemoryBytes(g)) << "seed " << seed;
  }
}

TEST(MemoryProfileTest, SegmentEndsOfAChainByHand) {
  // Units of 1,000 parameter bytes, 100-byte edges: a segment of k units
  // needs 1,000·k + 200 bytes (100 at the first and last unit of the graph).
  CostGraph g = BuildGraph(testing::Chain(std::vector<int64_t>(5, 100), 10, 1000));
  const MemoryProfile profile = ComputeMemoryProfile(g);
  EXPECT_EQ(profile.live_bytes, (std::vector<int64_t>{100, 200, 200, 200, 200, 100}));
  EXPECT_EQ(SegmentEnds(g, profile, 3200), (std::vector<uint32_t>{3, 4, 5, 6, 6, 6}));
  EXPECT_EQ(SegmentEnds(g, profile, 500), (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(DevicesNeeded(g, profile, 3200), 2);
  EXPECT_EQ(DevicesNeeded(g, profile, 500), 0);
}

TEST(MemoryProfileTest, ProvablePeakBoundsTheSimulator) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    CostGraph g = BuildGraph(testing::RandomDag(80, seed));
    Cluster c = TestCluster(3, int64_t{1} << 40);
    Placement p;
    for (uint32_t u = 0; u < g.num_units(); ++u)
      p.device.push_back(static_cast<int32_t>(u * 7 % 3));
    costmodel::Simulator sim(g, c);
    for (int microbatches : {1, 3}) {
      const std::vector<int64_t> bound = ProvablePeakBytes(g, p.device, 3, microbatches);
      const costmodel::SimulationResult& r =
          sim.Run(p, costmodel::SimulationOptions{.microbatches = microbatches});
      for (int d = 0; d < 3; ++d) EXPECT_LE(r.devices[d].peak_memory_bytes, bound[d]);
    }
  }
}

}  // namespace
}  // namespace autopar::search
