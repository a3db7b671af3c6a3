// Unit graphs for the tests of costmodel/ and search/: units with given
// compute times joined by edges, and a cluster where 1,000 bytes take 1 µs.
#ifndef AUTOPAR_TESTS_COSTMODEL_UNIT_GRAPHS_H_
#define AUTOPAR_TESTS_COSTMODEL_UNIT_GRAPHS_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "gtest/gtest.h"

namespace autopar::costmodel::testing {

inline constexpr int64_t kGiB = int64_t{1} << 30;

inline DeviceSpec TestDevice(const std::string& name) {
  DeviceSpec d;
  d.name = name;
  d.memory_bytes = kGiB;
  return d;
}

/// `devices` devices of 1 GiB; 1 byte per ns on every link, and no latency
/// unless given.
inline Cluster TestCluster(int devices, double latency_us = 0) {
  return MakeHomogeneousCluster(TestDevice("test"), devices, kGiB, 1e9, latency_us);
}

struct UnitEdge {
  uint32_t src, dst;
  int64_t bytes = 0;
};

struct UnitGraphOptions {
  /// Compute times per kind: kind k takes (1 + k · (slow_factor − 1))× as
  /// long as kind 0.
  int kinds = 1;
  double slow_factor = 1;
  /// Per unit, bytes of a parameter block of its own (none where 0); empty:
  /// no parameters.
  std::vector<int64_t> param_bytes;
  /// Units with no time and no inputs are Constants (copied, not sent, with
  /// whole stages); otherwise every unit is an "Op".
  bool free_sources_are_constants = false;
};

/// Unit u takes compute_us[u]; each edge is its own tensor.
inline CostGraph BuildUnitGraph(const std::vector<double>& compute_us,
                                const std::vector<UnitEdge>& edges,
                                const UnitGraphOptions& options = {}) {
  CostGraph::Builder b(options.kinds);
  for (size_t u = 0; u < compute_us.size(); ++u) {
    std::vector<double> times;
    for (int k = 0; k < options.kinds; ++k) {
      times.push_back(compute_us[u] * (1 + k * (options.slow_factor - 1)));
    }
    const bool read =
        std::any_of(edges.begin(), edges.end(), [&](const UnitEdge& e) { return e.dst == u; });
    const bool constant = options.free_sources_are_constants && compute_us[u] == 0 && !read;
    CostGraph::UnitSpec unit{.name = "u" + std::to_string(u),
                             .op = constant ? "Constant" : "Op",
                             .compute_us = std::move(times)};
    if (u < options.param_bytes.size() && options.param_bytes[u] > 0) {
      unit.params.push_back(b.AddParameter(options.param_bytes[u]));
    }
    b.AddUnit(std::move(unit));
  }
  for (const UnitEdge& e : edges) {
    const uint32_t t = b.AddTensor({.name = "t", .producer = e.src, .bytes = e.bytes});
    b.AddUse(t, e.dst);
  }
  absl::StatusOr<CostGraph> g = std::move(b).Build();
  EXPECT_TRUE(g.ok()) << g.status();
  return *std::move(g);
}

}  // namespace autopar::costmodel::testing

#endif  // AUTOPAR_TESTS_COSTMODEL_UNIT_GRAPHS_H_
