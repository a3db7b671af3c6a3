// SGP's steps 7c–7e: single moves on the best node plan, judged by the
// node-level simulation (see sgp_node_sweeps.h and the list in sgp.cc).
#include "search/sgp_node_sweeps.h"

#include <algorithm>
#include <vector>

#include "search/node_refinement.h"
#include "search/sgp_steps.h"

namespace autopar::search::sgp {
namespace {

/// Step 7c: boundary moves tried on the best node plan with micro-batches.
constexpr int kMaxBoundarySweepSimulations = 40;
/// Steps 7d and 7e together simulate at most kMoveNodeRuns node instances
/// (runs × nodes × M). Step 7d: chain moves tried after 7c, at most
/// kMaxChainMoveSimulations runs and kChainMoveNodeRuns instances; one sweep
/// (a second gained less than 7e's moves do with the same runs: Inception-v3
/// on 8 devices with 4 micro-batches). Step 7e: node moves, blocks of
/// kNodeMoveBlockSizes nodes in turn, at most kMaxNodeMoveSimulations runs
/// and what 7d left of kMoveNodeRuns.
constexpr int64_t kMoveNodeRuns = 250000;
constexpr int kMaxChainMoveSimulations = 150;
constexpr int64_t kChainMoveNodeRuns = 200000;
constexpr int kChainMoveSweeps = 1;
constexpr uint32_t kNodeMoveBlockSizes[] = {2, 1};
constexpr int kMaxNodeMoveSimulations = 250;

}  // namespace

using costmodel::CostGraph;
using costmodel::Placement;

bool ReadsPrevious(const CostGraph& nodes, uint32_t v) {
  for (uint32_t e : nodes.in_edges(v)) {
    if (nodes.edge_src(e) + 1 == v) return true;
  }
  return false;
}

uint32_t ChainEnd(const CostGraph& nodes, const Placement& plan, uint32_t begin) {
  uint32_t end = begin + 1;
  while (end < nodes.num_units() && plan.device[end] == plan.device[begin] &&
         ReadsPrevious(nodes, end)) {
    ++end;
  }
  return end;
}

bool SplitsLockedUnit(const NodeLevel& level, uint32_t begin, uint32_t end) {
  const std::vector<uint32_t>& unit_of = *level.unit_of_node;
  auto locked = [&](uint32_t v) {
    const uint32_t unit = unit_of[v];
    return unit < level.locked_units.size() && level.locked_units[unit] != 0;
  };
  return (begin > 0 && locked(begin) && unit_of[begin - 1] == unit_of[begin]) ||
         (end < unit_of.size() && locked(end) && unit_of[end - 1] == unit_of[end]);
}

// Step 7c, with micro-batches: where a pipeline's micro-batches collide
// depends on timing the chunking cannot foresee, so one sweep along the node
// order over the best node plan's boundaries (where the device changes): the
// left run's last quarter moves right, else the right run's first quarter
// moves left; a move stays when the simulated step shrinks and memory fits.
// At most kMaxBoundarySweepSimulations runs, and InterleavedRuns. Then steps
// 7d and 7e. Returns the simulated step of the node plan it leaves.
double Sgp::SweepNodeBoundaries(costmodel::Simulator& simulator, double best_us,
                                SgpResult& result) {
  const NodeLevel& level = options_.nodes;
  const uint32_t num_nodes = level.graph->num_units();
  const int budget =
      static_cast<int>(std::min<int64_t>(kMaxBoundarySweepSimulations, InterleavedRuns(num_nodes)));
  if (options_.microbatches <= 1 || budget < 1) return best_us;
  Placement plan = NodePlanOf(level, result.placement, result.node_placement);
  std::vector<uint32_t> boundaries;
  for (uint32_t v = 1; v < num_nodes; ++v) {
    if (plan.device[v] != plan.device[v - 1]) boundaries.push_back(v);
  }
  int simulations = 0, kept = 0;
  for (const uint32_t b : boundaries) {
    const int32_t left = plan.device[b - 1], right = plan.device[b];
    if (left == right) continue;  // an earlier move closed it
    uint32_t run_begin = b, run_end = b;
    while (run_begin > 0 && plan.device[run_begin - 1] == left) --run_begin;
    while (run_end < num_nodes && plan.device[run_end] == right) ++run_end;
    for (const bool left_shrinks : {true, false}) {
      if (simulations >= budget) break;
      const uint32_t k = std::max<uint32_t>(1, (left_shrinks ? b - run_begin : run_end - b) / 4);
      const uint32_t begin = left_shrinks ? b - k : b, end = left_shrinks ? b : b + k;
      if (SplitsLockedUnit(level, begin, end)) continue;
      const int32_t from = left_shrinks ? left : right, to = left_shrinks ? right : left;
      ++simulations;
      if (TryNodeMove(simulator, plan, begin, end, to, best_us) != nullptr) {
        ++kept;
        break;
      }
      std::fill(plan.device.begin() + begin, plan.device.begin() + end, from);
    }
  }
  int chain_runs = 0;
  const int chains_moved = MoveNodeChains(simulator, best_us, plan, chain_runs);
  const int64_t instances = std::max<int64_t>(1, num_nodes) * options_.microbatches;
  const int blocks_moved =
      MoveNodeBlocks(simulator, best_us, plan,
                     static_cast<int>(std::min<int64_t>(kMaxNodeMoveSimulations,
                                                        kMoveNodeRuns / instances - chain_runs)));
  if (kept + chains_moved + blocks_moved == 0) return best_us;
  result.devices_used = DevicesUsed(plan.device, num_devices_);
  result.node_placement = std::move(plan);
  if (kept > 0) result.strategy += ", boundaries moved on nodes";
  if (chains_moved > 0) result.strategy += ", chains moved on nodes";
  if (blocks_moved > 0) result.strategy += ", nodes moved";
  return best_us;
}

// Step 7d, with micro-batches: whole chains to a neighbour's device. A chain
// is a run of nodes along the node order, each reading the one before, on
// one device: a tower of an Inception block, a decoder's self-attention
// beside the encoder, one of two recurrent layers. Where branches could run
// side by side the node order lists them one after the other, and chunks of
// that order put the end of one and the start of the next on one device;
// moving the chain to the device of the chain before or after it lets the
// two overlap, or fills a device that waits for the pipeline's first
// micro-batch. A chain that starts a branch may also go to the least busy
// device (with more devices than micro-batches a pipeline leaves devices
// idle, and a tower there shortens the path every micro-batch takes). Each
// chain in order, kChainMoveSweeps sweeps; a move stays when the simulated
// step shrinks and memory fits. At most kMaxChainMoveSimulations runs and
// kChainMoveNodeRuns node instances. Returns the moves kept; `runs` counts
// the simulations.
int Sgp::MoveNodeChains(costmodel::Simulator& simulator, double& best_us, Placement& plan,
                        int& runs) {
  const NodeLevel& level = options_.nodes;
  const CostGraph& nodes = *level.graph;
  const uint32_t num_nodes = nodes.num_units();
  const int budget = static_cast<int>(std::min<int64_t>(
      kMaxChainMoveSimulations,
      kChainMoveNodeRuns / (std::max<int64_t>(1, num_nodes) * options_.microbatches)));
  const costmodel::SimulationOptions sim_options{.microbatches = options_.microbatches};
  runs = 0;
  if (budget < 1) return 0;
  // Busy time per device in the current plan, for the least busy device.
  std::vector<double> busy_us(num_devices_);
  auto note_busy = [&](const costmodel::SimulationResult& run) {
    for (int d = 0; d < num_devices_; ++d) busy_us[d] = run.devices[d].busy_us;
  };
  note_busy(simulator.Run(plan, sim_options));
  ++simulations_;
  int simulations = 1, kept = 0;
  for (int sweep = 0; sweep < kChainMoveSweeps; ++sweep) {
    for (uint32_t begin = 0, end = 0; begin < num_nodes && simulations < budget; begin = end) {
      const int32_t from = plan.device[begin];
      end = ChainEnd(nodes, plan, begin);
      if (SplitsLockedUnit(level, begin, end)) continue;
      // The devices of the chains before and after it; a chain that starts
      // a branch (it does not read the node before it) also the least busy.
      int32_t targets[] = {begin > 0 ? plan.device[begin - 1] : from,
                           end < num_nodes ? plan.device[end] : from, from};
      if (begin > 0 && !ReadsPrevious(nodes, begin)) {
        targets[2] = static_cast<int32_t>(std::min_element(busy_us.begin(), busy_us.end()) -
                                          busy_us.begin());
      }
      int32_t best_device = from;
      for (int i = 0; i < 3 && simulations < budget; ++i) {
        const int32_t to = targets[i];
        if (to == from || std::find(targets, targets + i, to) != targets + i) continue;
        ++simulations;
        if (const costmodel::SimulationResult* moved =
                TryNodeMove(simulator, plan, begin, end, to, best_us)) {
          best_device = to;
          note_busy(*moved);
        }
      }
      std::fill(plan.device.begin() + begin, plan.device.begin() + end, best_device);
      kept += best_device != from;
    }
  }
  runs = simulations;
  return kept;
}

// Step 7e, with micro-batches: what the chains leave is fine-grained — an
// Inception tower's first convolution next to the block's input, a Relu
// beside the Concat that reads it, a node or two at a chunk's edge. Blocks
// of kNodeMoveBlockSizes consecutive nodes on one device, in node order, each
// to every device it exchanges a tensor with; a move stays when the
// simulated step shrinks and memory fits. At most `budget` runs. Returns the
// moves kept.
int Sgp::MoveNodeBlocks(costmodel::Simulator& simulator, double& best_us, Placement& plan,
                        int budget) {
  const NodeLevel& level = options_.nodes;
  const CostGraph& nodes = *level.graph;
  const uint32_t num_nodes = nodes.num_units();
  int simulations = 0, kept = 0;
  std::vector<int32_t> targets;
  for (const uint32_t size : kNodeMoveBlockSizes) {
    for (uint32_t begin = 0, end = 0; begin < num_nodes && simulations < budget; begin = end) {
      const int32_t from = plan.device[begin];
      end = begin + 1;
      while (end < num_nodes && end - begin < size && plan.device[end] == from) ++end;
      if (SplitsLockedUnit(level, begin, end)) continue;
      targets.clear();
      for (uint32_t v = begin; v < end; ++v) {
        for (uint32_t e : nodes.in_edges(v)) {
          if (nodes.edge_src(e) < begin) targets.push_back(plan.device[nodes.edge_src(e)]);
        }
        for (uint32_t e : nodes.out_edges(v)) {
          if (nodes.edge_dst(e) >= end) targets.push_back(plan.device[nodes.edge_dst(e)]);
        }
      }
      std::sort(targets.begin(), targets.end());
      targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
      int32_t best_device = from;
      for (const int32_t to : targets) {
        if (to == from || simulations >= budget) continue;
        ++simulations;
        if (TryNodeMove(simulator, plan, begin, end, to, best_us) != nullptr) best_device = to;
      }
      std::fill(plan.device.begin() + begin, plan.device.begin() + end, best_device);
      kept += best_device != from;
    }
  }
  return kept;
}

// Steps 7c and 7d's trial: nodes [begin, end) of `plan` go to device `to`
// and the plan is simulated. Returns the run when its step beats `best_us`
// (which becomes that step) and memory fits, else nullptr; either way the
// plan keeps the move, for the caller to undo or keep.
const costmodel::SimulationResult* Sgp::TryNodeMove(costmodel::Simulator& simulator,
                                                    Placement& plan, uint32_t begin, uint32_t end,
                                                    int32_t to, double& best_us) {
  std::fill(plan.device.begin() + begin, plan.device.begin() + end, to);
  ++simulations_;
  const costmodel::SimulationResult& moved =
      simulator.Run(plan, {.microbatches = options_.microbatches});
  if (moved.memory_overflow || moved.step_time_us >= best_us * (1 - 1e-9)) return nullptr;
  best_us = moved.step_time_us;
  return &moved;
}

}  // namespace autopar::search::sgp
