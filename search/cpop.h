// CPOP, the Critical-Path-on-a-Processor list scheduler (Topcuoglu, Hariri
// and Wu, "Performance-effective and low-complexity task scheduling for
// heterogeneous computing", IEEE TPDS 13(3), 2002, §4.2), as a placement
// baseline beside HEFT. Its steps are numbered in cpop.cc.
//
// Where HEFT orders units by upward rank alone, CPOP orders them by upward
// plus downward rank — the length of the longest path through the unit — and
// keeps the units of the critical path together on the one device that runs
// them fastest, so the path pays no transfers; every other unit goes to the
// device where it finishes earliest (HEFT's insertion policy). Costs as in
// HEFT (mean compute, mean link; no contention); memory as in HEFT
// (heft.h): parameter budgets, the simulator's check, the shared repair.
#ifndef AUTOPAR_SEARCH_CPOP_H_
#define AUTOPAR_SEARCH_CPOP_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "search/heft.h"
#include "search/search.h"

namespace autopar::search {

/// The ranks and the critical path CPOP schedules by.
struct CpopPriorities {
  /// Per unit, upward + downward rank (the paper's priority).
  std::vector<double> priority;
  /// The critical path's units, entry to exit (|CP| = their priority).
  std::vector<uint32_t> critical_path;
  /// The device that runs the critical path's compute fastest (lowest index
  /// among equals).
  int critical_device = 0;
};

CpopPriorities ComputeCpopPriorities(const costmodel::CostGraph& graph,
                                     const costmodel::Cluster& cluster);

/// CPOP proper, under per-device parameter budgets (empty: no limit); empty
/// result when some unit fits no budget.
std::optional<HeftSchedule> ScheduleCpop(const costmodel::CostGraph& graph,
                                         const costmodel::Cluster& cluster,
                                         absl::Span<const int64_t> param_budget_bytes);

/// Memory-aware CPOP behind the common interface.
absl::StatusOr<costmodel::Placement> PlaceCpop(const costmodel::CostGraph& graph,
                                               const costmodel::Cluster& cluster,
                                               const SearchOptions& options);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_CPOP_H_
