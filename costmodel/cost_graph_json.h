// The tool-neutral cost-graph JSON format, so that the same graph can be
// placed by this tool or any other:
//
//   {"nodes": [{"id": 0, "name": "conv1", "op": "Conv", "compute_us": 12.5,
//               "param_bytes": 37632, "output_bytes": [3211264], "temp_bytes": 0}, …],
//    "edges": [{"src": 0, "dst": 1, "bytes": 3211264, "tensor": "x"}, …],
//    "devices": {"count": 4, "memory_bytes": [17179869184, …],
//                "bandwidth_bytes_per_s": 5e10, "latency_us": 5}}
//
// Node ids are 0..n-1 in topological order. `compute_us` is a number, or an
// array with one time per device kind when "devices" lists "kinds". Each
// distinct (src, tensor) pair is one tensor, sent once per destination
// device; output bytes no edge accounts for are a graph output of the node.
#ifndef AUTOPAR_COSTMODEL_COST_GRAPH_JSON_H_
#define AUTOPAR_COSTMODEL_COST_GRAPH_JSON_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "nlohmann/json.hpp"

namespace autopar::costmodel {

struct CostGraphDocument {
  CostGraph graph;
  /// The "devices" block as a cluster, when the document has one.
  std::optional<Cluster> cluster;
};

/// Reads the format above; errors name the offending field ("nodes[3].id").
absl::StatusOr<CostGraphDocument> CostGraphFromJson(const nlohmann::json& json);
absl::StatusOr<CostGraphDocument> LoadCostGraphFile(const std::string& path);

/// Writes the format above; with a cluster, the "devices" block too (its
/// first link's bandwidth and latency stand for all links).
nlohmann::ordered_json CostGraphToJson(const CostGraph& graph, const Cluster* cluster);

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_COST_GRAPH_JSON_H_
