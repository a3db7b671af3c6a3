// SGP, step by step (see sgp.h for what it promises):
//
//  1. Comprehensive cost of every unit: its compute on each device kind
//     (prefix sums along the topological order, so that a segment's time on a
//     device is one subtraction) and the communication of its edges — each
//     tensor's transfer time on the cluster's typical link, summed into the
//     cost of cutting the order at each position. Also the in-order memory
//     profile and the graph's parallelism (work / critical path).
//  2. Load-balanced partition that respects dependencies: contiguous segments
//     of the topological order, segment j on device j, each within its
//     device's memory (SegmentEnds' estimate) and of the least possible
//     bottleneck time — bisection on the bottleneck, each probe a greedy fill
//     in O(k log V) (capped_chunks.h, which step 7b's chunks of the nodes
//     share) — so a device twice as fast receives twice the work. Device
//     counts k from the fewest that hold the model upwards (the fastest
//     devices first), until kMaxFruitlessCounts counts in a row did not win.
//  3. Boundary refinement: each boundary moves to the cheapest cut within
//     reach — both segments stay within memory and within kBalanceTolerance of
//     the bottleneck; for the fewest devices also without the balance limit
//     (a chain gains nothing from balance, only from fewer, cheaper cuts).
//     Every variant is replayed in order (ScheduleEstimator); the fastest
//     wins, a plan on more devices only when clearly faster.
//  4. On graphs with any parallelism (above kListScheduleMinParallelism),
//     where segments serialise what could overlap, list schedules are the
//     other candidates. First by rank and earliest finish
//     (ScheduleByEarliestFinish) under each device's parameter budget — its
//     memory less the peak activations: within kNearLowerBound of the lower
//     bound it is final. Else also ETF (the pair of ready unit and device
//     that starts earliest, ScheduleEarliestTaskFirst, under the in-order
//     memory ledger): a static rank order leaves devices idle that ETF fills
//     when many units are ready at once (wide layered graphs on 8 devices),
//     so the two differ most where either alone is weak. The simulator picks
//     the better list schedule when the graph is small enough for the
//     post-pass (step 6), else the estimates (each replayed in its planned
//     order); then the estimates decide between it and the segments.
//  4c. With micro-batches (M > 1), interleaved stages: the order cut into
//     v·D balanced chunks, chunk i on device i mod D, for v in
//     kChunksPerDevice, the chunks growing a little along the order (why:
//     at BestInterleaved). Contiguous segments pay the pipeline's fill and
//     drain, (M + D - 1) / M of the balanced work; interleaving cuts it
//     about v-fold. Judged by the simulator (on the nodes when given), it
//     replaces the plan of steps 2–6 when it is faster.
//  5. Output: the device per unit and, as priority, the planned start times.
//     The memory is checked: ProvablePeakBytes when it suffices (not even
//     computed when the graph's tensors and parameters exceed the cluster's
//     memory: then it never does), else one simulation. When the chosen plan overflows the other is
//     tried; when both do, both are made again with each overflowing device's budget cut by its
//     overflow (at most kMaxMemoryRepairs times).
//  6. Post-pass: when both the segments and the list schedule fit, the
//     simulator picks between them (SGP's estimates can be wrong on wide
//     graphs); then one sweep of boundary moves judged by the simulator. The
//     boundaries of the topological order (where the device changes), the
//     busiest side's first, each shift once toward balance: the busier side
//     hands the units next to the boundary, up to half the two devices'
//     difference in busy time, to the other. A shift stays when the simulated
//     step shrinks and memory still fits. At most PostPassSimulations() runs
//     (kPostPassUnitRuns unit-simulations in all, at most
//     kMaxPostPassSimulations runs): bounded work, milliseconds.
//  7. Below the units (when the search is given the node graph, as the
//     pipeline does): coarsening merges nodes that could have run side by
//     side, so the best unit plan can be several per cent behind a schedule
//     of the nodes themselves (on a 1,000-node layered DAG over 8 devices
//     the unit graph's critical path alone is 4% longer; GPT-2 small's 758
//     nodes become a chain of 14 units with nothing left to overlap). ETF
//     on the nodes, and ETF with favourite children (m-SCT's rule, m_sct.h:
//     it keeps a recurrent encoder-decoder's chains local, where plain ETF
//     scatters them), each locked unit's nodes moved to its first node's
//     device, are simulated against the unit plan projected onto the nodes;
//     the fastest that fits is the result — unless the projection is already
//     within kNodesNearLowerBound of the node graph's lower bound. Node
//     graphs up to kMaxNodesBelowUnits: two schedules and three simulations
//     of the nodes at most. With micro-batches also step 4c's interleaved
//     chunks cut from the node order, from the nodes by earliest start, by
//     latest start and, where a branch reads only its own input (a decoder's
//     first block), by earliest start with that branch first (7b: units can
//     be too coarse for many balanced chunks, GPT-2 small's 14), and the
//     branches spread over the devices (repaired chain by chain when it
//     overflows, and faster than the best that fits), then one
//     sweep of boundary moves over the best node plan (7c), a sweep moving
//     whole chains of nodes to a neighbouring chain's device (7d: branches
//     that could run side by side) and sweeps moving blocks of two nodes,
//     then single nodes, to a device they exchange a tensor with (7e), each
//     judged by the node-level simulation. Where those sweeps stop, a
//     bounded iterated local search (7f: node_refinement.h's levels and
//     kicks, seeded, a fixed number of rounds) goes on from the best node
//     plan: better plans can differ in dozens of nodes at once.
//  8. With SearchOptions::objective (a pipelined training step), the plan
//     chosen above and the unit plans of steps 2–4c are judged by the
//     objective instead, and the best that fits wins (ChooseByObjective).
//
// Cost: O((V + E) · (D + k) + V log V), ETF's O((V log V + E) · D) where the
// first list schedule is not near the bound, and the post-pass's few
// simulations; with micro-batches, up to 30 simulations for step 4c, 121 for
// 7b and 60 for its repair, 40 for 7c, 250 for 7d and 7e together and
// about 1,000,000 node instances for 7f, fewer on large graphs
// (kInterleavedUnitRuns, kMoveNodeRuns, kRefineNodeRuns).
//
// Where the steps live: 1–3, 5 and 6 in sgp_seed.cc (the seed method), 4
// and 7a in sgp_list.cc (list schedules), 4c and 7b in sgp_interleave.cc
// (interleaving with micro-batches), 7c–7e in sgp_node_sweeps.cc (moves on
// the nodes); 7f is node_refinement.h's polish, the one TGA ends with too.
// This file runs them in order (Run, then BelowUnits for step 7).
#include "search/sgp.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "costmodel/lower_bound.h"
#include "search/feasibility.h"
#include "search/memory_repair.h"
#include "search/node_refinement.h"
#include "search/sgp_steps.h"

namespace autopar::search {
namespace sgp {
namespace {

/// At this parallelism (work / critical path) or below the graph is a chain:
/// list scheduling cannot beat one device. Above it even a little overlap
/// pays — a ResNet's downsample branch, a transformer's attention heads
/// (parallelism 1.05–1.2) run beside the main path on another device when
/// links are fast, which contiguous segments never do.
constexpr double kListScheduleMinParallelism = 1.01;
/// Rebuilds after the simulator found an overflow.
constexpr int kMaxMemoryRepairs = 4;
/// Step 7f: node_refinement.h's rounds of kRefineMovesPerRound moves each,
/// as many as kRefineNodeRuns node instances allow (rounds × moves × nodes ×
/// M; a round may add one run of its improving moves together, so about
/// that many; none above 15,625 nodes with 4 micro-batches). Inception-v3's
/// 233 nodes: 67 rounds; about 80 ms of SGP's 55–135 ms on the exported
/// models with 4 micro-batches.
constexpr int kRefineMovesPerRound = 16;
constexpr int64_t kRefineNodeRuns = 1000000;

}  // namespace

using costmodel::CostGraph;
using costmodel::Placement;

int DevicesUsed(const std::vector<int32_t>& device, int num_devices) {
  std::vector<uint8_t> used(num_devices, 0);
  for (int32_t d : device) used[d] = 1;
  return static_cast<int>(std::count(used.begin(), used.end(), 1));
}

bool Better(const Candidate& a, const Candidate& b) {
  if (a.devices_used > b.devices_used) return a.score_us < b.score_us * (1 - kMoreDevicesMargin);
  return a.score_us < b.score_us;
}

absl::StatusOr<SgpResult> Sgp::Run() {
  if (absl::Status s = CheckSearchInputs(graph_, cluster_); !s.ok()) return s;
  SgpResult result;
  result.strategy = "segments";
  if (n_ == 0) return result;
  if (absl::Status s = CheckEveryUnitFits(graph_, cluster_); !s.ok()) return s;
  ComputeCosts();

  auto finish = [&](Candidate& chosen) {
    // The interleaved plan was judged as it is; the post-pass's moves toward
    // balance would undo its growing chunks.
    if (!chosen.interleaved) {
      result.post_pass_moves = PostPass(chosen.placement);
    }
    result.placement = std::move(chosen.placement);
    result.strategy = chosen.strategy;
    result.devices_used = chosen.devices_used;
    result.estimated_step_us = chosen.score_us;
    BelowUnits(result);
    ChooseByObjective(result);
    result.simulations = simulations_;
    return result;
  };
  // Step 4c: with micro-batches the interleaved candidate, already simulated
  // (and so within memory), replaces the plan it beats in the simulator.
  std::optional<Candidate> interleaved = BestInterleaved();
  if (interleaved && options_.objective) objective_candidates_.push_back(*interleaved);
  auto finish_best = [&](Candidate& chosen) {
    if (interleaved) {
      const double chosen_us = NodesUsable() || chosen.simulated_us < 0 ? JudgedUs(chosen.placement)
                                                                        : chosen.simulated_us;
      if (interleaved->simulated_us < chosen_us) return finish(*interleaved);
    }
    return finish(chosen);
  };
  // On wide graphs the list schedule comes first: when it is within
  // kNearLowerBound of the lower bound no segment plan can beat it by more.
  // A plan that overflows in the simulator has that device's budget cut by
  // the overflow (FitsMemory), and both plans are made again.
  const bool wide = num_devices_ > 1 && parallelism_ >= kListScheduleMinParallelism;
  std::optional<Placement> overflowing;  // the last plan over memory, for the repair
  for (int repair = 0; repair <= kMaxMemoryRepairs; ++repair) {
    if (repair > 0) ends_by_capacity_.clear();  // capacities changed
    bool overflowed = false;
    std::optional<Candidate> list;
    if (wide) list = BestListSchedule();
    if (list && list->score_us <= lower_bound_us_ * (1 + kNearLowerBound)) {
      if (options_.objective) objective_candidates_.push_back(*list);
      if (FitsMemory(*list)) return finish_best(*list);
      overflowed = true;
      overflowing = list->placement;
      list.reset();
    }
    std::optional<Candidate> segments = BestSegments();
    if (options_.objective) {
      if (list) objective_candidates_.push_back(*list);
      if (segments) objective_candidates_.push_back(*segments);
    }
    std::vector<Candidate*> order;
    if (segments) order.push_back(&*segments);
    if (list) order.push_back(&*list);
    if (order.size() == 2 && Better(*order[1], *order[0])) std::swap(order[0], order[1]);
    // Step 6: when both fit, the simulator has the last word (two runs, on
    // graphs small enough for the post-pass).
    if (order.size() == 2 && PostPassBudget() >= 2 && FitsMemory(*order[0]) &&
        FitsMemory(*order[1])) {
      order[0]->simulated_us = SimulatedUs(order[0]->placement);
      order[1]->simulated_us = SimulatedUs(order[1]->placement);
      if (order[1]->simulated_us < order[0]->simulated_us) std::swap(order[0], order[1]);
    }
    for (Candidate* candidate : order) {
      if (FitsMemory(*candidate)) return finish_best(*candidate);
      overflowed = true;
      if (!overflowing) overflowing = candidate->placement;
    }
    if (!overflowed) break;  // no plan within the estimates: nothing to repair
  }
  if (interleaved) return finish(*interleaved);  // the one plan that fitted
  absl::StatusOr<Placement> repaired =
      RepairOrGiveUp(graph_, cluster_, options_.microbatches, std::move(overflowing));
  if (!repaired.ok()) return repaired.status();
  Candidate chosen{.placement = *std::move(repaired), .strategy = "memory repair"};
  chosen.devices_used = DevicesUsed(chosen.placement.device, num_devices_);
  return finish(chosen);
}

// Step 7; sets result.node_placement when a schedule of the nodes wins.
void Sgp::BelowUnits(SgpResult& result) {
  const NodeLevel& level = options_.nodes;
  if (level.graph == nullptr || level.unit_of_node == nullptr || num_devices_ < 2) return;
  const CostGraph& nodes = *level.graph;
  const uint32_t num_nodes = nodes.num_units();
  if (num_nodes <= n_ || num_nodes > kMaxNodesBelowUnits ||
      level.unit_of_node->size() != num_nodes) {
    return;
  }
  costmodel::Simulator simulator(nodes, cluster_);
  const costmodel::SimulationOptions sim_options{.microbatches = options_.microbatches};
  ++simulations_;
  const costmodel::SimulationResult& mine =
      simulator.Run(ProjectToNodes(level, result.placement), sim_options);
  const double units_us = mine.memory_overflow ? kInfinity : mine.step_time_us;
  // Without the bound's split search, which alone can take longer than SGP.
  const double bound_us =
      costmodel::ComputeLowerBound(nodes, cluster_, options_.microbatches, 0).bound_us;
  if (units_us <= bound_us * (1 + kNodesNearLowerBound)) return;
  double best_us = ScheduleNodes(simulator, units_us, result);  // 7a
  if (options_.microbatches <= 1) return;
  best_us = InterleaveNodes(simulator, best_us, result);      // 7b
  best_us = SweepNodeBoundaries(simulator, best_us, result);  // 7c–7e
  PolishOnNodes(best_us, bound_us, result);                   // 7f
}

// Step 8, with SearchOptions::objective (a training step judged as the
// pipeline it runs as, pipeline/planning.h's Note [Training judge]): steps
// 2–7 chose by the node-level simulator, whose fused step does not see the
// pipeline's stages — a plan whose interleaved chunks fill the simulator's
// devices can run slower than contiguous segments once 1F1B caps the
// micro-batches in flight. The chosen plan (on the nodes when step 7 made
// one, and its unit plan as well) and every unit plan steps 2–4c made are
// judged by the objective; the best that fits memory is the result. A few
// evaluations of a cheap estimate: no new search.
void Sgp::ChooseByObjective(SgpResult& result) {
  if (!options_.objective) return;
  const std::function<double(absl::Span<const int32_t>)>& units_us = options_.objective;
  double best_us = kInfinity;
  if (!result.node_placement.device.empty()) {
    if (!options_.nodes.objective) return;  // a node plan it cannot judge
    best_us = options_.nodes.objective(result.node_placement.device);
    const double unit_plan_us = units_us(result.placement.device);
    if (unit_plan_us < best_us * (1 - 1e-9)) {
      best_us = unit_plan_us;
      result.node_placement = {};
      result.devices_used = DevicesUsed(result.placement.device, num_devices_);
      result.strategy += ", its unit plan by the objective";
    }
  } else {
    best_us = units_us(result.placement.device);
  }
  for (Candidate& candidate : objective_candidates_) {
    const double us = units_us(candidate.placement.device);
    if (us >= best_us * (1 - 1e-9) || !FitsMemory(candidate)) continue;
    best_us = us;
    result.placement = candidate.placement;
    result.node_placement = {};
    result.devices_used = DevicesUsed(candidate.placement.device, num_devices_);
    result.strategy = candidate.strategy + ", chosen by the objective";
  }
  result.estimated_step_us = best_us;
  objective_candidates_.clear();
}

// Step 7f, with micro-batches: the polish on the nodes that SGP and TGA
// share (node_refinement.h; TGA runs it on its best unit plans, SGP on its
// node plan, both seeded and bounded). The sweeps of 7c–7e end where single moves
// gain little, while better plans can differ in dozens of nodes at once
// (Inception-v3 on 8 devices with 4 micro-batches: the best move of one
// node of the critical path to any device, taken again and again, gains
// 0.4% and stops; TGA's plan, 5.5% faster, differs in 60 of 233 nodes).
// node_refinement.h's levels and kicks (an iterated local search: random
// moves perturb the best plan, the levels descend again) go on from the
// best node plan for a fixed number of rounds (kRefineNodeRuns): bounded,
// seeded work, the same plan on every machine and thread count. The best
// plan ever simulated is kept, never a worse one: `start_us` is the step of
// the plan it starts from (infinity: over memory, nothing to refine).
void Sgp::PolishOnNodes(double start_us, double bound_us, SgpResult& result) {
  NodeLevel level = options_.nodes;
  const int64_t instances = static_cast<int64_t>(level.graph->num_units()) * options_.microbatches;
  const int64_t rounds = kRefineNodeRuns / (kRefineMovesPerRound * std::max<int64_t>(1, instances));
  if (options_.microbatches <= 1 || rounds < 1 || start_us == kInfinity) return;
  if (!level.lower_bound_us) level.lower_bound_us = bound_us;
  NodeRefinementOptions refine{.seed = options_.seed,
                               .threads = options_.threads,
                               .microbatches = options_.microbatches,
                               .deadline_s = kInfinity,
                               .max_rounds = rounds,
                               .moves_per_round = kRefineMovesPerRound,
                               .list_schedulers = {}};
  refine.node_starts.emplace_back("sgp",
                                  NodePlanOf(level, result.placement, result.node_placement));
  absl::StatusOr<NodeRefinementResult> refined = RefineOnNodes(level, cluster_, {}, refine);
  if (!refined.ok()) return;
  simulations_ += static_cast<int>(refined->evaluations);
  if (!refined->feasible || refined->step_us >= start_us * (1 - 1e-9)) return;
  result.devices_used = DevicesUsed(refined->placement.device, num_devices_);
  result.node_placement = std::move(refined->placement);
  result.strategy += ", refined on nodes";
}

}  // namespace sgp

absl::StatusOr<SgpResult> RunSgp(const costmodel::CostGraph& graph,
                                 const costmodel::Cluster& cluster, const SearchOptions& options) {
  return sgp::Sgp(graph, cluster, options).Run();
}

absl::StatusOr<costmodel::Placement> PlaceSgp(const costmodel::CostGraph& graph,
                                              const costmodel::Cluster& cluster,
                                              const SearchOptions& options) {
  absl::StatusOr<SgpResult> result = RunSgp(graph, cluster, options);
  if (!result.ok()) return result.status();
  return std::move(result->placement);
}

}  // namespace autopar::search
