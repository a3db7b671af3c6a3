// HEFT, the Heterogeneous Earliest-Finish-Time list scheduler (Topcuoglu,
// Hariri and Wu, "Performance-effective and low-complexity task scheduling
// for heterogeneous computing", IEEE TPDS 13(3), 2002), as a placement
// baseline. Its steps are numbered in heft.cc.
//
// As in the paper, communication costs latency + bytes / bandwidth of the
// link between the two devices and links carry any number of transfers at
// once (no contention); the simulator, which serialises each link, judges
// the result. Memory-aware variant (the paper has none): a device is skipped
// for a unit when its parameter budget — its memory less a reserve for
// activations — cannot hold the unit's parameter blocks it does not hold
// yet; the plan is then checked against each device's memory (MemoryChecker)
// and rebuilt with smaller budgets where it overflows. A model no such plan
// holds fails with InfeasibleError's ResourceExhausted.
//
// Cost: O((V + E) · D + V · D · log V) — idle intervals are kept per device
// in a balanced tree that finds the earliest fitting one in O(log V).
#ifndef AUTOPAR_SEARCH_HEFT_H_
#define AUTOPAR_SEARCH_HEFT_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "search/schedule_estimate.h"
#include "search/search.h"

namespace autopar::search {

/// One HEFT schedule, as the paper computes it.
struct HeftSchedule {
  /// Device per unit; priority = the unit's planned start time.
  costmodel::Placement placement;
  /// Planned finish time per unit, µs.
  std::vector<double> finish_us;
  /// The schedule length: the latest finish, µs.
  double makespan_us = 0;
};

/// The mean link of the paper's eq. 2: mean latency and mean bandwidth over
/// the ordered pairs of distinct devices; none (free transfers) with one
/// device.
TypicalLink HeftMeanLink(const costmodel::Cluster& cluster);

/// The upward rank of every unit (the paper's rank_u, eq. 4): its mean
/// compute over the cluster's devices plus the largest, over its successors,
/// of the mean transfer of the edge and the successor's rank.
std::vector<double> HeftUpwardRanks(const costmodel::CostGraph& graph,
                                    const costmodel::Cluster& cluster);

/// HEFT proper. `param_budget_bytes`: per device, the parameter bytes it may
/// hold (a block counted once per device); empty for no limit. Empty result
/// when some unit fits no device's remaining budget.
std::optional<HeftSchedule> ScheduleHeft(const costmodel::CostGraph& graph,
                                         const costmodel::Cluster& cluster,
                                         absl::Span<const int64_t> param_budget_bytes);

/// Steps 3–4 for a given list: `order` is a topological order of all units;
/// `pinned_device[u]`, when not empty and >= 0, is the device unit u goes to
/// if its budget takes it (CPOP's critical-path processor), else the
/// earliest-finish device. HEFT and CPOP (search/cpop.h) share it.
std::optional<HeftSchedule> ScheduleInOrder(const costmodel::CostGraph& graph,
                                            const costmodel::Cluster& cluster,
                                            absl::Span<const uint32_t> order,
                                            absl::Span<const int32_t> pinned_device,
                                            absl::Span<const int64_t> param_budget_bytes);

/// A list scheduler under per-device parameter budgets (empty result: some
/// unit fits no budget).
using BudgetedScheduler =
    absl::FunctionRef<std::optional<HeftSchedule>(absl::Span<const int64_t> param_budget_bytes)>;

/// The memory handling of the file comment around any BudgetedScheduler:
/// budgets of memory less a shrinking activation reserve, devices that
/// overflow in the simulator cut by their overflow, and at last the shared
/// memory repair (search/memory_repair.h).
absl::StatusOr<costmodel::Placement> PlaceScheduleWithinMemory(const costmodel::CostGraph& graph,
                                                               const costmodel::Cluster& cluster,
                                                               const SearchOptions& options,
                                                               BudgetedScheduler schedule);

/// Memory-aware HEFT behind the common interface (see the file comment).
absl::StatusOr<costmodel::Placement> PlaceHeft(const costmodel::CostGraph& graph,
                                               const costmodel::Cluster& cluster,
                                               const SearchOptions& options);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_HEFT_H_
