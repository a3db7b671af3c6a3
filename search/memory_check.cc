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
  const std::vector<int64_t> bound = ProvablePeakBytes(graph_, placement.device, num_devices);
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

}  // namespace autopar::search
