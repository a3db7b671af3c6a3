// Memory-aware list scheduling (HEFT without insertion; Topcuoglu, Hariri and
// Wu, "Performance-effective and low-complexity task scheduling for
// heterogeneous computing", IEEE TPDS 2002), SGP's refinement for wide graphs
// where contiguous segments of the topological order serialise. Reusable by
// the HEFT and m-ETF baselines.
//
//  1. Upward rank of every unit: its mean compute over the cluster's devices
//     plus, along the heaviest path to an exit, the compute and the
//     typical-link transfer of each edge.
//  2. The ready unit of highest rank (then lowest index) goes next. Ranks
//     fall along edges, so that is always the next unit in rank order: one
//     O(V) sort instead of a ready heap (Note [Ranks fall along edges] in the
//     .cc). Exits (units nobody reads) delay nobody: they come last, longest
//     first.
//  3. The unit goes to the device where it finishes earliest — the device is
//     free, its inputs have arrived (local, already sent there, or sent now
//     once the link is free) — among the devices whose parameter budget still
//     holds its parameter blocks (a block counted once per device).
//  4. Its start time is its priority for the simulator.
// O((V + E) · D); allocates its O(V + E) arrays once per call and lays the
// units' data out in scheduling order, so that the hot loop reads it front
// to back (the order jumps around the graph: on wide DAGs the low-ranked
// units come last, from everywhere).
#ifndef AUTOPAR_SEARCH_LIST_SCHEDULE_H_
#define AUTOPAR_SEARCH_LIST_SCHEDULE_H_

#include <cstdint>
#include <optional>

#include "absl/types/span.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "search/schedule_estimate.h"

namespace autopar::search {

struct ListSchedule {
  /// Device per unit; priority = planned start time.
  costmodel::Placement placement;
  /// The plan's own step time and bottleneck.
  ScheduleEstimate estimate;
};

/// Schedules every unit (steps in the file comment). `param_budget_bytes`:
/// per device, the parameter bytes it may hold. Empty when some unit fits no
/// device's remaining budget.
std::optional<ListSchedule> ScheduleByEarliestFinish(const costmodel::CostGraph& graph,
                                                     const costmodel::Cluster& cluster,
                                                     const TypicalLink& link,
                                                     absl::Span<const int64_t> param_budget_bytes);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_LIST_SCHEDULE_H_
