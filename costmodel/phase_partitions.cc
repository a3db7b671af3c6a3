#include "costmodel/phase_partitions.h"

#include <algorithm>
#include <limits>

namespace autopar::costmodel {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The depth-first search of Note [Phase partitions].
class SplitSearch {
 public:
  SplitSearch(const PhaseGraph& phase, int devices, int64_t max_steps)
      : n_(static_cast<uint32_t>(phase.time_us.size())),
        devices_(std::max(1, devices)),
        steps_left_(max_steps),
        time_(phase.time_us),
        in_(n_),
        out_(n_),
        least_tail_(n_, 0),
        device_(n_, 0),
        start_(n_, 0),
        tail_(n_, 0),
        load_(n_, 0) {
    // The cuts' own times are counted outside the phase.
    time_.front() = 0;
    time_.back() = 0;
    for (const PhaseGraph::Edge& e : phase.edges) {
      in_[e.dst].push_back(e);
      out_[e.src].push_back(e);
    }
    // The path from each unit's end to the exit with every transfer free.
    for (uint32_t u = n_; u-- > 0;) {
      for (const PhaseGraph::Edge& e : out_[u]) {
        least_tail_[u] = std::max(least_tail_[u], time_[e.dst] + least_tail_[e.dst]);
      }
    }
  }

  std::optional<double> Run() {
    Visit(0, 0, 0);
    if (steps_left_ < 0 || best_ == kInf) return std::nullopt;
    return best_;
  }
  int64_t steps_left() const { return std::max<int64_t>(0, steps_left_); }

 private:
  // Places unit u given units 0..u-1 on `used` devices, with `partial` the
  // bound the placed units already prove.
  void Visit(uint32_t u, int used, double partial) {
    if (--steps_left_ < 0) return;
    if (u == n_) {
      best_ = std::min(best_, SpanOfSplit());
      return;
    }
    const int choices = u == 0 ? 1 : std::min(used + 1, devices_);
    for (int d = 0; d < choices; ++d) {
      device_[u] = d;
      double start = 0;
      for (const PhaseGraph::Edge& e : in_[u]) {
        const double transfer = device_[e.src] == d ? 0 : e.transfer_us;
        start = std::max(start, start_[e.src] + time_[e.src] + transfer);
      }
      start_[u] = start;
      load_[d] += time_[u];
      const double bound = std::max({partial, start + time_[u] + least_tail_[u], load_[d]});
      if (bound < best_) Visit(u + 1, std::max(used, d + 1), bound);
      load_[d] -= time_[u];
      if (steps_left_ < 0) return;
    }
  }

  // The span the complete split proves: the exit's earliest start, and each
  // device's units run one after another.
  double SpanOfSplit() {
    for (uint32_t u = n_; u-- > 0;) {
      tail_[u] = 0;
      for (const PhaseGraph::Edge& e : out_[u]) {
        const double transfer = device_[e.dst] == device_[u] ? 0 : e.transfer_us;
        tail_[u] = std::max(tail_[u], transfer + time_[e.dst] + tail_[e.dst]);
      }
    }
    double span = start_[n_ - 1];
    for (int d = 0; d < devices_; ++d) {
      double first = kInf, load = 0, last = kInf;
      for (uint32_t u = 1; u + 1 < n_; ++u) {
        if (device_[u] != d) continue;
        first = std::min(first, start_[u]);
        load += time_[u];
        last = std::min(last, tail_[u]);
      }
      if (load > 0) span = std::max(span, first + load + last);
    }
    return span;
  }

  const uint32_t n_;
  const int devices_;
  int64_t steps_left_;
  std::vector<double> time_;
  std::vector<std::vector<PhaseGraph::Edge>> in_, out_;
  std::vector<double> least_tail_;
  std::vector<int> device_;
  std::vector<double> start_, tail_, load_;
  double best_ = kInf;
};

}  // namespace

std::optional<double> LeastPhaseSpanUs(const PhaseGraph& phase, int devices, int64_t max_steps,
                                       int64_t* steps_taken) {
  if (steps_taken != nullptr) *steps_taken = 0;
  if (phase.time_us.size() < 2) return std::nullopt;
  SplitSearch search(phase, devices, max_steps);
  const std::optional<double> span = search.Run();
  if (steps_taken != nullptr) *steps_taken = max_steps - search.steps_left();
  return span;
}

std::optional<double> PhaseSpanCache::LeastSpanUs(const PhaseGraph& phase) {
  std::vector<double> key(phase.time_us);
  for (const PhaseGraph::Edge& e : phase.edges) {
    key.insert(key.end(), {-1.0 - e.src, -1.0 - e.dst, e.transfer_us});
  }
  if (auto it = seen_.find(key); it != seen_.end()) return it->second;
  if (steps_left_ <= 0) return std::nullopt;
  int64_t steps_taken = 0;
  const std::optional<double> span =
      LeastPhaseSpanUs(phase, devices_, std::min(steps_per_phase_, steps_left_), &steps_taken);
  steps_left_ -= steps_taken;
  seen_.emplace(std::move(key), span);
  return span;
}

}  // namespace autopar::costmodel
