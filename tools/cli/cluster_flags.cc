#include "tools/cli/cluster_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "costmodel/host_cpu.h"
#include "tools/cli/quantities.h"

namespace autopar::tools {

std::vector<FlagSpec> ClusterFlagSpecs() {
  return {{"cluster", true},
          {"devices", true},
          {"device", true},
          {"memory-per-device", true},
          {"host-calibration", true}};
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
  if (std::optional<std::string> cluster = args.Get("cluster")) {
    // cpu:KxT is spelled on the command line: a typo is a usage error.
    if (absl::Status name = costmodel::ParseHostCpuClusterName(*cluster).status(); !name.ok()) {
      return name;
    }
  }
  if (absl::StatusOr<int> count = DeviceCountFlag(args, 1); !count.ok()) return count.status();
  return MemoryPerDeviceFlag(args, 0).status();
}

absl::StatusOr<pipeline::ClusterRequest> ClusterRequestFromArgs(const ParsedArgs& args) {
  if (absl::Status flags = CheckClusterFlags(args); !flags.ok()) return flags;
  pipeline::ClusterRequest request;
  request.cluster = args.Get("cluster");
  request.device = args.Get("device");
  request.host_calibration = args.Get("host-calibration");
  if (args.Has("devices")) request.devices = *DeviceCountFlag(args, 0);
  if (args.Has("memory-per-device"))
    request.memory_per_device_bytes = *MemoryPerDeviceFlag(args, 0);
  return request;
}

}  // namespace autopar::tools
