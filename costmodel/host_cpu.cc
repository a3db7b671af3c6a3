#include "costmodel/host_cpu.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "costmodel/device.h"
#include "costmodel/json_file.h"

namespace autopar::costmodel {
namespace {

constexpr int kMaxHostThreads = 1024;

absl::Status FieldError(absl::string_view source, absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", field, " ", what));
}

// A number > 0 (or >= 0 when `zero_ok`) at json[key], if present.
absl::Status ReadNumber(const nlohmann::json& json, const char* key, absl::string_view source,
                        absl::string_view field, bool zero_ok, double& out) {
  if (!json.contains(key)) return absl::OkStatus();
  const nlohmann::json& value = json[key];
  if (!value.is_number() || value.get<double>() < 0 || (!zero_ok && value.get<double>() == 0)) {
    return FieldError(source, field,
                      zero_ok ? "must be a number >= 0" : "must be a positive number");
  }
  out = value.get<double>();
  return absl::OkStatus();
}

}  // namespace

double HostCalibration::ThreadSpeedup(int threads) const {
  if (threads <= 1 || thread_speedup.empty()) return 1;
  auto above = thread_speedup.lower_bound(threads);
  if (above != thread_speedup.end() && above->first == threads) return above->second;
  if (above != thread_speedup.end()) {
    // Between two measured counts (or below the first: from 1 thread = 1x).
    const int t0 = above == thread_speedup.begin() ? 1 : std::prev(above)->first;
    const double s0 = above == thread_speedup.begin() ? 1 : std::prev(above)->second;
    return s0 + (above->second - s0) * (threads - t0) / (above->first - t0);
  }
  // Beyond the largest: its last gain per thread continues.
  const auto last = std::prev(thread_speedup.end());
  const int t0 = last == thread_speedup.begin() ? 1 : std::prev(last)->first;
  const double s0 = last == thread_speedup.begin() ? 1 : std::prev(last)->second;
  const double gain = last->first > t0 ? (last->second - s0) / (last->first - t0) : 0;
  return std::max(1.0, last->second + std::max(0.0, gain) * (threads - last->first));
}

HostCalibration DefaultHostCalibration() {
  return HostCalibration{.transfer_latency_us = 10,
                         .transfer_bytes_per_s = 1e10,
                         .stage_run_us = 15,
                         .cut_us = 5,
                         .cut_bytes_per_s = 2e9,
                         .hop_us = 45,
                         .hop_busy_us = 60,
                         .thread_speedup = {{1, 1.0}, {2, 1.7}}};
}

absl::StatusOr<HostCalibration> HostCalibrationFromJson(const nlohmann::json& json,
                                                        absl::string_view source) {
  if (!json.is_object())
    return absl::InvalidArgumentError(absl::StrCat(source, " must be a JSON object"));
  HostCalibration calibration = DefaultHostCalibration();
  if (json.contains("transfer")) {
    const nlohmann::json& transfer = json["transfer"];
    if (!transfer.is_object()) return FieldError(source, "transfer", "must be an object");
    if (absl::Status s = ReadNumber(transfer, "latency_us", source, "transfer.latency_us",
                                    /*zero_ok=*/true, calibration.transfer_latency_us);
        !s.ok())
      return s;
    if (absl::Status s = ReadNumber(transfer, "bytes_per_s", source, "transfer.bytes_per_s",
                                    /*zero_ok=*/false, calibration.transfer_bytes_per_s);
        !s.ok())
      return s;
  }
  if (absl::Status s = ReadNumber(json, "stage_run_us", source, "stage_run_us",
                                  /*zero_ok=*/true, calibration.stage_run_us);
      !s.ok())
    return s;
  if (absl::Status s =
          ReadNumber(json, "cut_us", source, "cut_us", /*zero_ok=*/true, calibration.cut_us);
      !s.ok())
    return s;
  if (absl::Status s =
          ReadNumber(json, "hop_us", source, "hop_us", /*zero_ok=*/true, calibration.hop_us);
      !s.ok())
    return s;
  if (absl::Status s = ReadNumber(json, "hop_busy_us", source, "hop_busy_us",
                                  /*zero_ok=*/true, calibration.hop_busy_us);
      !s.ok())
    return s;
  if (absl::Status s = ReadNumber(json, "cut_bytes_per_s", source, "cut_bytes_per_s",
                                  /*zero_ok=*/true, calibration.cut_bytes_per_s);
      !s.ok())
    return s;
  if (json.contains("thread_speedup")) {
    const nlohmann::json& speedups = json["thread_speedup"];
    if (!speedups.is_object() || speedups.empty()) {
      return FieldError(source, "thread_speedup", "must be an object of thread count -> speed-up");
    }
    calibration.thread_speedup.clear();
    for (const auto& [key, value] : speedups.items()) {
      const std::string field = absl::StrCat("thread_speedup.", key);
      int threads = 0;
      if (!absl::SimpleAtoi(key, &threads) || threads < 1 || threads > kMaxHostThreads) {
        return FieldError(source, field, "must be keyed by a thread count from 1 to 1024");
      }
      if (!value.is_number() || value.get<double>() <= 0) {
        return FieldError(source, field, "must be a positive number");
      }
      calibration.thread_speedup[threads] = value.get<double>();
    }
  }
  return calibration;
}

absl::StatusOr<HostCalibration> LoadHostCalibration(const std::string& path) {
  const std::string source = absl::StrCat("host calibration '", path, "'");
  absl::StatusOr<nlohmann::json> json = ReadJsonFile(path, source);
  if (!json.ok()) return json.status();
  return HostCalibrationFromJson(*json, source);
}

absl::StatusOr<std::optional<std::pair<int, int>>> ParseHostCpuClusterName(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (!lower.starts_with("cpu:") || lower.find('x') == std::string::npos) return std::nullopt;
  const std::string spec = lower.substr(4);
  const size_t x = spec.find('x');
  int devices = 0, threads = 0;
  if (!absl::SimpleAtoi(spec.substr(0, x), &devices) ||
      !absl::SimpleAtoi(spec.substr(x + 1), &threads) || devices < 1 || devices > 64 ||
      threads < 1 || threads > kMaxHostThreads) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cluster '", name, "': cpu:KxT needs K devices from 1 to 64 of T threads from 1 to 1024"));
  }
  return std::pair{devices, threads};
}

Cluster MakeHostCpuCluster(int devices, int threads_per_device,
                           const HostCalibration& calibration) {
  Cluster cluster =
      MakeHomogeneousCluster(CpuPreset(threads_per_device), devices, 0,
                             calibration.transfer_bytes_per_s, calibration.transfer_latency_us);
  for (int d = 0; d < devices; ++d) cluster.devices[d].name = absl::StrCat("cpu", d);
  cluster.execution = ExecutionModel{.whole_stages = true,
                                     .stage_run_us = calibration.stage_run_us,
                                     .cut_us = calibration.cut_us,
                                     .cut_bytes_per_s = calibration.cut_bytes_per_s,
                                     .hop_us = calibration.hop_us,
                                     .hop_busy_us = calibration.hop_busy_us};
  cluster.host =
      HostThreads{.devices = devices,
                  .threads_per_device = threads_per_device,
                  .speedup_per_device = calibration.ThreadSpeedup(threads_per_device),
                  .speedup_all_threads = calibration.ThreadSpeedup(devices * threads_per_device)};
  return cluster;
}

}  // namespace autopar::costmodel
