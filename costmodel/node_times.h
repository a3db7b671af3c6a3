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
// Note [Measured and scaled times]: a node the file names gets its measured
// time. A node it does not name keeps the cost model's time multiplied by the
// median, over the named nodes that both sides give a positive time, of
// measured / predicted: the model's error on the nodes that were measured is
// the best guess for those that were not (a runtime that folds or fuses a
// node reports no time for it). Without such a node the scale is 1.
#ifndef AUTOPAR_COSTMODEL_NODE_TIMES_H_
#define AUTOPAR_COSTMODEL_NODE_TIMES_H_

#include <string>
#include <utility>
#include <vector>

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
};

/// Reads either format. Errors (not an object, no node, a time that is not a
/// number >= 0) are InvalidArgument naming `source` and the node.
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
/// device kind, as Note [Measured and scaled times] says. A name that is not a
/// unit of the graph is an InvalidArgument naming it; a graph of several device
/// kinds is refused (one measurement describes one kind of device).
absl::StatusOr<CostSource> ApplyNodeTimes(const NodeTimes& times, CostGraph& graph);

/// {"source": "model"|"measured", "measured_nodes", "scaled_nodes", "scale"}.
nlohmann::ordered_json CostSourceJson(const CostSource& source);

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_NODE_TIMES_H_
