#include "search/m_sct.h"

#include <algorithm>
#include <numeric>

#include "search/m_etf.h"
#include "search/memory_ledger.h"
#include "search/schedule_estimate.h"

namespace autopar::search {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;

std::vector<int32_t> FavouriteChildren(const CostGraph& graph, const Cluster& cluster) {
  const uint32_t n = graph.num_units();
  const int num_devices = cluster.num_devices();
  const TypicalLink link = ComputeTypicalLink(cluster);

  // 1. Mean compute, t-levels (longest path to a unit's start) and b-levels
  //    (longest path from its start to the end), transfers included.
  std::vector<double> compute(n, 0), top(n, 0), bottom(n, 0);
  for (uint32_t u = 0; u < n; ++u) {
    for (int d = 0; d < num_devices; ++d) compute[u] += graph.compute_us(u, cluster.device(d).kind);
    compute[u] /= num_devices;
  }
  auto transfer_us = [&](uint32_t e) { return link.TransferUs(graph.edge_bytes(e)); };
  for (uint32_t u = 0; u < n; ++u) {
    for (uint32_t e : graph.in_edges(u)) {
      const uint32_t src = graph.edge_src(e);
      top[u] = std::max(top[u], top[src] + compute[src] + transfer_us(e));
    }
  }
  for (uint32_t u = n; u-- > 0;) {
    double below = 0;
    for (uint32_t e : graph.out_edges(u)) {
      below = std::max(below, transfer_us(e) + bottom[graph.edge_dst(e)]);
    }
    bottom[u] = compute[u] + below;
  }
  std::vector<double> weight(graph.num_edges());
  for (uint32_t e = 0; e < graph.num_edges(); ++e) {
    const uint32_t src = graph.edge_src(e);
    weight[e] = top[src] + compute[src] + transfer_us(e) + bottom[graph.edge_dst(e)];
  }

  // 2. Greedy matching, heaviest edges first.
  std::vector<uint32_t> order(graph.num_edges());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (weight[a] != weight[b]) return weight[a] > weight[b];
    if (graph.edge_bytes(a) != graph.edge_bytes(b))
      return graph.edge_bytes(a) > graph.edge_bytes(b);
    return a < b;
  });
  std::vector<int32_t> child(n, -1);
  std::vector<uint8_t> has_parent(n, 0);
  for (uint32_t e : order) {
    const uint32_t src = graph.edge_src(e), dst = graph.edge_dst(e);
    if (transfer_us(e) <= 0 || child[src] >= 0 || has_parent[dst]) continue;
    child[src] = static_cast<int32_t>(dst);
    has_parent[dst] = 1;
  }
  return child;
}

absl::StatusOr<Placement> PlaceMSct(const CostGraph& graph, const Cluster& cluster,
                                    const SearchOptions& options) {
  std::vector<int32_t> favourites;
  return PlaceWithinMemory(graph, cluster, options, [&](MemoryLedger& ledger) {
    // Steps 1–2 once, after PlaceWithinMemory checked the inputs (the graph
    // is not empty here); 3. on every try.
    if (favourites.empty()) favourites = FavouriteChildren(graph, cluster);
    return ScheduleEarliestTaskFirst(graph, cluster, favourites, ledger);
  });
}

}  // namespace autopar::search
