// The polish below the units that TGA and SGP (its step 7f) share: a search
// places units, but what runs is a placement of nodes, and a unit is often
// too coarse a piece to balance a wide graph well. Unit plans are projected onto the
// nodes and improved there, multilevel style (Karypis and Kumar, "A fast and
// high quality multilevel scheme for partitioning irregular graphs", 1998:
// project, then refine at every level on the way down), except that every
// move is judged by the simulated step of the node graph, not by the cut.
//
// The levels: a block is a run of nodes of one unit, consecutive in the
// topological order and on one device, at most S nodes long; S starts at the
// largest unit's node count and halves down to single nodes. At each level
// the moves are boundary moves: a block goes to a device one of its nodes
// exchanges a tensor with. Node-level list schedules (m-ETF, HEFT, CPOP,
// m-SCT run on the nodes) and m-TOPO's contiguous split of the nodes' order
// (with micro-batches, a balanced pipeline) are starting points beside the
// projections; the best start is refined. Before the levels, with one
// micro-batch, the series phases' windows are solved exactly
// (search/node_windows.h): a large neighbourhood the levels' single moves do
// not reach, growing with the budget; when the largest windows find nothing,
// the phases' node orders are shifted and the windows solved under each.
//
// Nodes of a locked unit (NodeLevel::locked_units) always move together, so
// every group that must share a device still does.
#ifndef AUTOPAR_SEARCH_NODE_REFINEMENT_H_
#define AUTOPAR_SEARCH_NODE_REFINEMENT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "search/search.h"

namespace autopar::search {

struct NodeRefinementOptions {
  uint64_t seed = 1;
  int threads = 1;
  int microbatches = 1;
  /// Stop when ElapsedS() of the caller's clock passes this; infinity: no
  /// clock (then max_rounds must be set).
  double deadline_s = 0;
  /// Rounds (one parallel batch of moves each) after which to stop; 0: none.
  int64_t max_rounds = 0;
  /// Moves simulated per round.
  int moves_per_round = 32;
  /// The exact windows before the levels (with one micro-batch); off: the
  /// levels and kicks alone.
  bool windows = true;
  /// With the windows, the shifts of the phases' orders once they have
  /// nothing left (node_refinement.cc, step 2).
  bool shifts = true;
  /// Placers run on the nodes as starting points (list schedules, and
  /// m-TOPO's pipeline split).
  std::vector<std::string> list_schedulers = {"m-etf", "heft", "cpop", "m-sct", "m-topo"};
  /// Node plans made elsewhere, used as starting points as they are, by name
  /// (TGA passes SGP's, whose interleaved stages on the nodes can beat every
  /// unit plan when micro-batches are pipelined). One over memory is skipped.
  std::vector<std::pair<std::string, costmodel::Placement>> node_starts;
  /// Seconds since the search started (the caller's clock).
  std::function<double()> elapsed_s;
};

struct NodeRefinementResult {
  /// One device and one priority per node.
  costmodel::Placement placement;
  double step_us = 0;
  bool feasible = false;
  /// The node-level step of the first start (the best unit plan projected),
  /// and of the best start, before refinement.
  double projected_step_us = 0;
  double best_start_step_us = 0;
  std::string best_start;
  int64_t rounds = 0;
  int64_t evaluations = 0;
};

/// Each node on its unit's device, with its unit's priority (empty stays
/// empty): a unit plan as a node plan.
costmodel::Placement ProjectToNodes(const NodeLevel& nodes, const costmodel::Placement& units);

/// The node plan a search's result stands for: `nodes` when the search
/// planned the nodes itself (not empty), else `units` projected.
costmodel::Placement NodePlanOf(const NodeLevel& level, const costmodel::Placement& units,
                                costmodel::Placement nodes);

/// Refines the best of `unit_plans` (projected; the first is the search's
/// best) and of the node-level list schedules. Never worse, in the node-level
/// simulation, than any start (feasible beats infeasible, then step time).
/// Deterministic for a seed when bounded by max_rounds.
absl::StatusOr<NodeRefinementResult> RefineOnNodes(
    const NodeLevel& nodes, const costmodel::Cluster& cluster,
    const std::vector<costmodel::Placement>& unit_plans, const NodeRefinementOptions& options);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_NODE_REFINEMENT_H_
