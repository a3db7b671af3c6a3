#include "pipeline/cluster_request.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "costmodel/host_cpu.h"

namespace autopar::pipeline {
namespace {

// A preset name, a host cluster cpu:KxT (rule 5), or a file when one exists
// at that path.
absl::StatusOr<costmodel::Cluster> ReadCluster(const std::string& value,
                                               const std::optional<std::string>& calibration) {
  absl::StatusOr<std::optional<std::pair<int, int>>> host =
      costmodel::ParseHostCpuClusterName(value);
  if (!host.ok()) return host.status();
  if (*host) {
    costmodel::HostCalibration host_calibration = costmodel::DefaultHostCalibration();
    if (calibration) {
      absl::StatusOr<costmodel::HostCalibration> loaded =
          costmodel::LoadHostCalibration(*calibration);
      if (!loaded.ok()) return loaded.status();
      host_calibration = *std::move(loaded);
    }
    return costmodel::MakeHostCpuCluster((*host)->first, (*host)->second, host_calibration);
  }
  if (calibration) {
    return RequestConflictError("--host-calibration applies to a --cluster cpu:KxT only");
  }
  return std::filesystem::exists(value) ? costmodel::LoadClusterFile(value)
                                        : costmodel::LookupClusterPreset(value);
}

void SetMemory(costmodel::Cluster& cluster, std::optional<int64_t> bytes) {
  if (!bytes) return;
  for (costmodel::ClusterDevice& d : cluster.devices) d.memory_bytes = *bytes;
}

}  // namespace

absl::Status RequestConflictError(absl::string_view message) {
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kRequestConflictPayload, absl::Cord("1"));
  return status;
}

Link DefaultLink(const costmodel::DeviceSpec& device) {
  // Per direction, from the vendors' figures (see costmodel/cluster.cc).
  const std::string& name = device.name;
  if (name == "v100") return {50e9, 5};                     // NVLink 2.0, two links per pair
  if (name == "a100-80gb") return {300e9, 5};               // NVLink 3 through NVSwitch
  if (name == "h100" || name == "h200") return {450e9, 5};  // NVLink 4 through NVSwitch
  if (name == "t4") return {12e9, 10};                      // PCIe 3.0 x16
  if (name == "l4") return {25e9, 10};                      // PCIe 4.0 x16
  return {10e9, 10};  // CPUs and unknown devices: host memory copies
}

costmodel::Cluster WithDeviceCount(const costmodel::Cluster& cluster, int count) {
  const int n = cluster.num_devices();
  if (count == n || n == 0) return cluster;
  costmodel::Cluster out;
  out.kinds = cluster.kinds;
  out.execution = cluster.execution;
  absl::flat_hash_set<std::string> names;
  for (int i = 0; i < std::min(count, n); ++i) names.insert(cluster.device(i).name);
  for (int i = 0; i < count; ++i) {
    costmodel::ClusterDevice device = cluster.device(i % n);
    if (i >= n) {
      device.name = absl::StrCat("dev", i);
      if (names.contains(device.name))
        device.name = absl::StrCat(cluster.device(i % n).name, "#", i / n);
      names.insert(device.name);
    }
    out.devices.push_back(std::move(device));
  }
  // Two copies of one device: the slowest link that device has in the input.
  std::vector<Link> own(n);
  for (int a = 0; a < n; ++a) {
    if (n == 1) {
      own[a] = DefaultLink(cluster.kinds[cluster.device(a).kind]);
      continue;
    }
    own[a] = {std::numeric_limits<double>::infinity(), 0};
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      for (const auto& [src, dst] : {std::pair{a, b}, std::pair{b, a}}) {
        if (cluster.bandwidth_bytes_per_s(src, dst) < own[a].bandwidth_bytes_per_s) {
          own[a] = {cluster.bandwidth_bytes_per_s(src, dst), cluster.latency_us(src, dst)};
        }
      }
    }
  }
  out.InitLinks(1, 0);
  for (int a = 0; a < count; ++a) {
    for (int b = 0; b < count; ++b) {
      if (a == b) continue;
      const int sa = a % n;
      const int sb = b % n;
      if (sa != sb) {
        out.SetLink(a, b, cluster.bandwidth_bytes_per_s(sa, sb), cluster.latency_us(sa, sb));
      } else {
        out.SetLink(a, b, own[sa].bandwidth_bytes_per_s, own[sa].latency_us);
      }
    }
  }
  return out;
}

absl::StatusOr<costmodel::Cluster> ResolveCluster(
    const ClusterRequest& request, const std::optional<costmodel::Cluster>& input_cluster) {
  // Rule 1: a whole topology.
  if (request.cluster) {
    if (request.devices || request.device) {
      return RequestConflictError("--cluster cannot be combined with --devices or --device");
    }
    absl::StatusOr<costmodel::Cluster> cluster =
        ReadCluster(*request.cluster, request.host_calibration);
    if (!cluster.ok()) return cluster.status();
    SetMemory(*cluster, request.memory_per_device_bytes);
    return cluster;
  }
  if (request.host_calibration) {
    return RequestConflictError("--host-calibration applies to a --cluster cpu:KxT only");
  }
  // Rule 2: the input's own devices, else devices of one kind.
  costmodel::Cluster cluster;
  if (input_cluster) {
    if (request.device) {
      return RequestConflictError(
          "--device cannot change the devices of a cost graph that has its own \"devices\" "
          "block (its compute times are for those devices); use --cluster to replace them all");
    }
    cluster = *input_cluster;
  } else {
    absl::StatusOr<costmodel::DeviceSpec> device =
        costmodel::ResolveDevice(request.device.value_or(kDefaultDevicePreset));
    if (!device.ok()) return device.status();
    const Link link = DefaultLink(*device);
    cluster =
        costmodel::MakeHomogeneousCluster(*device, request.devices.value_or(kDefaultDeviceCount), 0,
                                          link.bandwidth_bytes_per_s, link.latency_us);
  }
  // Rules 3 and 4: the count, then the memory.
  if (input_cluster && request.devices) cluster = WithDeviceCount(cluster, *request.devices);
  SetMemory(cluster, request.memory_per_device_bytes);
  return cluster;
}

}  // namespace autopar::pipeline
