#include "search/tga_operators.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace autopar::search {
namespace {

// Units [begin, end) to `device`.
void Assign(Genome& genome, uint32_t begin, uint32_t end, int32_t device) {
  std::fill(genome.device.begin() + begin, genome.device.begin() + end, device);
}

// Length of the run of equal devices starting at `at` going forwards
// (`forward`) or ending just before `at` going backwards.
uint32_t RunLength(const Genome& genome, uint32_t at, bool forward) {
  const std::vector<int32_t>& device = genome.device;
  const auto n = static_cast<uint32_t>(device.size());
  uint32_t length = 0;
  if (forward) {
    while (at + length < n && device[at + length] == device[at]) ++length;
  } else {
    while (length < at && device[at - 1 - length] == device[at - 1]) ++length;
  }
  return length;
}

// Moves the boundary at `b` (device[b - 1] != device[b]) by up to
// LogUniform(max_shift) units: `into_right` makes the left run grow into the
// right one, otherwise the right run grows into the left one.
void MoveBoundary(Genome& genome, uint32_t b, bool into_right, Rng& rng, uint32_t max_shift) {
  const uint32_t room = RunLength(genome, b, into_right);
  const uint32_t shift = rng.LogUniform(std::max<uint32_t>(1, std::min(room, max_shift)));
  if (into_right) {
    Assign(genome, b, b + shift, genome.device[b - 1]);
  } else {
    Assign(genome, b - shift, b, genome.device[b]);
  }
}

// Whether a path leads from `from` to `to` (from < to): a search forward
// through units numbered at most `to` (none later can lead back to it).
// Gives up — says yes — after kMaxReached units: only near branches count.
bool Reaches(const costmodel::CostGraph& graph, uint32_t from, uint32_t to,
             std::vector<uint32_t>& reached) {
  constexpr size_t kMaxReached = 64;
  reached.assign(1, from);
  for (size_t i = 0; i < reached.size(); ++i) {
    for (uint32_t e : graph.out_edges(reached[i])) {
      const uint32_t next = graph.edge_dst(e);
      if (next == to) return true;
      if (next > to || std::find(reached.begin(), reached.end(), next) != reached.end()) continue;
      if (reached.size() == kMaxReached) return true;
      reached.push_back(next);
    }
  }
  return false;
}

}  // namespace

uint32_t Rng::LogUniform(uint32_t max) {
  if (max <= 1) return 1;
  const double value = std::exp(Unit() * std::log(static_cast<double>(max) + 1));
  return std::clamp<uint32_t>(static_cast<uint32_t>(value), 1, max);
}

void SegmentCrossover(const Genome& a, const Genome& b, Rng& rng, Genome& child) {
  const auto n = static_cast<uint32_t>(a.device.size());
  child = a;
  if (n == 0) return;
  uint32_t begin = rng.Below(n), end = rng.Below(n) + 1;
  if (begin >= end) std::swap(begin, end);
  if (begin == end) ++end;
  std::copy(b.device.begin() + begin, b.device.begin() + end, child.device.begin() + begin);
}

bool MoveToNeighbourDevice(const costmodel::CostGraph& graph, Genome& genome, Rng& rng) {
  // Reservoir sampling over the cut edges: one pass, nothing allocated.
  uint32_t chosen = 0, cut = 0;
  for (uint32_t e = 0; e < graph.num_edges(); ++e) {
    if (genome.device[graph.edge_src(e)] == genome.device[graph.edge_dst(e)]) continue;
    if (rng.Below(++cut) == 0) chosen = e;
  }
  if (cut == 0) return false;
  const uint32_t src = graph.edge_src(chosen), dst = graph.edge_dst(chosen);
  if (rng.Chance(0.5)) {
    genome.device[src] = genome.device[dst];
  } else {
    genome.device[dst] = genome.device[src];
  }
  return true;
}

bool ShiftBoundary(Genome& genome, Rng& rng, uint32_t max_shift) {
  const auto n = static_cast<uint32_t>(genome.device.size());
  uint32_t chosen = 0, boundaries = 0;
  for (uint32_t b = 1; b < n; ++b) {
    if (genome.device[b] != genome.device[b - 1] && rng.Below(++boundaries) == 0) chosen = b;
  }
  if (boundaries == 0) return false;
  MoveBoundary(genome, chosen, rng.Chance(0.5), rng, max_shift);
  return true;
}

bool RelieveDevice(Genome& genome, int hot, Rng& rng, uint32_t max_shift) {
  const auto n = static_cast<uint32_t>(genome.device.size());
  uint32_t chosen = 0, boundaries = 0;
  for (uint32_t b = 1; b < n; ++b) {
    const int32_t left = genome.device[b - 1], right = genome.device[b];
    if (left == right || (left != hot && right != hot)) continue;
    if (rng.Below(++boundaries) == 0) chosen = b;
  }
  if (boundaries == 0) return false;
  // The neighbour grows into the hot run.
  MoveBoundary(genome, chosen, /*into_right=*/genome.device[chosen] == hot, rng, max_shift);
  return true;
}

bool OffloadBranch(const costmodel::CostGraph& graph, Genome& genome, int num_devices, Rng& rng) {
  constexpr int kAttempts = 8;
  const uint32_t n = graph.num_units();
  if (num_devices < 2 || n == 0) return false;
  std::vector<uint32_t> reached;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const uint32_t u = rng.Below(n);
    const int32_t home = genome.device[u];
    bool head = false;
    for (uint32_t e : graph.in_edges(u)) {
      for (uint32_t sibling : graph.out_edges(graph.edge_src(e))) {
        const uint32_t other = graph.edge_dst(sibling);
        if (head || other == u || genome.device[other] != home) continue;
        head = !Reaches(graph, std::min(u, other), std::max(u, other), reached);
      }
    }
    if (!head) continue;
    const auto to = static_cast<int32_t>((home + 1 + rng.Below(num_devices - 1)) % num_devices);
    // The chain: while the unit has one reader, which reads only it.
    for (uint32_t v = u;;) {
      genome.device[v] = to;
      const absl::Span<const uint32_t> out = graph.out_edges(v);
      if (out.size() != 1) break;
      const uint32_t next = graph.edge_dst(out[0]);
      if (graph.in_edges(next).size() != 1 || genome.device[next] != home) break;
      v = next;
    }
    return true;
  }
  return false;
}

bool SplitOff(Genome& genome, int num_devices, Rng& rng, uint32_t max_length) {
  const auto n = static_cast<uint32_t>(genome.device.size());
  if (num_devices < 2 || n == 0) return false;
  const uint32_t length = rng.LogUniform(std::max<uint32_t>(1, std::min(n, max_length)));
  const uint32_t begin = rng.Below(n - length + 1);
  const int32_t from = genome.device[begin];
  const auto to = static_cast<int32_t>((from + 1 + rng.Below(num_devices - 1)) % num_devices);
  Assign(genome, begin, begin + length, to);
  return true;
}

bool MoveToRandomDevice(Genome& genome, int num_devices, Rng& rng) {
  const auto n = static_cast<uint32_t>(genome.device.size());
  if (num_devices < 2 || n == 0) return false;
  const uint32_t u = rng.Below(n);
  genome.device[u] =
      static_cast<int32_t>((genome.device[u] + 1 + rng.Below(num_devices - 1)) % num_devices);
  return true;
}

Genome RandomCuts(uint32_t num_units, int num_devices, Rng& rng) {
  std::vector<int32_t> order(num_devices);
  std::iota(order.begin(), order.end(), 0);
  for (int i = num_devices - 1; i > 0; --i) std::swap(order[i], order[rng.Below(i + 1)]);
  const uint32_t segments = 1 + rng.Below(static_cast<uint32_t>(num_devices));
  std::vector<uint32_t> cuts = {0, num_units};
  for (uint32_t s = 1; s < segments && num_units > 0; ++s) cuts.push_back(rng.Below(num_units));
  std::sort(cuts.begin(), cuts.end());
  Genome genome;
  genome.device.assign(num_units, 0);
  for (size_t s = 0; s + 1 < cuts.size(); ++s) Assign(genome, cuts[s], cuts[s + 1], order[s]);
  return genome;
}

Genome RandomFill(const std::vector<const std::vector<uint32_t>*>& ends, Rng& rng) {
  const auto num_devices = static_cast<uint32_t>(ends.size());
  const auto n = static_cast<uint32_t>(ends[0]->size());
  std::vector<int32_t> order(num_devices);
  std::iota(order.begin(), order.end(), 0);
  for (uint32_t i = num_devices - 1; i > 0; --i) std::swap(order[i], order[rng.Below(i + 1)]);
  Genome genome;
  genome.device.assign(n, 0);
  uint32_t begin = 0;
  // Every segment takes at least one unit: at most n segments.
  for (uint32_t j = 0; begin < n; ++j) {
    const int32_t d = order[j % num_devices];
    const uint32_t left = std::max<uint32_t>(1, num_devices - j % num_devices);
    // An even share of what remains, times 0.5–1.5 (the round's last device
    // takes the rest), within the device's memory.
    const double factor = left == 1 ? 1 : 0.5 + rng.Unit();
    const auto share = static_cast<uint32_t>((n - begin) / static_cast<double>(left) * factor);
    const uint32_t fits = std::max((*ends[d])[begin], begin + 1);
    const uint32_t end = std::min({n, fits, begin + std::max<uint32_t>(1, share)});
    Assign(genome, begin, end, d);
    begin = end;
  }
  return genome;
}

Genome RandomDevices(uint32_t num_units, int num_devices, Rng& rng) {
  Genome genome;
  genome.device.resize(num_units);
  for (int32_t& device : genome.device) {
    device = static_cast<int32_t>(rng.Below(static_cast<uint32_t>(num_devices)));
  }
  return genome;
}

Genome BlockRoundRobin(uint32_t num_units, int num_devices, uint32_t block, int first) {
  Genome genome;
  genome.device.resize(num_units);
  block = std::max<uint32_t>(1, block);
  for (uint32_t u = 0; u < num_units; ++u) {
    genome.device[u] = static_cast<int32_t>((first + u / block) % num_devices);
  }
  return genome;
}

}  // namespace autopar::search
