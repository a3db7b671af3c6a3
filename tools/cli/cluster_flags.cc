#include "tools/cluster_flags.h"

#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "costmodel/device.h"
#include "tools/units.h"

namespace autopar::tools {

std::vector<FlagSpec> ClusterFlagSpecs() {
  return {{"cluster", true}, {"devices", true}, {"device", true}, {"memory-per-device", true}};
}

void DefaultLink(const costmodel::DeviceSpec& device, double& bandwidth_bytes_per_s,
                 double& latency_us) {
  // Per direction, from the vendors' figures (see costmodel/cluster.cc).
  const std::string& name = device.name;
  if (name == "v100") {
    bandwidth_bytes_per_s = 50e9;  // NVLink 2.0, two links per pair
    latency_us = 5;
  } else if (name == "a100-80gb") {
    bandwidth_bytes_per_s = 300e9;  // NVLink 3 through NVSwitch
    latency_us = 5;
  } else if (name == "h100" || name == "h200") {
    bandwidth_bytes_per_s = 450e9;  // NVLink 4 through NVSwitch
    latency_us = 5;
  } else if (name == "t4") {
    bandwidth_bytes_per_s = 12e9;  // PCIe 3.0 x16
    latency_us = 10;
  } else if (name == "l4") {
    bandwidth_bytes_per_s = 25e9;  // PCIe 4.0 x16
    latency_us = 10;
  } else {
    bandwidth_bytes_per_s = 10e9;  // CPUs and unknown devices: host memory copies
    latency_us = 10;
  }
}

absl::StatusOr<int> DeviceCountFlag(const ParsedArgs& args, int fallback) {
  std::optional<std::string> text = args.Get("devices");
  if (!text) return fallback;
  int count = 0;
  if (!absl::SimpleAtoi(*text, &count) || count < 1 || count > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--devices must be a number from 1 to 64, not '", *text, "'"));
  }
  return count;
}

absl::StatusOr<int64_t> MemoryPerDeviceFlag(const ParsedArgs& args, int64_t fallback) {
  std::optional<std::string> text = args.Get("memory-per-device");
  if (!text) return fallback;
  absl::StatusOr<int64_t> bytes = ParseByteSize(*text);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--memory-per-device: ", bytes.status().message()));
  }
  return *bytes;
}

absl::Status CheckClusterFlags(const ParsedArgs& args) {
  if (args.Has("cluster") && (args.Has("devices") || args.Has("device"))) {
    return absl::InvalidArgumentError("--cluster cannot be combined with --devices or --device");
  }
  if (absl::StatusOr<int> count = DeviceCountFlag(args, 1); !count.ok()) return count.status();
  return MemoryPerDeviceFlag(args, 0).status();
}

absl::StatusOr<std::optional<costmodel::Cluster>> ClusterFromArgs(const ParsedArgs& args,
                                                                  bool allow_default) {
  const bool any = args.Has("cluster") || args.Has("devices") || args.Has("device") ||
                   args.Has("memory-per-device");
  if (!any && !allow_default) return std::optional<costmodel::Cluster>();
  if (absl::Status flags = CheckClusterFlags(args); !flags.ok()) return flags;
  if (args.Has("cluster")) {
    const std::string value = *args.Get("cluster");
    absl::StatusOr<costmodel::Cluster> cluster = std::filesystem::exists(value)
                                                     ? costmodel::LoadClusterFile(value)
                                                     : costmodel::LookupClusterPreset(value);
    if (!cluster.ok()) return cluster.status();
    if (args.Has("memory-per-device")) {
      absl::StatusOr<int64_t> bytes = MemoryPerDeviceFlag(args, 0);
      if (!bytes.ok()) return bytes.status();
      for (costmodel::ClusterDevice& d : cluster->devices) d.memory_bytes = *bytes;
    }
    return std::optional<costmodel::Cluster>(*std::move(cluster));
  }
  absl::StatusOr<int> count = DeviceCountFlag(args, kDefaultDeviceCount);
  if (!count.ok()) return count.status();
  absl::StatusOr<costmodel::DeviceSpec> device =
      costmodel::ResolveDevice(args.Get("device").value_or(kDefaultDevicePreset));
  if (!device.ok()) return device.status();
  absl::StatusOr<int64_t> memory = MemoryPerDeviceFlag(args, device->memory_bytes);
  if (!memory.ok()) return memory.status();
  double bandwidth = 0;
  double latency = 0;
  DefaultLink(*device, bandwidth, latency);
  return std::optional<costmodel::Cluster>(
      costmodel::MakeHomogeneousCluster(*device, *count, *memory, bandwidth, latency));
}

}  // namespace autopar::tools
