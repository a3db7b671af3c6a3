#include "search/memory_profile.h"

#include <algorithm>

namespace autopar::search {

using costmodel::CostGraph;

MemoryProfile ComputeMemoryProfile(const CostGraph& graph) {
  const uint32_t n = graph.num_units();
  MemoryProfile profile;
  profile.live_bytes.assign(n, 0);
  if (n == 0) return profile;

  // Each tensor is live from its producer through its last reader (graph
  // outputs to the end): a difference array over the order.
  std::vector<int64_t> delta(static_cast<size_t>(n) + 1, 0);
  for (uint32_t t = 0; t < graph.num_tensors(); ++t) {
    const uint32_t producer = graph.tensor_producer(t);
    uint32_t last = producer;
    if (graph.tensor_is_graph_output(t)) {
      last = n - 1;
    } else {
      for (uint32_t e : graph.tensor_uses(t)) last = std::max(last, graph.edge_dst(e));
    }
    delta[producer] += graph.tensor_bytes(t);
    delta[last + 1] -= graph.tensor_bytes(t);
  }
  int64_t live = 0;
  for (uint32_t u = 0; u < n; ++u) {
    live += delta[u];
    profile.live_bytes[u] = live + graph.temp_bytes(u);
    profile.peak_activation_bytes = std::max(profile.peak_activation_bytes, profile.live_bytes[u]);
  }

  std::vector<uint8_t> read(graph.num_params(), 0);
  for (uint32_t u = 0; u < n; ++u) {
    for (uint32_t p : graph.params(u)) {
      if (read[p]) continue;
      read[p] = 1;
      profile.param_bytes += graph.param_bytes(p);
    }
  }
  return profile;
}

std::vector<uint32_t> SegmentEnds(const CostGraph& graph, const MemoryProfile& profile,
                                  int64_t capacity_bytes) {
  const uint32_t n = graph.num_units();
  std::vector<uint32_t> ends(n, n);
  if (profile.peak_bytes() <= capacity_bytes) return ends;  // every segment fits

  // The window [a, e): how many of its units read each block, the bytes of
  // the blocks read at all, and a monotone deque (indices with decreasing
  // live_bytes, from `head` on) for its largest live_bytes.
  std::vector<uint32_t> readers(graph.num_params(), 0);
  std::vector<uint32_t> deque;
  deque.reserve(n);
  size_t head = 0;
  int64_t param_bytes = 0;
  uint32_t e = 0;
  for (uint32_t a = 0; a < n; ++a) {
    if (e < a) e = a;  // the window is empty after a unit that did not fit alone
    while (e < n) {
      int64_t added = 0;
      for (uint32_t p : graph.params(e)) {
        if (readers[p]++ == 0) added += graph.param_bytes(p);
      }
      const int64_t activations = std::max(
          head < deque.size() ? profile.live_bytes[deque[head]] : 0, profile.live_bytes[e]);
      if (param_bytes + added + activations > capacity_bytes) {
        for (uint32_t p : graph.params(e)) --readers[p];
        break;
      }
      param_bytes += added;
      while (deque.size() > head && profile.live_bytes[deque.back()] <= profile.live_bytes[e]) {
        deque.pop_back();
      }
      deque.push_back(e);
      ++e;
    }
    ends[a] = e;
    if (e == a) continue;
    for (uint32_t p : graph.params(a)) {
      if (--readers[p] == 0) param_bytes -= graph.param_bytes(p);
    }
    if (head < deque.size() && deque[head] == a) ++head;
  }
  return ends;
}

std::vector<int64_t> ProvablePeakBytes(const CostGraph& graph, absl::Span<const int32_t> device,
                                       int num_devices, int microbatches) {
  std::vector<int64_t> params(num_devices, 0), activations(num_devices, 0), temp(num_devices, 0);
  std::vector<uint64_t> holders(graph.num_params(), 0);  // bit d: block counted on device d
  for (uint32_t u = 0; u < graph.num_units(); ++u) {
    const int d = device[u];
    const uint64_t bit = uint64_t{1} << d;
    for (uint32_t p : graph.params(u)) {
      if (holders[p] & bit) continue;
      holders[p] |= bit;
      params[d] += graph.param_bytes(p);
    }
    temp[d] = std::max(temp[d], graph.temp_bytes(u));
  }
  for (uint32_t t = 0; t < graph.num_tensors(); ++t) {
    const int src = device[graph.tensor_producer(t)];
    uint64_t copies = uint64_t{1} << src;  // the producer's copy and one per reading device
    activations[src] += graph.tensor_bytes(t);
    for (uint32_t e : graph.tensor_uses(t)) {
      const int dst = device[graph.edge_dst(e)];
      if (copies & (uint64_t{1} << dst)) continue;
      copies |= uint64_t{1} << dst;
      activations[dst] += graph.tensor_bytes(t);
    }
  }
  std::vector<int64_t> peak(num_devices);
  for (int d = 0; d < num_devices; ++d)
    peak[d] = params[d] + std::max(1, microbatches) * activations[d] + temp[d];
  return peak;
}

}  // namespace autopar::search
