// Memory bookkeeping the one-shot placers (HEFT, the pipeline DP) share
// (every result fits, or the placer says it cannot find one):
//  - MemoryChecker, the verdict before a plan is returned: per device, how
//    far a placement exceeds its memory. ProvablePeakBytes' bound decides when
//    it vouches for every device; else one simulation — the referee's own
//    figure — does.
//  - ParamBudgets, what a list scheduler consults while it places units: the
//    parameter blocks each device holds against a budget, a block shared by
//    several units counted once per device.
#ifndef AUTOPAR_SEARCH_MEMORY_CHECK_H_
#define AUTOPAR_SEARCH_MEMORY_CHECK_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"

namespace autopar::search {

class MemoryChecker {
 public:
  /// Both must outlive the checker. `microbatches` as the plan will run.
  MemoryChecker(const costmodel::CostGraph& graph, const costmodel::Cluster& cluster,
                int microbatches);

  /// Per device, the bytes above its capacity; all 0 when the placement fits.
  std::vector<int64_t> OverflowBytes(const costmodel::Placement& placement);

  /// Simulator runs spent so far (0 while the bound sufficed).
  int simulations() const { return simulations_; }

 private:
  const costmodel::CostGraph& graph_;
  const costmodel::Cluster& cluster_;
  int microbatches_;
  std::optional<costmodel::Simulator> simulator_;  // made on first need
  int simulations_ = 0;
};

/// Whether every entry of OverflowBytes' answer is 0.
bool Fits(const std::vector<int64_t>& overflow_bytes);

class ParamBudgets {
 public:
  /// `budget_bytes`: per device, the parameter bytes it may hold; empty for
  /// no limit. The graph must outlive the budgets.
  ParamBudgets(const costmodel::CostGraph& graph, absl::Span<const int64_t> budget_bytes);

  /// Whether `device` can take the blocks of `unit` it does not hold yet.
  bool Fits(uint32_t unit, int device) const;
  /// Records that `unit` runs on `device`.
  void Add(uint32_t unit, int device);

 private:
  const costmodel::CostGraph& graph_;
  std::vector<int64_t> budget_bytes_;
  bool binds_ = false;               // some budget is below the model's parameters
  std::vector<uint64_t> holders_;    // per block, bit d: held by device d
  std::vector<int64_t> held_bytes_;  // per device
};

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_MEMORY_CHECK_H_
