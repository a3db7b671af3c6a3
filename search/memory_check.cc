#include "search/memory_check.h"

#include <algorithm>

#include "search/memory_profile.h"

namespace autopar::search {

MemoryChecker::MemoryChecker(const costmodel::CostGraph& graph, const costmodel::Cluster& cluster,
                             int microbatches)
    : graph_(graph), cluster_(cluster), microbatches_(std::max(1, microbatches)) {}

std::vector<int64_t> MemoryChecker::OverflowBytes(const costmodel::Placement& placement) {
  const int num_devices = cluster_.num_devices();
  std::vector<int64_t> overflow(num_devices, 0);
  const std::vector<int64_t> bound =
      ProvablePeakBytes(graph_, placement.device, num_devices, microbatches_);
  bool proven = true;
  for (int d = 0; d < num_devices; ++d) proven &= bound[d] <= cluster_.device(d).memory_bytes;
  if (proven) return overflow;
  if (!simulator_) simulator_.emplace(graph_, cluster_);
  ++simulations_;
  const costmodel::SimulationResult& result =
      simulator_->Run(placement, costmodel::SimulationOptions{.microbatches = microbatches_});
  for (int d = 0; d < num_devices; ++d) {
    overflow[d] =
        std::max<int64_t>(0, result.devices[d].peak_memory_bytes - cluster_.device(d).memory_bytes);
  }
  return overflow;
}

bool Fits(const std::vector<int64_t>& overflow_bytes) {
  return std::all_of(overflow_bytes.begin(), overflow_bytes.end(),
                     [](int64_t bytes) { return bytes == 0; });
}

ParamBudgets::ParamBudgets(const costmodel::CostGraph& graph,
                           absl::Span<const int64_t> budget_bytes)
    : graph_(graph), budget_bytes_(budget_bytes.begin(), budget_bytes.end()) {
  int64_t total_bytes = 0;
  for (uint32_t p = 0; p < graph.num_params(); ++p) total_bytes += graph.param_bytes(p);
  for (int64_t budget : budget_bytes_) binds_ |= budget < total_bytes;
  // Without a binding budget nothing needs tracking.
  if (!binds_) return;
  holders_.assign(graph.num_params(), 0);
  held_bytes_.assign(budget_bytes_.size(), 0);
}

bool ParamBudgets::Fits(uint32_t unit, int device) const {
  if (!binds_) return true;
  const uint64_t bit = uint64_t{1} << device;
  int64_t new_bytes = 0;
  for (uint32_t p : graph_.params(unit)) {
    if (!(holders_[p] & bit)) new_bytes += graph_.param_bytes(p);
  }
  return new_bytes == 0 || held_bytes_[device] + new_bytes <= budget_bytes_[device];
}

void ParamBudgets::Add(uint32_t unit, int device) {
  if (!binds_) return;
  const uint64_t bit = uint64_t{1} << device;
  for (uint32_t p : graph_.params(unit)) {
    if (holders_[p] & bit) continue;
    holders_[p] |= bit;
    held_bytes_[device] += graph_.param_bytes(p);
  }
}

}  // namespace autopar::search
