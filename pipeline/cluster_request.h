// The cluster a plan is made for, from what the user asked for and what the
// input brings along. Each part of the request changes only what it names:
//
//  1. `cluster` (a preset name or a cluster file) is a whole topology and
//     replaces any other; `devices` and `device` cannot be combined with it.
//  2. Otherwise the base is the input's own cluster (a cost graph's "devices"
//     block) when it has one, else `count` devices of kind `device` (default
//     4 × A100-80GB) all linked by that kind's usual interconnect.
//     `device` with an input cluster is a conflict: the input's compute times
//     are for its own devices (replace them all with `cluster`).
//  3. `devices` N changes the count and nothing else. From an input cluster of
//     n devices, device i becomes a copy of device i mod n (kind, memory), and
//     the link a → b is the input's link (a mod n) → (b mod n); two copies of
//     one device are linked by the slowest link that device has in the input
//     (a one-device input: its kind's usual interconnect). N < n keeps the
//     first N devices and their links.
//  4. `memory_per_device_bytes` sets every device's memory and nothing else.
//  5. `cluster` "cpu:KxT" is K devices of T threads on this host
//     (costmodel/host_cpu.h), from `host_calibration` (a file) or the built-in
//     defaults; `host_calibration` with any other cluster is a conflict.
#ifndef AUTOPAR_PIPELINE_CLUSTER_REQUEST_H_
#define AUTOPAR_PIPELINE_CLUSTER_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "costmodel/cluster.h"
#include "costmodel/device.h"

namespace autopar::pipeline {

/// The device kind used when no device is named.
inline constexpr char kDefaultDevicePreset[] = "A100-80GB";
/// The device count when neither a count nor a cluster is given.
inline constexpr int kDefaultDeviceCount = 4;

struct ClusterRequest {
  /// A cluster preset name or cluster file (rule 1).
  std::optional<std::string> cluster;
  /// How many devices (rule 3).
  std::optional<int> devices;
  /// A device preset name or device file (rule 2).
  std::optional<std::string> device;
  /// Every device's memory (rule 4).
  std::optional<int64_t> memory_per_device_bytes;
  /// A host calibration file for a cpu:KxT cluster (rule 5).
  std::optional<std::string> host_calibration;

  bool empty() const {
    return !cluster && !devices && !device && !memory_per_device_bytes && !host_calibration;
  }
};

/// The cluster for `request` over `input_cluster`, the input's own (empty for
/// a model). A request that cannot work with the input fails with
/// RequestConflictError; unreadable files and unknown presets fail as usual.
absl::StatusOr<costmodel::Cluster> ResolveCluster(
    const ClusterRequest& request, const std::optional<costmodel::Cluster>& input_cluster);

/// `cluster` with `count` devices, extended or cut as rule 3 says.
costmodel::Cluster WithDeviceCount(const costmodel::Cluster& cluster, int count);

/// Bandwidth and latency of the usual interconnect between devices of a kind
/// (NVLink for SXM parts, PCIe for T4/L4, host memory for CPUs).
struct Link {
  double bandwidth_bytes_per_s = 0;
  double latency_us = 0;
};
Link DefaultLink(const costmodel::DeviceSpec& device);

/// An InvalidArgument marked as a request that does not fit its input (a
/// flag combination that cannot work), which commands report as a usage
/// error.
inline constexpr char kRequestConflictPayload[] = "autopar/request-conflict";
absl::Status RequestConflictError(absl::string_view message);
inline bool IsRequestConflict(const absl::Status& status) {
  return status.GetPayload(kRequestConflictPayload).has_value();
}

}  // namespace autopar::pipeline

#endif  // AUTOPAR_PIPELINE_CLUSTER_REQUEST_H_
