// The memory verdict the one-shot placers (HEFT, the pipeline DP) use before
// they return a plan (DESIGN.md §6: every result fits, or the placer says it
// cannot find one): per device, how far a placement exceeds its memory.
// ProvablePeakBytes' bound decides when it vouches for every device; else one
// simulation — the referee's own figure — does.
#ifndef AUTOPAR_SEARCH_MEMORY_CHECK_H_
#define AUTOPAR_SEARCH_MEMORY_CHECK_H_

#include <cstdint>
#include <optional>
#include <vector>

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

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_MEMORY_CHECK_H_
