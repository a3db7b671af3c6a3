// HEFT, step by step (Topcuoglu, Hariri and Wu, IEEE TPDS 2002, §4.1; see
// heft.h for what this file promises):
//
//  1. Upward rank of every unit (eq. 4), units in reverse topological order:
//     rank(u) = w̄(u) + max over successors s of (c̄(u, s) + rank(s)), where
//     w̄ is the unit's compute averaged over the cluster's devices (eq. 1)
//     and c̄ the edge's transfer at the mean latency and mean bandwidth of the
//     links (eq. 2). An exit unit's rank is its w̄.
//  2. The scheduling list: units by decreasing rank, lower index among
//     equals. A producer's rank is at least its consumer's and indices are
//     topological, so the list is a topological order.
//  3. Processor selection, unit by unit in list order: on each device d its
//     data are ready at max over inputs of (the producer's finish + the
//     transfer from the producer's device to d; 0 on the same device). The
//     insertion-based policy: the unit may start in the earliest idle
//     interval of d, at or after that time, long enough to hold its compute
//     on d — not only after d's last unit. It goes to the device where it
//     finishes earliest (lowest index among equals). Memory-aware variant:
//     devices whose parameter budget cannot take the unit's new parameter
//     blocks are skipped.
//  4. The unit's interval is booked on its device; its start is its priority
//     for the simulator.
//
// PlaceHeft wraps the schedule in the memory check: the budget of step 3
// starts at each device's memory less the single-device peak of activations
// (what SGP's list scheduler keeps back too). When no schedule fits those
// budgets the reserve is halved (kReserveFractions); when the simulator finds
// a device over its memory, its budget is cut by the overflow and the
// schedule made again (at most kMaxMemoryRepairs times).
#include "search/heft.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "search/feasibility.h"
#include "search/memory_check.h"
#include "search/memory_profile.h"
#include "search/memory_repair.h"
#include "search/schedule_estimate.h"

namespace autopar::search {
namespace {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;

constexpr double kInfinity = std::numeric_limits<double>::infinity();
/// Activation reserves tried, as fractions of the single-device peak.
constexpr double kReserveFractions[] = {1, 0.5, 0.25, 0};
constexpr int kMaxMemoryRepairs = 4;

// The idle intervals of one device's timeline (the insertion policy of step
// 3), ordered by start in a treap whose nodes also hold the longest interval
// of their subtree, so that the earliest interval fitting a unit is found in
// O(log intervals) rather than by rescanning the device's timeline. The last
// interval is [end of the last unit, ∞).
class IdleIntervals {
 public:
  IdleIntervals() { root_ = NewNode(0, kInfinity); }

  /// The earliest start >= `ready` at which `duration` fits an idle interval.
  double EarliestStart(double ready, double duration) const {
    const int32_t holder = Containing(ready);
    if (holder >= 0 && nodes_[holder].end - ready >= duration) return ready;
    return nodes_[FirstFitting(root_, ready, duration)].start;
  }

  /// Books [start, start + duration), which EarliestStart found idle.
  void Book(double start, double duration) {
    if (!(duration > 0)) return;
    const int32_t holder = Containing(start);
    const double begin = nodes_[holder].start, end = nodes_[holder].end;
    // Take the holder out and put back what is left on either side of it.
    int32_t left = 0, middle = 0, right = 0;
    Split(root_, begin, left, middle);                               // middle: starts >= begin
    Split(middle, std::nextafter(begin, kInfinity), middle, right);  // middle = holder
    if (start > begin) left = Merge(left, NewNode(begin, start));
    if (start + duration < end) right = Merge(NewNode(start + duration, end), right);
    root_ = Merge(left, right);
  }

 private:
  struct Node {
    double start, end;
    double longest;  // longest end − start in the subtree
    uint64_t priority;
    int32_t left = -1, right = -1;
  };

  int32_t NewNode(double start, double end) {
    // Deterministic pseudo-random priorities (splitmix64 of a counter).
    uint64_t z = (next_priority_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    nodes_.push_back(Node{start, end, end - start, z ^ (z >> 31)});
    return static_cast<int32_t>(nodes_.size() - 1);
  }
  double Longest(int32_t t) const { return t < 0 ? -kInfinity : nodes_[t].longest; }
  void Update(int32_t t) {
    Node& node = nodes_[t];
    node.longest = std::max({node.end - node.start, Longest(node.left), Longest(node.right)});
  }
  // Splits `t` into intervals starting before `key` and the rest.
  void Split(int32_t t, double key, int32_t& below, int32_t& rest) {
    if (t < 0) {
      below = rest = -1;
      return;
    }
    if (nodes_[t].start < key) {
      Split(nodes_[t].right, key, nodes_[t].right, rest);
      below = t;
    } else {
      Split(nodes_[t].left, key, below, nodes_[t].left);
      rest = t;
    }
    Update(t);
  }
  int32_t Merge(int32_t a, int32_t b) {
    if (a < 0) return b;
    if (b < 0) return a;
    if (nodes_[a].priority > nodes_[b].priority) {
      nodes_[a].right = Merge(nodes_[a].right, b);
      Update(a);
      return a;
    }
    nodes_[b].left = Merge(a, nodes_[b].left);
    Update(b);
    return b;
  }
  // The interval with the largest start <= time, -1 when none.
  int32_t Containing(double time) const {
    int32_t best = -1;
    for (int32_t t = root_; t >= 0;) {
      if (nodes_[t].start <= time) {
        best = t;
        t = nodes_[t].right;
      } else {
        t = nodes_[t].left;
      }
    }
    return best;
  }
  // The first interval starting after `after` at least `duration` long; -1
  // when none in `t`.
  int32_t FirstFitting(int32_t t, double after, double duration) const {
    if (t < 0 || Longest(t) < duration) return -1;
    const Node& node = nodes_[t];
    if (node.start <= after) return FirstFitting(node.right, after, duration);
    if (int32_t found = FirstFitting(node.left, after, duration); found >= 0) return found;
    if (node.end - node.start >= duration) return t;
    return FirstFitting(node.right, after, duration);
  }

  std::vector<Node> nodes_;  // booked-over intervals stay unused in the pool
  int32_t root_ = -1;
  uint64_t next_priority_ = 0;
};

}  // namespace

// The mean link of step 1 (eq. 2): mean latency and mean bandwidth over the
// ordered pairs of distinct devices. A one-device cluster has none.
TypicalLink HeftMeanLink(const Cluster& cluster) {
  TypicalLink link;
  const int n = cluster.num_devices();
  if (n < 2) return link;
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      link.latency_us += cluster.latency_us(a, b);
      link.bandwidth_bytes_per_s += cluster.bandwidth_bytes_per_s(a, b);
    }
  }
  const double pairs = static_cast<double>(n) * (n - 1);
  link.latency_us /= pairs;
  link.bandwidth_bytes_per_s /= pairs;
  return link;
}

// Step 1.
std::vector<double> HeftUpwardRanks(const CostGraph& graph, const Cluster& cluster) {
  const uint32_t n = graph.num_units();
  const int num_devices = cluster.num_devices();
  const TypicalLink link = HeftMeanLink(cluster);
  std::vector<double> rank(n, 0);
  for (uint32_t u = n; u-- > 0;) {
    double compute = 0;
    for (int d = 0; d < num_devices; ++d) compute += graph.compute_us(u, cluster.device(d).kind);
    double tail = 0;
    for (uint32_t e : graph.out_edges(u)) {
      tail = std::max(tail, link.TransferUs(graph.edge_bytes(e)) + rank[graph.edge_dst(e)]);
    }
    rank[u] = compute / num_devices + tail;
  }
  return rank;
}

std::optional<HeftSchedule> ScheduleHeft(const CostGraph& graph, const Cluster& cluster,
                                         absl::Span<const int64_t> param_budget_bytes) {
  // Steps 1–2.
  const std::vector<double> rank = HeftUpwardRanks(graph, cluster);
  std::vector<uint32_t> order(graph.num_units());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return rank[a] > rank[b]; });
  return ScheduleInOrder(graph, cluster, order, {}, param_budget_bytes);
}

std::optional<HeftSchedule> ScheduleInOrder(const CostGraph& graph, const Cluster& cluster,
                                            absl::Span<const uint32_t> order,
                                            absl::Span<const int32_t> pinned_device,
                                            absl::Span<const int64_t> param_budget_bytes) {
  const uint32_t n = graph.num_units();
  const int num_devices = cluster.num_devices();
  ParamBudgets budgets(graph, param_budget_bytes);
  HeftSchedule schedule;
  std::vector<int32_t>& device = schedule.placement.device;
  std::vector<double>& start = schedule.placement.priority;
  device.assign(n, -1);
  start.assign(n, 0);
  schedule.finish_us.assign(n, 0);
  std::vector<IdleIntervals> idle(num_devices);

  // Steps 3–4.
  for (uint32_t u : order) {
    int best = -1;
    double best_start = 0, best_finish = kInfinity;
    const int pinned = pinned_device.empty() ? -1 : pinned_device[u];
    const bool pin = pinned >= 0 && budgets.Fits(u, pinned);
    for (int d = 0; d < num_devices; ++d) {
      if (!budgets.Fits(u, d) || (pin && d != pinned)) continue;
      double ready = 0;
      for (uint32_t e : graph.in_edges(u)) {
        const uint32_t src = graph.edge_src(e);
        ready = std::max(ready, schedule.finish_us[src] +
                                    cluster.TransferUs(device[src], d, graph.edge_bytes(e)));
      }
      const double duration = graph.compute_us(u, cluster.device(d).kind);
      const double begin = idle[d].EarliestStart(ready, duration);
      if (begin + duration < best_finish) {
        best = d;
        best_start = begin;
        best_finish = begin + duration;
      }
    }
    if (best < 0) return std::nullopt;

    idle[best].Book(best_start, best_finish - best_start);
    device[u] = best;
    start[u] = best_start;
    schedule.finish_us[u] = best_finish;
    schedule.makespan_us = std::max(schedule.makespan_us, best_finish);
    budgets.Add(u, best);
  }
  return schedule;
}

absl::StatusOr<Placement> PlaceHeft(const CostGraph& graph, const Cluster& cluster,
                                    const SearchOptions& options) {
  return PlaceScheduleWithinMemory(graph, cluster, options, [&](absl::Span<const int64_t> budget) {
    return ScheduleHeft(graph, cluster, budget);
  });
}

absl::StatusOr<Placement> PlaceScheduleWithinMemory(const CostGraph& graph, const Cluster& cluster,
                                                    const SearchOptions& options,
                                                    BudgetedScheduler schedule_under) {
  if (absl::Status s = CheckSearchInputs(graph, cluster); !s.ok()) return s;
  if (graph.num_units() == 0) return Placement{};
  if (absl::Status s = CheckEveryUnitFits(graph, cluster); !s.ok()) return s;

  const int num_devices = cluster.num_devices();
  const int64_t peak_activation_bytes = ComputeMemoryProfile(graph).peak_activation_bytes;
  MemoryChecker checker(graph, cluster, options.microbatches);
  std::vector<int64_t> held_back(num_devices, 0), budget(num_devices);
  int repairs = 0;
  std::optional<Placement> overflowing;  // the last plan over memory, for the repair
  for (double fraction : kReserveFractions) {
    for (;;) {
      const auto reserve = static_cast<int64_t>(fraction * peak_activation_bytes);
      for (int d = 0; d < num_devices; ++d) {
        budget[d] = cluster.device(d).memory_bytes - held_back[d] - reserve;
      }
      std::optional<HeftSchedule> schedule = schedule_under(budget);
      if (!schedule) break;  // on to a smaller reserve
      const std::vector<int64_t> overflow = checker.OverflowBytes(schedule->placement);
      if (Fits(overflow)) return std::move(schedule->placement);
      overflowing = schedule->placement;
      if (++repairs > kMaxMemoryRepairs) break;
      for (int d = 0; d < num_devices; ++d) {
        if (overflow[d] > 0) held_back[d] += overflow[d] + cluster.device(d).memory_bytes / 64;
      }
    }
    if (repairs > kMaxMemoryRepairs) break;
  }
  return RepairOrGiveUp(graph, cluster, options.microbatches, std::move(overflowing));
}

}  // namespace autopar::search
