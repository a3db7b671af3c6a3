// The `cpu:KxT` cluster: K devices of T intra-op threads each on this host,
// as tools/runner runs a deployment (one worker thread per device, tensors
// handed between workers). Compute times come from the cpu preset for T
// threads (costmodel/device.h; --node-times replaces them with measured ones);
// links, stage and cut overheads and thread scaling from a host calibration,
// which tools/fidelity/calibrate_host.mjs measures:
//
//   { "version": 1, "measured_at": "...", "load_avg_1m": 0.4, "cpu_share": 0.98,
//     "transfer": { "latency_us": 120.0, "bytes_per_s": 3.3e8 },
//     "stage_run_us": 150.0, "hop_us": 50.0, "hop_busy_us": 60.0,
//     "cut_us": 5.0, "cut_bytes_per_s": 2.0e9,
//     "thread_speedup": { "1": 1.0, "2": 1.7 } }
//
// Fields this file does not use are ignored; missing ones keep the defaults of
// DefaultHostCalibration(). A calibration's link, stage and cut costs become
// the cluster's links and ExecutionModel (whole stages, as the runner runs).
#ifndef AUTOPAR_COSTMODEL_HOST_CPU_H_
#define AUTOPAR_COSTMODEL_HOST_CPU_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "costmodel/cluster.h"
#include "nlohmann/json.hpp"

namespace autopar::costmodel {

struct HostCalibration {
  /// Between two worker threads: fixed cost of one hand-over and its rate.
  double transfer_latency_us = 0;
  double transfer_bytes_per_s = 0;
  /// ExecutionModel::stage_run_us, cut_us and cut_bytes_per_s.
  double stage_run_us = 0;
  double cut_us = 0;
  double cut_bytes_per_s = 0;
  /// ExecutionModel::hop_us and hop_busy_us: a hand-over between devices
  /// measured through the runner (chains of tiny stages alternating between
  /// two devices), which costs far more than between bare worker threads.
  double hop_us = 0;
  double hop_busy_us = 0;
  /// Unsplit model: speed-up with T intra-op threads over one thread.
  std::map<int, double> thread_speedup;

  /// The speed-up for `threads`: the measured value, else linear between the
  /// nearest measured thread counts, else beyond the largest measured count
  /// the last measured gain per added thread continues (never below 1).
  double ThreadSpeedup(int threads) const;
};

/// What a `cpu:KxT` cluster assumes without a calibration file, rounded from
/// tools/fidelity/host_calibration.json (a 2-core VM): worker threads handing
/// over tensors by message (10 µs, 10 GB/s: the runner moves buffers, which
/// costs little more than the latency), a stage run of 15 µs (session.run
/// with input binding), a cut tensor edge 5 µs plus its bytes at 2 GB/s (the
/// copies out of one session and into the next, and the layout changes ONNX
/// Runtime makes around them: 0.4–1.6 ms per MB cut was measured on four
/// models, 8–630 µs per edge, so a per-edge constant alone cannot describe
/// both a transformer and a CNN), a hand-over between devices through the
/// runner of 45 µs waiting plus 60 µs of the receiving device's time (chains
/// of tiny stages alternating between two devices: 90–120 µs a hop in all),
/// and two threads 1.7× one
/// thread (the middle of 1.53–1.92× measured for the unsplit exported models
/// on an idle host), more threads gaining 0.7 each.
HostCalibration DefaultHostCalibration();

/// Reads the calibration JSON over the defaults; errors name the field.
absl::StatusOr<HostCalibration> HostCalibrationFromJson(const nlohmann::json& json,
                                                        absl::string_view source);
absl::StatusOr<HostCalibration> LoadHostCalibration(const std::string& path);

/// K and T of "cpu:KxT" (case-insensitive); nullopt for any other name. A
/// name that starts like one but has bad numbers is an InvalidArgument.
absl::StatusOr<std::optional<std::pair<int, int>>> ParseHostCpuClusterName(absl::string_view name);

/// K devices of the cpu:T preset, linked and run as `calibration` says.
Cluster MakeHostCpuCluster(int devices, int threads_per_device, const HostCalibration& calibration);

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_HOST_CPU_H_
