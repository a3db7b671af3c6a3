// Coarsen: groups nodes into placement units, the "simplified solution
// space" the searches work on (docs/ARCHITECTURE.md, "From file to
// deployment").
//
// Rules, applied in topological order with a union-find:
//  0. Nodes that must share a device (CoarsenOptions::colocated: values
//     Send/Recv cannot carry) share a unit, and so does every node on a path
//     between two of them, so that the unit graph stays acyclic. No other rule
//     splits such a unit, and the memory cap of rule 3 does not apply to it.
//  1. Negligible nodes — shape computations (tiny outputs, no weights) and
//     zero-cost nodes such as Constant — join the unit of their only
//     successor; isolated zero-cost nodes join a neighbour.
//  2. A unit whose inputs (those of all its members) all come from one other
//     unit joins that unit while the unit's compute stays under a cap (total
//     compute / target_units, never below the largest node). This merges
//     chains, and diamonds such as a decomposed LayerNorm, while parallel
//     branches of real weight stay apart.
//  3. No merge makes a unit's weights + workspace exceed the largest device's
//     memory.
// Both merges keep the unit graph acyclic: a node whose only successor is U,
// or a unit whose only predecessor is U, cannot lie on a path that leaves U
// and comes back.
#ifndef AUTOPAR_PASSES_COARSEN_H_
#define AUTOPAR_PASSES_COARSEN_H_

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"

namespace autopar::passes {

struct CoarsenOptions {
  /// About how many units a large graph ends with.
  int target_units = 256;
  /// Outputs up to this size, on a node without weights, mark a shape
  /// computation (rule 1).
  int64_t negligible_output_bytes = 1024;
  /// Called now and then with the work done and its total (three passes over
  /// the nodes: rules 1 and 2, then building the units); may be empty.
  std::function<void(int64_t done, int64_t total)> on_progress;
  /// Pairs of nodes that must end in one unit (rule 0), e.g.
  /// passes::NonTensorColocations of the model.
  std::vector<std::pair<uint32_t, uint32_t>> colocated;
};

struct Coarsening {
  /// Node → its unit. Units are numbered in a topological order.
  std::vector<uint32_t> unit_of_node;
  /// The unit-level graph: compute summed, weights merged (each block once),
  /// tensors that cross units as edges.
  costmodel::CostGraph graph;
};

absl::StatusOr<Coarsening> Coarsen(const costmodel::CostGraph& nodes,
                                   const costmodel::Cluster& cluster,
                                   const CoarsenOptions& options = {});

/// A placement of units as a placement of nodes (priorities carried over).
costmodel::Placement ExpandPlacement(const Coarsening& coarsening,
                                     const costmodel::Placement& units);

}  // namespace autopar::passes

#endif  // AUTOPAR_PASSES_COARSEN_H_
