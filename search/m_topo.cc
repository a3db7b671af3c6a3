#include "search/m_topo.h"

#include <limits>
#include <optional>
#include <vector>

#include "search/memory_ledger.h"

namespace autopar::search {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;

namespace {

// Step 2 (or 3, with an infinite share): one pass over the order. Empty when
// a unit fits no device left.
std::optional<Placement> Fill(const CostGraph& graph, const Cluster& cluster, double share_us,
                              MemoryLedger& ledger) {
  const int num_devices = cluster.num_devices();
  Placement placement;
  placement.device.resize(graph.num_units());
  placement.priority.resize(graph.num_units());
  int d = 0;
  double used_us = 0;  // compute on device d so far
  for (uint32_t u = 0; u < graph.num_units(); ++u) {
    for (;;) {
      const double unit_us = graph.compute_us(u, cluster.device(d).kind);
      const bool last = d + 1 == num_devices;
      const bool within_share = last || used_us == 0 || used_us + unit_us / 2 <= share_us;
      if (within_share && ledger.Fits(u, d)) {
        used_us += unit_us;
        break;
      }
      if (last) return std::nullopt;
      ++d;
      used_us = 0;
    }
    ledger.Place(u, d);
    placement.device[u] = d;
    placement.priority[u] = u;  // 4.
  }
  return placement;
}

}  // namespace

absl::StatusOr<Placement> PlaceMTopo(const CostGraph& graph, const Cluster& cluster,
                                     const SearchOptions& options) {
  // 1. The balanced share: 1 / Σ_d 1 / W(d).
  double rate = 0;  // graphs per µs, all devices together
  for (int d = 0; d < cluster.num_devices(); ++d) {
    double total_us = 0;
    for (uint32_t u = 0; u < graph.num_units(); ++u) {
      total_us += graph.compute_us(u, cluster.device(d).kind);
    }
    if (total_us > 0) rate += 1 / total_us;
  }
  const double share_us = rate > 0 ? 1 / rate : 0;

  return PlaceWithinMemory(
      graph, cluster, options, [&](MemoryLedger& ledger) -> std::optional<Placement> {
        const MemoryLedger empty = ledger;
        std::optional<Placement> placement = Fill(graph, cluster, share_us, ledger);  // 2.
        if (placement) return placement;
        ledger = empty;  // 3.
        return Fill(graph, cluster, std::numeric_limits<double>::infinity(), ledger);
      });
}

}  // namespace autopar::search
