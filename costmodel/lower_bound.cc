#include "costmodel/lower_bound.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace autopar::costmodel {
namespace {

// `work_by_kind` spread perfectly over the cluster's devices (the formula of
// LowerBound::balanced_work_us); `extra_us` is added to every device's work.
double Spread(const std::vector<double>& work_by_kind, const Cluster& cluster, double extra_us) {
  double aggregate_rate = 0;  // units of "whole graphs per µs"
  for (const ClusterDevice& d : cluster.devices) {
    const double total = work_by_kind[d.kind] + extra_us;
    // A device that does all of it in no time makes the spread free.
    if (total <= 0) return 0;
    aggregate_rate += 1.0 / total;
  }
  return aggregate_rate > 0 ? 1.0 / aggregate_rate : 0;
}

// Note [Series phases] in the header: which units are cuts. `present` marks
// the units that take part.
std::vector<uint8_t> FindCuts(const CostGraph& graph, const std::vector<uint8_t>& present) {
  const uint32_t n = graph.num_units();
  auto live = [&](uint32_t e) {
    return present[graph.edge_src(e)] && present[graph.edge_dst(e)] &&
           graph.edge_src(e) < graph.edge_dst(e);
  };
  // (c) from the back: every present unit after i has an in-edge.
  std::vector<uint8_t> later_all_fed(n + 1, 1);
  for (uint32_t i = n; i-- > 0;) {
    bool fed = !present[i];
    for (uint32_t e : graph.in_edges(i)) fed = fed || live(e);
    later_all_fed[i] = later_all_fed[i + 1] && fed;
  }
  std::vector<uint8_t> cut(n, 0);
  uint32_t reach = 0;            // (a): the furthest edge end from a unit before i
  bool earlier_all_feed = true;  // (b)
  for (uint32_t i = 0; i < n; ++i) {
    if (present[i] && reach <= i && earlier_all_feed && later_all_fed[i + 1]) cut[i] = 1;
    if (!present[i]) continue;
    bool feeds = false;
    for (uint32_t e : graph.out_edges(i)) {
      if (!live(e)) continue;
      feeds = true;
      reach = std::max(reach, graph.edge_dst(e));
    }
    earlier_all_feed = earlier_all_feed && feeds;
  }
  return cut;
}

// The least time a tensor of `bytes` can take to reach another device
// (Note [Transfers and neighbours]); infinite on one device.
class TransferBound {
 public:
  TransferBound(const CostGraph& graph, const Cluster& cluster) : graph_(graph) {
    const ExecutionModel& execution = cluster.execution;
    free_constants_ = execution.whole_stages;
    for (int s = 0; s < cluster.num_devices(); ++s) {
      for (int d = 0; d < cluster.num_devices(); ++d) {
        if (s == d) continue;
        // With hops the hop replaces the link's latency (costmodel/simulator.h).
        const double latency = execution.whole_stages && execution.hop_us > 0
                                   ? execution.hop_us
                                   : cluster.latency_us(s, d);
        latency_us_ = std::min(latency_us_, latency);
        bytes_per_us_ = std::max(bytes_per_us_, cluster.bandwidth_bytes_per_s(s, d) * 1e-6);
      }
    }
  }
  double edge_us(uint32_t e) const {
    if (bytes_per_us_ <= 0) return std::numeric_limits<double>::infinity();
    // Whole stages copy a Constant into each stage that reads it.
    if (free_constants_ && graph_.op(graph_.edge_src(e)) == "Constant") return 0;
    return std::max(0.0, latency_us_) + static_cast<double>(graph_.edge_bytes(e)) / bytes_per_us_;
  }

 private:
  const CostGraph& graph_;
  bool free_constants_ = false;
  double latency_us_ = std::numeric_limits<double>::infinity();
  double bytes_per_us_ = 0;
};

// A neighbour of a unit v (Note [Transfers and neighbours]): forward, a
// predecessor with `head` its earliest start; backward, a successor with
// `head` its least time from its end to the micro-batch's end.
struct Neighbour {
  uint32_t unit;
  double head_us;
  double time_us;      // its fastest time
  double transfer_us;  // its tensors' least transfer to or from v
};

// The least wait Note [Transfers and neighbours] allows: over the local sets
// L (the neighbours with the longest remote waits first), the larger of the
// longest remote wait outside L and L run one after another on v's device.
double LeastWait(std::vector<Neighbour>& neighbours) {
  if (neighbours.empty()) return 0;
  // One entry per unit, with its largest transfer.
  std::sort(neighbours.begin(), neighbours.end(),
            [](const Neighbour& a, const Neighbour& b) { return a.unit < b.unit; });
  size_t kept = 0;
  for (const Neighbour& x : neighbours) {
    if (kept > 0 && neighbours[kept - 1].unit == x.unit) {
      neighbours[kept - 1].transfer_us = std::max(neighbours[kept - 1].transfer_us, x.transfer_us);
    } else {
      neighbours[kept++] = x;
    }
  }
  neighbours.resize(kept);
  auto remote = [](const Neighbour& x) { return x.head_us + x.time_us + x.transfer_us; };
  std::sort(neighbours.begin(), neighbours.end(),
            [&](const Neighbour& a, const Neighbour& b) { return remote(a) > remote(b); });
  double best = remote(neighbours[0]);  // L empty
  double done = 0, first_head = std::numeric_limits<double>::infinity(), serial = 0;
  for (size_t k = 0; k < neighbours.size(); ++k) {
    const Neighbour& x = neighbours[k];
    done = std::max(done, x.head_us + x.time_us);
    first_head = std::min(first_head, x.head_us);
    serial += x.time_us;
    const double local = std::max(done, first_head + serial);
    const double rest = k + 1 < neighbours.size() ? remote(neighbours[k + 1]) : 0;
    best = std::min(best, std::max(local, rest));
  }
  return best;
}

}  // namespace

LowerBound ComputeLowerBound(const CostGraph& graph, const Cluster& cluster, int microbatches) {
  LowerBound bound;
  const uint32_t n = graph.num_units();
  const int kinds = graph.num_device_kinds();
  // Critical path: units are in topological order, so one forward sweep.
  std::vector<double> fastest(n), finish(n, 0);
  std::vector<double> total_by_kind(kinds, 0);
  std::vector<uint8_t> present(n, 1);
  for (uint32_t u = 0; u < n; ++u) {
    fastest[u] = std::numeric_limits<double>::infinity();
    double slowest = 0;
    for (int k = 0; k < kinds; ++k) {
      fastest[u] = std::min(fastest[u], graph.compute_us(u, k));
      slowest = std::max(slowest, graph.compute_us(u, k));
      total_by_kind[k] += graph.compute_us(u, k);
    }
    if (kinds == 0) fastest[u] = 0;
    double start = 0;
    for (uint32_t e : graph.in_edges(u)) start = std::max(start, finish[graph.edge_src(e)]);
    finish[u] = start + fastest[u];
    bound.critical_path_us = std::max(bound.critical_path_us, finish[u]);
    if (slowest <= 0 && (graph.in_edges(u).empty() || graph.out_edges(u).empty())) present[u] = 0;
  }
  // With whole stages every micro-batch pays at least one stage run
  // (Note [Stage execution] in costmodel/simulator.h).
  const double stage_run_us =
      cluster.execution.whole_stages && n > 0 ? cluster.execution.stage_run_us : 0;
  bound.critical_path_us += stage_run_us;
  bound.balanced_work_us = std::max(1, microbatches) * Spread(total_by_kind, cluster, stage_run_us);

  // Series phases: each phase between two cuts takes at least its longest
  // path and at least its work spread over all devices.
  const std::vector<uint8_t> cut = FindCuts(graph, present);
  std::vector<double> phase_finish(n, 0);
  std::vector<double> phase_work(kinds, 0);
  double phase_path = 0;
  uint32_t phase_begin = 0;  // first unit after the last cut
  double latency = stage_run_us;
  auto close_phase = [&] {
    latency += std::max(phase_path, Spread(phase_work, cluster, 0));
    std::fill(phase_work.begin(), phase_work.end(), 0);
    phase_path = 0;
  };
  for (uint32_t u = 0; u < n; ++u) {
    if (!present[u]) continue;
    if (cut[u]) {
      close_phase();
      latency += fastest[u];
      phase_begin = u + 1;
      continue;
    }
    double start = 0;
    for (uint32_t e : graph.in_edges(u)) {
      const uint32_t src = graph.edge_src(e);
      if (present[src] && src >= phase_begin && src < u) start = std::max(start, phase_finish[src]);
    }
    phase_finish[u] = start + fastest[u];
    phase_path = std::max(phase_path, phase_finish[u]);
    for (int k = 0; k < kinds; ++k) phase_work[k] += graph.compute_us(u, k);
  }
  close_phase();
  bound.phased_latency_us = n > 0 ? latency : 0;

  // Note [Transfers and neighbours]: earliest starts forward, least times to
  // the end backward, each cut also after its phase's spread work.
  const TransferBound transfer(graph, cluster);
  std::vector<Neighbour> neighbours;
  std::vector<double> start(n), tail(n);
  {
    double phase_begin_us = stage_run_us;  // the end of the last cut, at the earliest
    std::fill(phase_work.begin(), phase_work.end(), 0);
    for (uint32_t u = 0; u < n; ++u) {
      neighbours.clear();
      for (uint32_t e : graph.in_edges(u)) {
        const uint32_t p = graph.edge_src(e);
        neighbours.push_back({p, start[p], fastest[p], transfer.edge_us(e)});
      }
      start[u] = std::max(stage_run_us, LeastWait(neighbours));
      if (!present[u]) continue;
      if (!cut[u]) {
        for (int k = 0; k < kinds; ++k) phase_work[k] += graph.compute_us(u, k);
        continue;
      }
      start[u] = std::max(start[u], phase_begin_us + Spread(phase_work, cluster, 0));
      phase_begin_us = start[u] + fastest[u];
      std::fill(phase_work.begin(), phase_work.end(), 0);
    }
  }
  {
    double phase_end_us = 0;  // the least time from the next cut's start to the end
    std::fill(phase_work.begin(), phase_work.end(), 0);
    for (uint32_t u = n; u-- > 0;) {
      neighbours.clear();
      for (uint32_t e : graph.out_edges(u)) {
        const uint32_t s = graph.edge_dst(e);
        neighbours.push_back({s, tail[s] - fastest[s], fastest[s], transfer.edge_us(e)});
      }
      tail[u] = fastest[u] + LeastWait(neighbours);
      if (!present[u]) continue;
      if (!cut[u]) {
        for (int k = 0; k < kinds; ++k) phase_work[k] += graph.compute_us(u, k);
        continue;
      }
      tail[u] = std::max(tail[u], fastest[u] + Spread(phase_work, cluster, 0) + phase_end_us);
      phase_end_us = tail[u];
      std::fill(phase_work.begin(), phase_work.end(), 0);
    }
  }
  // Without cuts the spread of the one phase is phased_latency_us's.
  bound.transfer_latency_us = bound.phased_latency_us;
  for (uint32_t u = 0; u < n; ++u) {
    bound.transfer_latency_us = std::max(bound.transfer_latency_us, start[u] + tail[u]);
  }
  bound.bound_us = std::max({bound.critical_path_us, bound.balanced_work_us,
                             bound.phased_latency_us, bound.transfer_latency_us});
  return bound;
}

}  // namespace autopar::costmodel
