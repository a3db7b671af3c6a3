// AnnotateCosts: the costs of every node (costmodel/op_costs.h) turned into
// the node-level CostGraph the search runs on, with one compute time per
// device kind of the cluster (DESIGN.md §1 `passes::AnnotateCosts`).
//
// Note [Weights are not edges]: parameter values (initializers and Constant
// outputs) never travel between devices: every device that reads a weight
// holds its own copy (DESIGN.md §7). They become parameter blocks of their
// readers, shared by identity, not tensors with edges. Graph inputs are fed to
// whichever devices read them and are not units either.
#ifndef AUTOPAR_PASSES_ANNOTATE_COSTS_H_
#define AUTOPAR_PASSES_ANNOTATE_COSTS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/node_cost.h"
#include "costmodel/op_costs.h"
#include "ir/graph.h"

namespace autopar::passes {

struct AnnotatedGraph {
  /// Per node, indexed like graph.nodes().
  std::vector<costmodel::NodeCost> costs;
  /// One unit per node, unit i = node i.
  costmodel::CostGraph graph;
};

/// Costs every node and builds the node-level CostGraph for `cluster`'s kinds.
/// Fails when a tensor's size is unknown (run InferShapes first).
absl::StatusOr<AnnotatedGraph> AnnotateCosts(const ir::Graph& graph,
                                             const costmodel::Cluster& cluster,
                                             const costmodel::CostOptions& options = {});

}  // namespace autopar::passes

#endif  // AUTOPAR_PASSES_ANNOTATE_COSTS_H_
