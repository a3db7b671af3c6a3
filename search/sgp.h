// SGP (Swift Graph Partition): a placement in milliseconds, without profiling
// and without an open-ended search (every iteration below has a fixed
// budget). SGP partitions the
// topological order into load-balanced, memory-feasible contiguous segments
// — one per device, or fewer when fewer are faster: a chain that fits one
// device stays on it — moves the segment boundaries to cheap cuts, and on
// graphs with parallel branches, which contiguous segments serialise, also
// list-schedules the units (by rank and, when that is not near the lower
// bound, by earliest task first); the simulator (small graphs) or SGP's
// estimates pick the faster plan. A post-pass then shifts each
// boundary once toward balance, judged by a few simulations (bounded work, a
// dozen runs at most). Given the node graph below the units, SGP also
// schedules the nodes themselves and keeps that plan when it simulates
// faster. With micro-batches SGP also tries interleaved stages (chunk i of
// the order on device i mod D, on the units and on the nodes), which shrink
// the pipeline's fill and drain, then moves whole chains of nodes to a
// neighbour's device so that branches overlap, and single nodes or pairs to a
// device they exchange a tensor with; the simulator judges them. Where no
// such move helps, a fixed number of rounds of node_refinement.h's iterated
// local search go on from the best node plan (seeded: bounded work, and the
// same plan on every machine).
// The steps are numbered in sgp.cc.
//
// Guarantees: the result never exceeds a device's memory in the simulator
// (it is checked: by ProvablePeakBytes when that suffices, else by one
// simulation, with a repair when the estimate fell short, and at last the
// shared memory repair); a model that fits no split of the cluster fails with
// InfeasibleError's ResourceExhausted. The post-pass only keeps shifts that
// shorten the simulated step.
// Deterministic: stable tie-breaks, no dependence on threads or the clock; the
// refinement on the nodes draws its random moves from SearchOptions::seed.
#ifndef AUTOPAR_SEARCH_SGP_H_
#define AUTOPAR_SEARCH_SGP_H_

#include <string>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "search/search.h"

namespace autopar::search {

/// What SGP chose, for reports and benchmarks.
struct SgpResult {
  costmodel::Placement placement;
  /// "segments" (contiguous segments of the topological order), "interleaved
  /// segments" (chunk i of that order on device i mod D), "list"
  /// (rank-ordered list scheduling by earliest finish), "earliest task
  /// first" (ETF list scheduling) or "memory repair" (none fitted;
  /// search/memory_repair.h made one of them fit).
  std::string strategy;
  /// Devices that received work.
  int devices_used = 0;
  /// SGP's own estimate of the step time, µs (not the simulator's).
  double estimated_step_us = 0;
  /// Simulator runs: memory checks, the post-pass and the steps on the nodes.
  int simulations = 0;
  /// Boundary shifts the post-pass kept (sgp.cc, step 6).
  int post_pass_moves = 0;
  /// A device and priority per node of SearchOptions::nodes when a plan of
  /// the nodes beat the unit plan in the node-level simulation (sgp.cc,
  /// step 7; strategy "earliest task first on nodes", "favourite-child ETF on
  /// nodes", "interleaved segments of nodes" or "branches spread on nodes",
  /// perhaps with ", boundaries moved on nodes", ", chains moved on nodes",
  /// ", nodes moved" and ", refined on nodes"; or the unit plan's strategy
  /// with only ", refined on nodes"); empty otherwise, and then each node
  /// goes where its unit went.
  costmodel::Placement node_placement;
};

/// SGP with its report.
absl::StatusOr<SgpResult> RunSgp(const costmodel::CostGraph& graph,
                                 const costmodel::Cluster& cluster, const SearchOptions& options);

/// SGP behind the common interface: the placement (device and priority per unit).
absl::StatusOr<costmodel::Placement> PlaceSgp(const costmodel::CostGraph& graph,
                                              const costmodel::Cluster& cluster,
                                              const SearchOptions& options);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_SGP_H_
