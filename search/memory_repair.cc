#include "search/memory_repair.h"

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include "search/feasibility.h"

namespace autopar::search {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;
using costmodel::SimulationResult;

namespace {

/// Step 5: units of each side tried in exchanges.
constexpr size_t kSwapCandidates = 8;
/// The default simulation budget: 4 per unit + 256, at most kMaxSimulations
/// and at most kRepairUnitRuns / units (a run costs O(V log V): large graphs
/// get fewer), never below kMinSimulations.
constexpr int64_t kMaxSimulations = 4096;
constexpr int64_t kMinSimulations = 64;
constexpr int64_t kRepairUnitRuns = 4000000;

int64_t OverBytes(const SimulationResult& result, const Cluster& cluster, int device) {
  return result.devices[device].peak_memory_bytes - cluster.device(device).memory_bytes;
}

// Step 3: per unit on `hot`, the bytes its removal frees there.
std::vector<std::pair<int64_t, uint32_t>> RankByFreedBytes(
    const CostGraph& graph, const std::vector<int32_t>& device, int hot,
    const std::vector<int32_t>& tried, int targets, std::vector<int32_t>& readers) {
  readers.assign(graph.num_params(), 0);
  for (uint32_t u = 0; u < graph.num_units(); ++u) {
    if (device[u] != hot) continue;
    for (uint32_t p : graph.params(u)) ++readers[p];
  }
  std::vector<std::pair<int64_t, uint32_t>> ranked;
  for (uint32_t u = 0; u < graph.num_units(); ++u) {
    if (device[u] != hot || tried[u] >= targets) continue;
    int64_t freed = graph.output_bytes(u) + graph.temp_bytes(u);
    for (uint32_t p : graph.params(u)) {
      if (readers[p] == 1) freed += graph.param_bytes(p);
    }
    ranked.emplace_back(freed, u);
  }
  // Most freed first; ties by unit id, so the repair is deterministic.
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  return ranked;
}

// Step 5: the kSwapCandidates units freeing the most on `hot` against those
// freeing the most on each target, one exchange at a time, the first that
// shrinks the total overflow kept. False when none does (or the simulation
// budget ran out).
bool TrySwaps(const CostGraph& graph, costmodel::Simulator& simulator,
              const costmodel::SimulationOptions& sim_options, int hot,
              const std::vector<int>& targets, std::vector<int32_t>& readers, Placement& plan,
              int64_t& overflow, int64_t& simulations, int64_t max_simulations) {
  const std::vector<int32_t> none(graph.num_units(), 0);
  const auto from_hot = RankByFreedBytes(graph, plan.device, hot, none, 1, readers);
  for (int target : targets) {
    const auto from_target = RankByFreedBytes(graph, plan.device, target, none, 1, readers);
    for (size_t i = 0; i < std::min(from_hot.size(), kSwapCandidates); ++i) {
      for (size_t j = 0; j < std::min(from_target.size(), kSwapCandidates); ++j) {
        if (from_target[j].first >= from_hot[i].first) continue;  // frees nothing on hot
        if (simulations >= max_simulations) return false;
        const uint32_t a = from_hot[i].second, b = from_target[j].second;
        plan.device[a] = target;
        plan.device[b] = hot;
        ++simulations;
        const int64_t swapped = simulator.Run(plan, sim_options).overflow_bytes;
        if (swapped < overflow) {
          overflow = swapped;
          return true;
        }
        plan.device[a] = hot;
        plan.device[b] = target;
      }
    }
  }
  return false;
}

}  // namespace

std::optional<Placement> RepairMemory(const CostGraph& graph, const Cluster& cluster,
                                      Placement start, const MemoryRepairOptions& options) {
  const int num_devices = cluster.num_devices();
  const uint32_t n = graph.num_units();
  const int64_t max_simulations =
      options.max_simulations > 0
          ? options.max_simulations
          : std::max(kMinSimulations, std::min({4 * int64_t{n} + 256, kMaxSimulations,
                                                kRepairUnitRuns / std::max<int64_t>(1, n)}));
  const costmodel::SimulationOptions sim_options{.microbatches = options.microbatches};
  costmodel::Simulator simulator(graph, cluster);

  // Step 1.
  Placement plan = std::move(start);
  // Per device, bytes over capacity (negative: room left) in the last
  // accepted simulation.
  std::vector<int64_t> over(num_devices);
  auto record = [&](const SimulationResult& result) {
    for (int d = 0; d < num_devices; ++d) over[d] = OverBytes(result, cluster, d);
    return result.overflow_bytes;
  };
  int64_t overflow = record(simulator.Run(plan, sim_options));
  int64_t simulations = 1;
  // Per unit, the targets tried in vain since the last accepted move (a
  // move elsewhere changes what helps, so it starts over).
  std::vector<int32_t> tried(n, 0);
  std::vector<int32_t> readers;
  std::vector<int> targets;
  uint32_t batch_limit = std::max<uint32_t>(1, n / 8);
  while (overflow > 0 && simulations < max_simulations) {
    // Step 2: the hot device, and the others by room left, most first.
    int hot = 0;
    for (int d = 1; d < num_devices; ++d) {
      if (over[d] > over[hot]) hot = d;
    }
    targets.clear();
    for (int d = 0; d < num_devices; ++d) {
      if (d != hot) targets.push_back(d);
    }
    if (targets.empty()) return std::nullopt;  // one device: nowhere to move
    std::stable_sort(targets.begin(), targets.end(),
                     [&](int a, int b) { return over[a] < over[b]; });

    // Step 3. A batch goes to the roomiest device, units that fit its room
    // first; a single unit that did not help there tries the next device.
    const std::vector<std::pair<int64_t, uint32_t>> ranked =
        RankByFreedBytes(graph, plan.device, hot, tried, num_devices - 1, readers);
    if (ranked.empty()) {
      // Step 5: no single move helps; exchange pairs.
      if (!TrySwaps(graph, simulator, sim_options, hot, targets, readers, plan, overflow,
                    simulations, max_simulations)) {
        return std::nullopt;
      }
      record(simulator.Run(plan, sim_options));
      ++simulations;
      std::fill(tried.begin(), tried.end(), 0);
      continue;
    }
    std::vector<uint32_t> moved;
    int target = targets.front();
    if (batch_limit == 1) {
      const uint32_t unit = ranked.front().second;
      moved.push_back(unit);
      target = targets[tried[unit]];
    } else {
      int64_t freed = 0, room = -over[target];
      for (const auto& [bytes, unit] : ranked) {
        if (moved.size() == batch_limit || freed >= over[hot]) break;
        if (bytes > room) continue;
        moved.push_back(unit);
        freed += bytes;
        room -= bytes;
      }
      if (moved.empty()) moved.push_back(ranked.front().second);
    }
    for (uint32_t u : moved) plan.device[u] = target;

    // Step 4.
    const SimulationResult& moved_result = simulator.Run(plan, sim_options);
    ++simulations;
    if (moved_result.overflow_bytes < overflow) {
      overflow = record(moved_result);
      std::fill(tried.begin(), tried.end(), 0);
      continue;
    }
    for (uint32_t u : moved) plan.device[u] = hot;
    if (moved.size() == 1) ++tried[moved.front()];
    batch_limit = std::max<uint32_t>(1, static_cast<uint32_t>(moved.size()) / 2);
  }
  if (overflow > 0) return std::nullopt;
  return plan;
}

Placement MemoryBalancedSplit(const CostGraph& graph, const Cluster& cluster) {
  const uint32_t n = graph.num_units();
  const int num_devices = cluster.num_devices();
  Placement plan;
  plan.device.assign(n, 0);
  if (n == 0 || num_devices == 0) return plan;
  std::vector<double> weight(n);
  double total = 0;
  for (uint32_t u = 0; u < n; ++u) {
    weight[u] = static_cast<double>(graph.unit_param_bytes(u) + graph.output_bytes(u) +
                                    graph.temp_bytes(u)) +
                1;  // so that units without memory still spread
    total += weight[u];
  }
  double capacity = 0;
  for (int d = 0; d < num_devices; ++d)
    capacity += static_cast<double>(cluster.device(d).memory_bytes);
  int device = 0;
  double share_end = total * static_cast<double>(cluster.device(0).memory_bytes) / capacity;
  double prefix = 0;
  for (uint32_t u = 0; u < n; ++u) {
    while (device + 1 < num_devices && prefix + weight[u] / 2 > share_end) {
      ++device;
      share_end += total * static_cast<double>(cluster.device(device).memory_bytes) / capacity;
    }
    plan.device[u] = device;
    prefix += weight[u];
  }
  return plan;
}

Placement MostRoomFirst(const CostGraph& graph, const Cluster& cluster) {
  const uint32_t n = graph.num_units();
  const int num_devices = cluster.num_devices();
  Placement plan;
  plan.device.assign(n, 0);
  if (num_devices == 0) return plan;
  std::vector<int64_t> room(num_devices);
  for (int d = 0; d < num_devices; ++d) room[d] = cluster.device(d).memory_bytes;
  std::vector<uint64_t> holders(graph.num_params(), 0);  // bit d: device d holds the block
  for (uint32_t u = 0; u < n; ++u) {
    const int device = static_cast<int>(std::max_element(room.begin(), room.end()) - room.begin());
    plan.device[u] = device;
    room[device] -= graph.output_bytes(u) + graph.temp_bytes(u);
    for (uint32_t p : graph.params(u)) {
      const uint64_t bit = uint64_t{1} << (device % 64);
      if (holders[p] & bit) continue;
      holders[p] |= bit;
      room[device] -= graph.param_bytes(p);
    }
  }
  return plan;
}

absl::StatusOr<Placement> RepairOrGiveUp(const CostGraph& graph, const Cluster& cluster,
                                         int microbatches, std::optional<Placement> overflowing) {
  if (absl::Status s = CheckEveryUnitFits(graph, cluster); !s.ok()) return s;
  const MemoryRepairOptions options{.microbatches = microbatches};
  if (overflowing && costmodel::CheckPlacement(graph, cluster, *overflowing).ok()) {
    if (std::optional<Placement> repaired =
            RepairMemory(graph, cluster, *std::move(overflowing), options)) {
      return *std::move(repaired);
    }
  }
  for (Placement start : {MemoryBalancedSplit(graph, cluster), MostRoomFirst(graph, cluster)}) {
    if (std::optional<Placement> repaired =
            RepairMemory(graph, cluster, std::move(start), options)) {
      return *std::move(repaired);
    }
  }
  return InfeasibleError(graph, cluster);
}

}  // namespace autopar::search
