// The windows, step by step (see node_windows.h):
//
//  1. Phases: the cuts of the node graph (the test of Note [Series phases],
//     nodes without time that are sources or sinks left out), and between
//     each two the phase: its entry cut, its nodes, its exit cut, built as a
//     graph of its own with its own simulator.
//  2. A sweep: each phase not swept at this window size since it last
//     changed is simulated alone; those above their own bound (longest path,
//     work spread over the devices) are worked on, the furthest first.
//  3. A phase's windows: k consecutive movable nodes, from the start with a
//     stride of k/2 (the last one ends at the phase's end); each is solved
//     exactly by depth-first enumeration in topological order, pruned where
//     one device's work alone, or a path with the transfers its devices
//     make, reaches the best span found; the phase keeps its best.
//  4. Orders (SweepOrders): step 3 once per candidate schedule, each phase
//     keeping the schedule and assignment with the shortest span.
//  5. Shifts (SweepShifts): step 3 once per order one shift away from the
//     plan's, each phase keeping the order and assignment with the shortest
//     span.
#include "search/node_windows.h"

#include <algorithm>
#include <limits>

#include "absl/status/statusor.h"
#include "costmodel/lower_bound.h"

namespace autopar::search {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;
using costmodel::Simulator;

/// Gains below this fraction of a span are noise.
constexpr double kMinGain = 1e-9;
/// How many enumerated assignments between two looks at stop(), and how
/// many partial ones.
constexpr int64_t kSimulationsPerStopCheck = 512;
constexpr int64_t kVisitsPerStopCheck = 1 << 14;

struct NodeWindows::Phase {
  std::vector<uint32_t> nodes;  // local → node, ascending: entry, inside, exit
  std::vector<uint32_t> free;   // local indices that may move, ascending
  bool exit_free = false;       // free.back() is the exit cut (renaming)
  CostGraph graph;
  std::unique_ptr<Simulator> simulator;
  double bound_us = 0;
  /// Per local node: the longest path after it (fastest times, no transfers).
  std::vector<double> tail_us;
  // Step 2: the window size it was swept at, and as what.
  uint32_t done_k = 0;
  std::vector<int32_t> done_signature;
  // Step 5: 1 + the window size it was shifted at (0: never), and as what.
  uint32_t shifted = 0;
  std::vector<int32_t> shifted_signature;
  // Local indices of the nodes between the cuts, whose order can matter.
  uint32_t inside_begin = 0, inside_end = 0;
  Placement scratch;
};

struct NodeWindows::Search {
  const std::function<bool()>* stop = nullptr;
  bool stopped = false;
  int64_t next_check = 0;
  // Assignments visited, complete or not: where pruning cuts off most of
  // them, simulations alone would look at stop() too seldom.
  int64_t visits = 0;

  // Looks at stop() once every kVisitsPerStopCheck visits.
  void Visited() {
    if (++visits % kVisitsPerStopCheck == 0 && !stopped) stopped = (*stop)();
  }
  // Looks at stop() once every kSimulationsPerStopCheck simulations of
  // phases (`simulations`: all of them so far).
  void Simulated(int64_t simulations) {
    if (simulations < next_check) return;
    next_check = simulations + kSimulationsPerStopCheck;
    stopped = stopped || (*stop)();
  }
};

namespace {

bool Interchangeable(const Cluster& cluster) {
  const int d = cluster.num_devices();
  if (d < 2) return false;
  for (int i = 1; i < d; ++i) {
    if (cluster.device(i).kind != cluster.device(0).kind ||
        cluster.device(i).memory_bytes != cluster.device(0).memory_bytes) {
      return false;
    }
  }
  for (int s = 0; s < d; ++s) {
    for (int t = 0; t < d; ++t) {
      if (s == t) continue;
      if (cluster.bandwidth_bytes_per_s(s, t) != cluster.bandwidth_bytes_per_s(0, 1) ||
          cluster.latency_us(s, t) != cluster.latency_us(0, 1)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

NodeWindows::NodeWindows(const CostGraph& graph, const Cluster& cluster,
                         const std::vector<uint8_t>& fixed, uint32_t max_phase_nodes)
    : graph_(graph),
      cluster_(cluster),
      num_devices_(cluster.num_devices()),
      interchangeable_(Interchangeable(cluster)),
      fixed_(fixed) {
  const uint32_t n = graph.num_units();
  const auto [present, cut] = costmodel::FindSeriesCuts(graph);
  default_priority_ = Simulator(graph, cluster).default_priority();

  // Step 1.
  std::vector<int32_t> local_of(n, -1);
  int64_t entry = -1;
  std::vector<uint32_t> inside;
  auto add_phase = [&](int64_t exit) {
    auto phase = std::make_unique<Phase>();
    if (entry >= 0) phase->nodes.push_back(static_cast<uint32_t>(entry));
    phase->nodes.insert(phase->nodes.end(), inside.begin(), inside.end());
    if (exit >= 0) phase->nodes.push_back(static_cast<uint32_t>(exit));
    const auto m = static_cast<uint32_t>(phase->nodes.size());
    for (uint32_t i = 0; i < m; ++i) {
      const uint32_t v = phase->nodes[i];
      const bool is_entry = entry >= 0 && i == 0;
      const bool is_exit = exit >= 0 && i + 1 == m;
      if (fixed[v] || is_entry) continue;
      if (is_exit && !interchangeable_) continue;
      phase->free.push_back(i);
      if (is_exit) phase->exit_free = true;
    }
    // A lone exit cut (the graph's first node) has nothing to rename for.
    if (phase->free.empty() || m > max_phase_nodes || (entry < 0 && inside.empty())) return;
    for (uint32_t i = 0; i < m; ++i) local_of[phase->nodes[i]] = static_cast<int32_t>(i);
    CostGraph::Builder builder(graph.num_device_kinds());
    std::vector<double> finish(m, 0), fastest_us(m, 0);
    double work_us = 0, path_us = 0;
    for (uint32_t i = 0; i < m; ++i) {
      const uint32_t v = phase->nodes[i];
      CostGraph::UnitSpec spec;
      double fastest = std::numeric_limits<double>::infinity();
      for (int k = 0; k < graph.num_device_kinds(); ++k)
        spec.compute_us.push_back(graph.compute_us(v, k));
      for (int d = 0; d < num_devices_; ++d) {
        fastest = std::min(fastest, graph.compute_us(v, cluster.device(d).kind));
      }
      builder.AddUnit(std::move(spec));
      for (uint32_t e : graph.in_edges(v)) {
        const int32_t src = local_of[graph.edge_src(e)];
        if (src >= 0) finish[i] = std::max(finish[i], finish[src]);
      }
      finish[i] += fastest;
      fastest_us[i] = fastest;
      path_us = std::max(path_us, finish[i]);
      work_us += fastest;
    }
    for (uint32_t i = 0; i < m; ++i) {
      for (uint32_t t : graph.outputs(phase->nodes[i])) {
        std::vector<uint32_t> readers;
        for (uint32_t e : graph.tensor_uses(t)) {
          const int32_t dst = local_of[graph.edge_dst(e)];
          if (dst >= 0) readers.push_back(static_cast<uint32_t>(dst));
        }
        if (readers.empty()) continue;
        const uint32_t local = builder.AddTensor({.producer = i, .bytes = graph.tensor_bytes(t)});
        for (uint32_t reader : readers) builder.AddUse(local, reader);
      }
    }
    for (uint32_t v : phase->nodes) local_of[v] = -1;
    absl::StatusOr<CostGraph> built = std::move(builder).Build();
    if (!built.ok()) return;  // a sub-graph of a valid graph: not expected
    phase->graph = *std::move(built);
    phase->inside_begin = entry >= 0 ? 1 : 0;
    phase->inside_end = exit >= 0 ? m - 1 : m;
    phase->bound_us = std::max(path_us, work_us / num_devices_);
    phase->tail_us.assign(m, 0);
    for (uint32_t i = m; i-- > 0;) {
      for (uint32_t e : phase->graph.out_edges(i)) {
        const uint32_t dst = phase->graph.edge_dst(e);
        phase->tail_us[i] = std::max(phase->tail_us[i], fastest_us[dst] + phase->tail_us[dst]);
      }
    }
    max_window_ = std::max(max_window_, static_cast<uint32_t>(phase->free.size()));
    phases_.push_back(std::move(phase));
  };
  for (uint32_t v = 0; v < n; ++v) {
    if (!present[v]) continue;
    if (!cut[v]) {
      inside.push_back(v);
      continue;
    }
    add_phase(v);
    entry = v;
    inside.clear();
  }
  if (!inside.empty()) add_phase(-1);
}

NodeWindows::~NodeWindows() = default;

// The phase's devices, renamed in order of first use when devices are
// interchangeable: plans that differ by a renaming have one signature.
std::vector<int32_t> NodeWindows::Signature(const Phase& phase,
                                            const std::vector<int32_t>& device) const {
  std::vector<int32_t> signature;
  signature.reserve(phase.nodes.size());
  std::vector<int32_t> name(num_devices_, -1);
  int32_t next = 0;
  for (uint32_t v : phase.nodes) {
    int32_t d = device[v];
    if (interchangeable_) {
      if (name[d] < 0) name[d] = next++;
      d = name[d];
    }
    signature.push_back(d);
  }
  return signature;
}

bool NodeWindows::Done(const std::vector<int32_t>& device, uint32_t k) const {
  for (const auto& phase : phases_) {
    if (phase->done_k < k || phase->done_signature != Signature(*phase, device)) return false;
  }
  return true;
}

double NodeWindows::PhaseSpan(Phase& phase, const std::vector<int32_t>& local_device) {
  if (!phase.simulator) phase.simulator = std::make_unique<Simulator>(phase.graph, cluster_);
  phase.scratch.device = local_device;
  ++simulations_;
  return phase.simulator->Run(phase.scratch).step_time_us;
}

// Step 3: the best assignment of free[begin, begin + k) with the rest as in
// `local`, written into `local` when it beats `span`.
void NodeWindows::Optimise(Phase& phase, std::vector<int32_t>& local, double& span, uint32_t begin,
                           uint32_t k, Search& search) {
  const uint32_t end = std::min<uint32_t>(begin + k, static_cast<uint32_t>(phase.free.size()));
  std::vector<uint32_t> window(phase.free.begin() + begin, phase.free.begin() + end);
  std::vector<uint8_t> in_window(phase.nodes.size(), 0);
  for (uint32_t i : window) in_window[i] = 1;
  std::vector<double> load(num_devices_, 0);
  uint64_t used = 0;
  for (uint32_t i = 0; i < phase.nodes.size(); ++i) {
    if (in_window[i]) continue;
    const int32_t d = local[i];
    load[d] += graph_.compute_us(phase.nodes[i], cluster_.device(d).kind);
    used |= uint64_t{1} << d;
  }
  // The devices a window node may take: every one, or (interchangeable) the
  // used ones and the unused in order.
  std::vector<int32_t> unused;
  for (int32_t d = 0; d < num_devices_; ++d) {
    if (!interchangeable_ || !(used & (uint64_t{1} << d))) unused.push_back(d);
  }
  std::vector<int32_t> used_list;
  if (interchangeable_) {
    for (int32_t d = 0; d < num_devices_; ++d) {
      if (used & (uint64_t{1} << d)) used_list.push_back(d);
    }
  }
  const double target = phase.bound_us * (1 + kMinGain);
  std::vector<int32_t> trial = local;
  // Each node's earliest end given the devices so far (transfers without
  // waiting for the link): with the path after it, a bound on the span.
  const CostGraph& g = phase.graph;
  std::vector<double> finish(phase.nodes.size(), 0);
  auto path_through = [&](uint32_t from, uint32_t to) {
    double path = 0;
    for (uint32_t j = from; j < to; ++j) {
      double start = 0;
      for (uint32_t e : g.in_edges(j)) {
        const uint32_t p = g.edge_src(e);
        start =
            std::max(start, finish[p] + cluster_.TransferUs(trial[p], trial[j], g.edge_bytes(e)));
      }
      finish[j] = start + g.compute_us(j, cluster_.device(trial[j]).kind);
      path = std::max(path, finish[j] + phase.tail_us[j]);
    }
    return path;
  };
  const double path_before = path_through(0, window.front());
  std::vector<int32_t> best;
  double best_span = span * (1 - kMinGain);
  auto visit = [&](auto&& self, size_t at, size_t introduced, double path) -> void {
    search.Visited();
    if (search.stopped || best_span <= target || path >= best_span) return;
    if (at == window.size()) {
      const double s = PhaseSpan(phase, trial);
      if (s < best_span) {
        best_span = s;
        best = trial;
      }
      search.Simulated(simulations_);
      return;
    }
    const uint32_t i = window[at];
    const uint32_t v = phase.nodes[i];
    auto take = [&](int32_t d, size_t next_introduced) {
      const double time = graph_.compute_us(v, cluster_.device(d).kind);
      if (load[d] + time >= best_span) return;  // that device alone takes as long
      load[d] += time;
      trial[i] = d;
      const uint32_t to =
          at + 1 < window.size() ? window[at + 1] : static_cast<uint32_t>(phase.nodes.size());
      self(self, at + 1, next_introduced, std::max(path, path_through(i, to)));
      load[d] -= time;
    };
    for (int32_t d : used_list) take(d, introduced);
    if (!interchangeable_) {
      for (int32_t d : unused) take(d, introduced);
      return;
    }
    for (size_t j = 0; j < introduced; ++j) take(unused[j], introduced);
    if (introduced < unused.size()) take(unused[introduced], introduced + 1);
  };
  visit(visit, 0, 0, path_before);
  if (!best.empty()) {
    local = std::move(best);
    span = best_span;
  }
}

// Step 3 for each window of the phase in turn.
void NodeWindows::SolveWindows(Phase& phase, std::vector<int32_t>& local, double& span, uint32_t k,
                               Search& search) {
  const auto f = static_cast<uint32_t>(phase.free.size());
  const uint32_t stride = std::max<uint32_t>(1, k / 2);
  for (uint32_t begin = 0;; begin += stride) {
    const uint32_t at = begin + k >= f ? (f > k ? f - k : 0) : begin;
    Optimise(phase, local, span, at, k, search);
    if (search.stopped || at + k >= f) return;
  }
}

void NodeWindows::SetPriority(Phase& phase, const std::vector<double>& priority) const {
  const std::vector<double>& node_priority = priority.empty() ? default_priority_ : priority;
  phase.scratch.priority.clear();
  for (uint32_t v : phase.nodes) phase.scratch.priority.push_back(node_priority[v]);
}

NodeWindows::Move NodeWindows::PhaseMove(const Phase& phase, uint32_t index, double before_us,
                                         double after_us, const std::vector<int32_t>& before,
                                         const std::vector<int32_t>& after) {
  Move move{.phase = index, .before_us = before_us, .after_us = after_us};
  for (uint32_t i : phase.free) {
    if (after[i] != before[i]) move.assign.emplace_back(phase.nodes[i], after[i]);
  }
  if (phase.exit_free && after.back() != before.back()) {
    move.swap_from = before.back();
    move.swap_to = after.back();
  }
  return move;
}

std::vector<NodeWindows::Move> NodeWindows::Sweep(const std::vector<int32_t>& device,
                                                  const std::vector<double>& priority, uint32_t k,
                                                  const std::function<bool()>& stop) {
  // Step 2.
  struct Candidate {
    Phase* phase;
    uint32_t index;
    double span_us;
  };
  std::vector<Candidate> candidates;
  for (uint32_t p = 0; p < phases_.size(); ++p) {
    Phase& phase = *phases_[p];
    std::vector<int32_t> signature = Signature(phase, device);
    if (phase.done_k >= k && phase.done_signature == signature) continue;
    SetPriority(phase, priority);
    std::vector<int32_t> local;
    for (uint32_t v : phase.nodes) local.push_back(device[v]);
    const double span = PhaseSpan(phase, local);
    if (span <= phase.bound_us * (1 + kMinGain)) {
      phase.done_k = std::numeric_limits<uint32_t>::max();
      phase.done_signature = std::move(signature);
      continue;
    }
    candidates.push_back({&phase, p, span});
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     return a.span_us - a.phase->bound_us > b.span_us - b.phase->bound_us;
                   });

  std::vector<Move> moves;
  Search search{.stop = &stop, .next_check = simulations_};
  for (const Candidate& candidate : candidates) {
    if (stop()) break;
    Phase& phase = *candidate.phase;
    std::vector<int32_t> local;
    for (uint32_t v : phase.nodes) local.push_back(device[v]);
    const std::vector<int32_t> before = local;
    double span = candidate.span_us;
    SolveWindows(phase, local, span, k, search);
    if (search.stopped) break;
    phase.done_k = k;
    phase.done_signature = Signature(phase, device);
    if (local == before) continue;
    Move move = PhaseMove(phase, candidate.index, candidate.span_us, span, before, local);
    // Applied, the phase reads as swept already; rejected, it is swept again.
    std::vector<int32_t> after = device;
    for (const auto& [v, d] : move.assign) after[v] = d;
    phase.done_signature = Signature(phase, after);
    moves.push_back(std::move(move));
  }
  return moves;
}

// Step 4.
std::vector<NodeWindows::Move> NodeWindows::SweepOrders(
    const std::vector<int32_t>& device, const std::vector<double>& priority,
    const std::vector<std::vector<double>>& orders, uint32_t k, const std::function<bool()>& stop) {
  std::vector<Move> moves;
  Search search{.stop = &stop, .next_check = simulations_};
  for (uint32_t& p = orders_from_; p < phases_.size(); ++p) {
    if (search.stopped || stop()) return moves;
    Phase& phase = *phases_[p];
    std::vector<int32_t> before;
    for (uint32_t v : phase.nodes) before.push_back(device[v]);
    SetPriority(phase, priority);
    const double span = PhaseSpan(phase, before);
    if (span <= phase.bound_us * (1 + kMinGain)) continue;
    double best_span = span * (1 - kMinGain);
    std::vector<int32_t> best;
    size_t best_order = orders.size();
    for (size_t o = 0; o < orders.size() && !search.stopped; ++o) {
      SetPriority(phase, orders[o]);
      std::vector<int32_t> local = before;
      double order_span = PhaseSpan(phase, local);
      SolveWindows(phase, local, order_span, k, search);
      if (search.stopped || order_span >= best_span) continue;
      best_span = order_span;
      best = std::move(local);
      best_order = o;
    }
    if (best_order == orders.size()) continue;
    Move move = PhaseMove(phase, p, span, best_span, before, best);
    const std::vector<double>& order =
        orders[best_order].empty() ? default_priority_ : orders[best_order];
    for (uint32_t v : phase.nodes) move.priority.emplace_back(v, order[v]);
    moves.push_back(std::move(move));
  }
  orders_from_ = 0;
  orders_passes_ += 1;
  return moves;
}

// The phase's inner nodes (local indices) in the order the simulator
// prefers them: by priority, then by index.
std::vector<uint32_t> NodeWindows::Order(const Phase& phase,
                                         const std::vector<double>& priority) const {
  std::vector<uint32_t> order;
  for (uint32_t i = phase.inside_begin; i < phase.inside_end; ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return priority[phase.nodes[a]] < priority[phase.nodes[b]];
  });
  return order;
}

std::vector<int32_t> NodeWindows::ShiftSignature(const Phase& phase,
                                                 const std::vector<int32_t>& device,
                                                 const std::vector<double>& priority) const {
  std::vector<int32_t> signature = Signature(phase, device);
  for (uint32_t i : Order(phase, priority)) signature.push_back(static_cast<int32_t>(i));
  return signature;
}

bool NodeWindows::ShiftsDone(const std::vector<int32_t>& device,
                             const std::vector<double>& priority, uint32_t k) const {
  const std::vector<double>& order = priority.empty() ? default_priority_ : priority;
  for (const auto& phase : phases_) {
    if (phase->shifted <= k || phase->shifted_signature != ShiftSignature(*phase, device, order))
      return false;
  }
  return true;
}

// Step 5.
std::vector<NodeWindows::Move> NodeWindows::SweepShifts(const std::vector<int32_t>& device,
                                                        const std::vector<double>& priority,
                                                        uint32_t k,
                                                        const std::function<bool()>& stop) {
  const std::vector<double>& plan_order = priority.empty() ? default_priority_ : priority;
  std::vector<Move> moves;
  Search search{.stop = &stop, .next_check = simulations_};
  for (uint32_t p = 0; p < phases_.size(); ++p) {
    if (search.stopped || stop()) break;
    Phase& phase = *phases_[p];
    std::vector<int32_t> signature = ShiftSignature(phase, device, plan_order);
    if (phase.shifted > k && phase.shifted_signature == signature) continue;
    const std::vector<uint32_t> order = Order(phase, plan_order);
    auto use_order = [&phase](const std::vector<uint32_t>& o) {
      phase.scratch.priority.assign(phase.nodes.size(), 0);
      for (size_t r = 0; r < o.size(); ++r) phase.scratch.priority[o[r]] = static_cast<double>(r);
    };
    std::vector<int32_t> before;
    for (uint32_t v : phase.nodes) before.push_back(device[v]);
    use_order(order);
    const double span = PhaseSpan(phase, before);
    double best_span = span * (1 - kMinGain);
    std::vector<int32_t> best;
    std::vector<uint32_t> best_order;
    const size_t count = span > phase.bound_us * (1 + kMinGain) ? order.size() : 0;
    // Node order[i] moved to place j; to j = i - 1 is order[i - 1] to i.
    for (size_t i = 0; i < count && !search.stopped; ++i) {
      for (size_t j = 0; j < count && !search.stopped; ++j) {
        if (j == i || j + 1 == i) continue;
        if (k == 0) {
          // Without windows only the order on the node's own device counts.
          bool passes = false;
          for (size_t at = std::min(i, j); at <= std::max(i, j); ++at) {
            passes = passes || (at != i && before[order[at]] == before[order[i]]);
          }
          if (!passes) continue;
        }
        std::vector<uint32_t> shifted = order;
        shifted.erase(shifted.begin() + static_cast<std::ptrdiff_t>(i));
        shifted.insert(shifted.begin() + static_cast<std::ptrdiff_t>(j), order[i]);
        use_order(shifted);
        std::vector<int32_t> local = before;
        double shifted_span = PhaseSpan(phase, local);
        if (k > 0) SolveWindows(phase, local, shifted_span, k, search);
        search.Simulated(simulations_);
        if (search.stopped || shifted_span >= best_span) continue;
        best_span = shifted_span;
        best = std::move(local);
        best_order = std::move(shifted);
      }
    }
    if (search.stopped) break;
    // Marked as it was: a move that is taken changes it, so it is shifted
    // again; one the plan turns down is not tried again at this size.
    phase.shifted = k + 1;
    phase.shifted_signature = std::move(signature);
    if (best.empty()) continue;
    Move move = PhaseMove(phase, p, span, best_span, before, best);
    // Ranks do as priorities: a node only ever waits beside nodes of its
    // own phase.
    for (size_t r = 0; r < best_order.size(); ++r) {
      move.priority.emplace_back(phase.nodes[best_order[r]], static_cast<double>(r));
    }
    moves.push_back(std::move(move));
  }
  return moves;
}

void NodeWindows::Rejected(const Move& move, const std::vector<int32_t>& device) {
  Phase& phase = *phases_[move.phase];
  phase.done_signature = Signature(phase, device);
}

void NodeWindows::Apply(std::vector<Move> moves, std::vector<int32_t>& device,
                        std::vector<double>* priority) const {
  std::sort(moves.begin(), moves.end(),
            [](const Move& a, const Move& b) { return a.phase > b.phase; });
  for (const Move& move : moves) {
    for (const auto& [v, d] : move.assign) device[v] = d;
    if (priority != nullptr) {
      for (const auto& [v, value] : move.priority) (*priority)[v] = value;
    }
    if (move.swap_from < 0 || move.swap_from == move.swap_to) continue;
    const uint32_t exit = phases_[move.phase]->nodes.back();
    for (uint32_t v = exit + 1; v < device.size(); ++v) {
      if (fixed_[v]) continue;
      if (device[v] == move.swap_from) {
        device[v] = move.swap_to;
      } else if (device[v] == move.swap_to) {
        device[v] = move.swap_from;
      }
    }
  }
}

}  // namespace autopar::search
