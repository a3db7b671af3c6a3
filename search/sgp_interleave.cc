// SGP's steps 4c and 7b: interleaved stages for pipelined micro-batches.
// Contiguous segments pay the pipeline's fill and drain; cut into v·D
// balanced chunks, chunk i on device i mod D, the idle part shrinks about
// v-fold (Megatron-LM's interleaving). Step 4c cuts the units' order, step
// 7b the nodes' orders (their own, by earliest and latest start, with an
// early region first) and adds the branches-spread candidate with its memory
// repair. The simulator judges every candidate. See the list in sgp.cc.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "search/capped_chunks.h"
#include "search/node_refinement.h"
#include "search/sgp_node_sweeps.h"
#include "search/sgp_steps.h"

namespace autopar::search::sgp {
namespace {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;

/// Steps 4c and 7b: chunks per device of the interleaved candidates (1 is the
/// contiguous split over every device, which step 2 may have passed over for
/// fewer devices) and how much the last chunk's cap exceeds the first's (the
/// timing that decides collisions is too fine to predict: a few growths, the
/// simulator picks). Each of steps 4c, 7b and 7c simulates at most
/// kInterleavedUnitRuns unit (or node) instances: runs × the judged graph's
/// size × M. Below that the candidates are tried in the order listed, growth
/// first, until it is spent (on the models: all of them, under 1,700 nodes
/// with 4 micro-batches).
constexpr int kChunksPerDevice[] = {1, 2, 3, 4, 6, 8};
constexpr double kChunkGrowth[] = {0, 0.25, 0.5, 1, 2};
constexpr int64_t kInterleavedUnitRuns = 400000;
/// Step 7b's memory repair of the spread candidate: rounds, and runs in all.
constexpr int kMaxNodeRepairRounds = 3;
constexpr int kMaxNodeRepairSimulations = 60;

// A node without inputs (a Constant) joins its first reader: by earliest
// start they all fall into the first chunk, and every reader elsewhere would
// wait for a transfer of it, micro-batch by micro-batch, queued on one link.
// A locked unit's nodes follow its first node.
void KeepNodesTogether(const NodeLevel& level, Placement& plan) {
  const CostGraph& nodes = *level.graph;
  const uint32_t n = nodes.num_units();
  for (uint32_t v = 0; v < n; ++v) {
    if (!nodes.in_edges(v).empty() || nodes.out_edges(v).empty()) continue;
    uint32_t first_reader = n;
    for (uint32_t e : nodes.out_edges(v)) first_reader = std::min(first_reader, nodes.edge_dst(e));
    plan.device[v] = plan.device[first_reader];
  }
  std::vector<int32_t> unit_device(level.locked_units.size(), -1);
  for (uint32_t v = 0; v < n; ++v) {
    const uint32_t unit = (*level.unit_of_node)[v];
    if (unit >= level.locked_units.size() || !level.locked_units[unit]) continue;
    if (unit_device[unit] < 0) unit_device[unit] = plan.device[v];
    plan.device[v] = unit_device[unit];
  }
}

// Step 7b: the interleaved chunks of step 4c cut from `order`, a topological
// order of the nodes (units can be too coarse to balance many chunks: GPT-2
// small's 14), chunk i on devices[i mod D], each cap `growth` · i / (chunks -
// 1) above the first; bisection on the first cap (capped_chunks.h; a chunk
// may stay empty). A locked unit's nodes follow its first node. Memory is
// left to the simulator that judges the plan.
Placement InterleavedNodeChunks(const NodeLevel& level, const Cluster& cluster,
                                const std::vector<int>& devices, int chunks_per_device,
                                double growth, absl::Span<const uint32_t> order) {
  const CostGraph& nodes = *level.graph;
  const uint32_t n = nodes.num_units();
  const size_t num_chunks = devices.size() * chunks_per_device;
  std::vector<std::vector<double>> prefix(nodes.num_device_kinds());
  for (int d : devices) {
    std::vector<double>& sums = prefix[cluster.device(d).kind];
    if (!sums.empty()) continue;
    sums.assign(static_cast<size_t>(n) + 1, 0);
    for (uint32_t p = 0; p < n; ++p) {
      sums[p + 1] = sums[p] + nodes.compute_us(order[p], cluster.device(d).kind);
    }
  }
  auto device_of_chunk = [&](size_t j) { return devices[j % devices.size()]; };
  std::vector<ChunkDevice> chunks(num_chunks);
  for (size_t j = 0; j < num_chunks; ++j) {
    chunks[j].prefix_us = &prefix[cluster.device(device_of_chunk(j)).kind];
  }
  CappedChunker chunker(chunks);
  chunker.Balance(growth, EmptyChunk::kAllowed);  // covers the order: no memory bound
  const std::vector<uint32_t>& ends = chunker.ends();
  Placement plan;
  plan.device.resize(n);
  uint32_t begin = 0;
  for (size_t j = 0; j < num_chunks; ++j) {
    for (uint32_t p = begin; p < ends[j]; ++p) plan.device[order[p]] = device_of_chunk(j);
    begin = ends[j];
  }
  KeepNodesTogether(level, plan);
  return plan;
}

// Step 7b's last candidate, branches spread: along the node order a node that
// reads the node before it stays on that node's device; any other node (a
// branch's start, a join) goes to the device of `devices` with the least
// compute so far. Where a cap leaves two devices just room for the model
// (Inception-v3 under the tight cap with 4 micro-batches) the interleaved
// cuts that fit are slow, while towers side by side on both devices balance
// compute and weights at once, as TGA's plans do there.
Placement SpreadBranches(const NodeLevel& level, const Cluster& cluster,
                         const std::vector<int>& devices) {
  const CostGraph& nodes = *level.graph;
  const uint32_t n = nodes.num_units();
  Placement plan;
  plan.device.assign(n, devices[0]);
  std::vector<double> load_us(cluster.num_devices(), 0);
  for (uint32_t v = 0; v < n; ++v) {
    int32_t to = devices[0];
    if (v > 0 && ReadsPrevious(nodes, v)) {
      to = plan.device[v - 1];
    } else {
      for (int d : devices) {
        if (load_us[d] < load_us[to]) to = d;
      }
    }
    plan.device[v] = to;
    load_us[to] += nodes.compute_us(v, cluster.device(to).kind);
  }
  KeepNodesTogether(level, plan);
  return plan;
}

// Step 7b's fourth order: `by_start` with the early region first — the nodes
// that do not descend from the entry whose path to an exit is longest (a
// decoder's first self-attention block, which reads only the decoder's
// input, beside the encoder). They can run before anything the main path
// sends them, so as a block at the head of the order they fill devices that
// wait for the pipeline's first micro-batch, instead of being spread over
// the chunks of the encoder's first round. Empty when there is no such
// region or it holds half the work or more (then it is a main path too).
std::vector<uint32_t> EarlyRegionFirst(const CostGraph& nodes,
                                       const std::vector<uint32_t>& by_start,
                                       const std::vector<double>& to_exit_us, int kind) {
  const uint32_t n = nodes.num_units();
  uint32_t main_entry = n;
  for (uint32_t v = 0; v < n; ++v) {
    if (!nodes.in_edges(v).empty()) continue;
    if (main_entry == n || to_exit_us[v] > to_exit_us[main_entry]) main_entry = v;
  }
  if (main_entry == n) return {};
  // Node indices are a topological order.
  std::vector<uint8_t> on_main(n, 0);
  on_main[main_entry] = 1;
  double early_us = 0, total_us = 0;
  for (uint32_t v = 0; v < n; ++v) {
    for (uint32_t e : nodes.in_edges(v)) on_main[v] |= on_main[nodes.edge_src(e)];
    total_us += nodes.compute_us(v, kind);
    // Entries aside: a Constant is no region.
    if (!on_main[v] && !nodes.in_edges(v).empty()) early_us += nodes.compute_us(v, kind);
  }
  if (early_us <= 0 || early_us >= total_us / 2) return {};
  std::vector<uint32_t> order = by_start;
  std::stable_partition(order.begin(), order.end(), [&](uint32_t v) { return !on_main[v]; });
  return order;
}

}  // namespace

// Step 4c, with micro-batches only: interleaved (virtual) stages. M
// micro-batches through S contiguous stages idle for the fill and drain, a
// step of about (M + S - 1) / M times the balanced work; cut into v·D
// balanced chunks, chunk i on device i mod D (Megatron-LM's interleaving),
// a micro-batch leaves each device after 1/v of its share, so the idle part
// shrinks about v-fold for v times the cuts.
//
// The simulator runs the earliest micro-batch first (Note [Micro-batches] in
// costmodel/simulator.h). With M ≥ D that is tight: micro-batch 0 comes back
// to a device just as micro-batch M - 1 leaves it, and when a short chunk lets
// it come back early it takes the device, the last micro-batch falls behind
// and then waits behind every earlier one on every later device. Chunks that
// grow along the order (each cap `growth` · i / (v·D - 1) above the first)
// keep the earlier micro-batches late enough; the growth costs the last
// micro-batch's trail (M - 1 chunks) a little.
//
// SGP's estimate (one micro-batch's step, then the bottleneck per further
// one) sees none of this, so the simulator judges each candidate — on the
// nodes when it has them, since that is where the plan is judged and the
// timing there decides who collides — and the fastest that fits wins.
std::optional<Candidate> Sgp::BestInterleaved() {
  if (options_.microbatches <= 1 || num_devices_ < 2) return std::nullopt;
  // One run is kept for judging the plan of steps 2–6 against the best.
  int64_t runs_left = InterleavedRuns(JudgedSize()) - 1;
  std::vector<int> devices = device_order_;
  std::sort(devices.begin(), devices.end());  // neighbours in index order share islands
  std::optional<Candidate> best;
  std::vector<int> chunks;
  for (const double growth : kChunkGrowth) {
    for (const int v : kChunksPerDevice) {
      if (static_cast<int64_t>(v) * num_devices_ > n_ || runs_left <= 0) break;
      --runs_left;
      chunks.clear();
      for (int round = 0; round < v; ++round) {
        chunks.insert(chunks.end(), devices.begin(), devices.end());
      }
      double bottleneck_us = 0;
      std::optional<Segments> balanced = Balance(chunks, bottleneck_us, growth);
      if (!balanced) continue;
      // Cheaper cuts, where moving them keeps the chunks balanced.
      if (growth == 0) Refine(*balanced, bottleneck_us * (1 + kBalanceTolerance));
      for (size_t j = 0; j < balanced->devices.size(); ++j) {
        std::fill(scratch_device_.begin() + balanced->bounds[j],
                  scratch_device_.begin() + balanced->bounds[j + 1], balanced->devices[j]);
      }
      Placement plan{.device = scratch_device_};
      const double step_us = JudgedUs(plan);
      if (step_us == kInfinity || (best && step_us >= best->simulated_us)) continue;
      Candidate candidate;
      candidate.placement = std::move(plan);
      candidate.simulated_us = step_us;
      candidate.score_us = step_us;
      candidate.devices_used = DevicesUsed(candidate.placement.device, num_devices_);
      candidate.strategy = "interleaved segments";
      candidate.interleaved = true;
      best = std::move(candidate);
    }
  }
  return best;
}

// Step 4c's referee: the node graph's simulator when step 7 can use the nodes,
// else the units'.
bool Sgp::NodesUsable() const {
  const NodeLevel& level = options_.nodes;
  return level.graph != nullptr && level.unit_of_node != nullptr && num_devices_ >= 2 &&
         level.graph->num_units() > n_ && level.graph->num_units() <= kMaxNodesBelowUnits &&
         level.unit_of_node->size() == level.graph->num_units();
}

// The simulations steps 4c, 7b and 7c may each spend on a graph of `size`.
int64_t Sgp::InterleavedRuns(int64_t size) const {
  return kInterleavedUnitRuns / (std::max<int64_t>(1, size) * std::max(1, options_.microbatches));
}

int64_t Sgp::JudgedSize() const { return NodesUsable() ? options_.nodes.graph->num_units() : n_; }

double Sgp::JudgedUs(const Placement& plan) {
  if (!NodesUsable()) return SimulatedUs(plan);
  if (!node_simulator_) node_simulator_.emplace(*options_.nodes.graph, cluster_);
  ++simulations_;
  const costmodel::SimulationResult& result = node_simulator_->Run(
      ProjectToNodes(options_.nodes, plan), {.microbatches = options_.microbatches});
  return result.memory_overflow ? kInfinity : result.step_time_us;
}

// Step 7b, with micro-batches: interleaved chunks of the nodes, in their
// own order, by earliest start (the longest path to each node, on the
// fastest kind) and by latest start (the longest path from each node to
// an exit, longest first): where branches run side by side the node order
// lists one after the other, so a micro-batch reaches a chunk before the
// chunk's predecessor in the order is done and collides with the ones
// behind it; by earliest start chunk i holds what micro-batch 0 runs i-th;
// by latest start a branch that joins late (a decoder's self-attention
// beside the encoder) comes just before its join, and does not run ahead
// of the micro-batches behind it on the devices the pipeline needs first.
// Returns the step of the best node plan so far.
double Sgp::InterleaveNodes(costmodel::Simulator& simulator, double best_us, SgpResult& result) {
  const NodeLevel& level = options_.nodes;
  const CostGraph& nodes = *level.graph;
  const uint32_t num_nodes = nodes.num_units();
  const costmodel::SimulationOptions sim_options{.microbatches = options_.microbatches};
  int64_t runs_left = InterleavedRuns(num_nodes);
  std::vector<int> devices = device_order_;
  std::sort(devices.begin(), devices.end());
  std::vector<uint32_t> node_order(num_nodes);
  std::iota(node_order.begin(), node_order.end(), 0);
  std::vector<double> earliest_start_us(num_nodes, 0);
  const int fastest_kind = cluster_.device(device_order_[0]).kind;
  for (uint32_t v = 0; v < num_nodes; ++v) {
    for (uint32_t e : nodes.in_edges(v)) {
      const uint32_t u = nodes.edge_src(e);
      earliest_start_us[v] =
          std::max(earliest_start_us[v], earliest_start_us[u] + nodes.compute_us(u, fastest_kind));
    }
  }
  std::vector<uint32_t> by_start = node_order;
  std::stable_sort(by_start.begin(), by_start.end(), [&](uint32_t a, uint32_t b) {
    return earliest_start_us[a] < earliest_start_us[b];
  });
  std::vector<double> to_exit_us(num_nodes, 0);
  for (uint32_t v = num_nodes; v-- > 0;) {
    for (uint32_t e : nodes.out_edges(v))
      to_exit_us[v] = std::max(to_exit_us[v], to_exit_us[nodes.edge_dst(e)]);
    to_exit_us[v] += nodes.compute_us(v, fastest_kind);
  }
  std::vector<uint32_t> by_latest_start = node_order;
  std::stable_sort(by_latest_start.begin(), by_latest_start.end(),
                   [&](uint32_t a, uint32_t b) { return to_exit_us[a] > to_exit_us[b]; });
  std::vector<const std::vector<uint32_t>*> orders = {&node_order, &by_start, &by_latest_start};
  const std::vector<uint32_t> early_first =
      EarlyRegionFirst(nodes, by_start, to_exit_us, fastest_kind);
  if (!early_first.empty()) orders.push_back(&early_first);
  for (const std::vector<uint32_t>* order : orders) {
    for (const double growth : kChunkGrowth) {
      for (const int v : kChunksPerDevice) {
        if (static_cast<int64_t>(v) * num_devices_ > num_nodes || runs_left <= 0) break;
        --runs_left;
        Placement plan = InterleavedNodeChunks(level, cluster_, devices, v, growth, *order);
        ++simulations_;
        const costmodel::SimulationResult& theirs = simulator.Run(plan, sim_options);
        if (theirs.memory_overflow || theirs.step_time_us >= best_us) continue;
        best_us = theirs.step_time_us;
        result.devices_used = DevicesUsed(plan.device, num_devices_);
        result.node_placement = std::move(plan);
        result.strategy = "interleaved segments of nodes";
      }
    }
  }
  if (runs_left > 0) {
    Placement spread = SpreadBranches(level, cluster_, devices);
    ++simulations_;
    const costmodel::SimulationResult& spread_run = simulator.Run(spread, sim_options);
    double spread_us = spread_run.step_time_us;
    if (spread_us < best_us && spread_run.memory_overflow) {
      spread_us = RepairNodeMemory(simulator, spread);
    }
    if (spread_us < best_us) {
      best_us = spread_us;
      result.devices_used = DevicesUsed(spread.device, num_devices_);
      result.node_placement = std::move(spread);
      result.strategy = "branches spread on nodes";
    }
  }
  return best_us;
}

// Step 7b's memory repair of a node plan over memory: each chain (see
// ReadsPrevious) on the device most over its memory is tried on the device
// with the most room; the fastest move that fits is kept, else the one that
// leaves the least overflow, and again while it overflows. At most
// kMaxNodeRepairRounds rounds and kMaxNodeRepairSimulations runs (fewer on
// large graphs: InterleavedRuns). Returns the simulated step, infinity when
// the plan still overflows.
double Sgp::RepairNodeMemory(costmodel::Simulator& simulator, Placement& plan) {
  const CostGraph& nodes = *options_.nodes.graph;
  const uint32_t num_nodes = nodes.num_units();
  const costmodel::SimulationOptions sim_options{.microbatches = options_.microbatches};
  int runs_left = static_cast<int>(
      std::min<int64_t>(kMaxNodeRepairSimulations, InterleavedRuns(num_nodes) / 4));
  for (int round = 0; round < kMaxNodeRepairRounds && runs_left > 0; ++round) {
    ++simulations_;
    --runs_left;
    const costmodel::SimulationResult& now = simulator.Run(plan, sim_options);
    if (!now.memory_overflow) return now.step_time_us;
    int most_over = 0, most_room = 0;
    auto over = [&](int d) {
      return now.devices[d].peak_memory_bytes - cluster_.device(d).memory_bytes;
    };
    for (int d = 1; d < num_devices_; ++d) {
      if (over(d) > over(most_over)) most_over = d;
      if (over(d) < over(most_room)) most_room = d;
    }
    double fitting_us = kInfinity;
    int64_t least_overflow = now.overflow_bytes;
    uint32_t move_begin = 0, move_end = 0;
    for (uint32_t begin = 0, end = 0; begin < num_nodes && runs_left > 0; begin = end) {
      end = ChainEnd(nodes, plan, begin);
      if (plan.device[begin] != most_over || SplitsLockedUnit(options_.nodes, begin, end)) continue;
      std::fill(plan.device.begin() + begin, plan.device.begin() + end, most_room);
      ++simulations_;
      --runs_left;
      const costmodel::SimulationResult& moved = simulator.Run(plan, sim_options);
      std::fill(plan.device.begin() + begin, plan.device.begin() + end, most_over);
      if (!moved.memory_overflow && moved.step_time_us < fitting_us) {
        fitting_us = moved.step_time_us;
      } else if (moved.memory_overflow && fitting_us == kInfinity &&
                 moved.overflow_bytes < least_overflow) {
        least_overflow = moved.overflow_bytes;
      } else {
        continue;
      }
      move_begin = begin;
      move_end = end;
    }
    if (move_end == 0) break;
    std::fill(plan.device.begin() + move_begin, plan.device.begin() + move_end, most_room);
    if (fitting_us < kInfinity) return fitting_us;
  }
  return kInfinity;
}

}  // namespace autopar::search::sgp
