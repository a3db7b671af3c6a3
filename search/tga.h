// TGA: the two-population genetic placement search.
// Iterative where SGP is one-shot: it starts from the other algorithms'
// plans and improves them, every candidate judged by the event simulator.
//
// Two populations with different roles (the research's two-population GA;
// the building blocks are textbook: tournament selection and elitism —
// Goldberg, "Genetic Algorithms in Search, Optimization and Machine
// Learning", 1989; migration between populations — Whitley, Rana and
// Heckendorn, "The island model genetic algorithm", 1999; local search on
// the elite — Moscato's memetic algorithms, 1989):
//  - explore: diverse seeds (memory-aware random fills, random cut points,
//    block round-robin, random devices), high mutation, generational
//    replacement, a fresh start when the search stalls;
//  - exploit: seeded from every other algorithm Place() knows (SGP, the
//    baselines), elitist (μ + λ) replacement, light mutation and a cheap local
//    search around its best plan;
//  - every few generations the best of each migrate to the other.
// The operators respect the graph (search/tga_operators.h); the fitness is
// the simulated step time, any plan over memory losing to every plan within
// it (search/tga_evaluator.h, Note [Infeasible loses]).
//
// Guarantees: the result is never worse, in the simulator, than the best
// seed (the exploit population is elitist and starts with the seeds under
// their own priorities); it fits memory whenever any evaluated plan did or
// the shared memory repair (search/memory_repair.h) makes the closest one
// fit, else the search fails with InfeasibleError's ResourceExhausted.
// With options.nodes it also refines below the units (search/node_refinement.h),
// on the second half of the budget, and reports a node-level placement.
// Anytime: it uses its budget — a stall (stall_generations without
// improvement) diversifies the search (a new seed, larger moves, explore
// restarted from perturbed elites) instead of ending it — and stops at
// options.time_budget_s (10 s unless set; checked between generations,
// seeding included), at max_generations, or when the best plan is within
// 0.1% of the lower bound. A run needs a finite budget or a generation
// limit. Deterministic: one seeded generator
// drives every random choice on the calling thread, and parallel evaluation
// does not change fitness (Note [Deterministic evaluation]); runs that end
// at the lower bound or max_generations give the same plan for every
// options.threads. A run cut by the time budget depends on how many
// generations fitted in it.
#ifndef AUTOPAR_SEARCH_TGA_H_
#define AUTOPAR_SEARCH_TGA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "search/search.h"

namespace autopar::search {

/// TGA's own settings; the defaults are what Place("tga", …) uses.
struct TgaOptions {
  int explore_size = 16;
  int exploit_size = 16;
  /// Moves tried around the exploit population's best plan per generation.
  int local_search_moves = 16;
  /// Generations between migrations, and how many plans migrate.
  int migration_interval = 5;
  int migrants = 2;
  /// Generations without improvement after which the search diversifies
  /// (tga.cc, step 6b).
  int stall_generations = 60;
  /// Stop after this many generations; 0: no limit.
  int64_t max_generations = 0;
  /// Algorithms whose plans seed the exploit population; empty: every name
  /// of AlgorithmNames() but "tga". Those that fail are skipped.
  std::vector<std::string> seed_algorithms;
};

/// What TGA found and how, for reports and benchmarks.
struct TgaResult {
  costmodel::Placement placement;
  /// The simulated step time of the placement (at the options' micro-batches).
  double step_us = 0;
  int64_t generations = 0;
  int64_t evaluations = 0;
  /// Times a stall made the search diversify.
  int64_t diversifications = 0;
  /// The seed algorithms that produced a plan, in the order tried, and the
  /// best of them with its simulated step time (feasible or not).
  std::vector<std::string> seeds;
  std::string best_seed;
  double best_seed_step_us = 0;
  /// With options.nodes: the node-level refinement's plan, one device (and
  /// priority) per node, and its simulated step; else empty and 0. With
  /// SearchOptions::objective it may be SGP's node plan instead, when that
  /// is better by the objective (node_best_start "sgp", node_step_us 0).
  costmodel::Placement node_placement;
  double node_step_us = 0;
  /// The node-level step of `placement` expanded to nodes, before
  /// refinement (0 without options.nodes).
  double projected_step_us = 0;
  /// The refinement's rounds, and the start it refined ("units" for the
  /// projected plan, else a node-level list scheduler's name).
  int64_t node_rounds = 0;
  std::string node_best_start;
};

/// The TgaOptions Place("tga", …) runs with: the defaults, bounded by
/// options.max_iterations.
TgaOptions TgaOptionsFor(const SearchOptions& options);

absl::StatusOr<TgaResult> RunTga(const costmodel::CostGraph& graph,
                                 const costmodel::Cluster& cluster, const SearchOptions& options,
                                 const TgaOptions& tga = {});

/// TGA behind the common interface.
absl::StatusOr<costmodel::Placement> PlaceTga(const costmodel::CostGraph& graph,
                                              const costmodel::Cluster& cluster,
                                              const SearchOptions& options);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_TGA_H_
