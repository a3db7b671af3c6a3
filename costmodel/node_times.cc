#include "costmodel/node_times.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "costmodel/json_file.h"

namespace autopar::costmodel {

absl::StatusOr<NodeTimes> NodeTimesFromJson(const nlohmann::json& json, absl::string_view source) {
  if (!json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, " must be a JSON object of node name -> microseconds"));
  }
  // measure.mjs's output carries the times in "node_us".
  const nlohmann::json& map =
      json.contains("node_us") && json["node_us"].is_object() ? json["node_us"] : json;
  NodeTimes times;
  times.source = std::string(source);
  for (const auto& [name, value] : map.items()) {
    if (!value.is_number() || value.get<double>() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": the time of node '", name,
                                                     "' must be a number of microseconds >= 0"));
    }
    times.node_us.emplace_back(name, value.get<double>());
  }
  if (times.node_us.empty())
    return absl::InvalidArgumentError(absl::StrCat(source, " names no node"));
  return times;
}

absl::StatusOr<NodeTimes> LoadNodeTimesFile(const std::string& path) {
  const std::string source = absl::StrCat("node times file '", path, "'");
  absl::StatusOr<nlohmann::json> json = ReadJsonFile(path, source);
  if (!json.ok()) return json.status();
  return NodeTimesFromJson(*json, source);
}

absl::StatusOr<CostSource> ApplyNodeTimes(const NodeTimes& times, CostGraph& graph) {
  if (graph.num_device_kinds() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(times.source, " describes one kind of device, but the cluster has ",
                     graph.num_device_kinds(), " kinds"));
  }
  absl::flat_hash_map<std::string, uint32_t> unit_by_name;
  for (uint32_t u = 0; u < graph.num_units(); ++u) unit_by_name.emplace(graph.name(u), u);
  std::vector<double> measured(graph.num_units(), -1);
  std::vector<double> ratios;
  for (const auto& [name, us] : times.node_us) {
    auto it = unit_by_name.find(name);
    if (it == unit_by_name.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(times.source, " names '", name, "', which is not a node of the model"));
    }
    measured[it->second] = us;
    const double predicted = graph.compute_us(it->second, 0);
    if (us > 0 && predicted > 0) ratios.push_back(us / predicted);
  }
  CostSource source{.measured = true};
  if (!ratios.empty()) {
    // The median; of an even count, the mean of the middle two.
    std::sort(ratios.begin(), ratios.end());
    const size_t mid = ratios.size() / 2;
    source.scale = ratios.size() % 2 ? ratios[mid] : (ratios[mid - 1] + ratios[mid]) / 2;
  }
  for (uint32_t u = 0; u < graph.num_units(); ++u) {
    if (measured[u] >= 0) {
      graph.set_compute_us(u, 0, measured[u]);
      ++source.measured_nodes;
    } else {
      graph.set_compute_us(u, 0, graph.compute_us(u, 0) * source.scale);
      ++source.scaled_nodes;
    }
  }
  return source;
}

nlohmann::ordered_json CostSourceJson(const CostSource& source) {
  return {{"source", source.measured ? "measured" : "model"},
          {"measured_nodes", source.measured_nodes},
          {"scaled_nodes", source.scaled_nodes},
          {"scale", source.scale}};
}

}  // namespace autopar::costmodel
