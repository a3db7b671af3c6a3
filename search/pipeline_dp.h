// The contiguous pipeline partition: the topological order cut
// into consecutive stages, stage j on the cluster's device j (devices in the
// cluster's order; a device may be left empty), minimising the largest stage
// time — the objective of PipeDream's partitioner (Narayanan et al.,
// "PipeDream: generalized pipeline parallelism for DNN training", SOSP 2019,
// §3.1), which is what bounds a pipeline's throughput. Steps in pipeline_dp.cc.
//
// A stage's time is its compute on its device's kind plus the transfer of its
// entering boundary: every tensor produced before the stage and read in it or
// later, on the cluster's typical link — PipeDream's layer chain hands
// activations from stage to stage, so a tensor that skips a stage passes
// through it (counted once: a forward step, where PipeDream's training
// partitioner counts activations and gradients). Each stage fits its device's
// memory (SegmentEnds' in-order estimate); the plan is checked against the
// simulator's memory and rebuilt with smaller capacities where it overflows. A
// model that no contiguous split holds fails with InfeasibleError's
// ResourceExhausted.
//
// Exact for this objective, to the bisection's precision: bisection on the
// largest stage time, each probe a sweep over the reachable stage boundaries
// (not a greedy fill, which the boundary term makes inexact). O(D · V) per
// probe, a few dozen probes; PipeDream's dynamic program over every (stage
// start, stage end) pair is O(V² · D): 10^11 steps at 100k units.
#ifndef AUTOPAR_SEARCH_PIPELINE_DP_H_
#define AUTOPAR_SEARCH_PIPELINE_DP_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "search/search.h"

namespace autopar::search {

/// The partition and its objective, for tests and reports.
struct PipelineDpResult {
  /// Device per unit; priority = the unit's index, so that each device runs
  /// its stage in topological order.
  costmodel::Placement placement;
  /// Stage j = [bounds[j], bounds[j + 1]) runs on devices[j]; empty stages
  /// are left out. Both empty when no contiguous split fitted and the shared
  /// memory repair (search/memory_repair.h) made the plan.
  std::vector<int> devices;
  std::vector<uint32_t> bounds;
  /// The largest stage time (compute + entering boundary), µs.
  double max_stage_us = 0;
};

/// The partition with its report.
absl::StatusOr<PipelineDpResult> RunPipelineDp(const costmodel::CostGraph& graph,
                                               const costmodel::Cluster& cluster,
                                               const SearchOptions& options);

/// The partition behind the common interface.
absl::StatusOr<costmodel::Placement> PlacePipelineDp(const costmodel::CostGraph& graph,
                                                     const costmodel::Cluster& cluster,
                                                     const SearchOptions& options);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_PIPELINE_DP_H_
