// Cheap schedule estimates SGP uses to compare its candidate placements
// without the full event simulator (the simulator, costmodel/simulator.h, stays the referee of the
// result): a typical link for communication costs, and an in-order replay of
// a placement — each device runs its units in a topological order (the
// units' own, or the order a list schedule planned), a tensor
// crosses once to each other device that reads it, a link carries one
// transfer at a time. O(V + E) per replay, no allocation after the first.
#ifndef AUTOPAR_SEARCH_SCHEDULE_ESTIMATE_H_
#define AUTOPAR_SEARCH_SCHEDULE_ESTIMATE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"

namespace autopar::search {

/// The link most device pairs have: the median bandwidth and the median
/// latency over ordered pairs. A one-device cluster has none: transfers free.
struct TypicalLink {
  double bandwidth_bytes_per_s = 0;
  double latency_us = 0;

  /// latency + bytes / bandwidth; 0 without a link.
  double TransferUs(int64_t bytes) const {
    if (bandwidth_bytes_per_s <= 0) return 0;
    return latency_us + static_cast<double>(bytes) / bandwidth_bytes_per_s * 1e6;
  }
};

TypicalLink ComputeTypicalLink(const costmodel::Cluster& cluster);

struct ScheduleEstimate {
  /// When the last unit ends, one full-size micro-batch.
  double step_us = 0;
  /// The busiest device's compute or the busiest link's transfers.
  double bottleneck_us = 0;

  /// The step with M micro-batches, each the whole graph (Note
  /// [Micro-batches] in costmodel/simulator.h): the first fills the pipeline,
  /// each further one adds the bottleneck's time.
  double PipelinedUs(int microbatches) const {
    if (microbatches <= 1) return step_us;
    return step_us + (microbatches - 1) * bottleneck_us;
  }
};

/// The in-order replay (see the file comment). Both arguments must outlive it.
class ScheduleEstimator {
 public:
  ScheduleEstimator(const costmodel::CostGraph& graph, const costmodel::Cluster& cluster);

  /// Replays `device` (one per unit), the units in `order` — a topological
  /// order; empty: by index, which is one. A plan that fixes each device's
  /// order (a list schedule's start times) is replayed in that order, else
  /// its estimate charges it waits the plan never has. Start times are in
  /// start_us() until the next call.
  ScheduleEstimate Run(absl::Span<const int32_t> device, absl::Span<const uint32_t> order = {});
  const std::vector<double>& start_us() const { return start_us_; }

 private:
  const costmodel::CostGraph& graph_;
  const costmodel::Cluster& cluster_;
  std::vector<double> start_us_;
  std::vector<double> edge_arrival_us_;  // per edge: when its tensor is on the reader's device
  std::vector<double> device_free_us_;
  std::vector<double> device_busy_us_;
  std::vector<double> link_free_us_;  // [src * D + dst]
  std::vector<double> link_busy_us_;
  std::vector<double> copy_arrival_us_;  // per device, for the tensor at hand; < 0: no copy yet
  std::vector<int32_t> copy_devices_;    // devices with a copy of the tensor at hand
};

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_SCHEDULE_ESTIMATE_H_
