#include "search/schedule_estimate.h"

#include <algorithm>

namespace autopar::search {

using costmodel::Cluster;
using costmodel::CostGraph;

TypicalLink ComputeTypicalLink(const Cluster& cluster) {
  const int n = cluster.num_devices();
  std::vector<double> bandwidths, latencies;
  for (int src = 0; src < n; ++src) {
    for (int dst = 0; dst < n; ++dst) {
      if (src == dst) continue;
      bandwidths.push_back(cluster.bandwidth_bytes_per_s(src, dst));
      latencies.push_back(cluster.latency_us(src, dst));
    }
  }
  TypicalLink link;
  if (bandwidths.empty()) return link;
  const size_t mid = bandwidths.size() / 2;
  std::nth_element(bandwidths.begin(), bandwidths.begin() + mid, bandwidths.end());
  std::nth_element(latencies.begin(), latencies.begin() + mid, latencies.end());
  link.bandwidth_bytes_per_s = bandwidths[mid];
  link.latency_us = latencies[mid];
  return link;
}

ScheduleEstimator::ScheduleEstimator(const CostGraph& graph, const Cluster& cluster)
    : graph_(graph), cluster_(cluster) {}

ScheduleEstimate ScheduleEstimator::Run(absl::Span<const int32_t> device,
                                        absl::Span<const uint32_t> order) {
  const uint32_t n = graph_.num_units();
  const int num_devices = cluster_.num_devices();
  start_us_.resize(n);
  edge_arrival_us_.resize(graph_.num_edges());  // each written by its producer before it is read
  device_free_us_.assign(num_devices, 0);
  device_busy_us_.assign(num_devices, 0);
  link_free_us_.assign(static_cast<size_t>(num_devices) * num_devices, 0);
  link_busy_us_.assign(static_cast<size_t>(num_devices) * num_devices, 0);
  copy_arrival_us_.assign(num_devices, -1);
  copy_devices_.clear();

  ScheduleEstimate estimate;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t u = order.empty() ? i : order[i];
    const int d = device[u];
    double ready = 0;
    for (uint32_t e : graph_.in_edges(u)) ready = std::max(ready, edge_arrival_us_[e]);
    const double start = std::max(device_free_us_[d], ready);
    const double duration = graph_.compute_us(u, cluster_.device(d).kind);
    const double finish = start + duration;
    start_us_[u] = start;
    device_free_us_[d] = finish;
    device_busy_us_[d] += duration;
    estimate.step_us = std::max(estimate.step_us, finish);

    // Outputs go to each reading device once, in edge order, as links free up.
    for (uint32_t t : graph_.outputs(u)) {
      for (uint32_t e : graph_.tensor_uses(t)) {
        const int dst = device[graph_.edge_dst(e)];
        if (dst == d) {
          edge_arrival_us_[e] = finish;
          continue;
        }
        if (copy_arrival_us_[dst] < 0) {
          const size_t link = static_cast<size_t>(d) * num_devices + dst;
          const double transfer = cluster_.TransferUs(d, dst, graph_.tensor_bytes(t));
          copy_arrival_us_[dst] = std::max(finish, link_free_us_[link]) + transfer;
          link_free_us_[link] = copy_arrival_us_[dst];
          link_busy_us_[link] += transfer;
          copy_devices_.push_back(dst);
        }
        edge_arrival_us_[e] = copy_arrival_us_[dst];
      }
      for (int32_t dst : copy_devices_) copy_arrival_us_[dst] = -1;
      copy_devices_.clear();
    }
  }
  for (double busy : device_busy_us_)
    estimate.bottleneck_us = std::max(estimate.bottleneck_us, busy);
  for (double busy : link_busy_us_) estimate.bottleneck_us = std::max(estimate.bottleneck_us, busy);
  return estimate;
}

}  // namespace autopar::search
