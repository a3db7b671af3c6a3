// The node-level refinement, step by step (see node_refinement.h):
//
//  1. Starts: each unit plan projected onto the nodes, and each node-level
//     list schedule (locked units' nodes put together on their first node's
//     device); each under its own priorities and under the simulator's
//     default. All are simulated; the best (the first among equals) is the
//     current plan.
//  2. Windows (search/node_windows.h; one micro-batch, node by node): every
//     series phase's windows of k nodes are solved exactly, k from
//     kFirstWindow up, one more each time a whole sweep finds nothing. A
//     sweep's moves are judged together by the full simulation (exact for
//     one micro-batch), else one by one. When the largest windows find
//     nothing, orders: each phase takes its nodes' order from whichever
//     schedule (a start's priorities, or the default) gives it the shortest
//     span with the largest windows under that order (a node waits only for
//     nodes of its own phase, so the mixed schedule is exact). Then shifts
//     (NodeWindows::SweepShifts): each phase's order with one node moved,
//     the assignment re-solved under it by windows of k nodes, k from none,
//     then kFirstWindow up, one more each time a whole sweep finds nothing:
//     the starts' orders are few, and under one order the largest windows
//     are exact, so only other orders can use more time. Their moves are
//     judged as the windows' are. On up to kWindowShare of the time left:
//     larger windows are larger neighbourhoods, and a longer budget reaches
//     them.
//  3. Levels, coarse to fine: the block length S halves from the largest
//     unit's node count to 1. At a level, the boundary moves of the current
//     plan (a block to a device it exchanges a tensor with) are shuffled and
//     simulated moves_per_round at a time, in parallel. When some beat the
//     current plan, the best of them — or all of them applied together, when
//     that is better still — becomes the current plan and the level starts
//     over on the new blocks; a level whose moves all fail is done.
//  4. Then step 2 goes on where it stopped; when it has nothing left, kicks:
//     a few random boundary moves perturb the best plan and step 3 runs again
//     at the finest level (iterated local search); the best plan ever
//     simulated is kept, so a kick never costs anything.
//  5. Stop at the deadline, after max_rounds batches, or within 0.1% of the
//     node graph's lower bound.
#include "search/node_refinement.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "costmodel/lower_bound.h"
#include "search/node_windows.h"
#include "search/tga_evaluator.h"
#include "search/tga_operators.h"

namespace autopar::search {
namespace {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;

/// Step 4: a kick moves up to this fraction of the blocks (log-uniform).
constexpr uint32_t kBlocksPerKickMove = 20;
/// Step 2: the windows' first and largest size (each size the plan cannot
/// improve on adds one), and their share of the time left.
constexpr uint32_t kFirstWindow = 3;
constexpr uint32_t kLargestWindow = 12;
constexpr double kWindowShare = 0.75;

class NodeRefinement {
 public:
  NodeRefinement(const NodeLevel& nodes, const Cluster& cluster,
                 const NodeRefinementOptions& options)
      : graph_(*nodes.graph),
        nodes_(nodes),
        cluster_(cluster),
        options_(options),
        n_(nodes.graph->num_units()),  // RefineOnNodes checked it
        rng_(options.seed) {}

  absl::StatusOr<NodeRefinementResult> Run(const std::vector<Placement>& unit_plans);

 private:
  struct Block {
    uint32_t begin, end;  // a range of members_
  };
  struct Move {
    uint32_t block;
    int32_t device;
  };

  bool Stop() const {
    if (options_.max_rounds > 0 && result_.rounds >= options_.max_rounds) return true;
    if (best_.fitness.feasible && best_.fitness.step_us <= lower_bound_us_ * (1 + 1e-3))
      return true;
    return options_.elapsed_s && options_.elapsed_s() >= options_.deadline_s;
  }
  bool WindowsStop() const {
    return Stop() || (options_.elapsed_s && options_.elapsed_s() >= windows_until_s_);
  }
  void IndexUnits();
  void AddStart(const std::string& name, Placement plan, std::vector<Individual>& starts);
  void Lock(std::vector<int32_t>& device) const;
  void MakeBlocks(const Genome& genome, uint32_t max_length);
  std::vector<Move> BoundaryMoves(const Genome& genome);
  void Apply(const Move& move, Genome& genome) const;
  // Step 3 at one level; false when the budget ran out.
  bool RefineLevel(uint32_t max_length);
  // Step 4; false when the plan has no boundary to perturb.
  bool Kick();
  // Steps 2 and 4, windows: true when they improved the plan, false when
  // they have nothing left to try or their time is up.
  bool Windows();
  bool TryWindowMoves(const std::vector<NodeWindows::Move>& moves);
  // Step 2's shifts: true when they improved the plan, false when they have
  // nothing left to try or their time is up.
  bool Shifts();
  // Step 2's orders, one pass over the phases in all (a pass cut short by
  // the clock goes on later).
  void Orders();
  void Evaluate(std::vector<Individual>& batch);

  const CostGraph& graph_;
  const NodeLevel& nodes_;
  const Cluster& cluster_;
  const NodeRefinementOptions& options_;
  const uint32_t n_;
  Rng rng_;

  uint32_t num_units_ = 0;
  std::vector<uint32_t> unit_begin_, members_;  // nodes of each unit, in order
  std::vector<uint8_t> locked_;                 // per unit
  std::vector<std::vector<double>> schedules_;
  std::vector<std::string> start_names_;
  std::optional<FitnessEvaluator> evaluator_;
  std::vector<Block> blocks_;
  std::vector<int32_t> stamp_;
  Individual current_, best_;
  std::optional<NodeWindows> windows_;
  uint32_t window_size_ = kFirstWindow;
  uint32_t shift_size_ = 0;  // step 2's shifts: the windows under a shifted order
  double windows_until_s_ = std::numeric_limits<double>::infinity();  // step 2's share
  double lower_bound_us_ = 0;
  NodeRefinementResult result_;
};

void NodeRefinement::IndexUnits() {
  const std::vector<uint32_t>& unit_of = *nodes_.unit_of_node;
  for (uint32_t v = 0; v < n_; ++v) num_units_ = std::max(num_units_, unit_of[v] + 1);
  unit_begin_.assign(num_units_ + 1, 0);
  for (uint32_t v = 0; v < n_; ++v) ++unit_begin_[unit_of[v] + 1];
  for (uint32_t u = 0; u < num_units_; ++u) unit_begin_[u + 1] += unit_begin_[u];
  members_.resize(n_);
  std::vector<uint32_t> at(unit_begin_.begin(), unit_begin_.end() - 1);
  for (uint32_t v = 0; v < n_; ++v) members_[at[unit_of[v]]++] = v;
  locked_.assign(num_units_, 0);
  for (uint32_t u = 0; u < std::min<size_t>(num_units_, nodes_.locked_units.size()); ++u) {
    locked_[u] = nodes_.locked_units[u];
  }
}

void NodeRefinement::Lock(std::vector<int32_t>& device) const {
  for (uint32_t u = 0; u < num_units_; ++u) {
    if (!locked_[u] || unit_begin_[u] == unit_begin_[u + 1]) continue;
    const int32_t first = device[members_[unit_begin_[u]]];
    for (uint32_t i = unit_begin_[u]; i < unit_begin_[u + 1]; ++i) device[members_[i]] = first;
  }
}

// Step 1: the plan under its own priorities and under the default.
void NodeRefinement::AddStart(const std::string& name, Placement plan,
                              std::vector<Individual>& starts) {
  Lock(plan.device);
  int32_t schedule = 0;
  if (!plan.priority.empty()) {
    schedule = static_cast<int32_t>(schedules_.size());
    schedules_.push_back(std::move(plan.priority));
  }
  starts.push_back({.genome = {.device = plan.device, .schedule = schedule}});
  start_names_.push_back(name);
  if (schedule != 0) {
    starts.push_back({.genome = {.device = std::move(plan.device), .schedule = 0}});
    start_names_.push_back(name);
  }
}

void NodeRefinement::MakeBlocks(const Genome& genome, uint32_t max_length) {
  blocks_.clear();
  for (uint32_t u = 0; u < num_units_; ++u) {
    uint32_t begin = unit_begin_[u];
    const uint32_t end = unit_begin_[u + 1];
    if (locked_[u]) {
      if (begin < end) blocks_.push_back({begin, end});
      continue;
    }
    for (uint32_t i = begin; i < end; ++i) {
      const bool split =
          i > begin &&
          (genome.device[members_[i]] != genome.device[members_[i - 1]] || i - begin == max_length);
      if (!split) continue;
      blocks_.push_back({begin, i});
      begin = i;
    }
    if (begin < end) blocks_.push_back({begin, end});
  }
}

// A block's boundary moves: the devices its nodes exchange tensors with.
std::vector<NodeRefinement::Move> NodeRefinement::BoundaryMoves(const Genome& genome) {
  std::vector<Move> moves;
  stamp_.assign(cluster_.num_devices(), -1);
  for (uint32_t b = 0; b < blocks_.size(); ++b) {
    const int32_t own = genome.device[members_[blocks_[b].begin]];
    auto consider = [&](uint32_t other) {
      const int32_t d = genome.device[other];
      if (d == own || stamp_[d] == static_cast<int32_t>(b)) return;
      stamp_[d] = static_cast<int32_t>(b);
      moves.push_back({b, d});
    };
    for (uint32_t i = blocks_[b].begin; i < blocks_[b].end; ++i) {
      const uint32_t v = members_[i];
      for (uint32_t e : graph_.in_edges(v)) consider(graph_.edge_src(e));
      for (uint32_t e : graph_.out_edges(v)) consider(graph_.edge_dst(e));
    }
  }
  return moves;
}

void NodeRefinement::Apply(const Move& move, Genome& genome) const {
  for (uint32_t i = blocks_[move.block].begin; i < blocks_[move.block].end; ++i) {
    genome.device[members_[i]] = move.device;
  }
}

void NodeRefinement::Evaluate(std::vector<Individual>& batch) {
  std::vector<Individual*> pointers;
  pointers.reserve(batch.size());
  for (Individual& individual : batch) pointers.push_back(&individual);
  evaluator_->Evaluate(pointers);
  for (const Individual& individual : batch) {
    if (individual.fitness.BetterThan(best_.fitness)) best_ = individual;
  }
}

bool NodeRefinement::RefineLevel(uint32_t max_length) {
  for (;;) {
    MakeBlocks(current_.genome, max_length);
    std::vector<Move> moves = BoundaryMoves(current_.genome);
    for (size_t i = moves.size(); i > 1; --i) {  // Fisher–Yates, seeded
      std::swap(moves[i - 1], moves[rng_.Below(static_cast<uint32_t>(i))]);
    }
    bool improved = false;
    for (size_t at = 0; at < moves.size() && !improved; at += options_.moves_per_round) {
      if (Stop()) return false;
      const size_t count = std::min<size_t>(options_.moves_per_round, moves.size() - at);
      std::vector<Individual> batch(count);
      for (size_t i = 0; i < count; ++i) {
        batch[i].genome = current_.genome;
        Apply(moves[at + i], batch[i].genome);
      }
      Evaluate(batch);
      ++result_.rounds;
      std::vector<size_t> improving;
      for (size_t i = 0; i < count; ++i) {
        if (batch[i].fitness.BetterThan(current_.fitness)) improving.push_back(i);
      }
      if (improving.empty()) {
        continue;
      }
      size_t chosen = improving.front();
      for (size_t i : improving) {
        if (batch[i].fitness.BetterThan(batch[chosen].fitness)) chosen = i;
      }
      Individual next = std::move(batch[chosen]);
      if (improving.size() >= 2) {
        std::vector<Individual> combined(1);
        combined[0].genome = current_.genome;
        for (size_t i : improving) Apply(moves[at + i], combined[0].genome);
        Evaluate(combined);
        if (combined[0].fitness.BetterThan(next.fitness)) next = std::move(combined[0]);
      }
      current_ = std::move(next);
      improved = true;
    }
    if (!improved) return true;  // every move failed: the level is done
  }
}

bool NodeRefinement::Windows() {
  while (!WindowsStop()) {
    if (window_size_ > std::min(kLargestWindow, windows_->max_window())) return false;
    if (windows_->Done(current_.genome.device, window_size_)) {
      ++window_size_;
      continue;
    }
    const std::vector<NodeWindows::Move> moves =
        windows_->Sweep(current_.genome.device, schedules_[current_.genome.schedule], window_size_,
                        [this] { return WindowsStop(); });
    if (!moves.empty() && TryWindowMoves(moves)) return true;
  }
  return false;
}

// All moves together (exact with one micro-batch), else one at a time.
// Moves with priorities (shifts) make schedules of their own; those of
// plans turned down are dropped again.
bool NodeRefinement::TryWindowMoves(const std::vector<NodeWindows::Move>& moves) {
  const bool reorders = std::any_of(moves.begin(), moves.end(),
                                    [](const NodeWindows::Move& m) { return !m.priority.empty(); });
  const size_t kept_schedules = schedules_.size();
  auto make = [&](std::vector<NodeWindows::Move> applied, Individual& individual) {
    individual.genome = current_.genome;
    if (!reorders) {
      windows_->Apply(std::move(applied), individual.genome.device);
      return;
    }
    const std::vector<double>& priority = schedules_[current_.genome.schedule];
    std::vector<double> mixed = priority.empty() ? windows_->default_priority() : priority;
    windows_->Apply(std::move(applied), individual.genome.device, &mixed);
    individual.genome.schedule = static_cast<int32_t>(schedules_.size());
    schedules_.push_back(std::move(mixed));
  };
  // The chosen plan's schedule moves to the first new place; Evaluate may
  // have made it the best plan too (no plan turned down beats the current).
  auto take = [&](Individual chosen) {
    if (reorders) {
      const int32_t from = chosen.genome.schedule;
      const auto to = static_cast<int32_t>(kept_schedules);
      if (from != to) schedules_[to] = std::move(schedules_[from]);
      schedules_.resize(kept_schedules + 1);
      chosen.genome.schedule = to;
      if (best_.genome.schedule == from) best_.genome.schedule = to;
    }
    current_ = std::move(chosen);
  };
  std::vector<Individual> batch(1);
  make(moves, batch[0]);
  Evaluate(batch);
  ++result_.rounds;
  if (batch[0].fitness.BetterThan(current_.fitness)) {
    take(std::move(batch[0]));
    return true;
  }
  schedules_.resize(kept_schedules);
  for (size_t at = 0; at < moves.size(); at += options_.moves_per_round) {
    if (Stop()) return false;
    const size_t count = std::min<size_t>(options_.moves_per_round, moves.size() - at);
    batch.assign(count, {});
    for (size_t i = 0; i < count; ++i) make({moves[at + i]}, batch[i]);
    Evaluate(batch);
    ++result_.rounds;
    size_t chosen = count;
    for (size_t i = 0; i < count; ++i) {
      if (!batch[i].fitness.BetterThan(current_.fitness)) {
        windows_->Rejected(moves[at + i], current_.genome.device);
      } else if (chosen == count || batch[i].fitness.BetterThan(batch[chosen].fitness)) {
        chosen = i;
      }
    }
    if (chosen < count) {
      take(std::move(batch[chosen]));
      return true;
    }
    schedules_.resize(kept_schedules);
  }
  return false;
}

bool NodeRefinement::Shifts() {
  const uint32_t largest = std::min(kLargestWindow, windows_->max_window());
  while (!WindowsStop() && shift_size_ <= largest) {
    const std::vector<double>& priority = schedules_[current_.genome.schedule];
    if (windows_->ShiftsDone(current_.genome.device, priority, shift_size_)) {
      shift_size_ = shift_size_ == 0 ? kFirstWindow : shift_size_ + 1;
      continue;
    }
    const std::vector<NodeWindows::Move> moves = windows_->SweepShifts(
        current_.genome.device, priority, shift_size_, [this] { return WindowsStop(); });
    if (!moves.empty() && TryWindowMoves(moves)) return true;
  }
  return false;
}

void NodeRefinement::Orders() {
  const std::vector<double>& priority = schedules_[current_.genome.schedule];
  const std::vector<NodeWindows::Move> moves = windows_->SweepOrders(
      current_.genome.device, priority, schedules_,
      std::min(kLargestWindow, windows_->max_window()), [this] { return WindowsStop(); });
  if (moves.empty()) return;
  std::vector<double> mixed = priority.empty() ? windows_->default_priority() : priority;
  std::vector<Individual> batch(1);
  batch[0].genome = current_.genome;
  windows_->Apply(moves, batch[0].genome.device, &mixed);
  batch[0].genome.schedule = static_cast<int32_t>(schedules_.size());
  schedules_.push_back(std::move(mixed));
  Evaluate(batch);
  ++result_.rounds;
  if (batch[0].fitness.BetterThan(current_.fitness)) current_ = std::move(batch[0]);
}

// Step 4.
bool NodeRefinement::Kick() {
  current_ = best_;
  MakeBlocks(current_.genome, 1);
  std::vector<Move> moves = BoundaryMoves(current_.genome);
  if (moves.empty()) return false;
  const uint32_t count = rng_.LogUniform(
      std::max<uint32_t>(1, static_cast<uint32_t>(blocks_.size()) / kBlocksPerKickMove));
  for (uint32_t k = 0; k < count; ++k) {
    Apply(moves[rng_.Below(static_cast<uint32_t>(moves.size()))], current_.genome);
  }
  std::vector<Individual> batch(1);
  batch[0].genome = current_.genome;
  Evaluate(batch);
  ++result_.rounds;
  current_ = std::move(batch[0]);
  return true;
}

absl::StatusOr<NodeRefinementResult> NodeRefinement::Run(const std::vector<Placement>& unit_plans) {
  if (options_.max_rounds <= 0 &&
      !(options_.elapsed_s && options_.deadline_s < std::numeric_limits<double>::infinity())) {
    return absl::InvalidArgumentError("node refinement needs a deadline or a round limit");
  }
  IndexUnits();
  schedules_.push_back({});
  lower_bound_us_ =
      nodes_.lower_bound_us
          ? *nodes_.lower_bound_us
          : costmodel::ComputeLowerBound(graph_, cluster_, options_.microbatches).bound_us;

  // Step 1.
  std::vector<Individual> starts;
  for (size_t i = 0; i < unit_plans.size(); ++i) {
    AddStart(i == 0 ? "units" : "units #" + std::to_string(i + 1),
             ProjectToNodes(nodes_, unit_plans[i]), starts);
  }
  SearchOptions list_options{.seed = options_.seed, .microbatches = options_.microbatches};
  for (const std::string& name : options_.list_schedulers) {
    absl::StatusOr<Placement> plan = Place(name, graph_, cluster_, list_options);
    if (!plan.ok() || !costmodel::CheckPlacement(graph_, cluster_, *plan).ok()) continue;
    AddStart(name, *std::move(plan), starts);
  }
  for (const auto& [name, plan] : options_.node_starts) {
    if (!costmodel::CheckPlacement(graph_, cluster_, plan).ok()) continue;
    AddStart(name, plan, starts);
  }
  if (starts.empty()) return absl::InvalidArgumentError("node refinement needs a start");
  evaluator_.emplace(graph_, cluster_, schedules_, options_.microbatches,
                     std::max(1, options_.threads));
  Evaluate(starts);
  result_.projected_step_us = starts.front().fitness.step_us;
  size_t best_start = 0;
  for (size_t i = 1; i < starts.size(); ++i) {
    if (starts[i].fitness.BetterThan(starts[best_start].fitness)) best_start = i;
  }
  result_.best_start = start_names_[best_start];
  result_.best_start_step_us = starts[best_start].fitness.step_us;
  current_ = starts[best_start];
  best_ = current_;

  // Step 2.
  if (options_.windows && options_.microbatches == 1 && !cluster_.execution.whole_stages) {
    std::vector<uint8_t> fixed(n_, 0);
    for (uint32_t u = 0; u < num_units_; ++u) {
      if (!locked_[u]) continue;
      for (uint32_t i = unit_begin_[u]; i < unit_begin_[u + 1]; ++i) fixed[members_[i]] = 1;
    }
    windows_.emplace(graph_, cluster_, fixed);
    if (options_.elapsed_s && options_.deadline_s < std::numeric_limits<double>::infinity()) {
      const double now_s = options_.elapsed_s();
      windows_until_s_ = now_s + kWindowShare * (options_.deadline_s - now_s);
    }
    for (;;) {
      if (Windows()) continue;
      if (WindowsStop()) break;
      if (windows_->orders_passes() == 0) {
        Orders();
        continue;
      }
      if (!options_.shifts || !Shifts()) break;
    }
    windows_until_s_ = std::numeric_limits<double>::infinity();
  }

  // Step 3.
  uint32_t largest_unit = 1;
  for (uint32_t u = 0; u < num_units_; ++u) {
    largest_unit = std::max(largest_unit, unit_begin_[u + 1] - unit_begin_[u]);
  }
  bool budget_left = true;
  for (uint32_t length = largest_unit; budget_left; length /= 2) {
    budget_left = RefineLevel(std::max<uint32_t>(1, length));
    if (length <= 1) break;
  }
  // Step 4.
  while (budget_left && !Stop()) {
    if (windows_ && Windows()) continue;
    if (windows_ && windows_->orders_passes() == 0) {
      Orders();
      continue;
    }
    if (windows_ && options_.shifts && Shifts()) continue;
    if (!Kick()) break;
    budget_left = RefineLevel(1);
  }

  // Step 5.
  result_.placement = {.device = best_.genome.device,
                       .priority = schedules_[best_.genome.schedule]};
  result_.step_us = best_.fitness.step_us;
  result_.feasible = best_.fitness.feasible;
  result_.evaluations = evaluator_->evaluations();
  return result_;
}

}  // namespace

Placement ProjectToNodes(const NodeLevel& nodes, const Placement& units) {
  const std::vector<uint32_t>& unit_of = *nodes.unit_of_node;
  Placement projected;
  projected.device.resize(unit_of.size());
  for (size_t v = 0; v < unit_of.size(); ++v) projected.device[v] = units.device[unit_of[v]];
  if (!units.priority.empty()) {
    projected.priority.resize(unit_of.size());
    for (size_t v = 0; v < unit_of.size(); ++v) projected.priority[v] = units.priority[unit_of[v]];
  }
  return projected;
}

Placement NodePlanOf(const NodeLevel& level, const Placement& units, Placement nodes) {
  return nodes.device.empty() ? ProjectToNodes(level, units) : nodes;
}

absl::StatusOr<NodeRefinementResult> RefineOnNodes(const NodeLevel& nodes, const Cluster& cluster,
                                                   const std::vector<Placement>& unit_plans,
                                                   const NodeRefinementOptions& options) {
  if (nodes.graph == nullptr || nodes.unit_of_node == nullptr ||
      nodes.unit_of_node->size() != nodes.graph->num_units()) {
    return absl::InvalidArgumentError("node refinement needs the node graph and node → unit map");
  }
  for (const Placement& plan : unit_plans) {
    for (int32_t device : plan.device) {
      if (device < 0 || device >= cluster.num_devices()) {
        return absl::InvalidArgumentError("node refinement: a unit plan names no device");
      }
    }
  }
  return NodeRefinement(nodes, cluster, options).Run(unit_plans);
}

}  // namespace autopar::search
