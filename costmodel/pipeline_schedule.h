// The split training step, simulated stage by stage under a pipeline
// schedule (GPipe or 1F1B).
//
// A training step split over devices is a set of stages — plain models, each
// forward or backward, each on one device — that every one of M micro-batches
// runs through, followed by one update model per device. This file is the
// planner's judge for such a step: it predicts the step's time and each
// device's peak memory, and it decides the order in which each device runs its
// (stage, micro-batch) runs. That order is written into plan.json and the
// runner (tools/runner) executes it exactly, one run at a time per device, each
// run waiting for its inputs. Any order produced here is a witness that the
// runner cannot deadlock: every run started in the simulation after the runs
// it reads from had ended, so the per-device orders are consistent with one
// global order of the runs.
//
// The model (pure: no graph, only the stages' totals):
//  - each device runs one run at a time; run (s, m) is ready when every stage
//    s reads from has finished micro-batch m and its tensors have arrived;
//  - a run is busy for its fixed costs, then compute_us. The fixed costs are
//    those of the whole-stage simulator (costmodel/simulator.h, Note [Stage
//    execution]), charged only when the cluster's ExecutionModel has
//    whole_stages (as there): stage_run_us + cut_us per input tensor + half
//    the bytes of every cut tensor edge at the stage (read, or read by a later
//    stage) / cut_bytes_per_s + hop_busy_us per stage on another device it
//    reads from;
//  - a stage may also have after_us: the device's own work once the run has
//    handed its outputs on (the runner sums the weight gradients the run
//    made). Its device stays busy that long; the run's readers do not wait
//    for it. The run's timeline entry ends with it;
//  - when a run ends its outputs are handed on: to a stage on the same device
//    at once, to another device over the directed link (src, dst), which
//    carries one transfer at a time, first come first served: the transfer
//    holds the link for Cluster::TransferUs and arrives at its end; with
//    hop_us > 0 (and whole_stages) it holds the link for bytes / bandwidth
//    only and arrives hop_us after that;
//  - after its last run a device runs its update once (update_us), then it is
//    done. The step runs from the first start to the last end;
//  - devices that share a host's cores (ExecutionModel::co_run_slowdown s >
//    1) slow each other: while k devices have a run or update in progress,
//    each progresses at 1 / (1 + (s − 1)(k − 1)) of its speed alone, so a
//    run's time is its busy time only while it runs alone (Note [Shared
//    cores] in the .cc). Transfers are not slowed.
// Simplifications, where the whole-stage simulator knows more: each
// StageInput is its own transfer (two stages on one device reading the same
// tensor receive it twice), and memory is only what the stages declare —
// fixed bytes, stashes and the running stage's transient bytes; received
// tensors count only as far as the caller puts them into stash_bytes.
//
// Schedules. The rank of a device is its position when the devices that run
// stages are sorted by their lowest forward stage id (devices with only
// backward stages after them, by their lowest stage id); S is the number of
// such devices. A free device never idles while a run it may start is ready:
//  - GPipe: a device starts no backward run before all its forward runs have
//    ended; among its ready runs of one kind it starts the one with the
//    smallest (micro-batch, stage id).
//  - 1F1B (PipeDream-flush, torch.distributed.pipelining's Schedule1F1B): the
//    device of rank i holds at most cap = min(M, S − i) micro-batches in
//    flight — from the start of the micro-batch's first forward run on the
//    device to the end of its last run there. A free device starts the ready
//    backward run with the smallest (micro-batch, stage id); else the ready
//    forward run of a micro-batch already in flight there (smallest first);
//    else, when fewer than cap are in flight, a ready forward run of the next
//    micro-batch that has not entered the device (micro-batches enter in
//    order). A device with several forward stages (interleaved placements)
//    counts a micro-batch from its first forward run there.
// Neither schedule can stall: the smallest unfinished micro-batch can always
// make progress (it is in flight, or enters a device with nothing in flight).
// The simulation still checks: should no run be able to start while none is
// in progress and runs remain, it returns an InternalError naming the device.
//
// Memory per device: fixed_bytes + the peak over time of the live stashes plus
// the running stage's transient bytes. A forward run's stash is held from its
// start until the micro-batch's last run on that device ends (its last
// backward run there, on a device with backward stages). max_stashes counts
// the micro-batches in flight (as defined for 1F1B) at once.
//
// Events at one time are all applied before any device chooses its next run,
// and ties are broken by creation order, so a result is deterministic.
#ifndef AUTOPAR_COSTMODEL_PIPELINE_SCHEDULE_H_
#define AUTOPAR_COSTMODEL_PIPELINE_SCHEDULE_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"

namespace autopar::costmodel {

enum class PipelineSchedule : uint8_t { kGPipe, k1F1B };

/// "gpipe", "1f1b": the names plan.json and --schedule use.
std::string_view PipelineScheduleName(PipelineSchedule schedule);
/// The schedule with that name; nullopt for any other string.
std::optional<PipelineSchedule> ParsePipelineSchedule(std::string_view name);

enum class StageKind : uint8_t { kForward, kBackward };

/// A tensor a stage reads from an earlier stage, for the same micro-batch (one
/// entry per tensor).
struct StageInput {
  int32_t stage = 0;
  int64_t bytes = 0;
};

struct PipelineStage {
  int32_t device = 0;
  StageKind kind = StageKind::kForward;
  /// One run for one micro-batch, the fixed costs excluded.
  double compute_us = 0;
  /// Cross-stage tensors it reads; their stages have lower ids, and a forward
  /// stage reads no backward stage.
  std::vector<StageInput> inputs;
  /// Forward stage: bytes of its outputs (and received inputs) that backward
  /// runs of the same micro-batch read; held from this run's start until the
  /// micro-batch's last run on this device ends. Ignored on a backward stage.
  int64_t stash_bytes = 0;
  /// Working memory while it runs.
  int64_t transient_bytes = 0;
  /// The device's work after the run has handed its outputs on (the runner's
  /// sum of the weight gradients it made); slowed by shared cores as a run is.
  double after_us = 0;
};

struct PipelineStepProblem {
  /// Ids are indices; ids ascending are a topological order.
  std::vector<PipelineStage> stages;
  /// Per device of the cluster (empty: none): weights, gradient accumulators
  /// and optimizer state.
  std::vector<int64_t> fixed_bytes;
  /// Per device of the cluster (empty: none): the update model, run once after
  /// the device's last run. Devices without stages run no update.
  std::vector<double> update_us;
  int microbatches = 1;
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
};

/// One run; an update run has stage and microbatch -1.
struct StageRun {
  int32_t stage = 0;
  int32_t microbatch = 0;
  int32_t device = 0;
  double start_us = 0;
  double end_us = 0;
};

struct PipelineStepResult {
  /// First start to last end, updates included.
  double step_us = 0;
  /// Per device of the cluster: fixed_bytes + the peak of live stashes plus
  /// the running stage's transient bytes.
  std::vector<int64_t> peak_memory_bytes;
  /// Per device: the most micro-batches whose stash was live at once.
  std::vector<int32_t> max_stashes;
  /// Per device: the (stage, micro-batch) runs in the order run (updates
  /// excluded). This is the order the runner executes.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> order;
  /// Every run, updates included, in the order started.
  std::vector<StageRun> timeline;
  /// Per device: its pipeline position; -1 for a device without stages.
  std::vector<int32_t> rank;
};

/// Simulates one training step of `problem` on `cluster`. InvalidArgument for
/// a malformed problem (a device out of range, a stage reading itself or a
/// later stage, a forward stage reading a backward one, negative sizes or
/// times, per-device vectors of the wrong size, microbatches < 1).
absl::StatusOr<PipelineStepResult> SimulatePipelineStep(const PipelineStepProblem& problem,
                                                        const Cluster& cluster);

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_PIPELINE_SCHEDULE_H_
