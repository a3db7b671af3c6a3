#include "search/m_etf.h"

#include <algorithm>
#include <vector>

namespace autopar::search {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;

namespace {

class EtfScheduler {
 public:
  EtfScheduler(const CostGraph& graph, const Cluster& cluster,
               absl::Span<const int32_t> favourite_child, MemoryLedger& ledger);
  std::optional<Placement> Run();

 private:
  // First heap of a device: data-ready time, then static level, then unit.
  struct Waiting {
    double ready_us;
    double level;
    uint32_t unit;
  };
  struct WaitingLater {
    bool operator()(const Waiting& a, const Waiting& b) const {
      if (a.ready_us != b.ready_us) return a.ready_us > b.ready_us;
      if (a.level != b.level) return a.level < b.level;
      return a.unit > b.unit;
    }
  };
  // Second heap: units whose data is on the device by the time it is free.
  struct Available {
    double level;
    uint32_t unit;
  };
  struct AvailableLater {
    bool operator()(const Available& a, const Available& b) const {
      if (a.level != b.level) return a.level < b.level;
      return a.unit > b.unit;
    }
  };
  struct Pair {
    uint32_t unit = 0;
    int device = -1;
    double start_us = 0;
  };

  double ReadyUs(uint32_t unit, int device) const {
    return ready_us_[static_cast<size_t>(unit) * num_devices_ + device];
  }
  void ComputeLevels();
  void MakeReady(uint32_t unit);
  void Enqueue(uint32_t unit);
  bool Urgent(uint32_t unit) const;
  std::optional<Pair> BestOn(int device);
  // Sets `unit` aside on `device`, which lacks its memory now (step 3).
  void SetAside(uint32_t unit, int device);
  void Commit(uint32_t unit, int device, double start_us);

  const CostGraph& graph_;
  absl::Span<const int32_t> favourite_child_;
  MemoryLedger& ledger_;
  const uint32_t n_;
  const int num_devices_;

  std::vector<int> kind_;
  std::vector<double> latency_us_, us_per_byte_;  // [src * D + dst]
  std::vector<double> level_;
  std::vector<int32_t> favourite_parent_;
  std::vector<uint32_t> waiting_inputs_;
  std::vector<double> ready_us_;  // [unit * D + device], set when the unit is ready
  std::vector<uint8_t> placed_;
  std::vector<double> finish_us_;
  std::vector<std::vector<Waiting>> waiting_;
  std::vector<std::vector<Available>> available_;
  std::vector<std::vector<uint32_t>> set_aside_;
  std::vector<uint64_t> seen_freed_;
  std::vector<double> free_us_;
  std::vector<int64_t> last_unit_;  // per device, −1 while empty
  std::vector<uint32_t> urgent_;    // favourite children to commit next (m-SCT)
  Placement placement_;
};

EtfScheduler::EtfScheduler(const CostGraph& graph, const Cluster& cluster,
                           absl::Span<const int32_t> favourite_child, MemoryLedger& ledger)
    : graph_(graph),
      favourite_child_(favourite_child),
      ledger_(ledger),
      n_(graph.num_units()),
      num_devices_(cluster.num_devices()) {
  kind_.resize(num_devices_);
  for (int d = 0; d < num_devices_; ++d) kind_[d] = cluster.device(d).kind;
  const size_t num_links = static_cast<size_t>(num_devices_) * num_devices_;
  latency_us_.assign(num_links, 0);
  us_per_byte_.assign(num_links, 0);
  for (int a = 0; a < num_devices_; ++a) {
    for (int b = 0; b < num_devices_; ++b) {
      if (a == b) continue;
      latency_us_[a * num_devices_ + b] = cluster.latency_us(a, b);
      us_per_byte_[a * num_devices_ + b] = 1e6 / cluster.bandwidth_bytes_per_s(a, b);
    }
  }
  favourite_parent_.assign(n_, -1);
  for (uint32_t u = 0; u < favourite_child.size(); ++u) {
    if (favourite_child[u] >= 0) favourite_parent_[favourite_child[u]] = static_cast<int32_t>(u);
  }
}

// Step 1.
void EtfScheduler::ComputeLevels() {
  level_.assign(n_, 0);
  for (uint32_t u = n_; u-- > 0;) {
    double compute = 0;
    for (int d = 0; d < num_devices_; ++d) compute += graph_.compute_us(u, kind_[d]);
    double below = 0;
    for (uint32_t e : graph_.out_edges(u)) below = std::max(below, level_[graph_.edge_dst(e)]);
    level_[u] = compute / num_devices_ + below;
  }
}

// Step 2: data-ready times on every device, then the heaps — or, in m-SCT,
// straight after its favourite parent.
void EtfScheduler::MakeReady(uint32_t unit) {
  double* ready = &ready_us_[static_cast<size_t>(unit) * num_devices_];
  std::fill(ready, ready + num_devices_, 0.0);
  for (uint32_t e : graph_.in_edges(unit)) {
    const uint32_t src = graph_.edge_src(e);
    const int from = placement_.device[src];
    const double finish = finish_us_[src];
    const auto bytes = static_cast<double>(graph_.edge_bytes(e));
    for (int d = 0; d < num_devices_; ++d) {
      const size_t link = static_cast<size_t>(from) * num_devices_ + d;
      const double arrival =
          from == d ? finish : finish + latency_us_[link] + bytes * us_per_byte_[link];
      ready[d] = std::max(ready[d], arrival);
    }
  }
  if (Urgent(unit)) {
    urgent_.push_back(unit);
    return;
  }
  Enqueue(unit);
}

void EtfScheduler::Enqueue(uint32_t unit) {
  for (int d = 0; d < num_devices_; ++d) {
    waiting_[d].push_back(Waiting{ReadyUs(unit, d), level_[unit], unit});
    std::push_heap(waiting_[d].begin(), waiting_[d].end(), WaitingLater());
  }
}

// m-SCT: a favourite child whose favourite parent is still the last unit on
// its device and whose data is there when the parent ends runs next on it.
bool EtfScheduler::Urgent(uint32_t unit) const {
  const int32_t parent = favourite_parent_[unit];
  if (parent < 0) return false;
  const int d = placement_.device[parent];
  return last_unit_[d] == parent && ReadyUs(unit, d) <= free_us_[d] && ledger_.Fits(unit, d);
}

void EtfScheduler::SetAside(uint32_t unit, int device) {
  if (!ledger_.NeverFits(unit, device)) set_aside_[device].push_back(unit);
}

// Step 3.
std::optional<EtfScheduler::Pair> EtfScheduler::BestOn(int d) {
  std::vector<Waiting>& waiting = waiting_[d];
  std::vector<Available>& available = available_[d];
  // Memory was freed: the units set aside may fit again.
  if (!set_aside_[d].empty() && ledger_.freed_count(d) != seen_freed_[d]) {
    for (uint32_t u : set_aside_[d]) {
      if (placed_[u]) continue;
      waiting.push_back(Waiting{ReadyUs(u, d), level_[u], u});
      std::push_heap(waiting.begin(), waiting.end(), WaitingLater());
    }
    set_aside_[d].clear();
  }
  seen_freed_[d] = ledger_.freed_count(d);

  while (!waiting.empty() && waiting.front().ready_us <= free_us_[d]) {
    const Waiting top = waiting.front();
    std::pop_heap(waiting.begin(), waiting.end(), WaitingLater());
    waiting.pop_back();
    if (placed_[top.unit]) continue;
    available.push_back(Available{top.level, top.unit});
    std::push_heap(available.begin(), available.end(), AvailableLater());
  }
  while (!available.empty()) {
    const uint32_t u = available.front().unit;
    if (!placed_[u] && ledger_.Fits(u, d)) return Pair{u, d, free_us_[d]};
    std::pop_heap(available.begin(), available.end(), AvailableLater());
    available.pop_back();
    if (!placed_[u]) SetAside(u, d);
  }
  while (!waiting.empty()) {
    const Waiting top = waiting.front();
    if (!placed_[top.unit] && ledger_.Fits(top.unit, d)) return Pair{top.unit, d, top.ready_us};
    std::pop_heap(waiting.begin(), waiting.end(), WaitingLater());
    waiting.pop_back();
    if (!placed_[top.unit]) SetAside(top.unit, d);
  }
  return std::nullopt;
}

// Step 4, committing one pair.
void EtfScheduler::Commit(uint32_t unit, int device, double start_us) {
  placement_.device[unit] = device;
  placement_.priority[unit] = start_us;  // 5.
  finish_us_[unit] = start_us + graph_.compute_us(unit, kind_[device]);
  free_us_[device] = finish_us_[unit];
  last_unit_[device] = unit;
  placed_[unit] = 1;
  ledger_.Place(unit, device);
  for (uint32_t e : graph_.out_edges(unit)) {
    const uint32_t dst = graph_.edge_dst(e);
    if (--waiting_inputs_[dst] == 0) MakeReady(dst);
  }
}

std::optional<Placement> EtfScheduler::Run() {
  ComputeLevels();
  placement_.device.assign(n_, -1);
  placement_.priority.assign(n_, 0);
  ready_us_.assign(static_cast<size_t>(n_) * num_devices_, 0);
  placed_.assign(n_, 0);
  finish_us_.assign(n_, 0);
  waiting_.assign(num_devices_, {});
  available_.assign(num_devices_, {});
  set_aside_.assign(num_devices_, {});
  seen_freed_.assign(num_devices_, 0);
  free_us_.assign(num_devices_, 0);
  last_unit_.assign(num_devices_, -1);
  waiting_inputs_.resize(n_);
  for (uint32_t u = 0; u < n_; ++u) {
    waiting_inputs_[u] = static_cast<uint32_t>(graph_.in_edges(u).size());
    if (waiting_inputs_[u] == 0) MakeReady(u);
  }

  for (uint32_t committed = 0; committed < n_;) {
    // Step 4: the earliest start over the devices.
    std::optional<Pair> best;
    for (int d = 0; d < num_devices_; ++d) {
      std::optional<Pair> pair = BestOn(d);
      if (!pair) continue;
      const bool better = !best || pair->start_us < best->start_us ||
                          (pair->start_us == best->start_us &&
                           (level_[pair->unit] > level_[best->unit] ||
                            (level_[pair->unit] == level_[best->unit] && pair->unit < best->unit)));
      if (better) best = pair;
    }
    if (!best) return std::nullopt;  // memory exhausted
    Commit(best->unit, best->device, best->start_us);
    ++committed;
    // m-SCT: favourite children made urgent by that commit (and theirs).
    for (size_t i = 0; i < urgent_.size(); ++i) {
      const uint32_t child = urgent_[i];
      const int d = placement_.device[favourite_parent_[child]];
      if (last_unit_[d] == favourite_parent_[child] && ledger_.Fits(child, d)) {
        Commit(child, d, free_us_[d]);
        ++committed;
      } else {
        Enqueue(child);
      }
    }
    urgent_.clear();
  }
  return std::move(placement_);
}

}  // namespace

std::optional<Placement> ScheduleEarliestTaskFirst(const CostGraph& graph, const Cluster& cluster,
                                                   absl::Span<const int32_t> favourite_child,
                                                   MemoryLedger& ledger) {
  return EtfScheduler(graph, cluster, favourite_child, ledger).Run();
}

absl::StatusOr<Placement> PlaceMEtf(const CostGraph& graph, const Cluster& cluster,
                                    const SearchOptions& options) {
  return PlaceWithinMemory(graph, cluster, options, [&](MemoryLedger& ledger) {
    return ScheduleEarliestTaskFirst(graph, cluster, {}, ledger);
  });
}

}  // namespace autopar::search
