#include "costmodel/lower_bound.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "costmodel/phase_partitions.h"

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

// What one series phase holds (Note [Series phases]): its work by kind and
// its units' fastest times.
class PhaseWork {
 public:
  explicit PhaseWork(int kinds) : by_kind_(kinds, 0) {}
  void Add(const CostGraph& graph, uint32_t unit, double fastest_us) {
    for (size_t k = 0; k < by_kind_.size(); ++k) by_kind_[k] += graph.compute_us(unit, k);
    if (fastest_us > 0) fastest_us_.push_back(fastest_us);
  }
  void Clear() {
    std::fill(by_kind_.begin(), by_kind_.end(), 0);
    fastest_us_.clear();
  }
  // The least time the phase's units keep the busiest device busy: their
  // work spread over all devices, and Note [Pigeonholes].
  double BusiestDeviceUs(const Cluster& cluster) {
    return std::max(Spread(by_kind_, cluster, 0), Pigeonhole(cluster.num_devices()));
  }

 private:
  double Pigeonhole(int devices) {
    if (devices <= 0 || fastest_us_.empty()) return 0;
    std::sort(fastest_us_.begin(), fastest_us_.end(), std::greater<double>());
    // prefix[j]: the j largest times summed.
    std::vector<double> prefix(fastest_us_.size() + 1, 0);
    for (size_t j = 0; j < fastest_us_.size(); ++j) prefix[j + 1] = prefix[j] + fastest_us_[j];
    double best = 0;
    for (size_t j = 1; j < prefix.size(); ++j) {
      const size_t shared = (j + devices - 1) / devices;  // ceil(j / devices)
      best = std::max(best, prefix[j] - prefix[j - shared]);
    }
    return best;
  }

  std::vector<double> by_kind_;
  std::vector<double> fastest_us_;
};

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

// Phases of at most this many units get the exhaustive split search (Note
// [Phase partitions]), within this many steps each.
constexpr size_t kMostSplitUnits = 14;
constexpr int64_t kStepsPerPhase = 1 << 16;

// The phase between cuts `entry` and `exit` (-1: none) holding the present
// units `interior` (ascending), numbered as PhaseGraph wants.
PhaseGraph MakePhaseGraph(const CostGraph& graph, const std::vector<uint8_t>& present,
                          const std::vector<double>& fastest, const TransferBound& transfer,
                          int64_t entry, const std::vector<uint32_t>& interior, int64_t exit) {
  PhaseGraph phase;
  const auto last = static_cast<uint32_t>(interior.size() + 1);
  phase.time_us.push_back(0);
  for (uint32_t u : interior) phase.time_us.push_back(fastest[u]);
  phase.time_us.push_back(0);
  auto local = [&](uint32_t u) -> int64_t {
    if (u == entry) return 0;
    auto it = std::lower_bound(interior.begin(), interior.end(), u);
    return it != interior.end() && *it == u ? 1 + (it - interior.begin()) : -1;
  };
  auto add_inputs = [&](uint32_t u, uint32_t to) {
    for (uint32_t e : graph.in_edges(u)) {
      const uint32_t src = graph.edge_src(e);
      const int64_t from = present[src] && src < u ? local(src) : -1;
      if (from >= 0) phase.edges.push_back({static_cast<uint32_t>(from), to, transfer.edge_us(e)});
    }
  };
  for (uint32_t i = 0; i < interior.size(); ++i) add_inputs(interior[i], i + 1);
  if (exit >= 0) {
    add_inputs(static_cast<uint32_t>(exit), last);
  } else {
    // After the last cut the phase ends when all of it has.
    for (uint32_t i = 1; i < last; ++i) phase.edges.push_back({i, last, 0});
  }
  return phase;
}

}  // namespace

SeriesCuts FindSeriesCuts(const CostGraph& graph) {
  const uint32_t n = graph.num_units();
  SeriesCuts result;
  std::vector<uint8_t>& present = result.present;
  present.assign(n, 1);
  for (uint32_t u = 0; u < n; ++u) {
    bool timeless = true;
    for (int k = 0; k < graph.num_device_kinds(); ++k)
      timeless = timeless && graph.compute_us(u, k) <= 0;
    if (timeless && (graph.in_edges(u).empty() || graph.out_edges(u).empty())) present[u] = 0;
  }
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
  std::vector<uint8_t>& cut = result.cut;
  cut.assign(n, 0);
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
  return result;
}

LowerBound ComputeLowerBound(const CostGraph& graph, const Cluster& cluster, int microbatches,
                             int64_t split_search_steps) {
  LowerBound bound;
  const uint32_t n = graph.num_units();
  const int kinds = graph.num_device_kinds();
  // Critical path: units are in topological order, so one forward sweep.
  std::vector<double> fastest(n), finish(n, 0);
  std::vector<double> total_by_kind(kinds, 0);
  for (uint32_t u = 0; u < n; ++u) {
    fastest[u] = std::numeric_limits<double>::infinity();
    for (int k = 0; k < kinds; ++k) {
      fastest[u] = std::min(fastest[u], graph.compute_us(u, k));
      total_by_kind[k] += graph.compute_us(u, k);
    }
    if (kinds == 0) fastest[u] = 0;
    double start = 0;
    for (uint32_t e : graph.in_edges(u)) start = std::max(start, finish[graph.edge_src(e)]);
    finish[u] = start + fastest[u];
    bound.critical_path_us = std::max(bound.critical_path_us, finish[u]);
  }
  // With whole stages every micro-batch pays at least one stage run
  // (Note [Stage execution] in costmodel/simulator.h).
  const double stage_run_us =
      cluster.execution.whole_stages && n > 0 ? cluster.execution.stage_run_us : 0;
  bound.critical_path_us += stage_run_us;
  bound.balanced_work_us = std::max(1, microbatches) * Spread(total_by_kind, cluster, stage_run_us);

  // Series phases: each phase between two cuts takes at least its longest
  // path, its busiest device's share, and where the phase is small the least
  // span over every split of it (Note [Phase partitions]).
  const auto [present, cut] = FindSeriesCuts(graph);
  const TransferBound transfer(graph, cluster);
  PhaseSpanCache splits(cluster.num_devices(), kStepsPerPhase, split_search_steps);
  // The least span of the phase ending at cut u, and of the one after it.
  std::vector<double> span_before(n, 0), span_after(n, 0);
  std::vector<double> phase_finish(n, 0);
  PhaseWork phase_work(kinds);
  std::vector<uint32_t> interior;
  double phase_path = 0;
  int64_t entry = -1;  // the last cut
  double latency = stage_run_us;
  auto close_phase = [&](int64_t exit) {
    double span = std::max(phase_path, phase_work.BusiestDeviceUs(cluster));
    if (!interior.empty() && interior.size() <= kMostSplitUnits) {
      const std::optional<double> split = splits.LeastSpanUs(
          MakePhaseGraph(graph, present, fastest, transfer, entry, interior, exit));
      if (split) span = std::max(span, *split);
    }
    latency += span;
    if (exit >= 0) span_before[exit] = span;
    if (entry >= 0) span_after[entry] = span;
    phase_work.Clear();
    interior.clear();
    phase_path = 0;
  };
  for (uint32_t u = 0; u < n; ++u) {
    if (!present[u]) continue;
    if (cut[u]) {
      close_phase(u);
      latency += fastest[u];
      entry = u;
      continue;
    }
    double start = 0;
    for (uint32_t e : graph.in_edges(u)) {
      const uint32_t src = graph.edge_src(e);
      if (present[src] && src > entry && src < u) start = std::max(start, phase_finish[src]);
    }
    phase_finish[u] = start + fastest[u];
    phase_path = std::max(phase_path, phase_finish[u]);
    phase_work.Add(graph, u, fastest[u]);
    interior.push_back(u);
  }
  close_phase(-1);
  bound.phased_latency_us = n > 0 ? latency : 0;

  // Note [Transfers and neighbours]: earliest starts forward, least times to
  // the end backward, each cut also after its phase's least span.
  std::vector<Neighbour> neighbours;
  std::vector<double> start(n), tail(n);
  {
    double phase_begin_us = stage_run_us;  // the end of the last cut, at the earliest
    for (uint32_t u = 0; u < n; ++u) {
      neighbours.clear();
      for (uint32_t e : graph.in_edges(u)) {
        const uint32_t p = graph.edge_src(e);
        neighbours.push_back({p, start[p], fastest[p], transfer.edge_us(e)});
      }
      start[u] = std::max(stage_run_us, LeastWait(neighbours));
      if (!present[u] || !cut[u]) continue;
      start[u] = std::max(start[u], phase_begin_us + span_before[u]);
      phase_begin_us = start[u] + fastest[u];
    }
  }
  {
    double phase_end_us = 0;  // the least time from the next cut's start to the end
    for (uint32_t u = n; u-- > 0;) {
      neighbours.clear();
      for (uint32_t e : graph.out_edges(u)) {
        const uint32_t s = graph.edge_dst(e);
        neighbours.push_back({s, tail[s] - fastest[s], fastest[s], transfer.edge_us(e)});
      }
      tail[u] = fastest[u] + LeastWait(neighbours);
      if (!present[u] || !cut[u]) continue;
      tail[u] = std::max(tail[u], fastest[u] + span_after[u] + phase_end_us);
      phase_end_us = tail[u];
    }
  }
  // Without cuts the spread of the one phase is phased_latency_us's.
  bound.transfer_latency_us = bound.phased_latency_us;
  const int repeats = std::max(1, microbatches) - 1;
  for (uint32_t u = 0; u < n; ++u) {
    bound.transfer_latency_us = std::max(bound.transfer_latency_us, start[u] + tail[u]);
    // Whole stages copy a Constant into every stage that reads it: its
    // readers elsewhere never wait for its runs, which still take its device.
    const bool copied = cluster.execution.whole_stages && graph.op(u) == "Constant";
    const double after_us = copied ? 0 : tail[u] - fastest[u];
    bound.pipelined_unit_us =
        std::max(bound.pipelined_unit_us, start[u] + (repeats + 1) * fastest[u] + after_us);
  }
  bound.bound_us =
      std::max({bound.critical_path_us, bound.balanced_work_us, bound.phased_latency_us,
                bound.transfer_latency_us, bound.pipelined_unit_us});
  return bound;
}

}  // namespace autopar::costmodel
