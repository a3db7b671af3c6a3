// Small cost graphs and clusters for the search tests, built in code.
#ifndef AUTOPAR_TESTS_SEARCH_TEST_GRAPHS_H_
#define AUTOPAR_TESTS_SEARCH_TEST_GRAPHS_H_

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "gtest/gtest.h"
#include "tests/costmodel/unit_graphs.h"

namespace autopar::search::testing {

/// Units (compute µs on kind 0, kind k taking (1 + k · (slowdown − 1))× as
/// long; private parameter bytes) and edges (src → dst, each its own tensor).
struct GraphSpec {
  struct Unit {
    double compute_us = 10;
    int64_t param_bytes = 0;
  };
  using Edge = costmodel::testing::UnitEdge;
  std::vector<Unit> units;
  std::vector<Edge> edges;
};

inline costmodel::CostGraph BuildGraph(const GraphSpec& spec, int kinds = 1, double slowdown = 2) {
  std::vector<double> compute_us;
  costmodel::testing::UnitGraphOptions options{.kinds = kinds, .slow_factor = slowdown};
  for (const GraphSpec::Unit& unit : spec.units) {
    compute_us.push_back(unit.compute_us);
    options.param_bytes.push_back(unit.param_bytes);
  }
  return costmodel::testing::BuildUnitGraph(compute_us, spec.edges, options);
}

/// A chain u0 → u1 → … of `compute_us` each; edge i (u_i → u_{i+1}) carries
/// edge_bytes[i].
inline GraphSpec Chain(const std::vector<int64_t>& edge_bytes, double compute_us = 10,
                       int64_t param_bytes = 0) {
  GraphSpec spec;
  spec.units.assign(edge_bytes.size() + 1, {compute_us, param_bytes});
  for (uint32_t i = 0; i < edge_bytes.size(); ++i) spec.edges.push_back({i, i + 1, edge_bytes[i]});
  return spec;
}

/// Two independent chains of `units` / 2 units of `compute_us` each,
/// numbered alternately (a0 b0 a1 b1 …), every edge `edge_bytes`: contiguous
/// segments of this order cut both chains.
inline GraphSpec InterleavedChains(uint32_t units, int64_t edge_bytes, double compute_us = 10) {
  GraphSpec spec;
  spec.units.assign(units, {compute_us, 0});
  for (uint32_t u = 0; u + 2 < units; ++u) spec.edges.push_back({u, u + 2, edge_bytes});
  return spec;
}

/// A random DAG: each unit reads one to three of the `window` units before
/// it (1: a chain), random compute, parameters and tensor sizes.
inline GraphSpec RandomDag(uint32_t units, uint64_t seed, uint32_t window = 8) {
  std::mt19937_64 rng(seed);
  GraphSpec spec;
  for (uint32_t u = 0; u < units; ++u) {
    spec.units.push_back({static_cast<double>(1 + rng() % 50), static_cast<int64_t>(rng() % 5000)});
    if (u == 0) continue;
    const int inputs = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < inputs; ++i) {
      const uint32_t reach = std::min(u, window);
      spec.edges.push_back({u - 1 - static_cast<uint32_t>(rng() % reach), u,
                            static_cast<int64_t>(100 + rng() % 3000)});
    }
  }
  return spec;
}

/// `devices` devices of `memory_bytes` each; 1 byte per ns links (1,000 bytes
/// take 1 µs) with `latency_us`.
inline costmodel::Cluster TestCluster(int devices, int64_t memory_bytes, double latency_us = 1) {
  costmodel::DeviceSpec device;
  device.name = "test";
  device.memory_bytes = memory_bytes;
  return costmodel::MakeHomogeneousCluster(device, devices, memory_bytes, 1e9, latency_us);
}

/// `kinds` device kinds, device d of kind d with 1 GiB, every link 1 byte per
/// µs with no latency: an edge of B bytes costs B µs, as the edge weights of
/// the list-scheduling papers do.
inline costmodel::Cluster OneDevicePerKind(int kinds) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  costmodel::Cluster cluster;
  for (int k = 0; k < kinds; ++k) {
    costmodel::DeviceSpec spec;
    spec.name = "p" + std::to_string(k + 1);
    spec.memory_bytes = kGiB;
    cluster.kinds.push_back(spec);
    cluster.devices.push_back({spec.name, k, kGiB});
  }
  cluster.InitLinks(/*bandwidth_bytes_per_s=*/1e6, /*latency_us=*/0);
  return cluster;
}

/// A task graph as the scheduling papers draw it: compute time per device
/// kind of each task n1, n2, … (units 0, 1, …) and edges (src, dst, cost in
/// µs on OneDevicePerKind's links).
inline costmodel::CostGraph TaskGraph(const std::vector<std::vector<double>>& compute_us,
                                      const std::vector<std::array<int, 3>>& edges) {
  costmodel::CostGraph::Builder builder(static_cast<int>(compute_us[0].size()));
  for (size_t u = 0; u < compute_us.size(); ++u) {
    builder.AddUnit(
        {.name = "n" + std::to_string(u + 1), .op = "Task", .compute_us = compute_us[u]});
  }
  for (const auto& [src, dst, cost] : edges) {
    const uint32_t t =
        builder.AddTensor({.name = "e", .producer = static_cast<uint32_t>(src), .bytes = cost});
    builder.AddUse(t, static_cast<uint32_t>(dst));
  }
  absl::StatusOr<costmodel::CostGraph> graph = std::move(builder).Build();
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *std::move(graph);
}

/// Topcuoglu, Hariri and Wu 2002, Fig. 2: ten tasks on three processors, the
/// example of both HEFT and CPOP (run it on OneDevicePerKind(3)). Tasks
/// n1..n10 are units 0..9.
inline costmodel::CostGraph TopcuogluExample() {
  return TaskGraph({{14, 16, 9},
                    {13, 19, 18},
                    {11, 13, 19},
                    {13, 8, 17},
                    {12, 13, 10},
                    {13, 16, 9},
                    {7, 15, 11},
                    {5, 11, 14},
                    {18, 12, 20},
                    {21, 7, 16}},
                   {{0, 1, 18},
                    {0, 2, 12},
                    {0, 3, 9},
                    {0, 4, 11},
                    {0, 5, 14},
                    {1, 7, 19},
                    {1, 8, 16},
                    {2, 6, 23},
                    {3, 7, 27},
                    {3, 8, 23},
                    {4, 8, 13},
                    {5, 7, 15},
                    {6, 9, 17},
                    {7, 9, 11},
                    {8, 9, 13}});
}

}  // namespace autopar::search::testing

#endif  // AUTOPAR_TESTS_SEARCH_TEST_GRAPHS_H_
