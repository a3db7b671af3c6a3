#include "search/round_robin.h"

#include <optional>

#include "search/memory_ledger.h"

namespace autopar::search {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;

absl::StatusOr<Placement> PlaceRoundRobin(const CostGraph& graph, const Cluster& cluster,
                                          const SearchOptions& options) {
  const int num_devices = cluster.num_devices();
  return PlaceWithinMemory(graph, cluster, options,
                           [&](MemoryLedger& ledger) -> std::optional<Placement> {
                             Placement placement;
                             placement.device.resize(graph.num_units());
                             placement.priority.resize(graph.num_units());
                             int next = 0;  // 1.
                             for (uint32_t u = 0; u < graph.num_units(); ++u) {
                               // 2. The device under the pointer, else the next one it fits.
                               int chosen = -1;
                               for (int k = 0; k < num_devices && chosen < 0; ++k) {
                                 const int d = (next + k) % num_devices;
                                 if (ledger.Fits(u, d)) chosen = d;
                               }
                               if (chosen < 0) return std::nullopt;
                               ledger.Place(u, chosen);
                               placement.device[u] = chosen;
                               placement.priority[u] = u;  // 3.
                               next = (chosen + 1) % num_devices;
                             }
                             return placement;
                           });
}

}  // namespace autopar::search
