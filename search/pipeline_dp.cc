// The contiguous pipeline partition, step by step (see pipeline_dp.h for the
// objective and what it promises):
//
//  1. Costs along the topological order: per device kind, prefix sums of
//     compute, so that a stage's compute is one subtraction; per boundary b
//     (before unit b) the transfer of every tensor produced before b and
//     read at or after b, on the typical link; per device, SegmentEnds — the
//     longest stage from each start that fits its memory.
//  2. Probe(T): can the order be split into stages of time <= T on the
//     devices in cluster order? Level j holds the boundaries the first j
//     devices can reach. A device either stays empty (the boundary carries
//     over) or runs a stage [a, e): from a reachable a, every e up to
//     min(memory end, the last e whose compute + boundary(a) <= T) — an
//     interval, since compute grows with e and the boundary term depends on
//     a alone. Sweeping e upwards while keeping the reachable a <= e − 1
//     with the farthest end gives the next level; an a is only searched
//     beyond the farthest end so far (galloping), so a level costs O(V).
//  3. Bisection on T between 0 and a time every memory-feasible split meets
//     (kBisectionSteps, or until kRelativePrecision).
//  4. Reconstruction: the last probe records, per level and boundary, the
//     start of the stage that reached it (or that the device stayed empty,
//     preferred: fewer stages, fewer transfers), and the stages are read
//     back from the end of the order.
//  5. Memory check (MemoryChecker): a device whose stage overflows in the
//     simulator gets its capacity cut by the overflow, and steps 2–4 run
//     again (at most kMaxMemoryRepairs times).
#include "search/pipeline_dp.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>
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
constexpr int kBisectionSteps = 64;
constexpr double kRelativePrecision = 1e-7;
constexpr int kMaxMemoryRepairs = 4;
/// Parent entry of a boundary a device reached by staying empty.
constexpr uint32_t kStayedEmpty = std::numeric_limits<uint32_t>::max();

class PipelineDp {
 public:
  PipelineDp(const CostGraph& graph, const Cluster& cluster)
      : graph_(graph),
        cluster_(cluster),
        n_(graph.num_units()),
        num_devices_(cluster.num_devices()) {}

  absl::StatusOr<PipelineDpResult> Run(const SearchOptions& options);

 private:
  void ComputeCosts();
  const std::vector<uint32_t>& EndsOn(int device);
  uint32_t LastEndBeyond(const std::vector<double>& prefix, const std::vector<uint32_t>& ends,
                         uint32_t begin, uint32_t after, double max_stage_us) const;
  bool Probe(double max_stage_us, bool record);
  PipelineDpResult Reconstruct();

  const CostGraph& graph_;
  const Cluster& cluster_;
  const uint32_t n_;
  const int num_devices_;

  // Step 1.
  MemoryProfile profile_;
  std::vector<std::vector<double>> prefix_us_;  // per kind in use: n + 1 sums
  std::vector<double> boundary_us_;             // per boundary 0..n
  std::vector<int64_t> held_back_bytes_;        // per device, after overflows
  std::map<int64_t, std::vector<uint32_t>> ends_by_capacity_;

  // Step 2 scratch, and step 4's parents: [level * (n + 1) + boundary].
  std::vector<uint8_t> reached_, next_;
  std::vector<uint32_t> parent_;
};

// Step 1.
void PipelineDp::ComputeCosts() {
  profile_ = ComputeMemoryProfile(graph_);
  held_back_bytes_.assign(num_devices_, 0);
  prefix_us_.assign(graph_.num_device_kinds(), {});
  for (int d = 0; d < num_devices_; ++d) {
    const int kind = cluster_.device(d).kind;
    std::vector<double>& prefix = prefix_us_[kind];
    if (!prefix.empty()) continue;
    prefix.assign(static_cast<size_t>(n_) + 1, 0);
    for (uint32_t u = 0; u < n_; ++u) prefix[u + 1] = prefix[u] + graph_.compute_us(u, kind);
  }
  // A tensor crosses the boundaries producer + 1 .. last reader: added at
  // the first, taken off after the last (a difference array).
  const TypicalLink link = ComputeTypicalLink(cluster_);
  std::vector<double> change(static_cast<size_t>(n_) + 2, 0);
  for (uint32_t t = 0; t < graph_.num_tensors(); ++t) {
    const uint32_t producer = graph_.tensor_producer(t);
    uint32_t last_reader = producer;
    for (uint32_t e : graph_.tensor_uses(t))
      last_reader = std::max(last_reader, graph_.edge_dst(e));
    if (last_reader == producer) continue;
    const double transfer_us = link.TransferUs(graph_.tensor_bytes(t));
    change[producer + 1] += transfer_us;
    change[last_reader + 1] -= transfer_us;
  }
  boundary_us_.resize(static_cast<size_t>(n_) + 1);
  double crossing_us = 0;
  for (uint32_t b = 0; b <= n_; ++b) boundary_us_[b] = (crossing_us += change[b]);
}

const std::vector<uint32_t>& PipelineDp::EndsOn(int device) {
  const int64_t capacity = cluster_.device(device).memory_bytes - held_back_bytes_[device];
  auto it = ends_by_capacity_.find(capacity);
  if (it == ends_by_capacity_.end()) {
    it = ends_by_capacity_.emplace(capacity, SegmentEnds(graph_, profile_, capacity)).first;
  }
  return it->second;
}

// The last end e > `after` of a stage [begin, e) within memory (`ends`) and
// `max_stage_us`; `after` when there is none. It gallops from after + 1, so
// that a sweep whose `after` never decreases costs O(V) in all.
uint32_t PipelineDp::LastEndBeyond(const std::vector<double>& prefix,
                                   const std::vector<uint32_t>& ends, uint32_t begin,
                                   uint32_t after, double max_stage_us) const {
  const uint32_t cap = ends[begin];
  const double limit = prefix[begin] + (max_stage_us - boundary_us_[begin]);
  if (after >= cap || prefix[after + 1] > limit) return after;
  uint32_t within = after + 1, step = 1;
  while (within + step <= cap && prefix[within + step] <= limit) {
    within += step;
    step *= 2;
  }
  const uint32_t beyond = std::min(within + step, cap + 1);  // past the last end
  return static_cast<uint32_t>(
      std::upper_bound(prefix.begin() + within + 1, prefix.begin() + beyond, limit) -
      prefix.begin() - 1);
}

// Step 2 (and with `record`, step 4's parents).
bool PipelineDp::Probe(double max_stage_us, bool record) {
  const size_t width = static_cast<size_t>(n_) + 1;
  reached_.assign(width, 0);
  reached_[0] = 1;
  if (record) parent_.assign(width * num_devices_, kStayedEmpty);
  for (int d = 0; d < num_devices_; ++d) {
    const std::vector<double>& prefix = prefix_us_[cluster_.device(d).kind];
    const std::vector<uint32_t>& ends = EndsOn(d);
    next_ = reached_;  // the device stays empty
    uint32_t from = kStayedEmpty, farthest = 0;
    for (uint32_t e = 1; e <= n_; ++e) {
      if (reached_[e - 1]) {
        const uint32_t after = std::max(farthest, e - 1);
        const uint32_t end = LastEndBeyond(prefix, ends, e - 1, after, max_stage_us);
        if (end > after) {
          from = e - 1;
          farthest = end;
        }
      }
      if (next_[e] || from == kStayedEmpty || farthest < e) continue;
      next_[e] = 1;
      if (record) parent_[d * width + e] = from;
    }
    std::swap(reached_, next_);
  }
  return reached_[n_] != 0;
}

// Step 4.
PipelineDpResult PipelineDp::Reconstruct() {
  const size_t width = static_cast<size_t>(n_) + 1;
  PipelineDpResult result;
  result.placement.device.assign(n_, 0);
  result.placement.priority.resize(n_);
  for (uint32_t u = 0; u < n_; ++u) result.placement.priority[u] = u;
  std::vector<std::pair<int, uint32_t>> stages;  // (device, begin), last first
  uint32_t end = n_;
  for (int d = num_devices_ - 1; d >= 0; --d) {
    const uint32_t begin = parent_[d * width + end];
    if (begin == kStayedEmpty) continue;
    const double stage_us = prefix_us_[cluster_.device(d).kind][end] -
                            prefix_us_[cluster_.device(d).kind][begin] + boundary_us_[begin];
    result.max_stage_us = std::max(result.max_stage_us, stage_us);
    std::fill(result.placement.device.begin() + begin, result.placement.device.begin() + end, d);
    stages.emplace_back(d, begin);
    end = begin;
  }
  std::reverse(stages.begin(), stages.end());
  for (const auto& [device, begin] : stages) {
    result.devices.push_back(device);
    result.bounds.push_back(begin);
  }
  result.bounds.push_back(n_);
  return result;
}

absl::StatusOr<PipelineDpResult> PipelineDp::Run(const SearchOptions& options) {
  if (absl::Status s = CheckSearchInputs(graph_, cluster_); !s.ok()) return s;
  if (n_ == 0) return PipelineDpResult{.bounds = {0}};
  if (absl::Status s = CheckEveryUnitFits(graph_, cluster_); !s.ok()) return s;
  ComputeCosts();
  MemoryChecker checker(graph_, cluster_, options.microbatches);
  std::optional<Placement> overflowing;  // the last plan over memory, for the repair
  for (int repair = 0; repair <= kMaxMemoryRepairs; ++repair) {
    if (!Probe(kInfinity, /*record=*/false)) break;  // no split within memory
    // Step 3. Every stage of a split within memory takes at most `high`.
    double low = 0, high = 0;
    for (int d = 0; d < num_devices_; ++d) {
      high = std::max(high, prefix_us_[cluster_.device(d).kind][n_]);
    }
    high += *std::max_element(boundary_us_.begin(), boundary_us_.end());
    for (int step = 0; step < kBisectionSteps && high - low > kRelativePrecision * high; ++step) {
      const double mid = (low + high) / 2;
      (Probe(mid, /*record=*/false) ? high : low) = mid;
    }
    Probe(high, /*record=*/true);
    PipelineDpResult result = Reconstruct();

    // Step 5.
    const std::vector<int64_t> overflow = checker.OverflowBytes(result.placement);
    if (Fits(overflow)) return result;
    overflowing = result.placement;
    for (int d = 0; d < num_devices_; ++d) {
      if (overflow[d] > 0)
        held_back_bytes_[d] += overflow[d] + cluster_.device(d).memory_bytes / 64;
    }
    ends_by_capacity_.clear();
  }
  absl::StatusOr<Placement> repaired =
      RepairOrGiveUp(graph_, cluster_, options.microbatches, std::move(overflowing));
  if (!repaired.ok()) return repaired.status();
  // The repaired plan need not be contiguous: its stages are left empty.
  return PipelineDpResult{.placement = *std::move(repaired)};
}

}  // namespace

absl::StatusOr<PipelineDpResult> RunPipelineDp(const CostGraph& graph, const Cluster& cluster,
                                               const SearchOptions& options) {
  return PipelineDp(graph, cluster).Run(options);
}

absl::StatusOr<Placement> PlacePipelineDp(const CostGraph& graph, const Cluster& cluster,
                                          const SearchOptions& options) {
  absl::StatusOr<PipelineDpResult> result = RunPipelineDp(graph, cluster, options);
  if (!result.ok()) return result.status();
  return std::move(result->placement);
}

}  // namespace autopar::search
