// The stage-level simulation of one pipelined training step (see the header).
#include "costmodel/pipeline_schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace autopar::costmodel {
namespace {

// More runs than this is not a training step but a mistake (and would not fit
// the run ids).
constexpr int64_t kMaxRuns = int64_t{1} << 26;

bool NonNegative(double x) { return x >= 0 && std::isfinite(x); }

absl::Status Validate(const PipelineStepProblem& problem, const Cluster& cluster) {
  const int num_devices = cluster.num_devices();
  if (problem.microbatches < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("microbatches must be at least 1, not ", problem.microbatches));
  }
  if (static_cast<int64_t>(problem.stages.size()) * problem.microbatches > kMaxRuns) {
    return absl::InvalidArgumentError(absl::StrCat(problem.stages.size(), " stages × ",
                                                   problem.microbatches,
                                                   " micro-batches: too many runs"));
  }
  if (!problem.fixed_bytes.empty() && static_cast<int>(problem.fixed_bytes.size()) != num_devices) {
    return absl::InvalidArgumentError(absl::StrCat("fixed_bytes has ", problem.fixed_bytes.size(),
                                                   " entries for ", num_devices, " devices"));
  }
  if (!problem.update_us.empty() && static_cast<int>(problem.update_us.size()) != num_devices) {
    return absl::InvalidArgumentError(absl::StrCat("update_us has ", problem.update_us.size(),
                                                   " entries for ", num_devices, " devices"));
  }
  for (size_t d = 0; d < problem.fixed_bytes.size(); ++d) {
    if (problem.fixed_bytes[d] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("fixed_bytes of device ", d, " is negative"));
    }
  }
  for (size_t d = 0; d < problem.update_us.size(); ++d) {
    if (!NonNegative(problem.update_us[d])) {
      return absl::InvalidArgumentError(
          absl::StrCat("update_us of device ", d, " is not a time: ", problem.update_us[d]));
    }
  }
  for (size_t s = 0; s < problem.stages.size(); ++s) {
    const PipelineStage& stage = problem.stages[s];
    if (stage.device < 0 || stage.device >= num_devices) {
      return absl::InvalidArgumentError(absl::StrCat("stage ", s, " is on device ", stage.device,
                                                     "; the cluster has ", num_devices));
    }
    if (!NonNegative(stage.compute_us) || !NonNegative(stage.after_us)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "stage ", s, " has compute_us ", stage.compute_us, ", after_us ", stage.after_us));
    }
    if (stage.stash_bytes < 0 || stage.transient_bytes < 0) {
      return absl::InvalidArgumentError(absl::StrCat("stage ", s, " has negative bytes"));
    }
    for (const StageInput& input : stage.inputs) {
      if (input.stage < 0 || static_cast<size_t>(input.stage) >= s) {
        return absl::InvalidArgumentError(
            absl::StrCat("stage ", s, " reads stage ", input.stage,
                         "; a stage reads only stages with lower ids"));
      }
      if (stage.kind == StageKind::kForward &&
          problem.stages[input.stage].kind == StageKind::kBackward) {
        return absl::InvalidArgumentError(
            absl::StrCat("forward stage ", s, " reads backward stage ", input.stage));
      }
      if (input.bytes < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("stage ", s, " reads ", input.bytes, " bytes from stage ", input.stage));
      }
    }
  }
  return absl::OkStatus();
}

// (micro-batch, stage): the order in which a device prefers its ready runs.
using RunKey = std::pair<int32_t, int32_t>;

class StepSimulation {
 public:
  StepSimulation(const PipelineStepProblem& problem, const Cluster& cluster)
      : problem_(problem),
        cluster_(cluster),
        num_stages_(static_cast<int32_t>(problem.stages.size())),
        num_devices_(cluster.num_devices()),
        microbatches_(problem.microbatches) {}

  absl::StatusOr<PipelineStepResult> Run();

 private:
  // kRunEnded: a run's outputs are ready; kAfterEnded: its after_us too.
  enum EventKind : uint8_t { kRunEnded, kAfterEnded, kInputArrived, kUpdateEnded };
  struct Event {
    double time;
    uint64_t seq;
    EventKind kind;
    int64_t id;  // kUpdateEnded: the device; the others: the run
  };
  struct EventLater {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  struct DeviceState {
    std::vector<int32_t> stages;  // ascending
    int32_t runs_total = 0;
    int32_t runs_done = 0;
    int32_t forward_runs_left = 0;
    bool busy = false;
    bool updated = false;
    int32_t rank = -1;
    int32_t cap = 0;
    std::set<RunKey> ready_forward, ready_backward;
    // Per micro-batch: its runs here not yet ended; whether it has entered
    // (a forward run started); the stash bytes it holds.
    std::vector<int32_t> runs_left;
    std::vector<uint8_t> entered;
    std::vector<int64_t> stash;
    int32_t next_new = 0;  // the next micro-batch to enter
    int32_t in_flight = 0;
    int64_t live_stash_bytes = 0;
    int64_t peak_bytes = 0;  // above fixed_bytes
    int32_t max_in_flight = 0;
    // The timeline entry of the run or update in progress. With shared cores
    // (Note [Shared cores]) also: its work left at full speed, its end event.
    bool working = false;
    double work_left_us = 0;
    size_t timeline_index = 0;
    EventKind end_kind = kRunEnded;
    int64_t end_id = 0;
  };

  int64_t RunId(int32_t stage, int32_t microbatch) const {
    return static_cast<int64_t>(microbatch) * num_stages_ + stage;
  }
  void Prepare();
  void Push(double time, EventKind kind, int64_t id) {
    events_.push(Event{time, next_seq_++, kind, id});
  }
  void MakeReady(int64_t run);
  // The run the free device starts now, or nullopt.
  std::optional<RunKey> Choose(const DeviceState& device) const;
  void Dispatch(int32_t d, double now);
  void Start(int32_t d, RunKey key, double now);
  // Puts a run (or update) of `work_us` on device d from `now` into the
  // timeline and schedules its end.
  void Begin(int32_t d, double now, double work_us, int32_t stage, int32_t microbatch,
             EventKind end_kind, int64_t end_id);
  // Device d works `work_us` more from `now` on its current timeline entry,
  // which then ends with the end event.
  void Work(int32_t d, double now, double work_us, EventKind end_kind, int64_t end_id);
  // Shared cores: moves the work in progress on from `now` to the earlier of
  // `limit` and the first end, where it pushes the end events.
  void AdvanceWork(double now, double limit);
  // A run's work is done: its outputs are handed on, its stash may end; the
  // device goes on with the stage's after_us, if any, before it is free.
  void EndRun(int64_t run, double now);
  void FreeAfterRun(int64_t run);
  void EndMicrobatchOnDevice(DeviceState& device, int32_t m);
  absl::Status Stuck() const;

  const PipelineStepProblem& problem_;
  const Cluster& cluster_;
  const int32_t num_stages_;
  const int32_t num_devices_;
  const int32_t microbatches_;
  bool whole_stages_ = false;
  double hop_us_ = 0;
  double co_run_slowdown_ = 1;
  int32_t working_ = 0;  // devices with work in progress (shared cores only)

  std::vector<double> busy_us_;  // per stage: fixed costs + compute
  // Per stage: the (reading stage, input index) of every input read from it,
  // by reading stage then index.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> readers_;
  std::vector<int32_t> pending_;  // per run: inputs not yet arrived
  std::vector<double> link_free_us_;
  std::vector<DeviceState> devices_;
  std::priority_queue<Event, std::vector<Event>, EventLater> events_;
  uint64_t next_seq_ = 0;
  int64_t runs_left_ = 0;
  int32_t devices_left_ = 0;  // devices not yet through their update
  PipelineStepResult result_;
};

void StepSimulation::Prepare() {
  const ExecutionModel& execution = cluster_.execution;
  whole_stages_ = execution.whole_stages;
  hop_us_ = whole_stages_ ? execution.hop_us : 0;
  co_run_slowdown_ = execution.co_run_slowdown;

  readers_.assign(num_stages_, {});
  std::vector<double> cut_bytes(num_stages_, 0);
  for (int32_t s = 0; s < num_stages_; ++s) {
    const PipelineStage& stage = problem_.stages[s];
    for (size_t k = 0; k < stage.inputs.size(); ++k) {
      const StageInput& input = stage.inputs[k];
      readers_[input.stage].emplace_back(s, static_cast<int32_t>(k));
      const double half = 0.5 * static_cast<double>(input.bytes);
      cut_bytes[s] += half;
      cut_bytes[input.stage] += half;
    }
  }
  busy_us_.assign(num_stages_, 0);
  for (int32_t s = 0; s < num_stages_; ++s) {
    const PipelineStage& stage = problem_.stages[s];
    double fixed_us = 0;
    if (whole_stages_) {
      std::set<int32_t> other_device_producers;
      for (const StageInput& input : stage.inputs) {
        if (problem_.stages[input.stage].device != stage.device) {
          other_device_producers.insert(input.stage);
        }
      }
      fixed_us = execution.stage_run_us +
                 execution.cut_us * static_cast<double>(stage.inputs.size()) +
                 execution.hop_busy_us * static_cast<double>(other_device_producers.size());
      if (execution.cut_bytes_per_s > 0) fixed_us += cut_bytes[s] / execution.cut_bytes_per_s * 1e6;
    }
    busy_us_[s] = fixed_us + stage.compute_us;
  }

  // Devices, their ranks and caps.
  devices_.assign(num_devices_, {});
  for (int32_t s = 0; s < num_stages_; ++s) {
    DeviceState& device = devices_[problem_.stages[s].device];
    device.stages.push_back(s);
    device.runs_total += microbatches_;
    if (problem_.stages[s].kind == StageKind::kForward) device.forward_runs_left += microbatches_;
  }
  std::vector<std::pair<int64_t, int32_t>> by_first_stage;  // (sort key, device)
  for (int32_t d = 0; d < num_devices_; ++d) {
    const DeviceState& device = devices_[d];
    if (device.stages.empty()) continue;
    int64_t key = int64_t{num_stages_} + device.stages.front();
    for (int32_t s : device.stages) {
      if (problem_.stages[s].kind == StageKind::kForward) {
        key = s;
        break;
      }
    }
    by_first_stage.emplace_back(key, d);
  }
  std::sort(by_first_stage.begin(), by_first_stage.end());
  const auto num_used = static_cast<int32_t>(by_first_stage.size());
  for (int32_t i = 0; i < num_used; ++i) {
    DeviceState& device = devices_[by_first_stage[i].second];
    device.rank = i;
    device.cap = std::min(microbatches_, num_used - i);
    device.runs_left.assign(microbatches_, static_cast<int32_t>(device.stages.size()));
    device.entered.assign(microbatches_, 0);
    device.stash.assign(microbatches_, 0);
  }
  devices_left_ = num_used;

  pending_.assign(static_cast<size_t>(num_stages_) * microbatches_, 0);
  for (int32_t m = 0; m < microbatches_; ++m) {
    for (int32_t s = 0; s < num_stages_; ++s) {
      pending_[RunId(s, m)] = static_cast<int32_t>(problem_.stages[s].inputs.size());
    }
  }
  runs_left_ = static_cast<int64_t>(num_stages_) * microbatches_;
  link_free_us_.assign(static_cast<size_t>(num_devices_) * num_devices_, 0);

  result_.peak_memory_bytes.assign(num_devices_, 0);
  result_.max_stashes.assign(num_devices_, 0);
  result_.order.assign(num_devices_, {});
  result_.rank.assign(num_devices_, -1);
  result_.timeline.clear();
  result_.timeline.reserve(static_cast<size_t>(runs_left_) + num_used);
}

void StepSimulation::MakeReady(int64_t run) {
  const auto s = static_cast<int32_t>(run % num_stages_);
  const auto m = static_cast<int32_t>(run / num_stages_);
  const PipelineStage& stage = problem_.stages[s];
  DeviceState& device = devices_[stage.device];
  (stage.kind == StageKind::kForward ? device.ready_forward : device.ready_backward).emplace(m, s);
}

std::optional<RunKey> StepSimulation::Choose(const DeviceState& device) const {
  if (problem_.schedule == PipelineSchedule::kGPipe) {
    if (!device.ready_forward.empty()) return *device.ready_forward.begin();
    if (device.forward_runs_left == 0 && !device.ready_backward.empty()) {
      return *device.ready_backward.begin();
    }
    return std::nullopt;
  }
  if (!device.ready_backward.empty()) return *device.ready_backward.begin();
  for (const RunKey& key : device.ready_forward) {
    const int32_t m = key.first;
    if (device.entered[m]) return key;
    // Micro-batches enter in order: every later ready run is of one that may
    // not enter yet.
    if (m != device.next_new || device.in_flight >= device.cap) break;
    return key;
  }
  return std::nullopt;
}

void StepSimulation::Dispatch(int32_t d, double now) {
  DeviceState& device = devices_[d];
  if (device.busy || device.updated || device.stages.empty()) return;
  if (device.runs_done == device.runs_total) {
    // The update, once, after the device's last run.
    const double update_us = problem_.update_us.empty() ? 0 : problem_.update_us[d];
    device.busy = true;
    device.updated = true;
    Begin(d, now, update_us, -1, -1, kUpdateEnded, d);
    return;
  }
  if (std::optional<RunKey> key = Choose(device)) Start(d, *key, now);
}

void StepSimulation::Start(int32_t d, RunKey key, double now) {
  DeviceState& device = devices_[d];
  const auto [m, s] = key;
  const PipelineStage& stage = problem_.stages[s];
  if (stage.kind == StageKind::kForward) {
    device.ready_forward.erase(key);
    --device.forward_runs_left;
    if (!device.entered[m]) {
      device.entered[m] = 1;
      device.next_new = std::max(device.next_new, m + 1);
      ++device.in_flight;
      device.max_in_flight = std::max(device.max_in_flight, device.in_flight);
    }
    device.stash[m] += stage.stash_bytes;
    device.live_stash_bytes += stage.stash_bytes;
  } else {
    device.ready_backward.erase(key);
  }
  device.peak_bytes = std::max(device.peak_bytes, device.live_stash_bytes + stage.transient_bytes);
  device.busy = true;
  result_.order[d].emplace_back(s, m);
  Begin(d, now, busy_us_[s], s, m, kRunEnded, RunId(s, m));
}

// Note [Shared cores]: with ExecutionModel::co_run_slowdown s > 1 the devices
// are processors sharing the host. A run is work (its time alone); while k
// devices have work in progress, each does it at 1 / (1 + (s − 1)(k − 1)) of
// full speed, so a run's end depends on what the others start and end
// meanwhile. Its end event is pushed only once AdvanceWork reaches it. With
// s = 1 a run simply ends its work later, as before.
void StepSimulation::Begin(int32_t d, double now, double work_us, int32_t stage, int32_t microbatch,
                           EventKind end_kind, int64_t end_id) {
  result_.timeline.push_back(StageRun{stage, microbatch, d, now, now});
  devices_[d].timeline_index = result_.timeline.size() - 1;
  Work(d, now, work_us, end_kind, end_id);
}

void StepSimulation::Work(int32_t d, double now, double work_us, EventKind end_kind,
                          int64_t end_id) {
  DeviceState& device = devices_[d];
  if (co_run_slowdown_ <= 1) {
    result_.timeline[device.timeline_index].end_us = now + work_us;
    Push(now + work_us, end_kind, end_id);
    return;
  }
  device.working = true;
  device.work_left_us = work_us;
  device.end_kind = end_kind;
  device.end_id = end_id;
  ++working_;
}

void StepSimulation::AdvanceWork(double now, double limit) {
  const double slowdown = 1 + (co_run_slowdown_ - 1) * (working_ - 1);
  double first_end = std::numeric_limits<double>::infinity();
  for (const DeviceState& device : devices_) {
    if (device.working) first_end = std::min(first_end, now + device.work_left_us * slowdown);
  }
  const double until = std::min(limit, first_end);
  for (DeviceState& device : devices_) {
    if (!device.working) continue;
    if (now + device.work_left_us * slowdown <= until) {
      device.working = false;
      device.work_left_us = 0;
      --working_;
      result_.timeline[device.timeline_index].end_us = until;
      Push(until, device.end_kind, device.end_id);
    } else {
      device.work_left_us -= (until - now) / slowdown;
    }
  }
}

void StepSimulation::EndMicrobatchOnDevice(DeviceState& device, int32_t m) {
  device.live_stash_bytes -= device.stash[m];
  device.stash[m] = 0;
  if (device.entered[m]) --device.in_flight;
}

void StepSimulation::EndRun(int64_t run, double now) {
  const auto s = static_cast<int32_t>(run % num_stages_);
  const auto m = static_cast<int32_t>(run / num_stages_);
  const int32_t d = problem_.stages[s].device;
  DeviceState& device = devices_[d];
  if (--device.runs_left[m] == 0) EndMicrobatchOnDevice(device, m);
  if (problem_.stages[s].after_us > 0) {
    Work(d, now, problem_.stages[s].after_us, kAfterEnded, run);
  } else {
    FreeAfterRun(run);
  }

  for (const auto& [reader, k] : readers_[s]) {
    const int64_t reader_run = RunId(reader, m);
    const int32_t dst = problem_.stages[reader].device;
    if (dst == d) {
      if (--pending_[reader_run] == 0) MakeReady(reader_run);
      continue;
    }
    const int64_t bytes = problem_.stages[reader].inputs[k].bytes;
    double& link_free = link_free_us_[static_cast<size_t>(d) * num_devices_ + dst];
    const double start = std::max(now, link_free);
    double arrival = start + cluster_.TransferUs(d, dst, bytes);
    link_free = arrival;
    if (hop_us_ > 0) {
      // The runner's hand-over: the link carries the bytes, the hop is latency.
      link_free -= cluster_.latency_us(d, dst);
      arrival = link_free + hop_us_;
    }
    Push(arrival, kInputArrived, reader_run);
  }
}

void StepSimulation::FreeAfterRun(int64_t run) {
  DeviceState& device = devices_[problem_.stages[run % num_stages_].device];
  device.busy = false;
  ++device.runs_done;
  --runs_left_;
}

absl::Status StepSimulation::Stuck() const {
  for (int32_t d = 0; d < num_devices_; ++d) {
    const DeviceState& device = devices_[d];
    if (device.runs_done == device.runs_total) continue;
    return absl::InternalError(absl::StrCat(
        "the ", std::string(PipelineScheduleName(problem_.schedule)),
        " schedule is stuck on device ", d, " (rank ", device.rank,
        "): ", device.runs_total - device.runs_done, " of its ", device.runs_total, " runs left, ",
        absl::StrCat(device.ready_forward.size(), " forward and ", device.ready_backward.size(),
                     " backward runs ready, ", device.in_flight,
                     " micro-batches in flight of at most ", device.cap)));
  }
  return absl::InternalError("the pipeline schedule is stuck");
}

absl::StatusOr<PipelineStepResult> StepSimulation::Run() {
  Prepare();
  for (int32_t m = 0; m < microbatches_; ++m) {
    for (int32_t s = 0; s < num_stages_; ++s) {
      if (pending_[RunId(s, m)] == 0) MakeReady(RunId(s, m));
    }
  }
  double now = 0;
  for (int32_t d = 0; d < num_devices_; ++d) Dispatch(d, now);
  while (true) {
    if (working_ > 0) {
      AdvanceWork(now,
                  events_.empty() ? std::numeric_limits<double>::infinity() : events_.top().time);
    }
    if (events_.empty()) break;
    // Apply every event of this instant, then let the free devices choose.
    now = events_.top().time;
    while (!events_.empty() && events_.top().time == now) {
      const Event event = events_.top();
      events_.pop();
      switch (event.kind) {
        case kRunEnded:
          EndRun(event.id, now);
          break;
        case kAfterEnded:
          FreeAfterRun(event.id);
          break;
        case kInputArrived:
          if (--pending_[event.id] == 0) MakeReady(event.id);
          break;
        case kUpdateEnded:
          devices_[event.id].busy = false;
          --devices_left_;
          break;
      }
    }
    for (int32_t d = 0; d < num_devices_; ++d) Dispatch(d, now);
  }
  if (runs_left_ > 0 || devices_left_ > 0) return Stuck();

  double first = std::numeric_limits<double>::infinity(), last = 0;
  for (const StageRun& run : result_.timeline) {
    first = std::min(first, run.start_us);
    last = std::max(last, run.end_us);
  }
  result_.step_us = result_.timeline.empty() ? 0 : last - first;
  for (int32_t d = 0; d < num_devices_; ++d) {
    const DeviceState& device = devices_[d];
    const int64_t fixed = problem_.fixed_bytes.empty() ? 0 : problem_.fixed_bytes[d];
    result_.peak_memory_bytes[d] = fixed + device.peak_bytes;
    result_.max_stashes[d] = device.max_in_flight;
    result_.rank[d] = device.rank;
  }
  return std::move(result_);
}

}  // namespace

std::string_view PipelineScheduleName(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::kGPipe:
      return "gpipe";
    case PipelineSchedule::k1F1B:
      return "1f1b";
  }
  return "unknown";
}

std::optional<PipelineSchedule> ParsePipelineSchedule(std::string_view name) {
  if (name == "gpipe") return PipelineSchedule::kGPipe;
  if (name == "1f1b") return PipelineSchedule::k1F1B;
  return std::nullopt;
}

absl::StatusOr<PipelineStepResult> SimulatePipelineStep(const PipelineStepProblem& problem,
                                                        const Cluster& cluster) {
  if (absl::Status status = Validate(problem, cluster); !status.ok()) return status;
  return StepSimulation(problem, cluster).Run();
}

}  // namespace autopar::costmodel
