// SGP's seed method, the non-iterative core of the paper: comprehensive
// costs (step 1), load-balanced contiguous segments of the topological order
// (step 2), their boundaries moved to cheap cuts (step 3), the memory check
// (step 5) and the post-pass of boundary shifts judged by the simulator
// (step 6). See the list of steps in sgp.cc.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "search/capped_chunks.h"
#include "search/memory_profile.h"
#include "search/sgp_steps.h"

namespace autopar::search::sgp {
namespace {

/// Device counts tried in step 2: all of them up to this many, beyond it
/// doubling.
constexpr int kAllDeviceCountsUpTo = 8;
constexpr int kMaxFruitlessCounts = 2;
/// Step 6: the post-pass's simulations, at most kMaxPostPassSimulations and
/// at most kPostPassUnitRuns / units (one run costs O(V log V)).
constexpr int kMaxPostPassSimulations = 12;
constexpr int64_t kPostPassUnitRuns = 16000;

}  // namespace

using costmodel::Placement;

// Step 1.
void Sgp::ComputeCosts() {
  link_ = ComputeTypicalLink(cluster_);
  profile_ = ComputeMemoryProfile(graph_);
  held_back_bytes_.assign(num_devices_, 0);
  scratch_device_.assign(n_, 0);

  // Compute: prefix sums per kind in use.
  prefix_us_.assign(graph_.num_device_kinds(), {});
  for (int d = 0; d < num_devices_; ++d) {
    std::vector<double>& prefix = prefix_us_[cluster_.device(d).kind];
    if (!prefix.empty()) continue;
    prefix.resize(static_cast<size_t>(n_) + 1);
    prefix[0] = 0;
    for (uint32_t u = 0; u < n_; ++u) {
      prefix[u + 1] = prefix[u] + graph_.compute_us(u, cluster_.device(d).kind);
    }
  }

  // Communication: a tensor is cut by every boundary between its producer and
  // its last reader. Parallelism from the fastest kind's times.
  std::vector<double> delta(static_cast<size_t>(n_) + 1, 0);
  double tensor_bytes = 0;
  for (uint32_t t = 0; t < graph_.num_tensors(); ++t) {
    tensor_bytes += static_cast<double>(graph_.tensor_bytes(t));
    const uint32_t producer = graph_.tensor_producer(t);
    uint32_t last = producer;
    for (uint32_t e : graph_.tensor_uses(t)) last = std::max(last, graph_.edge_dst(e));
    if (last == producer) continue;
    const double transfer = link_.TransferUs(graph_.tensor_bytes(t));
    delta[producer + 1] += transfer;
    delta[last + 1] -= transfer;
  }
  double memory_bytes = 0;
  for (int d = 0; d < num_devices_; ++d) memory_bytes += cluster_.device(d).memory_bytes;
  bound_can_vouch_ = std::max(1, options_.microbatches) * tensor_bytes +
                         static_cast<double>(profile_.param_bytes) <=
                     memory_bytes;
  cut_us_.assign(static_cast<size_t>(n_) + 1, 0);
  double running = 0;
  for (uint32_t b = 0; b <= n_; ++b) {
    running += delta[b];
    cut_us_[b] = running;
  }
  std::vector<double> finish(n_, 0);
  double work = 0, critical_path = 0;
  for (uint32_t u = 0; u < n_; ++u) {
    double fastest = kInfinity;
    for (int d = 0; d < num_devices_; ++d) {
      fastest = std::min(fastest, graph_.compute_us(u, cluster_.device(d).kind));
    }
    double start = 0;
    for (uint32_t e : graph_.in_edges(u)) start = std::max(start, finish[graph_.edge_src(e)]);
    finish[u] = start + fastest;
    work += fastest;
    critical_path = std::max(critical_path, finish[u]);
  }
  parallelism_ = critical_path > 0 ? work / critical_path : 1;
  double rate = 0;  // whole graphs per µs, all devices together
  for (int d = 0; d < num_devices_; ++d) {
    const double total = SegmentUs(d, 0, n_);
    if (total > 0) rate += 1 / total;
  }
  lower_bound_us_ =
      std::max(critical_path, rate > 0 ? std::max(1, options_.microbatches) / rate : 0);

  device_order_.resize(num_devices_);
  for (int d = 0; d < num_devices_; ++d) device_order_[d] = d;
  std::stable_sort(device_order_.begin(), device_order_.end(), [&](int a, int b) {
    const double ta = SegmentUs(a, 0, n_), tb = SegmentUs(b, 0, n_);
    if (ta != tb) return ta < tb;
    return cluster_.device(a).memory_bytes > cluster_.device(b).memory_bytes;
  });
}

const std::vector<uint32_t>& Sgp::EndsOn(int device) {
  const int64_t capacity = cluster_.device(device).memory_bytes - held_back_bytes_[device];
  for (const auto& [cap, ends] : ends_by_capacity_) {
    if (cap == capacity) return ends;
  }
  ends_by_capacity_.emplace_back(capacity, SegmentEnds(graph_, profile_, capacity));
  return ends_by_capacity_.back().second;
}

// Step 2's chunker over `devices` in order: each device's compute prefix
// sums and its memory bound (SegmentEnds at its capacity in use).
CappedChunker Sgp::SegmentChunker(const std::vector<int>& devices) {
  std::vector<ChunkDevice> chunks;
  chunks.reserve(devices.size());
  for (int d : devices) {
    chunks.push_back(
        {.prefix_us = &prefix_us_[cluster_.device(d).kind], .memory_ends = &EndsOn(d)});
  }
  return CappedChunker(chunks);
}

// Step 2: whether the units fit `devices` as contiguous segments, one per
// device (greedy, without a time cap).
bool Sgp::FitsSegments(const std::vector<int>& devices) {
  return SegmentChunker(devices).Fill({.first_us = kInfinity, .empty = EmptyChunk::kFails});
}

// Step 2: the least bottleneck over `devices` (bisection on the cap, each
// probe a greedy fill, capped_chunks.h), empty segments dropped. Empty when
// the units do not fit these devices at all.
std::optional<Segments> Sgp::Balance(const std::vector<int>& devices, double& bottleneck_us,
                                     double growth) {
  CappedChunker chunker = SegmentChunker(devices);
  if (!chunker.Balance(growth, EmptyChunk::kFails)) return std::nullopt;
  const std::vector<uint32_t>& ends = chunker.ends();
  Segments kept;
  kept.bounds.push_back(0);
  bottleneck_us = 0;
  for (size_t j = 0; j < devices.size(); ++j) {
    const uint32_t begin = j == 0 ? 0 : ends[j - 1], end = ends[j];
    if (begin == end) continue;
    kept.devices.push_back(devices[j]);
    kept.bounds.push_back(end);
    bottleneck_us = std::max(bottleneck_us, SegmentUs(devices[j], begin, end));
  }
  return kept;
}

// Step 3: every boundary to the cheapest cut that keeps both neighbours within
// memory and within `max_us`; two sweeps.
void Sgp::Refine(Segments& segments, double max_us) {
  std::vector<uint32_t>& bounds = segments.bounds;
  for (int sweep = 0; sweep < 2; ++sweep) {
    for (size_t j = 1; j + 1 < bounds.size(); ++j) {
      const uint32_t begin = bounds[j - 1], current = bounds[j], end = bounds[j + 1];
      const int left = segments.devices[j - 1], right = segments.devices[j];
      // Highest cut: the left segment grows.
      uint32_t high = std::min(end - 1, EndsOn(left)[begin]);
      const std::vector<double>& left_prefix = prefix_us_[cluster_.device(left).kind];
      high = std::min<uint32_t>(
          high, static_cast<uint32_t>(std::upper_bound(left_prefix.begin() + begin + 1,
                                                       left_prefix.begin() + end + 1,
                                                       left_prefix[begin] + max_us) -
                                      left_prefix.begin() - 1));
      // Lowest cut: the right segment grows (SegmentEnds is non-decreasing).
      const std::vector<uint32_t>& right_ends = EndsOn(right);
      uint32_t low = static_cast<uint32_t>(
          std::lower_bound(right_ends.begin() + begin + 1, right_ends.begin() + end, end) -
          right_ends.begin());
      const std::vector<double>& right_prefix = prefix_us_[cluster_.device(right).kind];
      low = std::max<uint32_t>(
          low, static_cast<uint32_t>(std::lower_bound(right_prefix.begin() + begin + 1,
                                                      right_prefix.begin() + end,
                                                      right_prefix[end] - max_us) -
                                     right_prefix.begin()));
      uint32_t best = current;
      for (uint32_t b = low; b <= high; ++b) {
        const bool cheaper = cut_us_[b] < cut_us_[best];
        const bool as_cheap_closer =
            cut_us_[b] == cut_us_[best] && (b > current ? b - current : current - b) <
                                               (best > current ? best - current : current - best);
        if (cheaper || as_cheap_closer) best = b;
      }
      bounds[j] = best;
    }
  }
}

// Steps 2–3, scoring: replays the segments and keeps them if best so far
// (then true).
bool Sgp::Consider(const Segments& segments, std::optional<Candidate>& best) {
  for (size_t j = 0; j < segments.devices.size(); ++j) {
    std::fill(scratch_device_.begin() + segments.bounds[j],
              scratch_device_.begin() + segments.bounds[j + 1], segments.devices[j]);
  }
  Candidate candidate;
  candidate.estimate = estimator_.Run(scratch_device_);
  candidate.score_us = candidate.estimate.PipelinedUs(options_.microbatches);
  candidate.devices_used = static_cast<int>(segments.devices.size());
  if (best && !Better(candidate, *best)) return false;
  candidate.placement.device = scratch_device_;
  candidate.placement.priority = estimator_.start_us();
  candidate.strategy = "segments";
  best = std::move(candidate);
  return true;
}

std::optional<Candidate> Sgp::BestSegments() {
  auto first_devices = [&](int k) {
    std::vector<int> devices(device_order_.begin(), device_order_.begin() + k);
    std::sort(devices.begin(), devices.end());  // neighbours in index order share islands
    return devices;
  };
  int fewest = 0;
  for (int k = 1; k <= num_devices_ && fewest == 0; ++k) {
    if (FitsSegments(first_devices(k))) fewest = k;
  }
  if (fewest == 0) return std::nullopt;

  // More devices stop paying off on chains and serialised segments; the
  // search stops after kMaxFruitlessCounts counts in a row that did not win.
  std::optional<Candidate> best;
  int fruitless = 0;
  for (int k = fewest; k <= num_devices_ && fruitless < kMaxFruitlessCounts;) {
    double bottleneck_us = 0;
    std::optional<Segments> balanced = Balance(first_devices(k), bottleneck_us);
    bool won = false;
    if (balanced) {
      if (k == fewest) {
        Segments cheapest = *balanced;
        Refine(cheapest, kInfinity);
        won |= Consider(cheapest, best);
      }
      Refine(*balanced, bottleneck_us * (1 + kBalanceTolerance));
      won |= Consider(*balanced, best);
    }
    fruitless = won ? 0 : fruitless + 1;
    if (k == num_devices_) break;
    k = (num_devices_ - fewest < kAllDeviceCountsUpTo) ? k + 1 : std::min(2 * k, num_devices_);
  }
  return best;
}

// Step 5: the bound (unless it cannot vouch for any plan), else the
// simulator. A device over capacity has its budget cut by the overflow (and
// 1/64 of its memory) for the next attempt.
bool Sgp::FitsMemory(const Candidate& candidate) {
  if (bound_can_vouch_) {
    const std::vector<int64_t> bound =
        ProvablePeakBytes(graph_, candidate.placement.device, num_devices_, options_.microbatches);
    bool proven = true;
    for (int d = 0; d < num_devices_; ++d) proven &= bound[d] <= cluster_.device(d).memory_bytes;
    if (proven) return true;
  }
  if (!simulator_) simulator_.emplace(graph_, cluster_);
  ++simulations_;
  const costmodel::SimulationResult& result = simulator_->Run(
      candidate.placement, costmodel::SimulationOptions{.microbatches = options_.microbatches});
  bool fits = true;
  for (int d = 0; d < num_devices_; ++d) {
    const int64_t capacity = cluster_.device(d).memory_bytes;
    const int64_t over = result.devices[d].peak_memory_bytes - capacity;
    if (over <= 0) continue;
    fits = false;
    held_back_bytes_[d] += over + capacity / 64;
  }
  return fits;
}

int Sgp::PostPassBudget() const {
  return static_cast<int>(
      std::min<int64_t>(kMaxPostPassSimulations, kPostPassUnitRuns / std::max<int64_t>(1, n_)));
}

// The simulated step; infinity when the plan overflows a device's memory.
double Sgp::SimulatedUs(const Placement& plan) {
  if (!simulator_) simulator_.emplace(graph_, cluster_);
  ++simulations_;
  const costmodel::SimulationResult& result =
      simulator_->Run(plan, {.microbatches = options_.microbatches});
  return result.memory_overflow ? kInfinity : result.step_time_us;
}

// Step 6; returns the shifts kept.
int Sgp::PostPass(Placement& plan) {
  const int budget = PostPassBudget();
  if (budget < 2 || num_devices_ < 2 || n_ < 2) return 0;
  if (!simulator_) simulator_.emplace(graph_, cluster_);
  const costmodel::SimulationOptions sim_options{.microbatches = options_.microbatches};
  const costmodel::SimulationResult& start = simulator_->Run(plan, sim_options);
  ++simulations_;
  if (start.memory_overflow) return 0;
  double best_us = start.step_time_us;
  std::vector<double> busy_us(num_devices_);
  for (int d = 0; d < num_devices_; ++d) busy_us[d] = start.devices[d].busy_us;

  // The boundaries, the busiest side's first (ties: in order).
  std::vector<uint32_t> boundaries;
  for (uint32_t b = 1; b < n_; ++b) {
    if (plan.device[b] != plan.device[b - 1]) boundaries.push_back(b);
  }
  auto hotter = [&](uint32_t b) {
    return std::max(busy_us[plan.device[b]], busy_us[plan.device[b - 1]]);
  };
  std::stable_sort(boundaries.begin(), boundaries.end(),
                   [&](uint32_t a, uint32_t b) { return hotter(a) > hotter(b); });

  int simulations = 1, kept = 0;
  std::vector<uint32_t> moved;
  for (uint32_t b : boundaries) {
    if (simulations >= budget) break;
    const int left = plan.device[b - 1], right = plan.device[b];
    if (left == right) continue;  // an earlier shift closed it
    const bool left_hot = busy_us[left] >= busy_us[right];
    const int hot = left_hot ? left : right, cold = left_hot ? right : left;
    const double excess_us = (busy_us[hot] - busy_us[cold]) / 2;
    const int kind = cluster_.device(hot).kind;
    moved.clear();
    double shifted_us = 0;
    // The hot run's units next to the boundary, toward balance.
    for (int64_t u = left_hot ? int64_t{b} - 1 : int64_t{b};
         u >= 0 && u < int64_t{n_} && plan.device[u] == hot; u += left_hot ? -1 : 1) {
      const double unit_us = graph_.compute_us(static_cast<uint32_t>(u), kind);
      if (!moved.empty() && shifted_us + unit_us > excess_us) break;
      moved.push_back(static_cast<uint32_t>(u));
      shifted_us += unit_us;
    }
    for (uint32_t u : moved) plan.device[u] = cold;
    const costmodel::SimulationResult& shifted = simulator_->Run(plan, sim_options);
    ++simulations;
    ++simulations_;
    if (!shifted.memory_overflow && shifted.step_time_us < best_us * (1 - 1e-9)) {
      best_us = shifted.step_time_us;
      for (int d = 0; d < num_devices_; ++d) busy_us[d] = shifted.devices[d].busy_us;
      ++kept;
      continue;
    }
    for (uint32_t u : moved) plan.device[u] = hot;
  }
  return kept;
}

}  // namespace autopar::search::sgp
