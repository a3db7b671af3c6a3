// Per-operator cost formulas and the per-graph driver: for
// every node, MACs, FLOPs, bytes moved, parameter and output bytes and
// workspace, computed from shapes and attributes alone.
//
// Coverage: every operator of ir/op_kinds.def has a formula or an explicit,
// documented rule ("data movement only", "metadata"). The dispatch in
// op_costs.cc is one switch over ir::OpKind without a default, so a kind
// added to op_kinds.def does not compile until it has a rule; unknown
// operators (ir::OpKind::kUnknown) get rule kNone and has_formula == false.
// The formulas live by family in op_costs_*.cc; their conventions (what counts
// as a MAC, per-element weights of transcendental functions) are documented
// in node_cost.h and op_costs_internal.h.
//
// Control flow: `If` costs its more expensive branch (the taken one when the
// condition is a constant); `Loop` costs body × trip count when the trip count
// is a constant, else CostOptions::default_loop_trips; `Scan` costs body ×
// sequence length (from its scan input's shape); `SequenceMap` body ×
// default_loop_trips. Body values often carry no shapes: outer values are
// looked up in the enclosing graphs, body inputs take the shapes of the node's
// inputs, and values still unknown get an estimate (MatMul-shaped for matmuls,
// the broadcast of the inputs otherwise); such costs have `estimated` set.
#ifndef AUTOPAR_COSTMODEL_OP_COSTS_H_
#define AUTOPAR_COSTMODEL_OP_COSTS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "costmodel/node_cost.h"
#include "ir/graph.h"

namespace autopar::costmodel {

/// Iterations assumed for a Loop whose trip count is not a constant (and for
/// SequenceMap, whose sequence length is never static). A round number that
/// keeps a loop heavier than one pass of its body; `--loop-trips N` sets it.
inline constexpr int64_t kDefaultLoopTrips = 10;

struct CostOptions {
  /// Trip count of loops whose trip count is unknown (see kDefaultLoopTrips).
  int64_t default_loop_trips = kDefaultLoopTrips;
};

/// The cost of one node of `graph`. Values without a static shape count as
/// unknown (size 0, `estimated` set); ComputeGraphCosts estimates them instead.
NodeCost ComputeNodeCost(const ir::Graph& graph, const ir::Node& node,
                         const CostOptions& options = {});

/// The cost of every node of `graph`, indexed like graph.nodes() (NodeId
/// index). Sizes of values without a static shape are estimated in
/// topological order from their producers' inputs.
std::vector<NodeCost> ComputeGraphCosts(const ir::Graph& graph, const CostOptions& options = {});

/// Whole-graph sums.
struct CostTotals {
  int64_t macs = 0;
  int64_t flops = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  /// Bytes of the distinct parameters the nodes read (each weight once, even
  /// when several nodes share it) — the model's weight memory.
  int64_t param_bytes = 0;
  /// Bytes of every tensor the nodes produce, each once (not the peak: the
  /// memory model computes that), parameters held by Constants excluded.
  int64_t activation_bytes = 0;
  /// The largest workspace of any node.
  int64_t max_workspace_bytes = 0;
  int64_t nodes = 0;
  int64_t nodes_without_formula = 0;
  int64_t nodes_estimated = 0;
  bool saturated = false;
};

/// Sums `costs` (as returned by ComputeGraphCosts for `graph`).
CostTotals SumCosts(const ir::Graph& graph, absl::Span<const NodeCost> costs);

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_OP_COSTS_H_
