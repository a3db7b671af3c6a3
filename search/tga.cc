// TGA, step by step (see tga.h for what it promises):
//
//  1. Checks: the cluster and the graph match, every unit fits some device.
//  2. Seeds: every other algorithm Place() knows runs once; its plan, with
//     its own priorities, seeds the exploit population. Failures (no
//     feasible plan, say) are skipped.
//  3. Schedules: the priorities a genome may choose — the simulator's
//     default (bottom level), the topological order (the in-order memory
//     profile's assumption, thriftiest under tight memory) and each seed's.
//  4. Initial populations: exploit = the seeds under their own schedule and
//     the two shared ones, topped up with lightly mutated copies; explore =
//     memory-aware random fills, random cut points, block round-robin deals
//     and uniformly random devices, each with a random schedule.
//  5. One generation: explore breeds by tournaments of two, segment
//     crossover and several mutations of any kind; exploit by tournaments of
//     three, occasional crossover and one light mutation; and the local
//     search tries light moves around the exploit population's best (the
//     moves that each beat it are then tried all together). All children
//     are simulated in one parallel batch.
//  6. Replacement: explore is generational (its two best survive, the best
//     children fill the rest); exploit is (μ + λ) elitist. Duplicates are
//     dropped, so neither population collapses onto one plan. After every
//     kExploreRestartStall generations without improvement explore starts
//     afresh from step 4's diverse plans, to leave a local optimum.
//  6b. Diversification: after stall_generations without improvement the
//     search does not stop but diversifies: the generator is reseeded (a new
//     seed derived from the options' one and the restart count), moves grow
//     (every boundary shift and block may be twice as long as before, up to
//     kMaxMoveScale times the base; back to the base after an improvement),
//     and explore restarts from heavily perturbed copies of exploit's elites
//     and the best plan, half of it, and from step 4's diverse plans, the
//     other half. It is how the budget buys better plans: a long run visits
//     basins a short one never reaches.
//  7. Migration: every migration_interval generations the best of explore
//     join exploit (if good enough to stay) and exploit's best joins
//     explore, replacing its worst.
//  8. Progress and stop: on_progress after every generation; stop at the
//     time budget (a generation that would end past it is not started), at
//     max_generations, or when the best plan is within kLowerBoundTolerance
//     of the lower bound (costmodel/lower_bound.h: nothing can be better).
//  9. Result: the best plan ever simulated, if within memory; else the
//     shared memory repair from it (search/memory_repair.h), else
//     InfeasibleError.
// 10. Below the units (with options.nodes): the unit phase above gets
//     kUnitShare of the time budget; the best unit plans (the result and
//     exploit's next best, kNodeStarts in all) are projected onto the nodes
//     and refined there, with node-level list schedules as further starts,
//     until the budget (search/node_refinement.h). With max_generations the
//     refinement runs that many rounds too, so the run stays reproducible.
//     on_progress reports the unit phase only (its own estimate, as before).
//     With the caller's objective (a pipelined training step), the result is
//     the best by it of the unit plan, the refined plan and SGP's node plan.
#include "search/tga.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/types/span.h"
#include "costmodel/lower_bound.h"
#include "search/feasibility.h"
#include "search/memory_profile.h"
#include "search/memory_repair.h"
#include "search/node_refinement.h"
#include "search/tga_evaluator.h"
#include "search/tga_operators.h"

namespace autopar::search {
namespace {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;
using Clock = std::chrono::steady_clock;

constexpr double kExploreCrossover = 0.9;
constexpr double kExploitCrossover = 0.5;
constexpr int kExploreTournament = 2;
constexpr int kExploitTournament = 3;
constexpr size_t kExploreElites = 2;
constexpr uint32_t kExploreMaxMutations = 3;
/// Chance that an explore child mutates lightly instead.
constexpr double kExploreClimb = 0.5;
/// Chance that a child switches to another schedule.
constexpr double kExploreScheduleChange = 0.1;
constexpr double kExploitScheduleChange = 0.03;
/// Generations without improvement after which explore starts afresh.
constexpr int64_t kExploreRestartStall = 15;
/// An exploit child makes up to one light move per this many units.
constexpr uint32_t kUnitsPerExploitMove = 250;
/// A child equal to its parent is mutated again, at most this many times.
constexpr int kMaxRetries = 4;
/// Improvements smaller than this fraction do not reset the stall count.
constexpr double kMinRelativeGain = 1e-9;
/// Step 6b: elites whose perturbed copies restart explore, heavy mutations
/// per copy (times the move scale), and the largest move scale.
constexpr size_t kDiversifyElites = 4;
constexpr uint32_t kDiversifyMutations = 4;
constexpr uint32_t kMaxMoveScale = 64;
/// Step 8: a plan this close to the lower bound ends the search.
constexpr double kLowerBoundTolerance = 1e-3;
/// Step 10: the unit phase's share of the budget, and the unit plans
/// projected onto the nodes.
constexpr double kUnitShare = 0.5;
constexpr size_t kNodeStarts = 3;

// `a` is better than `b` by more than noise (the stall count's measure).
bool Improves(const Fitness& a, const Fitness& b) {
  if (!a.BetterThan(b)) return false;
  if (a.feasible != b.feasible || a.overflow_bytes != b.overflow_bytes) return true;
  return a.step_us < b.step_us * (1 - kMinRelativeGain);
}

class Tga {
 public:
  Tga(const CostGraph& graph, const Cluster& cluster, const SearchOptions& options,
      const TgaOptions& tga)
      : graph_(graph),
        cluster_(cluster),
        options_(options),
        tga_(tga),
        n_(graph.num_units()),
        num_devices_(cluster.num_devices()),
        rng_(options.seed),
        start_(Clock::now()) {}

  absl::StatusOr<TgaResult> Run();

 private:
  double ElapsedS() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  absl::StatusOr<Placement> PlaceSgp(const SearchOptions& sgp_options);
  void Seed();
  void InitialPopulations();
  Genome RandomGenome(int turn);
  bool RestartExplore();
  bool Diversify();
  absl::Status RefineBelowUnits();
  bool AtLowerBound() const {
    return best_.fitness.feasible &&
           best_.fitness.step_us <= lower_bound_us_ * (1 + kLowerBoundTolerance);
  }
  Individual ExploreChild();
  Individual ExploitChild();
  Individual LocalMove();
  void CombineImprovingMoves(absl::Span<const Individual> moves);
  void MutateLightly(const Individual& parent, Genome& genome);
  void MutateHeavily(const Individual& parent, Genome& genome);
  int HotDevice(const Individual& individual) const;
  void Migrate();
  bool Evaluate(std::vector<Individual>& batch);
  void ReportProgress(int64_t generation);

  const CostGraph& graph_;
  const Cluster& cluster_;
  const SearchOptions& options_;
  const TgaOptions& tga_;
  const uint32_t n_;
  const int num_devices_;
  Rng rng_;
  const Clock::time_point start_;

  std::vector<std::vector<double>> schedules_;  // step 3
  struct SeedPlan {
    std::string algorithm;
    Genome genome;
  };
  std::vector<SeedPlan> seeds_;  // step 2
  // Step 2's SGP run, given the nodes, also plans them: step 10 starts from
  // that node plan rather than running SGP again.
  std::optional<Placement> sgp_nodes_;
  // Step 4: SegmentEnds per distinct device capacity, and per device.
  std::deque<std::pair<int64_t, std::vector<uint32_t>>> ends_by_capacity_;
  std::vector<const std::vector<uint32_t>*> ends_;
  std::vector<Individual> explore_, exploit_;  // each sorted best first
  Individual best_;
  Fitness best_seed_fitness_;
  int64_t stall_ = 0;
  uint32_t move_scale_ = 1;  // step 6b
  double lower_bound_us_ = 0;
  std::optional<FitnessEvaluator> evaluator_;
  std::optional<Individual> combined_;  // step 5: the local search's combined moves
  TgaResult result_;
};

// Sorts `pool` best first (stable: ties keep their order), drops duplicates
// and keeps at most `size`.
void KeepBest(std::vector<Individual>& pool, size_t size) {
  std::stable_sort(pool.begin(), pool.end(), [](const Individual& a, const Individual& b) {
    return a.fitness.BetterThan(b.fitness);
  });
  std::vector<Individual> kept;
  kept.reserve(size);
  for (Individual& candidate : pool) {
    if (kept.size() == size) break;
    const bool duplicate = std::any_of(kept.begin(), kept.end(), [&](const Individual& k) {
      return k.hash == candidate.hash && k.genome == candidate.genome;
    });
    if (!duplicate) kept.push_back(std::move(candidate));
  }
  pool = std::move(kept);
}

// The better of `count` random members of a population sorted best first.
const Individual& Tournament(const std::vector<Individual>& population, int count, Rng& rng) {
  auto best = static_cast<uint32_t>(population.size());
  for (int i = 0; i < count; ++i) {
    best = std::min(best, rng.Below(static_cast<uint32_t>(population.size())));
  }
  return population[best];
}

// SGP's unit plan. Given the nodes, SGP plans them too (its step 7): that
// node plan is kept for step 10.
absl::StatusOr<Placement> Tga::PlaceSgp(const SearchOptions& sgp_options) {
  absl::StatusOr<SearchResult> sgp = PlaceDetailed("sgp", graph_, cluster_, sgp_options);
  if (!sgp.ok()) return sgp.status();
  if (options_.nodes.graph != nullptr) {
    sgp_nodes_ = NodePlanOf(options_.nodes, sgp->units, std::move(sgp->nodes));
  }
  return std::move(sgp->units);
}

// Step 2 and step 3.
void Tga::Seed() {
  schedules_.push_back({});  // the simulator's default
  std::vector<double>& in_order = schedules_.emplace_back(n_);
  for (uint32_t u = 0; u < n_; ++u) in_order[u] = u;

  std::vector<std::string> names = tga_.seed_algorithms;
  if (names.empty()) names = AlgorithmNames();
  SearchOptions seed_options = options_;
  seed_options.on_progress = nullptr;
  for (const std::string& name : names) {
    if (name == "tga") continue;
    absl::StatusOr<Placement> plan =
        name == "sgp" ? PlaceSgp(seed_options) : Place(name, graph_, cluster_, seed_options);
    if (!plan.ok() || !costmodel::CheckPlacement(graph_, cluster_, *plan).ok()) continue;
    Genome genome{.device = std::move(plan->device), .schedule = 0};
    if (!plan->priority.empty()) {
      genome.schedule = static_cast<int32_t>(schedules_.size());
      schedules_.push_back(std::move(plan->priority));
    }
    seeds_.push_back({name, std::move(genome)});
    result_.seeds.push_back(name);
  }
}

// Step 4.
void Tga::InitialPopulations() {
  const auto num_schedules = static_cast<uint32_t>(schedules_.size());
  // Exploit: every seed under its own schedule and the shared ones.
  for (const SeedPlan& seed : seeds_) {
    exploit_.push_back({.genome = seed.genome});
    for (int32_t shared : {0, 1}) {
      if (shared == seed.genome.schedule) continue;
      exploit_.push_back({.genome = {.device = seed.genome.device, .schedule = shared}});
    }
  }
  const size_t seeded = exploit_.size();
  for (size_t i = 0; exploit_.size() < static_cast<size_t>(tga_.exploit_size); ++i) {
    Individual copy;
    if (seeded > 0) {
      copy = exploit_[i % seeded];
      copy.genome.schedule = static_cast<int32_t>(rng_.Below(num_schedules));
      MutateLightly(copy, copy.genome);
    } else {
      copy.genome = RandomCuts(n_, num_devices_, rng_);
    }
    exploit_.push_back(std::move(copy));
  }

  // Explore: diverse plans.
  for (int i = 0; i < tga_.explore_size; ++i) explore_.push_back({.genome = RandomGenome(i)});
}

// Step 4: memory-aware random fills, random cuts, block round-robin deals
// and uniformly random devices, by turns; a random schedule.
Genome Tga::RandomGenome(int turn) {
  if (ends_.empty()) {
    // SegmentEnds per distinct capacity.
    const MemoryProfile profile = ComputeMemoryProfile(graph_);
    for (int d = 0; d < num_devices_; ++d) {
      const int64_t capacity = cluster_.device(d).memory_bytes;
      if (std::none_of(ends_by_capacity_.begin(), ends_by_capacity_.end(),
                       [&](const auto& entry) { return entry.first == capacity; })) {
        ends_by_capacity_.emplace_back(capacity, SegmentEnds(graph_, profile, capacity));
      }
    }
    ends_.resize(num_devices_);
    for (int d = 0; d < num_devices_; ++d) {
      for (const auto& [capacity, segment_ends] : ends_by_capacity_) {
        if (capacity == cluster_.device(d).memory_bytes) ends_[d] = &segment_ends;
      }
    }
  }
  Genome genome;
  switch (turn % 4) {
    case 0:
      genome = RandomFill(ends_, rng_);
      break;
    case 1:
      genome = RandomCuts(n_, num_devices_, rng_);
      break;
    case 2: {
      const uint32_t block = rng_.LogUniform(std::max<uint32_t>(1, n_ / num_devices_));
      genome = BlockRoundRobin(n_, num_devices_, block, static_cast<int>(rng_.Below(num_devices_)));
      break;
    }
    default:
      genome = RandomDevices(n_, num_devices_, rng_);
  }
  genome.schedule = static_cast<int32_t>(rng_.Below(static_cast<uint32_t>(schedules_.size())));
  return genome;
}

// Step 6: a stalled explore population starts afresh (random immigrants).
bool Tga::RestartExplore() {
  explore_.clear();
  for (int i = 0; i < tga_.explore_size; ++i) explore_.push_back({.genome = RandomGenome(i)});
  const bool improved = Evaluate(explore_);
  KeepBest(explore_, tga_.explore_size);
  return improved;
}

// Step 6b.
bool Tga::Diversify() {
  ++result_.diversifications;
  rng_ =
      Rng(options_.seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(result_.diversifications));
  move_scale_ = std::min(move_scale_ * 2, kMaxMoveScale);
  std::vector<const Individual*> elites = {&best_};
  for (size_t i = 0; i < std::min(exploit_.size(), kDiversifyElites); ++i) {
    elites.push_back(&exploit_[i]);
  }
  explore_.clear();
  for (int i = 0; i < tga_.explore_size; ++i) {
    if (i % 2 == 1) {
      explore_.push_back({.genome = RandomGenome(i / 2)});
      continue;
    }
    const Individual& elite = *elites[(i / 2) % elites.size()];
    Individual copy{.genome = elite.genome};
    const uint32_t mutations = kDiversifyMutations + rng_.Below(kDiversifyMutations);
    for (uint32_t m = 0; m < mutations; ++m) MutateHeavily(elite, copy.genome);
    explore_.push_back(std::move(copy));
  }
  const bool improved = Evaluate(explore_);
  KeepBest(explore_, tga_.explore_size);
  return improved;
}

int Tga::HotDevice(const Individual& individual) const {
  int hot = 0;
  for (int d = 1; d < num_devices_; ++d) {
    const bool hotter = individual.fitness.feasible
                            ? individual.busy_us[d] > individual.busy_us[hot]
                            : individual.over_bytes[d] > individual.over_bytes[hot];
    if (hotter) hot = d;
  }
  return hot;
}

// One move of the exploiting kind: toward a neighbour's device, a boundary
// shift, a branch offload, relief of the hottest device, now and then a
// unit anywhere; splitting off a block when the plan has no boundary yet.
void Tga::MutateLightly(const Individual& parent, Genome& genome) {
  const uint32_t max_shift =
      std::min(n_, std::max<uint32_t>(1, n_ / (4 * num_devices_)) * move_scale_);
  bool changed = false;
  const uint32_t kind = rng_.Below(10);
  if (kind < 3) {
    changed = MoveToNeighbourDevice(graph_, genome, rng_);
  } else if (kind < 5) {
    changed = ShiftBoundary(genome, rng_, max_shift);
  } else if (kind < 7) {
    changed = OffloadBranch(graph_, genome, num_devices_, rng_);
  } else if (kind < 9) {
    if (!parent.busy_us.empty())
      changed = RelieveDevice(genome, HotDevice(parent), rng_, max_shift);
  } else {
    // Any unit anywhere: with it the neighbourhood holds every single move.
    changed = MoveToRandomDevice(genome, num_devices_, rng_);
  }
  // A plan on one device has no boundary and no cut edge yet.
  if (!changed) changed = OffloadBranch(graph_, genome, num_devices_, rng_);
  if (!changed) SplitOff(genome, num_devices_, rng_, max_shift);
  if (rng_.Chance(kExploitScheduleChange)) {
    genome.schedule = static_cast<int32_t>(rng_.Below(static_cast<uint32_t>(schedules_.size())));
  }
}

// One to kExploreMaxMutations moves of any kind, with larger steps.
void Tga::MutateHeavily(const Individual& parent, Genome& genome) {
  const uint32_t max_shift = std::min(n_, std::max<uint32_t>(1, n_ / num_devices_) * move_scale_);
  const uint32_t moves = 1 + rng_.Below(kExploreMaxMutations);
  for (uint32_t m = 0; m < moves; ++m) {
    switch (rng_.Below(7)) {
      case 5:
        OffloadBranch(graph_, genome, num_devices_, rng_);
        break;
      case 0:
        MoveToNeighbourDevice(graph_, genome, rng_);
        break;
      case 1:
        ShiftBoundary(genome, rng_, max_shift);
        break;
      case 2:
        if (!parent.busy_us.empty()) RelieveDevice(genome, HotDevice(parent), rng_, max_shift);
        break;
      case 3:
        SplitOff(genome, num_devices_, rng_, max_shift);
        break;
      default:
        MoveToRandomDevice(genome, num_devices_, rng_);
    }
  }
  if (rng_.Chance(kExploreScheduleChange)) {
    genome.schedule = static_cast<int32_t>(rng_.Below(static_cast<uint32_t>(schedules_.size())));
  }
}

// Step 5, explore.
Individual Tga::ExploreChild() {
  const Individual& a = Tournament(explore_, kExploreTournament, rng_);
  const Individual& b = Tournament(explore_, kExploreTournament, rng_);
  Individual child;
  if (rng_.Chance(kExploreCrossover)) {
    SegmentCrossover(a.genome, b.genome, rng_, child.genome);
  } else {
    child.genome = a.genome;
  }
  // Half the children also climb: explore must refine the basins it finds,
  // or its plans never get good enough to migrate.
  const bool climb = rng_.Chance(kExploreClimb);
  for (int retry = 0; retry < kMaxRetries; ++retry) {
    if (climb) {
      MutateLightly(a, child.genome);
    } else {
      MutateHeavily(a, child.genome);
    }
    if (child.genome != a.genome) break;
  }
  return child;
}

// Step 5, exploit: crossover with another member, one light mutation.
Individual Tga::ExploitChild() {
  const Individual& a = Tournament(exploit_, kExploitTournament, rng_);
  Individual child;
  if (rng_.Chance(kExploitCrossover)) {
    const Individual& b = Tournament(exploit_, kExploitTournament, rng_);
    SegmentCrossover(a.genome, b.genome, rng_, child.genome);
  } else {
    child.genome = a.genome;
  }
  // Large graphs have many independent places to improve: up to one move
  // per kUnitsPerExploitMove units at once.
  const uint32_t moves = rng_.LogUniform(std::max<uint32_t>(1, n_ / kUnitsPerExploitMove));
  for (uint32_t m = 1; m < moves; ++m) MutateLightly(a, child.genome);
  for (int retry = 0; retry < kMaxRetries; ++retry) {
    MutateLightly(a, child.genome);
    if (child.genome != a.genome) break;
  }
  return child;
}

// Step 5, local search: one light move from the exploit population's best.
Individual Tga::LocalMove() {
  const Individual& elite = exploit_.front();
  Individual move{.genome = elite.genome};
  for (int retry = 0; retry < kMaxRetries; ++retry) {
    MutateLightly(elite, move.genome);
    if (move.genome != elite.genome) break;
  }
  return move;
}

// Step 5, local search: the moves that each beat the elite, applied all
// together, are a candidate of the next generation. On large graphs the
// moves touch distant parts and their gains add up: many improvements per
// generation instead of the best one only.
void Tga::CombineImprovingMoves(absl::Span<const Individual> moves) {
  const Individual& elite = exploit_.front();
  Individual combined{.genome = elite.genome};
  int improving = 0;
  for (const Individual& move : moves) {
    if (!move.fitness.BetterThan(elite.fitness)) continue;
    ++improving;
    for (uint32_t u = 0; u < n_; ++u) {
      if (move.genome.device[u] != elite.genome.device[u]) {
        combined.genome.device[u] = move.genome.device[u];
      }
    }
    if (move.genome.schedule != elite.genome.schedule) {
      combined.genome.schedule = move.genome.schedule;
    }
  }
  if (improving >= 2) combined_ = std::move(combined);
}

// Simulates the batch and keeps the best plan ever seen; true when it
// improved by more than noise (Improves).
bool Tga::Evaluate(std::vector<Individual>& batch) {
  std::vector<Individual*> pointers;
  pointers.reserve(batch.size());
  for (Individual& individual : batch) pointers.push_back(&individual);
  evaluator_->Evaluate(pointers);
  bool improved = false;
  for (const Individual& individual : batch) {  // in batch order: ties keep the first
    if (!individual.fitness.BetterThan(best_.fitness)) continue;
    improved |= Improves(individual.fitness, best_.fitness);
    best_ = individual;
  }
  return improved;
}

// Step 10.
absl::Status Tga::RefineBelowUnits() {
  std::vector<Placement> unit_plans = {result_.placement};
  for (const Individual& plan : exploit_) {
    if (unit_plans.size() == kNodeStarts) break;
    if (!plan.fitness.feasible || plan.genome.device == result_.placement.device) continue;
    unit_plans.push_back(
        {.device = plan.genome.device, .priority = schedules_[plan.genome.schedule]});
  }
  NodeRefinementOptions refinement;
  refinement.seed = options_.seed;
  refinement.threads = options_.threads;
  refinement.microbatches = options_.microbatches;
  refinement.deadline_s = options_.time_budget_s;
  refinement.max_rounds = tga_.max_generations;
  refinement.elapsed_s = [this] { return ElapsedS(); };
  // SGP's plan on the nodes as one more start: with pipelined micro-batches
  // its interleaved stages can beat every unit plan TGA evolved. Step 2 made
  // it, unless SGP was not among the seeds; without a plan of its own
  // (nothing fits) TGA goes on.
  if (!sgp_nodes_) {
    PlaceSgp(
        {.seed = options_.seed, .microbatches = options_.microbatches, .nodes = options_.nodes})
        .status()
        .IgnoreError();
  }
  // Kept for the final comparison below, by the caller's objective.
  std::optional<Placement> sgp_plan;
  if (sgp_nodes_ && options_.objective && options_.nodes.objective) sgp_plan = *sgp_nodes_;
  if (sgp_nodes_) refinement.node_starts.emplace_back("sgp", *std::move(sgp_nodes_));
  absl::StatusOr<NodeRefinementResult> refined =
      RefineOnNodes(options_.nodes, cluster_, unit_plans, refinement);
  if (!refined.ok()) return refined.status();
  result_.node_placement = std::move(refined->placement);
  result_.node_step_us = refined->step_us;
  result_.projected_step_us = refined->projected_step_us;
  result_.node_rounds = refined->rounds;
  result_.node_best_start = refined->best_start;
  // The refinement follows the node-level simulator; with an objective of
  // the caller's (SearchOptions::objective) the best unit plan stays unless
  // the refined one is better by it.
  if (options_.objective && options_.nodes.objective && !result_.node_placement.device.empty() &&
      options_.objective(result_.placement.device) <=
          options_.nodes.objective(result_.node_placement.device)) {
    result_.node_placement = {};
    result_.node_step_us = 0;
  }
  // Nor is the result worse by that objective than SGP's own node plan (a
  // seed, so the guarantee of tga.h holds for the step the caller judges):
  // the refinement started from it but followed the simulator, which can
  // rank the plans the other way round.
  if (sgp_plan) {
    const double chosen_us = result_.node_placement.device.empty()
                                 ? options_.objective(result_.placement.device)
                                 : options_.nodes.objective(result_.node_placement.device);
    if (options_.nodes.objective(sgp_plan->device) < chosen_us) {
      result_.node_placement = *std::move(sgp_plan);
      result_.node_step_us = 0;
      result_.node_best_start = "sgp";
    }
  }
  return absl::OkStatus();
}

// Step 7.
void Tga::Migrate() {
  const size_t migrants = std::min<size_t>(tga_.migrants, explore_.size());
  for (size_t i = 0; i < migrants; ++i) exploit_.push_back(explore_[i]);
  KeepBest(exploit_, tga_.exploit_size);
  explore_.back() = exploit_.front();
  KeepBest(explore_, tga_.explore_size);
}

void Tga::ReportProgress(int64_t generation) {
  if (!options_.on_progress) return;
  options_.on_progress(Progress{.iteration = generation,
                                .best_step_time_us = best_.fitness.step_us,
                                .feasible = best_.fitness.feasible,
                                .elapsed_s = ElapsedS()});
}

absl::StatusOr<TgaResult> Tga::Run() {
  // Step 1.
  if (absl::Status s = CheckSearchInputs(graph_, cluster_); !s.ok()) return s;
  if (tga_.explore_size < 1 || tga_.exploit_size < 1 || tga_.local_search_moves < 0 ||
      tga_.migration_interval < 1 || tga_.migrants < 0 || tga_.stall_generations < 1 ||
      tga_.max_generations < 0) {
    return absl::InvalidArgumentError(
        "TGA needs populations of at least one, a positive migration interval and stall limit");
  }
  if (!(options_.time_budget_s < std::numeric_limits<double>::infinity()) &&
      tga_.max_generations == 0) {
    return absl::InvalidArgumentError(
        "TGA needs a finite time budget or a generation limit, else it would not end");
  }
  if (n_ == 0) return result_;
  if (absl::Status s = CheckEveryUnitFits(graph_, cluster_); !s.ok()) return s;

  // Steps 2–4.
  lower_bound_us_ =
      options_.lower_bound_us
          ? *options_.lower_bound_us
          : costmodel::ComputeLowerBound(graph_, cluster_, options_.microbatches).bound_us;
  Seed();
  InitialPopulations();
  evaluator_.emplace(graph_, cluster_, schedules_, options_.microbatches,
                     std::max(1, options_.threads), options_.objective);
  {
    std::vector<Individual> batch;
    for (Individual& individual : exploit_) batch.push_back(std::move(individual));
    for (Individual& individual : explore_) batch.push_back(std::move(individual));
    Evaluate(batch);
    // The seeds under their own schedules came first, in seed order.
    size_t at = 0;
    for (const SeedPlan& seed : seeds_) {
      while (at + 1 < batch.size() && !(batch[at].genome == seed.genome)) ++at;
      if (result_.best_seed.empty() || batch[at].fitness.BetterThan(best_seed_fitness_)) {
        result_.best_seed = seed.algorithm;
        best_seed_fitness_ = batch[at].fitness;
      }
    }
    result_.best_seed_step_us = best_seed_fitness_.step_us;
    exploit_.assign(std::make_move_iterator(batch.begin()),
                    std::make_move_iterator(batch.begin() + exploit_.size()));
    explore_.assign(std::make_move_iterator(batch.begin() + exploit_.size()),
                    std::make_move_iterator(batch.end()));
    KeepBest(exploit_, tga_.exploit_size);
    KeepBest(explore_, tga_.explore_size);
  }
  stall_ = 0;
  ReportProgress(0);

  int64_t generation = 0;
  // A generation is not interrupted, so one that would end past the budget
  // (judged by the last one's duration: on 100k units with micro-batches a
  // generation takes seconds) is not started.
  double last_generation_s = 0;
  const double unit_budget_s = options_.nodes.graph != nullptr ? options_.time_budget_s * kUnitShare
                                                               : options_.time_budget_s;
  while (ElapsedS() + last_generation_s < unit_budget_s && !AtLowerBound() &&
         (tga_.max_generations == 0 || generation < tga_.max_generations)) {
    const double generation_start_s = ElapsedS();
    ++generation;
    // Step 5.
    std::vector<Individual> batch;
    batch.reserve(tga_.explore_size + tga_.exploit_size + tga_.local_search_moves);
    for (int i = 0; i < tga_.explore_size; ++i) batch.push_back(ExploreChild());
    for (int i = 0; i < tga_.exploit_size; ++i) batch.push_back(ExploitChild());
    for (int i = 0; i < tga_.local_search_moves; ++i) batch.push_back(LocalMove());
    if (combined_) batch.push_back(*std::move(combined_));
    combined_.reset();
    bool improved = Evaluate(batch);
    CombineImprovingMoves(absl::MakeConstSpan(batch).subspan(tga_.explore_size + tga_.exploit_size,
                                                             tga_.local_search_moves));
    // Step 6.
    explore_.resize(std::min(explore_.size(), kExploreElites));
    for (int i = 0; i < tga_.explore_size; ++i) explore_.push_back(std::move(batch[i]));
    KeepBest(explore_, tga_.explore_size);
    for (size_t i = tga_.explore_size; i < batch.size(); ++i) {
      exploit_.push_back(std::move(batch[i]));
    }
    KeepBest(exploit_, tga_.exploit_size);
    stall_ = improved ? 0 : stall_ + 1;
    if (improved) move_scale_ = 1;
    if (stall_ >= tga_.stall_generations) {
      // Step 6b.
      stall_ = 0;
      if (Diversify()) move_scale_ = 1;
    } else if (stall_ > 0 && stall_ % kExploreRestartStall == 0 && RestartExplore()) {
      stall_ = 0;
    }
    // Step 7.
    if (generation % tga_.migration_interval == 0) Migrate();
    // Step 8.
    ReportProgress(generation);
    last_generation_s = ElapsedS() - generation_start_s;
  }

  // Step 9.
  result_.generations = generation;
  result_.evaluations = evaluator_->evaluations();
  result_.placement.device = best_.genome.device;
  result_.placement.priority = schedules_[best_.genome.schedule];
  result_.step_us = best_.fitness.step_us;
  if (!best_.fitness.feasible) {
    // The shared repair, from the plan that came closest.
    absl::StatusOr<Placement> repaired =
        RepairOrGiveUp(graph_, cluster_, options_.microbatches, std::move(result_.placement));
    if (!repaired.ok()) return repaired.status();
    result_.placement = *std::move(repaired);
    costmodel::Simulator simulator(graph_, cluster_);
    result_.step_us =
        options_.objective
            ? options_.objective(result_.placement.device)
            : simulator.Run(result_.placement, {.microbatches = options_.microbatches})
                  .step_time_us;
  }
  if (options_.nodes.graph != nullptr) {
    if (absl::Status s = RefineBelowUnits(); !s.ok()) return s;
  }
  return result_;
}

}  // namespace

absl::StatusOr<TgaResult> RunTga(const CostGraph& graph, const Cluster& cluster,
                                 const SearchOptions& options, const TgaOptions& tga) {
  return Tga(graph, cluster, options, tga).Run();
}

TgaOptions TgaOptionsFor(const SearchOptions& options) {
  TgaOptions tga;
  tga.max_generations = options.max_iterations;
  return tga;
}

absl::StatusOr<Placement> PlaceTga(const CostGraph& graph, const Cluster& cluster,
                                   const SearchOptions& options) {
  absl::StatusOr<TgaResult> result = RunTga(graph, cluster, options, TgaOptionsFor(options));
  if (!result.ok()) return result.status();
  return std::move(result->placement);
}

}  // namespace autopar::search
