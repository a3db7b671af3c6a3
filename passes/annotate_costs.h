// AnnotateCosts: the costs of every node (costmodel/op_costs.h) turned into
// the node-level CostGraph the search runs on, with one compute time per
// device kind of the cluster (docs/ARCHITECTURE.md).
//
// Note [Weights are not edges]: parameter values (initializers and Constant
// outputs) never travel between devices: every device that reads a weight
// holds its own copy. They become parameter blocks of their
// readers, shared by identity, not tensors with edges. Graph inputs are fed to
// whichever devices read them and are not units either.
//
// Note [Training step]: with StepOptions::mode == kTraining the CostGraph
// describes one training step (costmodel/training.h), through the fields every
// consumer already reads, so that the simulator, the lower bound and every
// placer judge training without knowing about it:
//  - a unit's compute time is forward + backward + the optimizer's update of
//    the parameters it reads first;
//  - a trainable parameter's block holds the weight, its gradient and the
//    optimizer state; a unit's internal saved state (RNN gates, attention
//    probabilities) is one more parameter block of its own — all held for the
//    whole step;
//  - a tensor the backward pass reads is flagged like a graph output: it stays
//    allocated on its producer's device until the step ends (a received copy
//    is freed after its last reader, so a saved tensor crossing devices is
//    counted on the producer's side only);
//  - a unit's temporary memory is the larger of its forward workspace and the
//    activation gradients alive while its backward runs.
#ifndef AUTOPAR_PASSES_ANNOTATE_COSTS_H_
#define AUTOPAR_PASSES_ANNOTATE_COSTS_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/node_cost.h"
#include "costmodel/op_costs.h"
#include "costmodel/training.h"
#include "ir/graph.h"

namespace autopar::passes {

struct AnnotatedGraph {
  /// Per node, indexed like graph.nodes().
  std::vector<costmodel::NodeCost> costs;
  /// One unit per node, unit i = node i.
  costmodel::CostGraph graph;
  /// Set in training mode: what the step adds to `costs`.
  std::optional<costmodel::TrainingCosts> training;
};

/// Costs every node and builds the node-level CostGraph for `cluster`'s kinds,
/// for one inference or training step (Note [Training step]). Fails when a
/// tensor's size is unknown (run InferShapes first).
absl::StatusOr<AnnotatedGraph> AnnotateCosts(const ir::Graph& graph,
                                             const costmodel::Cluster& cluster,
                                             const costmodel::CostOptions& options = {},
                                             const costmodel::StepOptions& step = {});

}  // namespace autopar::passes

#endif  // AUTOPAR_PASSES_ANNOTATE_COSTS_H_
