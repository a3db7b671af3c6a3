#include "costmodel/cluster.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace autopar::costmodel {
namespace {

using Json = nlohmann::json;

// Link speeds, bytes/s per direction, from the vendors' public figures.
constexpr double kNvlink2PairBps = 50e9;  // V100 SXM2: 2 NVLink 2.0 links of 25 GB/s between a pair
constexpr double kNvlink3Bps = 300e9;     // A100 SXM4 NVSwitch: 600 GB/s bidirectional per GPU
constexpr double kNvlink4Bps = 450e9;     // H100/H200 SXM5 NVSwitch: 900 GB/s bidirectional
constexpr double kPcie3x16Bps = 12e9;     // PCIe 3.0 x16: 15.75 GB/s raw, ~12 GB/s achieved
constexpr double kPcie4x16Bps = 25e9;     // PCIe 4.0 x16: 31.5 GB/s raw, ~25 GB/s achieved
constexpr double kNvlinkLatencyUs = 5;    // send/recv launch + NCCL-style handshake
constexpr double kPcieLatencyUs = 10;
constexpr double kHostMemoryBps = 10e9;  // between CPU processes through shared memory

absl::StatusOr<DeviceSpec> Preset(const char* name) { return LookupDevicePreset(name); }

absl::StatusOr<Cluster> Homogeneous(const char* device, int count, double bandwidth,
                                    double latency_us) {
  absl::StatusOr<DeviceSpec> spec = Preset(device);
  if (!spec.ok()) return spec.status();
  return MakeHomogeneousCluster(*spec, count, 0, bandwidth, latency_us);
}

absl::Status FieldError(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("cluster: ", field, ": ", what));
}

absl::StatusOr<double> PositiveNumber(const Json& json, const std::string& field) {
  if (!json.is_number() || json.get<double>() <= 0) {
    return FieldError(field, "must be a positive number");
  }
  return json.get<double>();
}

absl::StatusOr<double> NonNegativeNumber(const Json& json, const std::string& field) {
  if (!json.is_number() || json.get<double>() < 0) {
    return FieldError(field, "must be a number >= 0");
  }
  return json.get<double>();
}

// A device entry's spec: a preset name or an inline device object.
absl::StatusOr<DeviceSpec> DeviceOf(const Json& json, const std::string& field) {
  if (json.is_string()) {
    absl::StatusOr<DeviceSpec> spec = LookupDevicePreset(json.get<std::string>());
    if (!spec.ok()) return FieldError(field, std::string(spec.status().message()));
    return spec;
  }
  if (json.is_object()) return DeviceSpecFromJson(json, absl::StrCat("cluster: ", field));
  return FieldError(field, "must be a preset name or a device object");
}

// A square matrix of numbers, one row per device.
absl::Status ReadMatrix(const Json& json, const std::string& field, int n, bool positive,
                        std::vector<double>& out) {
  if (!json.is_array() || static_cast<int>(json.size()) != n) {
    return FieldError(field, absl::StrCat("must be ", n, " rows of ", n, " numbers"));
  }
  out.assign(static_cast<size_t>(n) * n, 0);
  for (int i = 0; i < n; ++i) {
    if (!json[i].is_array() || static_cast<int>(json[i].size()) != n) {
      return FieldError(absl::StrCat(field, "[", i, "]"),
                        absl::StrCat("must hold ", n, " numbers"));
    }
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      std::string at = absl::StrCat(field, "[", i, "][", j, "]");
      absl::StatusOr<double> v =
          positive ? PositiveNumber(json[i][j], at) : NonNegativeNumber(json[i][j], at);
      if (!v.ok()) return v.status();
      out[static_cast<size_t>(i) * n + j] = *v;
    }
  }
  return absl::OkStatus();
}

// "execution": {"whole_stages": bool, "stage_run_us": µs, "cut_us": µs,
// "cut_bytes_per_s": B/s, "hop_us": µs, "hop_busy_us": µs, "co_run_slowdown": >= 1},
// every field optional.
absl::StatusOr<ExecutionModel> ExecutionModelFromJson(const Json& json) {
  if (!json.is_object()) return FieldError("execution", "must be an object");
  ExecutionModel execution;
  for (const auto& [key, value] : json.items()) {
    const std::string field = absl::StrCat("execution.", key);
    if (key == "whole_stages") {
      if (!value.is_boolean()) return FieldError(field, "must be true or false");
      execution.whole_stages = value.get<bool>();
      continue;
    }
    double* number = key == "stage_run_us"      ? &execution.stage_run_us
                     : key == "cut_us"          ? &execution.cut_us
                     : key == "cut_bytes_per_s" ? &execution.cut_bytes_per_s
                     : key == "hop_us"          ? &execution.hop_us
                     : key == "hop_busy_us"     ? &execution.hop_busy_us
                     : key == "co_run_slowdown" ? &execution.co_run_slowdown
                                                : nullptr;
    if (number == nullptr) {
      return FieldError(field,
                        "is not a field (whole_stages, stage_run_us, cut_us, cut_bytes_per_s, "
                        "hop_us, hop_busy_us, co_run_slowdown)");
    }
    absl::StatusOr<double> value_or = NonNegativeNumber(value, field);
    if (!value_or.ok()) return value_or.status();
    if (number == &execution.co_run_slowdown && *value_or < 1) {
      return FieldError(field, "must be at least 1");
    }
    *number = *value_or;
  }
  return execution;
}

}  // namespace

void Cluster::InitLinks(double bandwidth_bytes_per_s, double latency) {
  const size_t n = devices.size();
  bandwidth_.assign(n * n, bandwidth_bytes_per_s);
  latency_us_.assign(n * n, latency);
}

void Cluster::SetLink(int src, int dst, double bandwidth_bytes_per_s, double latency) {
  bandwidth_[static_cast<size_t>(src) * devices.size() + dst] = bandwidth_bytes_per_s;
  latency_us_[static_cast<size_t>(src) * devices.size() + dst] = latency;
}

int64_t Cluster::TotalMemoryBytes() const {
  int64_t total = 0;
  for (const ClusterDevice& d : devices) total += d.memory_bytes;
  return total;
}

absl::Status Cluster::Validate() const {
  if (devices.empty()) return absl::InvalidArgumentError("cluster: has no devices");
  if (devices.size() > 64) {
    return absl::InvalidArgumentError("cluster: at most 64 devices are supported");
  }
  const size_t n = devices.size();
  if (bandwidth_.size() != n * n || latency_us_.size() != n * n) {
    return absl::InvalidArgumentError("cluster: link tables do not match the devices");
  }
  for (size_t d = 0; d < n; ++d) {
    if (devices[d].kind < 0 || devices[d].kind >= static_cast<int>(kinds.size())) {
      return FieldError(absl::StrCat("devices[", d, "]"), "has no device kind");
    }
    if (devices[d].memory_bytes <= 0) {
      return FieldError(absl::StrCat("devices[", d, "].memory_bytes"), "must be positive");
    }
    for (size_t e = 0; e < n; ++e) {
      if (d != e && !(bandwidth_[d * n + e] > 0)) {
        return FieldError(absl::StrCat("link ", d, "->", e), "bandwidth must be positive");
      }
    }
  }
  return absl::OkStatus();
}

Cluster MakeHomogeneousCluster(const DeviceSpec& device, int count, int64_t memory_bytes,
                               double link_bandwidth_bytes_per_s, double link_latency_us) {
  Cluster cluster;
  cluster.kinds.push_back(device);
  for (int i = 0; i < count; ++i) {
    cluster.devices.push_back(ClusterDevice{absl::StrCat("dev", i), 0,
                                            memory_bytes > 0 ? memory_bytes : device.memory_bytes});
  }
  cluster.InitLinks(link_bandwidth_bytes_per_s, link_latency_us);
  return cluster;
}

std::vector<std::string> ClusterPresetNames() {
  return {"4xV100-nvlink", "8xA100-nvlink", "2x4xA100-nvlink-pcie",
          "4xH100-nvlink", "2xH200",        "4xT4-pcie",
          "2xL4-pcie",     "4xcpu"};
}

absl::StatusOr<Cluster> LookupClusterPreset(const std::string& name) {
  if (name == "4xV100-nvlink") return Homogeneous("V100", 4, kNvlink2PairBps, kNvlinkLatencyUs);
  if (name == "8xA100-nvlink") return Homogeneous("A100-80GB", 8, kNvlink3Bps, kNvlinkLatencyUs);
  if (name == "4xH100-nvlink") return Homogeneous("H100", 4, kNvlink4Bps, kNvlinkLatencyUs);
  if (name == "2xH200") return Homogeneous("H200", 2, kNvlink4Bps, kNvlinkLatencyUs);
  if (name == "4xT4-pcie") return Homogeneous("T4", 4, kPcie3x16Bps, kPcieLatencyUs);
  if (name == "2xL4-pcie") return Homogeneous("L4", 2, kPcie4x16Bps, kPcieLatencyUs);
  if (name == "4xcpu") return Homogeneous("cpu", 4, kHostMemoryBps, kPcieLatencyUs);
  if (name == "2x4xA100-nvlink-pcie") {
    // Two NVLink islands of four GPUs; between islands, PCIe 4.0.
    absl::StatusOr<Cluster> cluster = Homogeneous("A100-80GB", 8, kNvlink3Bps, kNvlinkLatencyUs);
    if (!cluster.ok()) return cluster;
    for (int a = 0; a < 8; ++a) {
      for (int b = 0; b < 8; ++b) {
        if (a / 4 != b / 4) cluster->SetLink(a, b, kPcie4x16Bps, kPcieLatencyUs);
      }
    }
    return cluster;
  }
  return absl::NotFoundError(absl::StrCat("unknown cluster preset '", name, "' (known: ",
                                          absl::StrJoin(ClusterPresetNames(), ", "), ")"));
}

absl::StatusOr<Cluster> ClusterFromJson(const Json& json) {
  if (!json.is_object()) return absl::InvalidArgumentError("cluster: must be a JSON object");
  if (!json.contains("devices") || !json["devices"].is_array() || json["devices"].empty()) {
    return FieldError("devices", "must be a non-empty array");
  }
  Cluster cluster;
  const Json& devices = json["devices"];
  for (size_t i = 0; i < devices.size(); ++i) {
    const std::string field = absl::StrCat("devices[", i, "]");
    const Json& entry = devices[i];
    if (!entry.is_object() || !entry.contains("device")) {
      return FieldError(field, "must be an object with a \"device\"");
    }
    absl::StatusOr<DeviceSpec> spec = DeviceOf(entry["device"], field + ".device");
    if (!spec.ok()) return spec.status();
    int kind = -1;
    for (size_t k = 0; k < cluster.kinds.size(); ++k) {
      if (cluster.kinds[k].name == spec->name) kind = static_cast<int>(k);
    }
    if (kind < 0) {
      kind = static_cast<int>(cluster.kinds.size());
      cluster.kinds.push_back(*spec);
    }
    int64_t memory = spec->memory_bytes;
    if (entry.contains("memory_bytes")) {
      absl::StatusOr<double> m = PositiveNumber(entry["memory_bytes"], field + ".memory_bytes");
      if (!m.ok()) return m.status();
      memory = static_cast<int64_t>(*m);
    }
    if (entry.contains("name") && !entry["name"].is_string()) {
      return FieldError(field + ".name", "must be a string");
    }
    std::string name = entry.value("name", absl::StrCat("dev", i));
    cluster.devices.push_back(ClusterDevice{name, kind, memory});
  }
  const int n = cluster.num_devices();
  if (json.contains("bandwidth_matrix_bytes_per_s")) {
    std::vector<double> bandwidth, latency;
    if (absl::Status s = ReadMatrix(json["bandwidth_matrix_bytes_per_s"],
                                    "bandwidth_matrix_bytes_per_s", n, true, bandwidth);
        !s.ok()) {
      return s;
    }
    latency.assign(static_cast<size_t>(n) * n, kNvlinkLatencyUs);
    if (json.contains("latency_matrix_us")) {
      if (absl::Status s =
              ReadMatrix(json["latency_matrix_us"], "latency_matrix_us", n, false, latency);
          !s.ok()) {
        return s;
      }
    }
    cluster.InitLinks(1, 0);
    for (int a = 0; a < n; ++a) {
      for (int b = 0; b < n; ++b) {
        if (a != b) cluster.SetLink(a, b, bandwidth[a * n + b], latency[a * n + b]);
      }
    }
  } else {
    if (!json.contains("link") || !json["link"].is_object()) {
      return FieldError("link",
                        "give \"link\": {\"bandwidth_bytes_per_s\", \"latency_us\"} or "
                        "\"bandwidth_matrix_bytes_per_s\"");
    }
    const Json& link = json["link"];
    absl::StatusOr<double> bandwidth =
        PositiveNumber(link.value("bandwidth_bytes_per_s", Json()), "link.bandwidth_bytes_per_s");
    if (!bandwidth.ok()) return bandwidth.status();
    absl::StatusOr<double> latency =
        NonNegativeNumber(link.value("latency_us", Json(0)), "link.latency_us");
    if (!latency.ok()) return latency.status();
    cluster.InitLinks(*bandwidth, *latency);
  }
  if (json.contains("execution")) {
    absl::StatusOr<ExecutionModel> execution = ExecutionModelFromJson(json["execution"]);
    if (!execution.ok()) return execution.status();
    cluster.execution = *execution;
  }
  if (absl::Status s = cluster.Validate(); !s.ok()) return s;
  return cluster;
}

absl::StatusOr<Cluster> LoadClusterFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open cluster file '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  Json json = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat("cluster file '", path, "' is not valid JSON"));
  }
  absl::StatusOr<Cluster> cluster = ClusterFromJson(json);
  if (!cluster.ok()) {
    return absl::Status(cluster.status().code(),
                        absl::StrCat("'", path, "': ", cluster.status().message()));
  }
  return cluster;
}

nlohmann::ordered_json ClusterToJson(const Cluster& cluster) {
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const ClusterDevice& d : cluster.devices) {
    devices.push_back({{"name", d.name},
                       {"device", cluster.kinds[d.kind].name},
                       {"memory_bytes", d.memory_bytes}});
  }
  const int n = cluster.num_devices();
  nlohmann::ordered_json bandwidth = nlohmann::ordered_json::array();
  nlohmann::ordered_json latency = nlohmann::ordered_json::array();
  for (int a = 0; a < n; ++a) {
    nlohmann::ordered_json brow = nlohmann::ordered_json::array();
    nlohmann::ordered_json lrow = nlohmann::ordered_json::array();
    for (int b = 0; b < n; ++b) {
      brow.push_back(a == b ? 0.0 : cluster.bandwidth_bytes_per_s(a, b));
      lrow.push_back(a == b ? 0.0 : cluster.latency_us(a, b));
    }
    bandwidth.push_back(brow);
    latency.push_back(lrow);
  }
  nlohmann::ordered_json json = {{"devices", devices},
                                 {"bandwidth_matrix_bytes_per_s", bandwidth},
                                 {"latency_matrix_us", latency}};
  if (cluster.execution != ExecutionModel{}) {
    json["execution"] = {{"whole_stages", cluster.execution.whole_stages},
                         {"stage_run_us", cluster.execution.stage_run_us},
                         {"cut_us", cluster.execution.cut_us},
                         {"cut_bytes_per_s", cluster.execution.cut_bytes_per_s},
                         {"hop_us", cluster.execution.hop_us},
                         {"hop_busy_us", cluster.execution.hop_busy_us},
                         {"co_run_slowdown", cluster.execution.co_run_slowdown}};
  }
  return json;
}

}  // namespace autopar::costmodel
