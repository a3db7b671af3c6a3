// The event simulator: the referee that judges every placement.
//
// One step of a placement is simulated event by event:
//  - each device runs one unit at a time, choosing among its ready units the
//    one with the best priority (the placement's schedule, or by default the
//    longest remaining path to the end: "bottom level");
//  - each directed link carries one transfer at a time, first come first
//    served; compute and transfers overlap;
//  - a unit's output tensor crosses to each other device that reads it once;
//  - a unit starts when all its input tensors are present on its device.
// With M micro-batches every unit runs M times (Note [Micro-batches]).
//
// Memory per device = the distinct parameter blocks of its units (a weight
// read on two devices is counted on both) + the peak of live activations:
// a unit's outputs and workspace are allocated when it starts, the workspace
// freed when it ends, an output when its last local reader has finished and
// its last send has left; a received copy lives from the start of its
// transfer until its last reader on that device has finished. Graph outputs
// stay until the end.
//
// Note [Micro-batches]: the model as given is ONE micro-batch (PiPPy's
// convention: export the model at the micro-batch size), and a step runs M of
// them through the placement. Every cost is the cost of the shapes in the
// file; nothing is scaled by 1/M. Each micro-batch has its own activations
// (allocated and freed as above, so the memory counts the micro-batches in
// flight); weights are shared. A device that is free starts, among its ready
// units, the one with the smallest micro-batch index, then the best priority:
// micro-batch m before m + 1, which for forward-only inference is the GPipe /
// 1F1B fill order, and which the runner (tools/runner) follows too. The step
// runs from the first start of micro-batch 0 to the last end of micro-batch
// M - 1, so one device running everything takes M times its one-batch time.
//
// Note [Stage execution]: with Cluster::execution.whole_stages (the runner's
// way: `cpu:KxT` clusters) a device runs stages, not units. A unit's stage is
// (level, device), level being the greatest number of cross-device hops on a
// path to it (a Constant's output is copied, not sent: no hop), numbered in
// (level, device) order — the stages passes/partition.h writes (a Constant
// joins its device's first stage: the rewriter copies it where it is read, so
// no other stage receives it or waits for it). A stage for micro-batch m
// becomes ready when every tensor it reads from another stage has arrived for
// m; a free device starts the ready stage with the smallest
// (micro-batch, stage index); it is busy for stage_run_us + cut_us per tensor
// it reads from another stage + half the bytes of every tensor edge cut at
// it (read from or sent to another stage, Constants aside: they are copied
// into the stage) / cut_bytes_per_s + hop_busy_us per stage on another device
// it reads from, then runs the stage's units one after another,
// and only when the last has ended are its outputs sent on (or handed to the
// device's later stages). With hop_us > 0 a tensor sent to another device
// holds the link for its bytes only and arrives hop_us after that (the
// runner's hand-over: one message, the receiving worker woken), in place of
// the link's latency. Memory is counted unit by unit as above.
//
// Run() allocates only on its first calls; afterwards it reuses its buffers
// (TGA calls it thousands of times). Cost: O((V + E·D) log V) per run.
#ifndef AUTOPAR_COSTMODEL_SIMULATOR_H_
#define AUTOPAR_COSTMODEL_SIMULATOR_H_

#include <cstdint>
#include <vector>

#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"

namespace autopar::costmodel {

/// Where each unit runs and, optionally, in what order.
struct Placement {
  /// Device of each unit.
  std::vector<int32_t> device;
  /// Per unit, lower runs first among ready units on a device. Empty: the
  /// simulator's default (bottom level).
  std::vector<double> priority;
};

struct SimulationOptions {
  int microbatches = 1;
  /// Fill SimulationResult::timeline (for reports; costs memory).
  bool record_timeline = false;
};

struct TimelineEntry {
  enum class Kind : uint8_t { kCompute, kTransfer };
  Kind kind = Kind::kCompute;
  uint32_t unit = 0;    // kCompute: the unit; kTransfer: the producing unit
  uint32_t tensor = 0;  // kTransfer: the tensor
  int32_t device = 0;   // kCompute: the device; kTransfer: the source
  int32_t dst = 0;      // kTransfer: the destination
  int32_t microbatch = 0;
  double start_us = 0;
  double end_us = 0;
};

struct DeviceUsage {
  double busy_us = 0;
  int32_t units = 0;
  int64_t param_bytes = 0;
  int64_t peak_activation_bytes = 0;
  /// param_bytes + peak_activation_bytes.
  int64_t peak_memory_bytes = 0;
};

struct SimulationResult {
  double step_time_us = 0;
  std::vector<DeviceUsage> devices;
  /// Bytes sent over each directed link, [src * num_devices + dst].
  std::vector<int64_t> link_bytes;
  int64_t comm_bytes = 0;
  int64_t transfers = 0;
  /// Some device's peak memory exceeds its capacity.
  bool memory_overflow = false;
  /// Sum over devices of the bytes above capacity (0 when it fits).
  int64_t overflow_bytes = 0;
  std::vector<TimelineEntry> timeline;
};

/// Every unit on an existing device; priorities, if given, one per unit.
absl::Status CheckPlacement(const CostGraph& graph, const Cluster& cluster,
                            const Placement& placement);

class Simulator {
 public:
  /// At most this many devices (parameter sharing is tracked in a bit mask).
  static constexpr int kMaxDevices = 64;

  /// Both must outlive the simulator.
  Simulator(const CostGraph& graph, const Cluster& cluster);

  /// Simulates one step. The result is valid until the next call. The
  /// placement must pass CheckPlacement.
  const SimulationResult& Run(const Placement& placement, const SimulationOptions& options = {});

  /// The default priorities: minus the bottom level (longest path to an exit
  /// through fastest-kind compute times), so critical units go first.
  const std::vector<double>& default_priority() const { return default_priority_; }

  /// After a run with whole stages (Note [Stage execution]): each unit's
  /// stage, and how many stages there are; empty otherwise.
  const std::vector<uint32_t>& stage_of_unit() const { return stage_of_; }
  uint32_t num_stages() const { return num_stages_; }

 private:
  struct Event {
    double time;
    uint64_t seq;   // ties broken by creation order: deterministic
    uint32_t kind;  // 0 = unit instance finished, 1 = copy instance arrived,
                    // 2 = a stage instance's fixed costs are paid
    uint32_t id;
  };
  struct EventLater {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  struct Ready {
    int32_t microbatch;
    double priority;
    uint32_t instance;
  };
  struct ReadyLater {
    bool operator()(const Ready& a, const Ready& b) const {
      if (a.microbatch != b.microbatch) return a.microbatch > b.microbatch;
      if (a.priority != b.priority) return a.priority > b.priority;
      return a.instance > b.instance;
    }
  };

  void Prepare(const Placement& placement, int microbatches);
  void PushEvent(double time, uint32_t kind, uint32_t id);
  void MakeReady(uint32_t instance);
  void StartUnits(int device, double now);
  void FinishUnit(uint32_t instance, double now);
  void ArriveCopy(uint32_t copy_instance, double now);
  void Allocate(int device, int64_t bytes);
  void Release(int device, int64_t bytes) { live_[device] -= bytes; }
  void ReleaseInputs(uint32_t instance);
  // Whole stages (Note [Stage execution]).
  void AssignStages();
  void PrepareStageInputs();
  void MakeStageReady(uint32_t stage_instance);
  void SendCopies(uint32_t m, uint32_t t, double now);
  void BeginStage(uint32_t stage_instance, double now);
  void RunStageUnits(uint32_t stage_instance, double now);
  void FinishStage(uint32_t stage_instance, double now);
  // One input of every stage reading tensor t (micro-batch m) on `device` other
  // than the producer's stage has arrived.
  void DeliverToStages(uint32_t m, uint32_t t, int device);

  const CostGraph& graph_;
  const Cluster& cluster_;
  std::vector<double> default_priority_;

  // Per-run state, reused across runs (see the class comment).
  const Placement* placement_ = nullptr;
  int microbatches_ = 1;
  SimulationOptions options_;
  SimulationResult result_;
  std::vector<Event> events_;
  uint64_t next_seq_ = 0;
  std::vector<std::vector<Ready>> ready_;  // per device heap
  std::vector<uint8_t> device_busy_;
  std::vector<int64_t> live_;
  std::vector<uint32_t> pending_;    // per unit instance: inputs not yet present
  std::vector<int32_t> local_refs_;  // per tensor instance: local readers + sends left
  // Remote copies: per tensor, the devices it is sent to (CSR over tensors).
  std::vector<uint32_t> copy_offsets_;
  std::vector<int32_t> copy_device_;
  std::vector<uint32_t> copy_tensor_;
  std::vector<int32_t> copy_readers_;    // readers of the copy on its device
  std::vector<int32_t> copy_refs_;       // per copy instance: readers left
  std::vector<uint32_t> edge_copy_;      // per edge: its copy, or kLocal
  std::vector<uint64_t> param_devices_;  // per parameter: bit d = read on device d
  std::vector<int32_t> copy_of_device_;  // scratch while building copies
  std::vector<double> link_free_us_;     // per directed link: when it is next free

  // Whole stages (Note [Stage execution]); unused otherwise.
  bool whole_stages_ = false;
  double hop_us_ = 0;  // ExecutionModel::hop_us with whole stages, else 0
  uint32_t num_stages_ = 0;
  std::vector<uint32_t> stage_of_;            // per unit
  std::vector<int32_t> unit_level_;           // per unit
  std::vector<int32_t> stage_device_;         // per stage
  std::vector<uint32_t> stage_unit_offsets_;  // CSR over stages: their units, ascending
  std::vector<uint32_t> stage_units_;
  std::vector<uint32_t> stage_inputs_;           // per stage: tensors it reads from other stages
  std::vector<double> stage_cut_bytes_;          // per stage: half the bytes cut at it
  std::vector<uint32_t> stage_hops_in_;          // per stage: other-device stages it reads from
  std::vector<uint64_t> hop_pairs_;              // scratch: (reader stage, producer stage)
  std::vector<uint32_t> stage_pending_;          // per stage instance: inputs not yet present
  std::vector<uint32_t> stage_units_left_;       // per stage instance
  std::vector<std::vector<Ready>> stage_ready_;  // per device heap of stage instances
  std::vector<int64_t> running_stage_;           // per device: stage instance, or -1
  std::vector<uint32_t> stage_mark_;             // scratch: dedupes reader stages
  uint32_t mark_epoch_ = 0;
  std::vector<uint32_t> stage_of_key_;           // scratch: (level, device) -> stage
  std::vector<uint32_t> first_stage_of_device_;  // scratch
  std::vector<uint32_t> scratch_offsets_;        // scratch: filling stage_units_
  std::vector<uint8_t> is_constant_;             // per unit: a Constant (copied, never sent)
  static constexpr uint32_t kNoStage = 0xffffffffu;
};

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_SIMULATOR_H_
