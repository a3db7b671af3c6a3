#include "search/single_device.h"

#include "search/feasibility.h"

namespace autopar::search {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;

absl::StatusOr<Placement> PlaceSingleDevice(const CostGraph& graph, const Cluster& cluster,
                                            const SearchOptions& /*options*/) {
  if (absl::Status s = CheckSearchInputs(graph, cluster); !s.ok()) return s;
  const int64_t needed = MinimumMemoryBytes(graph);
  int best = -1;
  double best_us = 0;
  for (int d = 0; d < cluster.num_devices(); ++d) {
    if (cluster.device(d).memory_bytes < needed) continue;
    double total_us = 0;
    for (uint32_t u = 0; u < graph.num_units(); ++u) {
      total_us += graph.compute_us(u, cluster.device(d).kind);
    }
    const bool faster = best < 0 || total_us < best_us;
    const bool as_fast_more_memory =
        best >= 0 && total_us == best_us &&
        cluster.device(d).memory_bytes > cluster.device(best).memory_bytes;
    if (faster || as_fast_more_memory) {
      best = d;
      best_us = total_us;
    }
  }
  if (best < 0) return InfeasibleError(graph, cluster);
  Placement placement;
  placement.device.assign(graph.num_units(), best);
  placement.priority.resize(graph.num_units());
  for (uint32_t u = 0; u < graph.num_units(); ++u) placement.priority[u] = u;
  return placement;
}

}  // namespace autopar::search
