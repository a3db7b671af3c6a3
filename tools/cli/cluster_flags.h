// The cluster a command plans for, from its flags:
//   --cluster PRESET|FILE                       a whole topology
//   --devices N [--device PRESET|FILE] [--memory-per-device SIZE]
//                                               N devices of one kind, all
//                                               pairs linked as the kind's
//                                               usual interconnect
#ifndef AUTOPAR_TOOLS_CLUSTER_FLAGS_H_
#define AUTOPAR_TOOLS_CLUSTER_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "tools/args.h"

namespace autopar::tools {

/// The device kind --devices uses when --device is not given.
inline constexpr char kDefaultDevicePreset[] = "A100-80GB";
/// The device count when neither --devices nor --cluster is given.
inline constexpr int kDefaultDeviceCount = 4;

std::vector<FlagSpec> ClusterFlagSpecs();

/// --devices N: a count from 1 to 64, or `fallback` when the flag is absent.
absl::StatusOr<int> DeviceCountFlag(const ParsedArgs& args, int fallback);
/// --memory-per-device SIZE in bytes, or `fallback` when the flag is absent.
absl::StatusOr<int64_t> MemoryPerDeviceFlag(const ParsedArgs& args, int64_t fallback);

/// Checks the cluster flags' values that need no file (the counts and sizes,
/// and --cluster not mixed with --devices or --device), so that commands can
/// report them as usage errors before reading anything.
absl::Status CheckClusterFlags(const ParsedArgs& args);

/// The cluster the flags describe; std::nullopt when none of the cluster flags
/// is given (callers may then use a cluster from elsewhere, e.g. a cost graph
/// file's "devices" block) and `allow_default` is false; the default (4 ×
/// A100-80GB over NVLink) when it is true.
absl::StatusOr<std::optional<costmodel::Cluster>> ClusterFromArgs(const ParsedArgs& args,
                                                                  bool allow_default);

/// Bandwidth and latency of the usual interconnect between devices of a
/// kind (NVLink for SXM parts, PCIe for T4/L4, shared memory for CPUs).
void DefaultLink(const costmodel::DeviceSpec& device, double& bandwidth_bytes_per_s,
                 double& latency_us);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLUSTER_FLAGS_H_
