// The exact windows: with one micro-batch a sweep's moves, applied together,
// shorten the step by exactly the phases' gains; windows as large as the
// phases reach the optimum over every assignment of the nodes (checked by
// brute force on small Inception-like graphs); phases mix their orders from
// several schedules exactly, and shifted orders exactly too; devices that
// differ are never renamed and still never make a plan worse.
#include "search/node_windows.h"

#include <cstdint>
#include <vector>

#include "costmodel/simulator.h"
#include "gtest/gtest.h"
#include "tests/search/test_graphs.h"
#include "tools/bench/graph_families.h"

namespace autopar::search {
namespace {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Simulator;
using testing::TestCluster;

constexpr int64_t kGiB = int64_t{1} << 30;

Cluster SlowLinks(int devices) {
  Cluster cluster = TestCluster(devices, kGiB);
  cluster.InitLinks(12e9, 5);  // a 1 MiB tensor takes about as long as a node
  return cluster;
}

// The best step over every assignment with node 0 on device 0 (devices are
// interchangeable in these tests).
double BruteForceOptimum(const CostGraph& graph, const Cluster& cluster) {
  Simulator simulator(graph, cluster);
  costmodel::Placement placement{.device = std::vector<int32_t>(graph.num_units(), 0)};
  double best = simulator.Run(placement).step_time_us;
  for (;;) {
    uint32_t v = 1;
    while (v < graph.num_units() && ++placement.device[v] == cluster.num_devices()) {
      placement.device[v++] = 0;
    }
    if (v == graph.num_units()) return best;
    best = std::min(best, simulator.Run(placement).step_time_us);
  }
}

// Sweeps at window size k until a sweep finds nothing; each sweep's moves
// must shorten the step by exactly their phases' gains.
std::vector<int32_t> SweepUntilDone(NodeWindows& windows, const CostGraph& graph,
                                    const Cluster& cluster, std::vector<int32_t> device,
                                    uint32_t k) {
  Simulator simulator(graph, cluster);
  for (int sweep = 0; sweep < 20; ++sweep) {
    std::vector<NodeWindows::Move> moves = windows.Sweep(device, {}, k, [] { return false; });
    if (moves.empty()) break;
    const double before = simulator.Run({.device = device}).step_time_us;
    double gain = 0;
    for (const NodeWindows::Move& move : moves) {
      EXPECT_LT(move.after_us, move.before_us);
      gain += move.before_us - move.after_us;
    }
    windows.Apply(moves, device);
    const double after = simulator.Run({.device = device}).step_time_us;
    EXPECT_NEAR(after, before - gain, 1e-6 * before) << "sweep " << sweep;
  }
  EXPECT_TRUE(windows.Done(device, k));
  return device;
}

TEST(NodeWindowsTest, PhaseSizedWindowsReachTheOptimumOnTwoDevices) {
  for (uint64_t seed : {1, 2, 3}) {
    // Two blocks: a stem, 2 × (four branches of 1, 2, 3 and 2 nodes, a join).
    const CostGraph graph = bench::MakeGraph(bench::GraphFamily::kInceptionBlocks, 19, seed);
    const Cluster cluster = SlowLinks(2);
    NodeWindows windows(graph, cluster, std::vector<uint8_t>(graph.num_units(), 0));
    ASSERT_EQ(windows.num_phases(), 2u);
    ASSERT_EQ(windows.max_window(), 9u);  // eight branch nodes and the join
    const std::vector<int32_t> device = SweepUntilDone(
        windows, graph, cluster, std::vector<int32_t>(graph.num_units(), 0), windows.max_window());
    Simulator simulator(graph, cluster);
    EXPECT_NEAR(simulator.Run({.device = device}).step_time_us, BruteForceOptimum(graph, cluster),
                1e-9)
        << "seed " << seed;
  }
}

TEST(NodeWindowsTest, PhaseSizedWindowsReachTheOptimumOnFourDevices) {
  for (uint64_t seed : {1, 2}) {
    const CostGraph graph = bench::MakeGraph(bench::GraphFamily::kInceptionBlocks, 10, seed);
    for (double bandwidth : {12e9, 100e9}) {
      Cluster cluster = SlowLinks(4);
      cluster.InitLinks(bandwidth, 5);
      NodeWindows windows(graph, cluster, std::vector<uint8_t>(graph.num_units(), 0));
      const std::vector<int32_t> device =
          SweepUntilDone(windows, graph, cluster, std::vector<int32_t>(graph.num_units(), 0),
                         windows.max_window());
      Simulator simulator(graph, cluster);
      EXPECT_NEAR(simulator.Run({.device = device}).step_time_us, BruteForceOptimum(graph, cluster),
                  1e-9)
          << "seed " << seed << ", " << bandwidth << " B/s";
    }
  }
}

// Small windows on many phases, exits renamed on three devices: every sweep
// gains exactly what its moves promise, and the plan only gets better.
TEST(NodeWindowsTest, MovesTogetherGainWhatEachPromises) {
  const CostGraph graph = bench::MakeGraph(bench::GraphFamily::kInceptionBlocks, 400, 7);
  const Cluster cluster = SlowLinks(3);
  NodeWindows windows(graph, cluster, std::vector<uint8_t>(graph.num_units(), 0));
  std::vector<int32_t> device(graph.num_units(), 0);
  for (uint32_t v = 0; v < device.size(); ++v) device[v] = static_cast<int32_t>(v % 3);
  Simulator simulator(graph, cluster);
  double step = simulator.Run({.device = device}).step_time_us;
  for (uint32_t k : {3, 5}) {
    device = SweepUntilDone(windows, graph, cluster, device, k);
    const double next = simulator.Run({.device = device}).step_time_us;
    EXPECT_LT(next, step) << "k " << k;
    step = next;
  }
}

// Orders: phases take their order from different schedules, and the mixed
// schedule gains exactly what the moves promise.
TEST(NodeWindowsTest, PhasesMixTheirOrdersExactly) {
  const CostGraph graph = bench::MakeGraph(bench::GraphFamily::kInceptionBlocks, 200, 5);
  const Cluster cluster = SlowLinks(2);
  NodeWindows windows(graph, cluster, std::vector<uint8_t>(graph.num_units(), 0));
  std::vector<int32_t> device(graph.num_units(), 0);
  for (uint32_t v = 0; v < device.size(); ++v) device[v] = static_cast<int32_t>(v % 2);
  // The default order and its reverse: the least critical node first.
  std::vector<double> reverse = windows.default_priority();
  for (double& p : reverse) p = -p;
  const std::vector<std::vector<double>> orders = {{}, reverse};
  std::vector<NodeWindows::Move> moves =
      windows.SweepOrders(device, {}, orders, 2, [] { return false; });
  ASSERT_FALSE(moves.empty());
  EXPECT_EQ(windows.orders_passes(), 1);
  Simulator simulator(graph, cluster);
  const double before = simulator.Run({.device = device}).step_time_us;
  double gain = 0;
  for (const NodeWindows::Move& move : moves) gain += move.before_us - move.after_us;
  std::vector<double> mixed = windows.default_priority();
  windows.Apply(moves, device, &mixed);
  EXPECT_NE(mixed, windows.default_priority());
  EXPECT_NEAR(simulator.Run({.device = device, .priority = mixed}).step_time_us, before - gain,
              1e-6 * before);
}

// Shifts, from the optimum under the default order (windows as large as the
// phases): their moves, priorities included, shorten the step by exactly
// the phases' gains, and on some of these graphs another order beats every
// assignment under the default one.
TEST(NodeWindowsTest, ShiftsGainWhatTheyPromiseAndBeatTheBestAssignmentOfOneOrder) {
  int below = 0;
  for (uint64_t seed : {1, 2, 3}) {
    const CostGraph graph = bench::MakeGraph(bench::GraphFamily::kInceptionBlocks, 19, seed);
    const Cluster cluster = SlowLinks(2);
    NodeWindows windows(graph, cluster, std::vector<uint8_t>(graph.num_units(), 0));
    std::vector<int32_t> device =
        SweepUntilDone(windows, graph, cluster, std::vector<int32_t>(graph.num_units(), 0), 9);
    Simulator simulator(graph, cluster);
    const double one_order_us = simulator.Run({.device = device}).step_time_us;
    std::vector<double> priority = windows.default_priority();
    for (uint32_t k : {0u, 3u, 9u}) {
      for (int sweep = 0; sweep < 20; ++sweep) {
        std::vector<NodeWindows::Move> moves =
            windows.SweepShifts(device, priority, k, [] { return false; });
        if (moves.empty()) break;
        const double before = simulator.Run({.device = device, .priority = priority}).step_time_us;
        double gain = 0;
        for (const NodeWindows::Move& move : moves) {
          EXPECT_LT(move.after_us, move.before_us);
          EXPECT_FALSE(move.priority.empty());
          gain += move.before_us - move.after_us;
        }
        windows.Apply(moves, device, &priority);
        EXPECT_NEAR(simulator.Run({.device = device, .priority = priority}).step_time_us,
                    before - gain, 1e-6 * before)
            << "seed " << seed << ", k " << k << ", sweep " << sweep;
      }
      EXPECT_TRUE(windows.ShiftsDone(device, priority, k)) << "seed " << seed << ", k " << k;
    }
    const double shifted_us = simulator.Run({.device = device, .priority = priority}).step_time_us;
    EXPECT_LE(shifted_us, one_order_us);
    if (shifted_us < one_order_us * (1 - 1e-4)) ++below;
  }
  EXPECT_GE(below, 1);
}

// Devices of two kinds are not interchangeable: no renaming, every device
// tried, the joins stay; fixed nodes never move.
TEST(NodeWindowsTest, DevicesThatDifferAreNotRenamedAndFixedNodesStay) {
  const CostGraph graph =
      bench::MakeGraph(bench::GraphFamily::kInceptionBlocks, 100, 3, /*device_kinds=*/2);
  Cluster cluster = SlowLinks(3);
  costmodel::DeviceSpec slow = cluster.kinds[0];
  slow.name = "slow";
  cluster.kinds.push_back(slow);
  cluster.devices[2].kind = 1;
  std::vector<uint8_t> fixed(graph.num_units(), 0);
  for (uint32_t v = 0; v < fixed.size(); v += 4) fixed[v] = 1;
  NodeWindows windows(graph, cluster, fixed);
  std::vector<int32_t> device(graph.num_units(), 2);
  const std::vector<int32_t> start = device;
  bool moved = false;
  for (const NodeWindows::Move& move : windows.Sweep(device, {}, 4, [] { return false; })) {
    EXPECT_EQ(move.swap_from, -1);
    for (const auto& [v, d] : move.assign) EXPECT_FALSE(fixed[v]) << v;
    moved = true;
  }
  EXPECT_TRUE(moved);
  const std::vector<int32_t> after = SweepUntilDone(windows, graph, cluster, device, 4);
  Simulator simulator(graph, cluster);
  const double start_us = simulator.Run({.device = start}).step_time_us;
  EXPECT_LT(simulator.Run({.device = after}).step_time_us, start_us);
  for (uint32_t v = 0; v < fixed.size(); ++v) {
    if (fixed[v]) {
      EXPECT_EQ(after[v], start[v]) << v;
    }
  }
}

}  // namespace
}  // namespace autopar::search
