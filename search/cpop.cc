// CPOP, step by step (Topcuoglu, Hariri and Wu, IEEE TPDS 2002, §4.2; see
// cpop.h for what this file promises):
//
//  1. Ranks: rank_u as in HEFT (eq. 4, heft.cc step 1); rank_d(u) = max over
//     predecessors p of (rank_d(p) + w̄(p) + c̄(p, u)), 0 at entries (eq. 5).
//     priority(u) = rank_u(u) + rank_d(u): the longest path through u.
//  2. The critical path: |CP| is the largest priority; from an entry unit of
//     that priority follow, each time, a successor of the same priority
//     (within rounding), lowest index first, to an exit.
//  3. The critical-path processor: the device minimising the path's summed
//     compute.
//  4. The list: among ready units (all producers listed) the one of highest
//     priority, lowest index among equals — what the paper's priority queue
//     yields. It depends only on the graph, so it is computed up front.
//  5. Processor selection in list order (heft.h ScheduleInOrder): a unit of
//     the critical path goes to the critical-path processor, any other to
//     the device where it finishes earliest (insertion policy); a device
//     whose parameter budget cannot take the unit is skipped, and a
//     critical unit its processor cannot take is placed as any other.
#include "search/cpop.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <utility>
#include <vector>

#include "search/feasibility.h"

namespace autopar::search {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;

CpopPriorities ComputeCpopPriorities(const CostGraph& graph, const Cluster& cluster) {
  const uint32_t n = graph.num_units();
  const int num_devices = cluster.num_devices();
  CpopPriorities result;
  if (n == 0) return result;

  // Step 1.
  const std::vector<double> up = HeftUpwardRanks(graph, cluster);
  const TypicalLink link = HeftMeanLink(cluster);
  std::vector<double> mean_compute(n, 0);
  for (uint32_t u = 0; u < n; ++u) {
    for (int d = 0; d < num_devices; ++d)
      mean_compute[u] += graph.compute_us(u, cluster.device(d).kind);
    mean_compute[u] /= num_devices;
  }
  std::vector<double> down(n, 0);
  for (uint32_t u = 0; u < n; ++u) {  // units are in topological order
    for (uint32_t e : graph.in_edges(u)) {
      const uint32_t p = graph.edge_src(e);
      down[u] = std::max(down[u], down[p] + mean_compute[p] + link.TransferUs(graph.edge_bytes(e)));
    }
  }
  result.priority.resize(n);
  for (uint32_t u = 0; u < n; ++u) result.priority[u] = up[u] + down[u];

  // Step 2.
  const double cp = *std::max_element(result.priority.begin(), result.priority.end());
  const double tolerance = 1e-9 * std::max(1.0, std::abs(cp));
  auto on_path = [&](uint32_t u) { return result.priority[u] >= cp - tolerance; };
  uint32_t at = n;
  for (uint32_t u = 0; u < n && at == n; ++u) {
    if (graph.in_edges(u).empty() && on_path(u)) at = u;
  }
  if (at == n)
    at = static_cast<uint32_t>(std::max_element(result.priority.begin(), result.priority.end()) -
                               result.priority.begin());
  for (;;) {
    result.critical_path.push_back(at);
    uint32_t next = n;
    for (uint32_t e : graph.out_edges(at)) {
      const uint32_t s = graph.edge_dst(e);
      if (on_path(s) && s < next) next = s;
    }
    if (next == n) break;
    at = next;
  }

  // Step 3.
  double best_us = 0;
  for (int d = 0; d < num_devices; ++d) {
    double sum_us = 0;
    for (uint32_t u : result.critical_path) sum_us += graph.compute_us(u, cluster.device(d).kind);
    if (d == 0 || sum_us < best_us) {
      best_us = sum_us;
      result.critical_device = d;
    }
  }
  return result;
}

std::optional<HeftSchedule> ScheduleCpop(const CostGraph& graph, const Cluster& cluster,
                                         absl::Span<const int64_t> param_budget_bytes) {
  const uint32_t n = graph.num_units();
  const CpopPriorities priorities = ComputeCpopPriorities(graph, cluster);

  // Step 4.
  std::vector<uint32_t> waiting(n, 0);
  for (uint32_t u = 0; u < n; ++u) waiting[u] = static_cast<uint32_t>(graph.in_edges(u).size());
  auto later = [&](uint32_t a, uint32_t b) {
    const double pa = priorities.priority[a], pb = priorities.priority[b];
    return pa != pb ? pa < pb : a > b;
  };
  std::priority_queue<uint32_t, std::vector<uint32_t>, decltype(later)> ready(later);
  for (uint32_t u = 0; u < n; ++u) {
    if (waiting[u] == 0) ready.push(u);
  }
  std::vector<uint32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const uint32_t u = ready.top();
    ready.pop();
    order.push_back(u);
    for (uint32_t e : graph.out_edges(u)) {
      if (--waiting[graph.edge_dst(e)] == 0) ready.push(graph.edge_dst(e));
    }
  }

  // Step 5.
  std::vector<int32_t> pinned(n, -1);
  for (uint32_t u : priorities.critical_path) pinned[u] = priorities.critical_device;
  return ScheduleInOrder(graph, cluster, order, pinned, param_budget_bytes);
}

absl::StatusOr<Placement> PlaceCpop(const CostGraph& graph, const Cluster& cluster,
                                    const SearchOptions& options) {
  return PlaceScheduleWithinMemory(graph, cluster, options, [&](absl::Span<const int64_t> budget) {
    return ScheduleCpop(graph, cluster, budget);
  });
}

}  // namespace autopar::search
