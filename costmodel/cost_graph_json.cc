#include "costmodel/cost_graph_json.h"

#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace autopar::costmodel {
namespace {

using Json = nlohmann::json;

absl::Status FieldError(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("cost graph: ", field, ": ", what));
}

absl::StatusOr<int64_t> ByteCount(const Json& json, const std::string& field) {
  if (!json.is_number() || json.get<double>() < 0 || json.get<double>() > 9.2e18) {
    return FieldError(field, "must be a number of bytes >= 0");
  }
  return json.is_number_integer() ? json.get<int64_t>() : static_cast<int64_t>(json.get<double>());
}

// An optional string field. (json::value would throw on another type.)
absl::StatusOr<std::string> StringField(const Json& object, const char* key, std::string fallback,
                                        const std::string& field) {
  auto it = object.find(key);
  if (it == object.end()) return fallback;
  if (!it->is_string()) return FieldError(absl::StrCat(field, ".", key), "must be a string");
  return it->get<std::string>();
}

absl::StatusOr<uint32_t> NodeId(const Json& json, const std::string& field, uint32_t num_nodes) {
  if (!json.is_number_integer() || json.get<int64_t>() < 0 || json.get<int64_t>() >= num_nodes) {
    return FieldError(field, absl::StrCat("must be a node id in [0, ", num_nodes, ")"));
  }
  return static_cast<uint32_t>(json.get<int64_t>());
}

absl::StatusOr<std::optional<Cluster>> DevicesBlock(const Json& json) {
  if (!json.contains("devices")) return std::optional<Cluster>();
  const Json& d = json["devices"];
  if (!d.is_object()) return FieldError("devices", "must be an object");
  if (!d.contains("count") || !d["count"].is_number_integer() || d["count"].get<int64_t>() < 1 ||
      d["count"].get<int64_t>() > 64) {
    return FieldError("devices.count", "must be an integer in [1, 64]");
  }
  const int count = static_cast<int>(d["count"].get<int64_t>());
  if (!d.contains("memory_bytes") || !d["memory_bytes"].is_array() ||
      static_cast<int>(d["memory_bytes"].size()) != count) {
    return FieldError("devices.memory_bytes", absl::StrCat("must list ", count, " sizes"));
  }
  const Json& bandwidth = d.value("bandwidth_bytes_per_s", Json());
  if (!bandwidth.is_number() || bandwidth.get<double>() <= 0) {
    return FieldError("devices.bandwidth_bytes_per_s", "must be a positive number");
  }
  const Json& latency = d.value("latency_us", Json(0));
  if (!latency.is_number() || latency.get<double>() < 0) {
    return FieldError("devices.latency_us", "must be a number >= 0");
  }
  DeviceSpec spec;
  spec.name = "costgraph";
  Cluster cluster =
      MakeHomogeneousCluster(spec, count, 1, bandwidth.get<double>(), latency.get<double>());
  for (int i = 0; i < count; ++i) {
    absl::StatusOr<int64_t> memory =
        ByteCount(d["memory_bytes"][i], absl::StrCat("devices.memory_bytes[", i, "]"));
    if (!memory.ok()) return memory.status();
    if (*memory == 0)
      return FieldError(absl::StrCat("devices.memory_bytes[", i, "]"), "must be positive");
    cluster.devices[i].memory_bytes = *memory;
  }
  if (d.contains("kinds")) {
    // Heterogeneous: "kinds": [k0, k1, ...] gives each device its column of compute_us.
    const Json& kinds = d["kinds"];
    if (!kinds.is_array() || static_cast<int>(kinds.size()) != count) {
      return FieldError("devices.kinds", absl::StrCat("must list ", count, " kind indices"));
    }
    int max_kind = 0;
    for (int i = 0; i < count; ++i) {
      if (!kinds[i].is_number_integer() || kinds[i].get<int>() < 0 || kinds[i].get<int>() >= 64) {
        return FieldError(absl::StrCat("devices.kinds[", i, "]"), "must be a kind index");
      }
      cluster.devices[i].kind = kinds[i].get<int>();
      max_kind = std::max(max_kind, cluster.devices[i].kind);
    }
    for (int k = 1; k <= max_kind; ++k) {
      DeviceSpec kind = spec;
      kind.name = absl::StrCat("costgraph-kind", k);
      cluster.kinds.push_back(kind);
    }
  }
  return std::optional<Cluster>(std::move(cluster));
}

}  // namespace

absl::StatusOr<CostGraphDocument> CostGraphFromJson(const Json& json) {
  if (!json.is_object()) return absl::InvalidArgumentError("cost graph: must be a JSON object");
  if (!json.contains("nodes") || !json["nodes"].is_array())
    return FieldError("nodes", "must be an array");
  if (json.contains("edges") && !json["edges"].is_array())
    return FieldError("edges", "must be an array");
  absl::StatusOr<std::optional<Cluster>> cluster = DevicesBlock(json);
  if (!cluster.ok()) return cluster.status();
  const int kinds = cluster->has_value() ? static_cast<int>((*cluster)->kinds.size()) : 1;

  const Json& nodes = json["nodes"];
  const auto n = static_cast<uint32_t>(nodes.size());
  CostGraph::Builder builder(kinds);
  std::vector<std::vector<int64_t>> outputs(n);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string field = absl::StrCat("nodes[", i, "]");
    const Json& node = nodes[i];
    if (!node.is_object()) return FieldError(field, "must be an object");
    if (!node.contains("id") || !node["id"].is_number_integer() || node["id"].get<int64_t>() != i) {
      return FieldError(field + ".id",
                        absl::StrCat("must be ", i, " (ids are 0..n-1 in topological order)"));
    }
    CostGraph::UnitSpec unit;
    absl::StatusOr<std::string> name = StringField(node, "name", absl::StrCat("node", i), field);
    if (!name.ok()) return name.status();
    unit.name = *std::move(name);
    absl::StatusOr<std::string> op = StringField(node, "op", "", field);
    if (!op.ok()) return op.status();
    unit.op = *std::move(op);
    const Json& compute = node.value("compute_us", Json());
    if (compute.is_number() && compute.get<double>() >= 0) {
      unit.compute_us.assign(kinds, compute.get<double>());
    } else if (compute.is_array() && static_cast<int>(compute.size()) == kinds) {
      for (const Json& t : compute) {
        if (!t.is_number() || t.get<double>() < 0)
          return FieldError(field + ".compute_us", "times must be >= 0");
        unit.compute_us.push_back(t.get<double>());
      }
    } else {
      return FieldError(field + ".compute_us",
                        absl::StrCat("must be a time >= 0 or an array of ", kinds, " times"));
    }
    absl::StatusOr<int64_t> params =
        ByteCount(node.value("param_bytes", Json(0)), field + ".param_bytes");
    if (!params.ok()) return params.status();
    if (*params > 0) unit.params.push_back(builder.AddParameter(*params));
    absl::StatusOr<int64_t> temp =
        ByteCount(node.value("temp_bytes", Json(0)), field + ".temp_bytes");
    if (!temp.ok()) return temp.status();
    unit.temp_bytes = *temp;
    const Json& out = node.value("output_bytes", Json::array());
    if (!out.is_array()) return FieldError(field + ".output_bytes", "must be an array");
    for (size_t k = 0; k < out.size(); ++k) {
      absl::StatusOr<int64_t> b = ByteCount(out[k], absl::StrCat(field, ".output_bytes[", k, "]"));
      if (!b.ok()) return b.status();
      outputs[i].push_back(*b);
    }
    builder.AddUnit(std::move(unit));
  }

  // Tensors: one per distinct (src, tensor name) among the edges.
  std::map<std::pair<uint32_t, std::string>, uint32_t> tensors;
  std::vector<int64_t> consumed(n, 0);
  const Json& edges = json.value("edges", Json::array());
  for (size_t e = 0; e < edges.size(); ++e) {
    const std::string field = absl::StrCat("edges[", e, "]");
    const Json& edge = edges[e];
    if (!edge.is_object()) return FieldError(field, "must be an object");
    absl::StatusOr<uint32_t> src = NodeId(edge.value("src", Json()), field + ".src", n);
    if (!src.ok()) return src.status();
    absl::StatusOr<uint32_t> dst = NodeId(edge.value("dst", Json()), field + ".dst", n);
    if (!dst.ok()) return dst.status();
    if (*src >= *dst)
      return FieldError(field, "src must come before dst (ids are topologically ordered)");
    absl::StatusOr<int64_t> bytes = ByteCount(edge.value("bytes", Json()), field + ".bytes");
    if (!bytes.ok()) return bytes.status();
    absl::StatusOr<std::string> tensor =
        StringField(edge, "tensor", absl::StrCat("edge", e), field);
    if (!tensor.ok()) return tensor.status();
    const std::string& name = *tensor;
    auto [it, inserted] = tensors.try_emplace({*src, name}, 0);
    if (inserted) {
      it->second = builder.AddTensor({.name = name, .producer = *src, .bytes = *bytes});
      consumed[*src] += *bytes;
    }
    builder.AddUse(it->second, *dst);
  }
  for (uint32_t i = 0; i < n; ++i) {
    int64_t declared = 0;
    for (int64_t b : outputs[i]) declared += b;
    if (declared > consumed[i]) {
      builder.AddTensor({.name = absl::StrCat(nodes[i].value("name", "node"), ":out"),
                         .producer = i,
                         .bytes = declared - consumed[i],
                         .is_graph_output = true});
    }
  }
  absl::StatusOr<CostGraph> graph = std::move(builder).Build();
  if (!graph.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cost graph: ", graph.status().message()));
  }
  return CostGraphDocument{*std::move(graph), *std::move(cluster)};
}

absl::StatusOr<CostGraphDocument> LoadCostGraphFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open cost graph '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  Json json = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat("cost graph '", path, "' is not valid JSON"));
  }
  absl::StatusOr<CostGraphDocument> doc = CostGraphFromJson(json);
  if (!doc.ok()) {
    return absl::Status(doc.status().code(),
                        absl::StrCat("'", path, "': ", doc.status().message()));
  }
  return doc;
}

nlohmann::ordered_json CostGraphToJson(const CostGraph& graph, const Cluster* cluster) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (uint32_t u = 0; u < graph.num_units(); ++u) {
    nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
    for (uint32_t t : graph.outputs(u)) outputs.push_back(graph.tensor_bytes(t));
    nlohmann::ordered_json compute;
    if (graph.num_device_kinds() == 1) {
      compute = graph.compute_us(u, 0);
    } else {
      compute = nlohmann::ordered_json::array();
      for (int k = 0; k < graph.num_device_kinds(); ++k) compute.push_back(graph.compute_us(u, k));
    }
    nodes.push_back({{"id", u},
                     {"name", graph.name(u)},
                     {"op", graph.op(u)},
                     {"compute_us", compute},
                     {"param_bytes", graph.unit_param_bytes(u)},
                     {"output_bytes", outputs},
                     {"temp_bytes", graph.temp_bytes(u)}});
  }
  nlohmann::ordered_json edges = nlohmann::ordered_json::array();
  for (uint32_t e = 0; e < graph.num_edges(); ++e) {
    edges.push_back({{"src", graph.edge_src(e)},
                     {"dst", graph.edge_dst(e)},
                     {"bytes", graph.edge_bytes(e)},
                     {"tensor", graph.tensor_name(graph.edge_tensor(e))}});
  }
  nlohmann::ordered_json doc = {{"nodes", nodes}, {"edges", edges}};
  if (cluster != nullptr && cluster->num_devices() > 0) {
    nlohmann::ordered_json memory = nlohmann::ordered_json::array();
    nlohmann::ordered_json kinds = nlohmann::ordered_json::array();
    for (const ClusterDevice& d : cluster->devices) {
      memory.push_back(d.memory_bytes);
      kinds.push_back(d.kind);
    }
    const bool pair = cluster->num_devices() > 1;
    nlohmann::ordered_json devices = {
        {"count", cluster->num_devices()},
        {"memory_bytes", memory},
        {"bandwidth_bytes_per_s", pair ? cluster->bandwidth_bytes_per_s(0, 1) : 1e9},
        {"latency_us", pair ? cluster->latency_us(0, 1) : 0.0}};
    if (cluster->kinds.size() > 1) devices["kinds"] = kinds;
    doc["devices"] = devices;
  }
  return doc;
}

}  // namespace autopar::costmodel
