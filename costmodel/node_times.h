// Measured node times as an input to every plan: a file of per-node times
// (µs, one micro-batch) measured on the target, applied to a CostGraph in
// place of the cost model's predictions.
//
// Two formats are read (the README documents both):
//  - the output of tools/fidelity/measure.mjs: an object whose "node_us" is
//    an object of node name → mean µs (its other fields are ignored). These
//    are the times of ONNX Runtime's optimised run — as the runner's stage
//    sessions run — spread back over the model's nodes where ORT fused them
//    (tools/fidelity/optimised_times.mjs), not the unoptimised graph's;
//  - a plain object of node name → µs.
//
// A training step's measurement (tools/fidelity/measure_step.mjs: the
// gradient and update models of a training output folder) names the nodes of
// both models in "node_us" and adds:
//   "node_origin":   {gradient-model node that is not a source node → the
//                     source node it works for} (plan.json's training.node_origin),
//   "update_origin": {update-model node → the source node its weight's update
//                     is charged to} (plan.json's training.update_origin; its
//                     keys are the update model's nodes),
//   "run_us":        {"gradient": µs, "update": µs}, the fixed cost of one
//                     session run of each model (its wall time less its nodes'
//                     times: feeding weights and state, fetching outputs);
//                     optionally also "gradient_sum": µs to add one run's
//                     weight gradients into the step's sums, and
//                     "gradient_mean": µs to turn the sums into the means the
//                     update is fed (the runner's work between runs, in
//                     JavaScript: tools/runner/train_common.mjs);
//   "co_run_slowdown": how much slower the gradient model ran beside a copy of
//                     itself on another thread of the host (>= 1); planning
//                     puts it into a whole-stage cluster's ExecutionModel
//                     (costmodel/cluster.h), measured when the times were.
// Note [Step times on the source]: planning costs the source model's nodes, so
// a node named through an origin is charged to its source node: each source
// node costs its own forward time plus the backward, loss and update work it
// causes, and the search sees measured backward costs.
//
// Note [Measured and scaled times]: a node the file names gets its measured
// time. A node it does not name keeps the cost model's time multiplied by the
// median, over the named nodes that both sides give a positive time, of
// measured / predicted: the model's error on the nodes that were measured is
// the best guess for those that were not (a runtime that folds or fuses a
// node reports no time for it). Without such a node the scale is 1.
#ifndef AUTOPAR_COSTMODEL_NODE_TIMES_H_
#define AUTOPAR_COSTMODEL_NODE_TIMES_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "costmodel/cost_graph.h"
#include "nlohmann/json.hpp"

namespace autopar::costmodel {

/// Per-node measured times, in the file's order.
struct NodeTimes {
  /// Where they come from, for messages: "node times file 't.json'".
  std::string source;
  std::vector<std::pair<std::string, double>> node_us;
  /// A training step's nodes that are not source nodes → the source node
  /// they work for ("node_origin" and "update_origin"); empty otherwise.
  absl::flat_hash_map<std::string, std::string> origin;
  /// The update model's nodes ("update_origin"'s keys).
  absl::flat_hash_set<std::string> update_nodes;
  /// The fixed cost of one session run of each of the step's models, and
  /// the runner's gradient sums: per micro-batch, and the mean once per step
  /// (all weights; 0 when the file does not say).
  struct RunCosts {
    double gradient_us = 0;
    double update_us = 0;
    double gradient_sum_us = 0;
    double gradient_mean_us = 0;
  };
  /// Set for a training step's measurement ("run_us").
  std::optional<RunCosts> run_us;
  /// "co_run_slowdown", when the measurement has it.
  std::optional<double> co_run_slowdown;
};

/// Reads either format. Errors (not an object, no node, a time that is not a
/// number >= 0, an origin that is not a string, a node in both origin maps,
/// "run_us" without both models' numbers >= 0 or with a sum or mean time that is not one,
/// "co_run_slowdown" below 1) are InvalidArgument
/// naming `source` and the node.
absl::StatusOr<NodeTimes> NodeTimesFromJson(const nlohmann::json& json, absl::string_view source);

/// Reads a file; one-line errors (cannot open, not JSON, as NodeTimesFromJson).
absl::StatusOr<NodeTimes> LoadNodeTimesFile(const std::string& path);

/// Where a graph's compute times come from, as summaries and plan.json say.
struct CostSource {
  /// Some times were measured (a node-times file was applied).
  bool measured = false;
  /// Nodes with a measured time.
  int64_t measured_nodes = 0;
  /// Nodes whose predicted time was scaled by `scale`.
  int64_t scaled_nodes = 0;
  /// The median measured / predicted ratio (Note [Measured and scaled times]).
  double scale = 1;
};

/// Applies `times` to `graph` (whose unit names are node names) on every
/// device kind, as Note [Measured and scaled times] says; a name that is not a
/// unit but has an origin that is adds its time to that unit (Note [Step times
/// on the source]). Another name that is not a unit of the graph is an
/// InvalidArgument naming it; a graph of several device kinds is refused (one
/// measurement describes one kind of device).
absl::StatusOr<CostSource> ApplyNodeTimes(const NodeTimes& times, CostGraph& graph);

/// A one-device training step as its measured models predict it: M runs of
/// the gradient model, each followed by the sum of its gradients, then the
/// mean and one run of the update model.
struct TrainingStepTimes {
  int microbatches = 1;
  /// Sums of the models' node times, and their fixed per-run costs.
  double gradient_nodes_us = 0;
  double gradient_run_us = 0;
  double update_nodes_us = 0;
  double update_run_us = 0;
  /// NodeTimes::RunCosts::gradient_sum_us and gradient_mean_us.
  double gradient_sum_us = 0;
  double gradient_mean_us = 0;
  /// M × (gradient_nodes_us + gradient_run_us + gradient_sum_us) +
  /// gradient_mean_us + update_nodes_us + update_run_us.
  double step_us = 0;
};

/// The step `times` predict at `microbatches` (>= 1) when they are a training
/// step's measurement (run_us set); nullopt otherwise. Nodes of
/// times.update_nodes are the update model's, every other the gradient model's.
std::optional<TrainingStepTimes> TrainingStepFromNodeTimes(const NodeTimes& times,
                                                           int microbatches);

/// {"microbatches", "gradient_nodes_us", "gradient_run_us", "gradient_sum_us",
///  "gradient_mean_us", "update_nodes_us", "update_run_us", "step_us"}.
nlohmann::ordered_json TrainingStepTimesJson(const TrainingStepTimes& step);

/// {"source": "model"|"measured", "measured_nodes", "scaled_nodes", "scale"}.
nlohmann::ordered_json CostSourceJson(const CostSource& source);

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_NODE_TIMES_H_
