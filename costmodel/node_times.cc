#include "costmodel/node_times.h"

#include <algorithm>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "costmodel/json_file.h"

namespace autopar::costmodel {

namespace {

// json[key], an object of node name → source node name, into times.origin
// (and, for "update_origin", times.update_nodes).
absl::Status ReadOrigins(const nlohmann::json& json, const char* key, absl::string_view source,
                         NodeTimes& times) {
  if (!json.contains(key)) return absl::OkStatus();
  const nlohmann::json& map = json[key];
  if (!map.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": \"", key, "\" must be an object of node name -> source node"));
  }
  const bool update = std::string_view(key) == "update_origin";
  for (const auto& [name, origin] : map.items()) {
    if (!origin.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": the origin of node '", name,
                                                     "' in \"", key, "\" must be a node name"));
    }
    if (!times.origin.emplace(name, origin.get<std::string>()).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": node '", name, "' is in both \"node_origin\" and \"update_origin\""));
    }
    if (update) times.update_nodes.insert(name);
  }
  return absl::OkStatus();
}

// json["run_us"] = {"gradient": µs, "update": µs[, "gradient_sum": µs,
// "gradient_mean": µs]} into times.run_us.
absl::Status ReadRunCosts(const nlohmann::json& json, absl::string_view source, NodeTimes& times) {
  if (!json.contains("run_us")) return absl::OkStatus();
  const nlohmann::json& run = json["run_us"];
  NodeTimes::RunCosts costs;
  for (const auto& [key, field] :
       {std::pair{"gradient", &costs.gradient_us}, std::pair{"update", &costs.update_us}}) {
    if (!run.is_object() || !run.contains(key) || !run[key].is_number() ||
        run[key].get<double>() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": \"run_us\" must be {\"gradient\": us, \"update\": us} with numbers >= 0"));
    }
    *field = run[key].get<double>();
  }
  for (const auto& [key, field] : {std::pair{"gradient_sum", &costs.gradient_sum_us},
                                   std::pair{"gradient_mean", &costs.gradient_mean_us}}) {
    if (!run.contains(key)) continue;
    if (!run[key].is_number() || !(run[key].get<double>() >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": \"run_us\"'s \"", key, "\" must be a number >= 0"));
    }
    *field = run[key].get<double>();
  }
  times.run_us = costs;
  return absl::OkStatus();
}

// json["co_run_slowdown"], a number >= 1, into times.co_run_slowdown.
absl::Status ReadCoRunSlowdown(const nlohmann::json& json, absl::string_view source,
                               NodeTimes& times) {
  if (!json.contains("co_run_slowdown")) return absl::OkStatus();
  const nlohmann::json& value = json["co_run_slowdown"];
  if (!value.is_number() || !(value.get<double>() >= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": \"co_run_slowdown\" must be a number >= 1"));
  }
  times.co_run_slowdown = value.get<double>();
  return absl::OkStatus();
}

}  // namespace

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
  if (&map != &json) {  // measure.mjs's format
    for (const char* key : {"node_origin", "update_origin"}) {
      if (absl::Status s = ReadOrigins(json, key, source, times); !s.ok()) return s;
    }
    if (absl::Status s = ReadRunCosts(json, source, times); !s.ok()) return s;
    if (absl::Status s = ReadCoRunSlowdown(json, source, times); !s.ok()) return s;
  }
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
  for (const auto& [name, us] : times.node_us) {
    auto it = unit_by_name.find(name);
    // A training step's node that is not a source node: charged to the
    // source node it works for (Note [Step times on the source]).
    if (it == unit_by_name.end()) {
      auto origin = times.origin.find(name);
      if (origin != times.origin.end()) it = unit_by_name.find(origin->second);
    }
    if (it == unit_by_name.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(times.source, " names '", name, "', which is not a node of the model"));
    }
    measured[it->second] = std::max(measured[it->second], 0.0) + us;
  }
  std::vector<double> ratios;
  for (uint32_t u = 0; u < graph.num_units(); ++u) {
    const double predicted = graph.compute_us(u, 0);
    if (measured[u] > 0 && predicted > 0) ratios.push_back(measured[u] / predicted);
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

std::optional<TrainingStepTimes> TrainingStepFromNodeTimes(const NodeTimes& times,
                                                           int microbatches) {
  if (!times.run_us) return std::nullopt;
  TrainingStepTimes step{.microbatches = std::max(1, microbatches),
                         .gradient_run_us = times.run_us->gradient_us,
                         .update_run_us = times.run_us->update_us,
                         .gradient_sum_us = times.run_us->gradient_sum_us,
                         .gradient_mean_us = times.run_us->gradient_mean_us};
  for (const auto& [name, us] : times.node_us)
    (times.update_nodes.contains(name) ? step.update_nodes_us : step.gradient_nodes_us) += us;
  step.step_us =
      step.microbatches * (step.gradient_nodes_us + step.gradient_run_us + step.gradient_sum_us) +
      step.gradient_mean_us + step.update_nodes_us + step.update_run_us;
  return step;
}

nlohmann::ordered_json TrainingStepTimesJson(const TrainingStepTimes& step) {
  return {
      {"microbatches", step.microbatches},         {"gradient_nodes_us", step.gradient_nodes_us},
      {"gradient_run_us", step.gradient_run_us},   {"gradient_sum_us", step.gradient_sum_us},
      {"gradient_mean_us", step.gradient_mean_us}, {"update_nodes_us", step.update_nodes_us},
      {"update_run_us", step.update_run_us},       {"step_us", step.step_us}};
}

nlohmann::ordered_json CostSourceJson(const CostSource& source) {
  return {{"source", source.measured ? "measured" : "model"},
          {"measured_nodes", source.measured_nodes},
          {"scaled_nodes", source.scaled_nodes},
          {"scale", source.scale}};
}

}  // namespace autopar::costmodel
