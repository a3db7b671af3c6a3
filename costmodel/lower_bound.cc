#include "costmodel/lower_bound.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace autopar::costmodel {

LowerBound ComputeLowerBound(const CostGraph& graph, const Cluster& cluster, int microbatches) {
  LowerBound bound;
  const uint32_t n = graph.num_units();
  // Critical path: units are in topological order, so one forward sweep.
  std::vector<double> finish(n, 0);
  std::vector<double> total_by_kind(graph.num_device_kinds(), 0);
  for (uint32_t u = 0; u < n; ++u) {
    double fastest = std::numeric_limits<double>::infinity();
    for (int k = 0; k < graph.num_device_kinds(); ++k) {
      fastest = std::min(fastest, graph.compute_us(u, k));
      total_by_kind[k] += graph.compute_us(u, k);
    }
    double start = 0;
    for (uint32_t e : graph.in_edges(u)) start = std::max(start, finish[graph.edge_src(e)]);
    finish[u] = start + fastest;
    bound.critical_path_us = std::max(bound.critical_path_us, finish[u]);
  }
  // With whole stages every micro-batch pays at least one stage run
  // (Note [Stage execution] in costmodel/simulator.h).
  const double stage_run_us = cluster.execution.whole_stages ? cluster.execution.stage_run_us : 0;
  bound.critical_path_us += n > 0 ? stage_run_us : 0;
  double aggregate_rate = 0;  // units of "whole graphs per µs"
  for (const ClusterDevice& d : cluster.devices) {
    double total = total_by_kind[d.kind] + (n > 0 ? stage_run_us : 0);
    if (total > 0) aggregate_rate += 1.0 / total;
  }
  bound.balanced_work_us = aggregate_rate > 0 ? std::max(1, microbatches) / aggregate_rate : 0;
  bound.bound_us = std::max(bound.critical_path_us, bound.balanced_work_us);
  return bound;
}

}  // namespace autopar::costmodel
