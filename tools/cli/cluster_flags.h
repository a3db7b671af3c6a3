// The cluster flags of the commands that plan, mapped onto a
// pipeline::ClusterRequest (pipeline/cluster_request.h says what each
// changes, and what wins over a cost graph's own "devices" block):
//   --cluster PRESET|FILE      a whole topology
//   --devices N                the device count
//   --device PRESET|FILE       the device kind
//   --memory-per-device SIZE   every device's memory
//   --host-calibration FILE    links and overheads of a --cluster cpu:KxT
#ifndef AUTOPAR_TOOLS_CLI_CLUSTER_FLAGS_H_
#define AUTOPAR_TOOLS_CLI_CLUSTER_FLAGS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "pipeline/cluster_request.h"
#include "tools/cli/args.h"

namespace autopar::tools {

std::vector<FlagSpec> ClusterFlagSpecs();

/// --devices N: a count from 1 to 64, or `fallback` when the flag is absent.
absl::StatusOr<int> DeviceCountFlag(const ParsedArgs& args, int fallback);
/// --memory-per-device SIZE in bytes, or `fallback` when the flag is absent.
absl::StatusOr<int64_t> MemoryPerDeviceFlag(const ParsedArgs& args, int64_t fallback);

/// Checks the cluster flags' values that need no file (the counts and sizes,
/// and --cluster not mixed with --devices or --device), so that commands can
/// report them as usage errors before reading anything.
absl::Status CheckClusterFlags(const ParsedArgs& args);

/// The request the flags make; failures are those of CheckClusterFlags.
absl::StatusOr<pipeline::ClusterRequest> ClusterRequestFromArgs(const ParsedArgs& args);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_CLUSTER_FLAGS_H_
