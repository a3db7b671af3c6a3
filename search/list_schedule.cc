#include "search/list_schedule.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

namespace autopar::search {

using costmodel::Cluster;
using costmodel::CostGraph;

std::optional<ListSchedule> ScheduleByEarliestFinish(const CostGraph& graph, const Cluster& cluster,
                                                     const TypicalLink& link,
                                                     absl::Span<const int64_t> param_budget_bytes) {
  const uint32_t n = graph.num_units();
  const int num_devices = cluster.num_devices();

  // 1. Upward ranks, units in reverse topological order.
  std::vector<double> rank(n, 0);
  for (uint32_t u = n; u-- > 0;) {
    double compute = 0;
    for (int d = 0; d < num_devices; ++d) compute += graph.compute_us(u, cluster.device(d).kind);
    double tail = 0;
    for (uint32_t e : graph.out_edges(u)) {
      tail = std::max(tail, link.TransferUs(graph.edge_bytes(e)) + rank[graph.edge_dst(e)]);
    }
    rank[u] = compute / num_devices + tail;
  }

  // 2.–4. Ready heap, earliest-finish device, commit. Link and kind tables
  // are copied into flat arrays: the device loop below is the hot loop.
  std::vector<int> kind(num_devices);
  for (int d = 0; d < num_devices; ++d) kind[d] = cluster.device(d).kind;
  const size_t num_links = static_cast<size_t>(num_devices) * num_devices;
  std::vector<double> us_per_byte(num_links, 0), latency_us(num_links, 0);
  for (int a = 0; a < num_devices; ++a) {
    for (int b = 0; b < num_devices; ++b) {
      if (a == b) continue;
      us_per_byte[a * num_devices + b] = 1e6 / cluster.bandwidth_bytes_per_s(a, b);
      latency_us[a * num_devices + b] = cluster.latency_us(a, b);
    }
  }
  int64_t total_param_bytes = 0;
  for (uint32_t p = 0; p < graph.num_params(); ++p) total_param_bytes += graph.param_bytes(p);
  bool budgets_bind = false;
  for (int64_t budget : param_budget_bytes) budgets_bind |= budget < total_param_bytes;

  ListSchedule result;
  std::vector<int32_t>& device = result.placement.device;
  std::vector<double>& start = result.placement.priority;
  device.assign(n, -1);
  start.assign(n, 0);
  std::vector<double> finish(n, 0);
  std::vector<uint32_t> waiting(n);                    // producers not yet scheduled, per edge
  std::vector<uint64_t> sent(graph.num_tensors(), 0);  // bit d: a copy goes to device d
  std::vector<uint64_t> param_holders(graph.num_params(), 0);  // bit d: block on device d
  std::vector<int64_t> param_bytes(num_devices, 0);
  std::vector<double> device_free(num_devices, 0), device_busy(num_devices, 0);
  std::vector<double> link_free(num_links, 0), link_busy(num_links, 0);
  // The inputs of the unit at hand.
  struct Input {
    double finish;
    double bytes;
    int from;
    uint64_t sent;
  };
  std::vector<Input> inputs;

  using Entry = std::pair<double, uint32_t>;  // (rank, unit)
  auto later = [](const Entry& a, const Entry& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  };
  // Exits (units nobody reads) delay no other unit: they wait until the rest
  // is scheduled and then go in rank order (their own compute: longest
  // first), filling the devices' tails; the heap stays about a graph's width.
  std::vector<Entry> ready, exits;
  ready.reserve(n);
  auto make_ready = [&](uint32_t u) {
    if (graph.out_edges(u).empty()) {
      exits.emplace_back(rank[u], u);
      return;
    }
    ready.emplace_back(rank[u], u);
    std::push_heap(ready.begin(), ready.end(), later);
  };
  for (uint32_t u = 0; u < n; ++u) {
    waiting[u] = static_cast<uint32_t>(graph.in_edges(u).size());
    if (waiting[u] == 0) make_ready(u);
  }
  size_t next_exit = 0;

  while (!ready.empty() || next_exit < exits.size()) {
    uint32_t u = 0;
    if (!ready.empty()) {
      std::pop_heap(ready.begin(), ready.end(), later);
      u = ready.back().second;
      ready.pop_back();
    } else {
      if (next_exit == 0) {  // once the heap is empty every exit is ready
        std::sort(exits.begin(), exits.end(),
                  [&](const Entry& a, const Entry& b) { return later(b, a); });
      }
      u = exits[next_exit++].second;
    }
    inputs.clear();
    for (uint32_t e : graph.in_edges(u)) {
      const uint32_t src = graph.edge_src(e);
      inputs.push_back(Input{finish[src], static_cast<double>(graph.edge_bytes(e)), device[src],
                             sent[graph.edge_tensor(e)]});
    }

    // 3. The device where u finishes first (lowest index among equals). A
    //    copy already on its way counts as sent when its producer ended.
    //    Devices holding an input go first; then a device is skipped when
    //    even free inputs could not beat the best so far: most are.
    double inputs_done = 0;
    uint64_t holders = 0;
    for (const Input& in : inputs) {
      inputs_done = std::max(inputs_done, in.finish);
      holders |= uint64_t{1} << in.from;
    }
    int best = -1;
    double best_finish = std::numeric_limits<double>::infinity();
    auto consider = [&](int d) {
      const uint64_t bit = uint64_t{1} << d;
      const double duration = graph.compute_us(u, kind[d]);
      const double lower_bound = std::max(device_free[d], inputs_done) + duration;
      if (lower_bound > best_finish || (lower_bound == best_finish && d > best)) return;
      if (budgets_bind) {
        int64_t new_param_bytes = 0;
        for (uint32_t p : graph.params(u)) {
          if (!(param_holders[p] & bit)) new_param_bytes += graph.param_bytes(p);
        }
        if (new_param_bytes > 0 && param_bytes[d] + new_param_bytes > param_budget_bytes[d]) {
          return;
        }
      }
      double data_ready = 0;
      for (const Input& in : inputs) {
        double arrival = in.finish;
        if (in.from != d) {
          const size_t l = static_cast<size_t>(in.from) * num_devices + d;
          const double transfer = latency_us[l] + in.bytes * us_per_byte[l];
          arrival = ((in.sent & bit) ? in.finish : std::max(in.finish, link_free[l])) + transfer;
        }
        data_ready = std::max(data_ready, arrival);
      }
      const double done = std::max(device_free[d], data_ready) + duration;
      if (done < best_finish || (done == best_finish && d < best)) {
        best_finish = done;
        best = d;
      }
    };
    for (int d = 0; d < num_devices; ++d) {
      if (holders & (uint64_t{1} << d)) consider(d);
    }
    for (int d = 0; d < num_devices; ++d) {
      if (!(holders & (uint64_t{1} << d))) consider(d);
    }
    if (best < 0) return std::nullopt;

    // Commit: book the transfers on their links in edge order.
    const uint64_t bit = uint64_t{1} << best;
    double data_ready = 0;
    size_t i = 0;
    for (uint32_t e : graph.in_edges(u)) {
      const Input& in = inputs[i++];
      double arrival = in.finish;
      if (in.from != best) {
        const size_t l = static_cast<size_t>(in.from) * num_devices + best;
        const double transfer = latency_us[l] + in.bytes * us_per_byte[l];
        uint64_t& copies = sent[graph.edge_tensor(e)];
        if (copies & bit) {
          arrival = in.finish + transfer;
        } else {
          arrival = std::max(in.finish, link_free[l]) + transfer;
          link_free[l] = arrival;
          link_busy[l] += transfer;
          copies |= bit;
        }
      }
      data_ready = std::max(data_ready, arrival);
    }
    const double duration = graph.compute_us(u, kind[best]);
    device[u] = best;
    start[u] = std::max(device_free[best], data_ready);
    finish[u] = start[u] + duration;
    device_free[best] = finish[u];
    device_busy[best] += duration;
    result.estimate.step_us = std::max(result.estimate.step_us, finish[u]);
    for (uint32_t p : graph.params(u)) {
      if (param_holders[p] & bit) continue;
      param_holders[p] |= bit;
      param_bytes[best] += graph.param_bytes(p);
    }
    for (uint32_t e : graph.out_edges(u)) {
      const uint32_t dst = graph.edge_dst(e);
      if (--waiting[dst] == 0) make_ready(dst);
    }
  }
  for (double busy : device_busy)
    result.estimate.bottleneck_us = std::max(result.estimate.bottleneck_us, busy);
  for (double busy : link_busy)
    result.estimate.bottleneck_us = std::max(result.estimate.bottleneck_us, busy);
  return result;
}

}  // namespace autopar::search
