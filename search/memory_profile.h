// Memory estimates the placement algorithms share: the
// activation profile of the graph run in topological order, the memory of a
// contiguous segment of that order, and a bound on a placement's peak that
// holds for every schedule.
//
// Note [In-order liveness]: run on one device in topological order, the
// simulator allocates a unit's outputs and workspace when it starts and frees
// the workspace when it ends, an input when its last reader has ended, an
// output nobody reads at once; graph outputs stay. So while unit v runs the
// live activations are exactly
//   live_bytes[v] = temp(v) + Σ bytes(t) over tensors t with producer(t) <= v
//                   and (v <= last reader of t, or t is a graph output),
// and the single-device peak is param_bytes + max_v live_bytes[v] — the
// simulator's own figure for a single-device placement whose priorities follow
// the topological order (then the device runs the units in that order).
//
// A segment [a, e) of the order run on its own device holds a subset of what
// the whole graph holds at the same unit (its received tensors are live in the
// whole graph too), so `params of the segment + max live_bytes over it` bounds
// its in-order peak. Out-of-order execution can exceed it; SGP checks the
// simulator where ProvablePeakBytes cannot vouch.
#ifndef AUTOPAR_SEARCH_MEMORY_PROFILE_H_
#define AUTOPAR_SEARCH_MEMORY_PROFILE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "costmodel/cost_graph.h"

namespace autopar::search {

/// The graph's memory run on one device in topological order
/// (Note [In-order liveness]).
struct MemoryProfile {
  /// Per unit: activation bytes live while it runs.
  std::vector<int64_t> live_bytes;
  /// Every parameter block some unit reads, once.
  int64_t param_bytes = 0;
  /// max over units of live_bytes.
  int64_t peak_activation_bytes = 0;

  /// The single-device peak: what the model needs on one device.
  int64_t peak_bytes() const { return param_bytes + peak_activation_bytes; }
};

MemoryProfile ComputeMemoryProfile(const costmodel::CostGraph& graph);

/// For every start a, the end e of the longest segment [a, e) of the
/// topological order whose estimate — its distinct parameter blocks plus the
/// largest live_bytes inside it — fits `capacity_bytes`; ends[a] == a when
/// unit a alone does not fit. Non-decreasing in a. O(V + Σ params) (a
/// two-pointer sweep with a sliding-window maximum).
std::vector<uint32_t> SegmentEnds(const costmodel::CostGraph& graph, const MemoryProfile& profile,
                                  int64_t capacity_bytes);

/// Per device, an upper bound on the peak memory of `device` (one per unit)
/// under any schedule of `microbatches` micro-batches: its distinct
/// parameters + every tensor it produces or receives, once per micro-batch
/// (each has its own activations, Note [Micro-batches] in
/// costmodel/simulator.h) + its largest workspace (one unit runs at a time).
std::vector<int64_t> ProvablePeakBytes(const costmodel::CostGraph& graph,
                                       absl::Span<const int32_t> device, int num_devices,
                                       int microbatches = 1);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_MEMORY_PROFILE_H_
