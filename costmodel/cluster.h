// Cluster: the devices a model is placed on and the links between them.
// Devices may differ (speed, memory); every ordered pair of
// devices has a bandwidth and a latency.
#ifndef AUTOPAR_COSTMODEL_CLUSTER_H_
#define AUTOPAR_COSTMODEL_CLUSTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/device.h"
#include "nlohmann/json.hpp"

namespace autopar::costmodel {

struct ClusterDevice {
  std::string name;  // "gpu0"
  /// Index into Cluster::kinds: devices of one kind share compute times.
  int kind = 0;
  int64_t memory_bytes = 0;
};

/// How the devices run a plan, beyond its nodes and transfers
/// (costmodel/simulator.h, Note [Stage execution]).
struct ExecutionModel {
  /// Each device runs whole stages, as tools/runner runs the stage models: a
  /// stage starts when all its inputs for a micro-batch have arrived, runs
  /// to its end, and only then hands its outputs on. Otherwise a device runs
  /// node by node (device models joined by Send/Recv).
  bool whole_stages = false;
  /// Fixed cost of one stage run for one micro-batch (session launch, input
  /// binding); only with whole_stages.
  double stage_run_us = 0;
  /// Extra cost of each tensor edge cut between stages, per micro-batch (the
  /// runtime loses fusions and layout choices across a cut), charged to the
  /// reading stage; only with whole_stages.
  double cut_us = 0;
  /// The part of a cut that grows with the tensor: its bytes are copied out
  /// of the producing stage's session and into the reading one's (and
  /// re-laid out, e.g. to and from ONNX Runtime's blocked NCHWc), at this
  /// rate; half of each cut edge's bytes / rate is charged to the producing
  /// stage, half to the reading one. 0: no such cost. Only with whole_stages.
  double cut_bytes_per_s = 0;
  /// A hand-over between devices as the runner does it: a stage's outputs
  /// for one micro-batch posted to another device's worker, which wakes up
  /// and schedules the reader. Each tensor arrives hop_us after its bytes
  /// have crossed the link (in place of the link's latency, and without
  /// holding the link), and the reading stage's device is busy hop_busy_us
  /// per other-device stage it reads from. Only with whole_stages; hop_us 0
  /// keeps the link's latency.
  double hop_us = 0;
  double hop_busy_us = 0;
  /// Devices that share one host's cores (the threads of `cpu:KxT`) slow each
  /// other down: two running at once each take co_run_slowdown times as long
  /// as alone, and k at once 1 + (co_run_slowdown − 1)(k − 1) times. 1:
  /// independent devices. Measured with the node times
  /// (tools/fidelity/measure_step.mjs, Note [Co-run slowdown]); only the
  /// pipeline step simulator (costmodel/pipeline_schedule.h) models it.
  double co_run_slowdown = 1;

  bool operator==(const ExecutionModel&) const = default;
};

/// For a cluster of worker threads on this host (`cpu:KxT`): what running
/// the whole model on one device with all K × T threads would gain.
struct HostThreads {
  int devices = 1;
  int threads_per_device = 1;
  /// Measured speed-ups of the unsplit model over one thread: with T and with
  /// K × T intra-op threads.
  double speedup_per_device = 1;
  double speedup_all_threads = 1;

  /// The step of the unsplit model on one device with all K x T threads,
  /// from the step of one device of the cluster (T threads).
  double AllThreadsStepUs(double one_device_step_us) const {
    return one_device_step_us * speedup_per_device / speedup_all_threads;
  }
};

class Cluster {
 public:
  /// Distinct device models; a CostGraph has one compute time per kind.
  std::vector<DeviceSpec> kinds;
  std::vector<ClusterDevice> devices;
  /// Node by node without overheads unless a preset or file says otherwise.
  ExecutionModel execution;
  /// Set for `cpu:KxT` clusters (costmodel/host_cpu.h).
  std::optional<HostThreads> host;

  int num_devices() const { return static_cast<int>(devices.size()); }
  const ClusterDevice& device(int d) const { return devices[d]; }

  /// Link parameters of the directed pair (src, dst), src != dst.
  double bandwidth_bytes_per_s(int src, int dst) const {
    return bandwidth_[static_cast<size_t>(src) * devices.size() + dst];
  }
  double latency_us(int src, int dst) const {
    return latency_us_[static_cast<size_t>(src) * devices.size() + dst];
  }
  /// Sizes the link tables for the current devices, every link set to the
  /// same bandwidth and latency.
  void InitLinks(double bandwidth_bytes_per_s, double latency_us);
  /// Sets the directed link src → dst (after InitLinks).
  void SetLink(int src, int dst, double bandwidth_bytes_per_s, double latency_us);

  /// Time to move `bytes` from src to dst: latency + bytes / bandwidth; 0 on
  /// the same device.
  double TransferUs(int src, int dst, int64_t bytes) const {
    if (src == dst) return 0;
    return latency_us(src, dst) +
           static_cast<double>(bytes) / bandwidth_bytes_per_s(src, dst) * 1e6;
  }

  /// Sum of the devices' memories.
  int64_t TotalMemoryBytes() const;

  /// Checks sizes, positive bandwidths and memories, kind indices.
  absl::Status Validate() const;

 private:
  std::vector<double> bandwidth_;  // [src * n + dst], bytes/s
  std::vector<double> latency_us_;
};

/// `count` devices of one kind, fully connected with one link type.
/// `memory_bytes` 0 means the device's own memory.
Cluster MakeHomogeneousCluster(const DeviceSpec& device, int count, int64_t memory_bytes,
                               double link_bandwidth_bytes_per_s, double link_latency_us);

/// Built-in topologies: "4xV100-nvlink", "8xA100-nvlink", "2x4xA100-nvlink-pcie" (two
/// NVLink islands of four over PCIe), "4xT4-pcie", "2xH200", "4xH100-nvlink", "8xcpu".
absl::StatusOr<Cluster> LookupClusterPreset(const std::string& name);
std::vector<std::string> ClusterPresetNames();

/// Reads the cluster JSON format (documented in the README); errors name the
/// offending field.
absl::StatusOr<Cluster> ClusterFromJson(const nlohmann::json& json);
absl::StatusOr<Cluster> LoadClusterFile(const std::string& path);
nlohmann::ordered_json ClusterToJson(const Cluster& cluster);

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_CLUSTER_H_
