#include "costmodel/simulator.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace autopar::costmodel {
namespace {

constexpr uint32_t kLocal = std::numeric_limits<uint32_t>::max();
// With whole stages, an edge from a Constant in another stage: the rewriter
// copies the Constant into the reading stage, so nothing is sent or awaited.
constexpr uint32_t kCopiedConstant = kLocal - 1;
constexpr uint32_t kUnitFinished = 0;
constexpr uint32_t kCopyArrived = 1;
constexpr uint32_t kStageCostsPaid = 2;
// A graph output's reference that is never released.
constexpr int32_t kKeepAlive = 1;

}  // namespace

absl::Status CheckPlacement(const CostGraph& graph, const Cluster& cluster,
                            const Placement& placement) {
  if (placement.device.size() != graph.num_units()) {
    return absl::InvalidArgumentError(absl::StrCat("placement has ", placement.device.size(),
                                                   " devices for ", graph.num_units(), " units"));
  }
  if (!placement.priority.empty() && placement.priority.size() != graph.num_units()) {
    return absl::InvalidArgumentError("placement priorities do not match the units");
  }
  for (uint32_t u = 0; u < graph.num_units(); ++u) {
    if (placement.device[u] < 0 || placement.device[u] >= cluster.num_devices()) {
      return absl::InvalidArgumentError(absl::StrCat("unit '", graph.name(u),
                                                     "' is placed on device ", placement.device[u],
                                                     " of ", cluster.num_devices()));
    }
  }
  return absl::OkStatus();
}

Simulator::Simulator(const CostGraph& graph, const Cluster& cluster)
    : graph_(graph), cluster_(cluster) {
  // Bottom levels with the fastest kind's times, ignoring communication.
  const uint32_t n = graph.num_units();
  std::vector<double> bottom(n, 0);
  for (uint32_t u = n; u-- > 0;) {
    double fastest = std::numeric_limits<double>::infinity();
    for (int k = 0; k < graph.num_device_kinds(); ++k)
      fastest = std::min(fastest, graph.compute_us(u, k));
    double tail = 0;
    for (uint32_t e : graph.out_edges(u)) tail = std::max(tail, bottom[graph.edge_dst(e)]);
    bottom[u] = fastest + tail;
  }
  default_priority_.resize(n);
  for (uint32_t u = 0; u < n; ++u) default_priority_[u] = -bottom[u];
  is_constant_.resize(n);
  for (uint32_t u = 0; u < n; ++u) is_constant_[u] = graph.op(u) == "Constant";
}

void Simulator::PushEvent(double time, uint32_t kind, uint32_t id) {
  events_.push_back(Event{time, next_seq_++, kind, id});
  std::push_heap(events_.begin(), events_.end(), EventLater());
}

void Simulator::Allocate(int device, int64_t bytes) {
  live_[device] += bytes;
  DeviceUsage& usage = result_.devices[device];
  usage.peak_activation_bytes = std::max(usage.peak_activation_bytes, live_[device]);
}

void Simulator::MakeReady(uint32_t instance) {
  const uint32_t n = graph_.num_units();
  const uint32_t u = instance % n;
  const auto m = static_cast<int32_t>(instance / n);
  const double priority =
      placement_->priority.empty() ? default_priority_[u] : placement_->priority[u];
  std::vector<Ready>& heap = ready_[placement_->device[u]];
  heap.push_back(Ready{m, priority, instance});
  std::push_heap(heap.begin(), heap.end(), ReadyLater());
}

void Simulator::StartUnits(int device, double now) {
  if (device_busy_[device]) return;
  if (whole_stages_ && running_stage_[device] < 0) {
    std::vector<Ready>& stages = stage_ready_[device];
    if (stages.empty()) return;
    std::pop_heap(stages.begin(), stages.end(), ReadyLater());
    const uint32_t stage_instance = stages.back().instance;
    stages.pop_back();
    BeginStage(stage_instance, now);
    return;
  }
  std::vector<Ready>& heap = ready_[device];
  if (heap.empty()) return;
  std::pop_heap(heap.begin(), heap.end(), ReadyLater());
  const Ready next = heap.back();
  heap.pop_back();
  const uint32_t u = next.instance % graph_.num_units();
  const double duration = graph_.compute_us(u, cluster_.device(device).kind);
  device_busy_[device] = 1;
  // Outputs per tensor, so that each is released exactly as allocated.
  for (uint32_t t : graph_.outputs(u)) {
    Allocate(device, static_cast<int64_t>(graph_.tensor_bytes(t)));
  }
  Allocate(device, static_cast<int64_t>(graph_.temp_bytes(u)));
  result_.devices[device].busy_us += duration;
  if (options_.record_timeline) {
    result_.timeline.push_back(TimelineEntry{TimelineEntry::Kind::kCompute, u, 0, device, device,
                                             next.microbatch, now, now + duration});
  }
  PushEvent(now + duration, kUnitFinished, next.instance);
}

void Simulator::ReleaseInputs(uint32_t instance) {
  const uint32_t n = graph_.num_units();
  const uint32_t u = instance % n;
  const uint32_t m = instance / n;
  const int device = placement_->device[u];
  const uint32_t num_tensors = graph_.num_tensors();
  const auto num_copies = static_cast<uint32_t>(copy_device_.size());
  for (uint32_t e : graph_.in_edges(u)) {
    const auto bytes = static_cast<int64_t>(graph_.edge_bytes(e));
    if (edge_copy_[e] == kCopiedConstant) continue;
    if (edge_copy_[e] == kLocal) {
      if (--local_refs_[m * num_tensors + graph_.edge_tensor(e)] == 0) Release(device, bytes);
    } else if (--copy_refs_[m * num_copies + edge_copy_[e]] == 0) {
      Release(device, bytes);
    }
  }
}

void Simulator::FinishUnit(uint32_t instance, double now) {
  const uint32_t n = graph_.num_units();
  const uint32_t u = instance % n;
  const uint32_t m = instance / n;
  const int device = placement_->device[u];
  const uint32_t num_tensors = graph_.num_tensors();
  device_busy_[device] = 0;
  Release(device, graph_.temp_bytes(u));
  ReleaseInputs(instance);

  for (uint32_t t : graph_.outputs(u)) {
    if (local_refs_[m * num_tensors + t] == 0) Release(device, graph_.tensor_bytes(t));
    for (uint32_t e : graph_.tensor_uses(t)) {
      if (edge_copy_[e] != kLocal) continue;
      // With whole stages, readers in later stages wait for this stage's end.
      if (whole_stages_ && stage_of_[graph_.edge_dst(e)] != stage_of_[u]) continue;
      uint32_t reader = m * n + graph_.edge_dst(e);
      if (--pending_[reader] == 0) MakeReady(reader);
    }
    if (!whole_stages_) SendCopies(m, t, now);
  }
  if (whole_stages_) {
    const uint32_t stage_instance = m * num_stages_ + stage_of_[u];
    if (--stage_units_left_[stage_instance] == 0) FinishStage(stage_instance, now);
  }
}

void Simulator::SendCopies(uint32_t m, uint32_t t, double now) {
  const auto num_copies = static_cast<uint32_t>(copy_device_.size());
  const uint32_t u = graph_.tensor_producer(t);
  const int device = placement_->device[u];
  const int64_t bytes = graph_.tensor_bytes(t);
  for (uint32_t k = copy_offsets_[t]; k < copy_offsets_[t + 1]; ++k) {
    const int dst = copy_device_[k];
    Allocate(dst, bytes);  // the receive buffer
    double& link_free = link_free_us_[static_cast<size_t>(device) * cluster_.num_devices() + dst];
    const double start = std::max(now, link_free);
    double end = start + cluster_.TransferUs(device, dst, bytes);
    link_free = end;
    if (hop_us_ > 0) {
      // The runner's hand-over: the link carries the bytes, the hop is latency.
      link_free -= cluster_.latency_us(device, dst);
      end = link_free + hop_us_;
    }
    result_.link_bytes[static_cast<size_t>(device) * cluster_.num_devices() + dst] += bytes;
    result_.comm_bytes += bytes;
    ++result_.transfers;
    if (options_.record_timeline) {
      result_.timeline.push_back(TimelineEntry{TimelineEntry::Kind::kTransfer, u, t, device, dst,
                                               static_cast<int32_t>(m), start, end});
    }
    PushEvent(end, kCopyArrived, m * num_copies + k);
  }
}

void Simulator::MakeStageReady(uint32_t stage_instance) {
  const uint32_t s = stage_instance % num_stages_;
  const auto m = static_cast<int32_t>(stage_instance / num_stages_);
  std::vector<Ready>& heap = stage_ready_[stage_device_[s]];
  heap.push_back(Ready{m, static_cast<double>(s), stage_instance});
  std::push_heap(heap.begin(), heap.end(), ReadyLater());
}

void Simulator::BeginStage(uint32_t stage_instance, double now) {
  const uint32_t s = stage_instance % num_stages_;
  const int device = stage_device_[s];
  const ExecutionModel& execution = cluster_.execution;
  double fixed_us = execution.stage_run_us + execution.cut_us * stage_inputs_[s] +
                    execution.hop_busy_us * stage_hops_in_[s];
  if (execution.cut_bytes_per_s > 0)
    fixed_us += stage_cut_bytes_[s] / execution.cut_bytes_per_s * 1e6;
  running_stage_[device] = stage_instance;
  device_busy_[device] = 1;
  result_.devices[device].busy_us += fixed_us;
  PushEvent(now + fixed_us, kStageCostsPaid, stage_instance);
}

void Simulator::RunStageUnits(uint32_t stage_instance, double now) {
  const uint32_t n = graph_.num_units();
  const uint32_t s = stage_instance % num_stages_;
  const uint32_t m = stage_instance / num_stages_;
  const int device = stage_device_[s];
  device_busy_[device] = 0;
  for (uint32_t k = stage_unit_offsets_[s]; k < stage_unit_offsets_[s + 1]; ++k) {
    const uint32_t instance = m * n + stage_units_[k];
    if (pending_[instance] == 0) MakeReady(instance);
  }
  StartUnits(device, now);
}

void Simulator::FinishStage(uint32_t stage_instance, double now) {
  const uint32_t s = stage_instance % num_stages_;
  const uint32_t m = stage_instance / num_stages_;
  const int device = stage_device_[s];
  running_stage_[device] = -1;
  for (uint32_t k = stage_unit_offsets_[s]; k < stage_unit_offsets_[s + 1]; ++k) {
    for (uint32_t t : graph_.outputs(stage_units_[k])) {
      DeliverToStages(m, t, device);
      SendCopies(m, t, now);
    }
  }
}

void Simulator::DeliverToStages(uint32_t m, uint32_t t, int device) {
  // Other stages hold their own copy of a Constant and never wait for it.
  if (is_constant_[graph_.tensor_producer(t)]) return;
  const uint32_t producer_stage = stage_of_[graph_.tensor_producer(t)];
  ++mark_epoch_;
  for (uint32_t e : graph_.tensor_uses(t)) {
    const uint32_t reader = graph_.edge_dst(e);
    if (placement_->device[reader] != device) continue;
    const uint32_t s = stage_of_[reader];
    if (s == producer_stage || stage_mark_[s] == mark_epoch_) continue;
    stage_mark_[s] = mark_epoch_;
    if (--stage_pending_[m * num_stages_ + s] == 0) MakeStageReady(m * num_stages_ + s);
  }
}

void Simulator::ArriveCopy(uint32_t copy_instance, double /*now*/) {
  const auto num_copies = static_cast<uint32_t>(copy_device_.size());
  const uint32_t m = copy_instance / num_copies;
  const uint32_t k = copy_instance % num_copies;
  const uint32_t t = copy_tensor_[k];
  const int src = placement_->device[graph_.tensor_producer(t)];
  const int dst = copy_device_[k];
  // The send has left: the source copy may go.
  if (--local_refs_[m * graph_.num_tensors() + t] == 0) {
    Release(src, static_cast<int64_t>(graph_.tensor_bytes(t)));
  }
  if (whole_stages_) {
    DeliverToStages(m, t, dst);
    return;
  }
  const uint32_t n = graph_.num_units();
  for (uint32_t e : graph_.tensor_uses(t)) {
    const uint32_t reader_unit = graph_.edge_dst(e);
    if (placement_->device[reader_unit] != dst) continue;
    uint32_t reader = m * n + reader_unit;
    if (--pending_[reader] == 0) MakeReady(reader);
  }
}

void Simulator::Prepare(const Placement& placement, int microbatches) {
  const uint32_t n = graph_.num_units();
  const uint32_t num_tensors = graph_.num_tensors();
  const int num_devices = cluster_.num_devices();
  placement_ = &placement;
  microbatches_ = std::max(1, microbatches);
  const auto mb = static_cast<uint32_t>(microbatches_);
  whole_stages_ = cluster_.execution.whole_stages;
  hop_us_ = whole_stages_ ? cluster_.execution.hop_us : 0;
  stage_of_.clear();
  num_stages_ = 0;
  if (whole_stages_) AssignStages();

  // 1. Remote copies: for each tensor, one per distinct reading device other
  //    than the producer's, in edge order (deterministic).
  copy_offsets_.assign(num_tensors + 1, 0);
  copy_device_.clear();
  copy_tensor_.clear();
  copy_readers_.clear();
  edge_copy_.assign(graph_.num_edges(), kLocal);
  copy_of_device_.assign(num_devices, -1);
  local_refs_.resize(static_cast<size_t>(num_tensors) * mb);
  for (uint32_t t = 0; t < num_tensors; ++t) {
    const uint32_t producer = graph_.tensor_producer(t);
    const int src = placement.device[producer];
    const bool copied_constant = whole_stages_ && is_constant_[producer];
    int32_t local = graph_.tensor_is_graph_output(t) ? kKeepAlive : 0;
    const uint32_t first_copy = static_cast<uint32_t>(copy_device_.size());
    for (uint32_t e : graph_.tensor_uses(t)) {
      if (copied_constant && stage_of_[graph_.edge_dst(e)] != stage_of_[producer]) {
        edge_copy_[e] = kCopiedConstant;
        continue;
      }
      const int dst = placement.device[graph_.edge_dst(e)];
      if (dst == src) {
        ++local;
        continue;
      }
      if (copy_of_device_[dst] < 0) {
        copy_of_device_[dst] = static_cast<int32_t>(copy_device_.size());
        copy_device_.push_back(dst);
        copy_tensor_.push_back(t);
        copy_readers_.push_back(0);
        ++local;  // the send holds the source copy until it has left
      }
      edge_copy_[e] = static_cast<uint32_t>(copy_of_device_[dst]);
      ++copy_readers_[copy_of_device_[dst]];
    }
    for (size_t k = first_copy; k < copy_device_.size(); ++k) copy_of_device_[copy_device_[k]] = -1;
    copy_offsets_[t + 1] = static_cast<uint32_t>(copy_device_.size());
    for (uint32_t m = 0; m < mb; ++m) local_refs_[m * num_tensors + t] = local;
  }
  const size_t num_copies = copy_device_.size();
  copy_refs_.resize(num_copies * mb);
  for (uint32_t m = 0; m < mb; ++m) {
    std::copy(copy_readers_.begin(), copy_readers_.end(), copy_refs_.begin() + m * num_copies);
  }

  // 2. Inputs each unit instance waits for.
  pending_.resize(static_cast<size_t>(n) * mb);
  for (uint32_t u = 0; u < n; ++u) {
    const auto inputs = static_cast<uint32_t>(graph_.in_edges(u).size());
    for (uint32_t m = 0; m < mb; ++m) pending_[m * n + u] = inputs;
  }

  if (whole_stages_) PrepareStageInputs();

  // 3. Result and scratch.
  result_.step_time_us = 0;
  result_.devices.assign(num_devices, DeviceUsage{});
  result_.link_bytes.assign(static_cast<size_t>(num_devices) * num_devices, 0);
  result_.comm_bytes = 0;
  result_.transfers = 0;
  result_.memory_overflow = false;
  result_.overflow_bytes = 0;
  result_.timeline.clear();
  events_.clear();
  next_seq_ = 0;
  ready_.resize(num_devices);
  for (std::vector<Ready>& heap : ready_) heap.clear();
  device_busy_.assign(num_devices, 0);
  live_.assign(num_devices, 0);
  link_free_us_.assign(static_cast<size_t>(num_devices) * num_devices, 0);

  // 4. Parameters: each distinct block once per device that reads it.
  param_devices_.assign(graph_.num_params(), 0);
  for (uint32_t u = 0; u < n; ++u) {
    const int d = placement.device[u];
    ++result_.devices[d].units;
    for (uint32_t p : graph_.params(u)) {
      const uint64_t bit = uint64_t{1} << d;
      if (param_devices_[p] & bit) continue;
      param_devices_[p] |= bit;
      result_.devices[d].param_bytes += graph_.param_bytes(p);
    }
  }
}

// Note [Stage execution]: levels, stages in (level, device) order, each
// stage's units and the tensors it reads from other stages; a unit waits only
// for its own stage's producers.
void Simulator::AssignStages() {
  const uint32_t n = graph_.num_units();
  const int num_devices = cluster_.num_devices();
  const std::vector<int32_t>& device = placement_->device;
  // 1. Levels, in one sweep over the topological order.
  unit_level_.assign(n, 0);
  int32_t max_level = 0;
  for (uint32_t u = 0; u < n; ++u) {
    if (is_constant_[u]) continue;  // level 0, copied wherever it is read
    for (uint32_t e : graph_.in_edges(u)) {
      const uint32_t src = graph_.edge_src(e);
      const int hop = device[src] != device[u] && !is_constant_[src] ? 1 : 0;
      unit_level_[u] = std::max(unit_level_[u], unit_level_[src] + hop);
    }
    max_level = std::max(max_level, unit_level_[u]);
  }
  // 2. Stages: the (level, device) pairs in use, numbered in that order.
  //    A Constant forms no stage of its own: the rewriter copies it into the
  //    stages that read it, so it runs with its device's first stage (or, on
  //    a device with nothing else, in a level-0 stage).
  stage_of_key_.assign(static_cast<size_t>(max_level + 1) * num_devices, kNoStage);
  first_stage_of_device_.assign(num_devices, kNoStage);
  for (uint32_t u = 0; u < n; ++u) {
    if (is_constant_[u]) continue;
    stage_of_key_[static_cast<size_t>(unit_level_[u]) * num_devices + device[u]] = 0;
    first_stage_of_device_[device[u]] = 0;
  }
  for (uint32_t u = 0; u < n; ++u) {
    if (is_constant_[u] && first_stage_of_device_[device[u]] == kNoStage) {
      stage_of_key_[device[u]] = 0;
    }
  }
  stage_device_.clear();
  first_stage_of_device_.assign(num_devices, kNoStage);
  for (size_t key = 0; key < stage_of_key_.size(); ++key) {
    if (stage_of_key_[key] == kNoStage) continue;
    const auto d = static_cast<int32_t>(key % num_devices);
    if (first_stage_of_device_[d] == kNoStage) first_stage_of_device_[d] = num_stages_;
    stage_of_key_[key] = num_stages_++;
    stage_device_.push_back(d);
  }
  stage_of_.resize(n);
  stage_unit_offsets_.assign(num_stages_ + 1, 0);
  for (uint32_t u = 0; u < n; ++u) {
    stage_of_[u] =
        is_constant_[u]
            ? first_stage_of_device_[device[u]]
            : stage_of_key_[static_cast<size_t>(unit_level_[u]) * num_devices + device[u]];
    ++stage_unit_offsets_[stage_of_[u] + 1];
  }
  for (uint32_t s = 0; s < num_stages_; ++s) stage_unit_offsets_[s + 1] += stage_unit_offsets_[s];
  stage_units_.resize(n);
  scratch_offsets_.assign(stage_unit_offsets_.begin(), stage_unit_offsets_.end() - 1);
  for (uint32_t u = 0; u < n; ++u) stage_units_[scratch_offsets_[stage_of_[u]]++] = u;
}

void Simulator::PrepareStageInputs() {
  const uint32_t n = graph_.num_units();
  const int num_devices = cluster_.num_devices();
  const auto mb = static_cast<uint32_t>(microbatches_);
  // 3. Inputs: a unit waits for its stage's producers, a stage for each
  //    tensor it reads from another stage (once, however many readers),
  //    Constants aside (kCopiedConstant).
  stage_inputs_.assign(num_stages_, 0);
  stage_cut_bytes_.assign(num_stages_, 0);
  stage_hops_in_.assign(num_stages_, 0);
  hop_pairs_.clear();
  stage_mark_.assign(num_stages_, 0);
  mark_epoch_ = 0;
  for (uint32_t u = 0; u < n; ++u) {
    uint32_t internal = 0;
    for (uint32_t e : graph_.in_edges(u)) internal += stage_of_[graph_.edge_src(e)] == stage_of_[u];
    for (uint32_t m = 0; m < mb; ++m) pending_[m * n + u] = internal;
  }
  for (uint32_t t = 0; t < graph_.num_tensors(); ++t) {
    if (is_constant_[graph_.tensor_producer(t)]) continue;
    const uint32_t producer_stage = stage_of_[graph_.tensor_producer(t)];
    ++mark_epoch_;
    for (uint32_t e : graph_.tensor_uses(t)) {
      const uint32_t s = stage_of_[graph_.edge_dst(e)];
      if (s == producer_stage || stage_mark_[s] == mark_epoch_) continue;
      stage_mark_[s] = mark_epoch_;
      ++stage_inputs_[s];
      if (stage_device_[s] != stage_device_[producer_stage])
        hop_pairs_.push_back(static_cast<uint64_t>(s) << 32 | producer_stage);
      const double half_bytes = 0.5 * static_cast<double>(graph_.tensor_bytes(t));
      stage_cut_bytes_[s] += half_bytes;
      stage_cut_bytes_[producer_stage] += half_bytes;
    }
  }
  std::sort(hop_pairs_.begin(), hop_pairs_.end());
  hop_pairs_.erase(std::unique(hop_pairs_.begin(), hop_pairs_.end()), hop_pairs_.end());
  for (uint64_t pair : hop_pairs_) ++stage_hops_in_[pair >> 32];
  stage_pending_.resize(static_cast<size_t>(num_stages_) * mb);
  stage_units_left_.resize(static_cast<size_t>(num_stages_) * mb);
  for (uint32_t m = 0; m < mb; ++m) {
    for (uint32_t s = 0; s < num_stages_; ++s) {
      stage_pending_[m * num_stages_ + s] = stage_inputs_[s];
      stage_units_left_[m * num_stages_ + s] = stage_unit_offsets_[s + 1] - stage_unit_offsets_[s];
    }
  }
  stage_ready_.resize(num_devices);
  for (std::vector<Ready>& heap : stage_ready_) heap.clear();
  running_stage_.assign(num_devices, -1);
}

const SimulationResult& Simulator::Run(const Placement& placement,
                                       const SimulationOptions& options) {
  options_ = options;
  Prepare(placement, options.microbatches);
  if (whole_stages_) {
    const uint32_t stage_instances = num_stages_ * static_cast<uint32_t>(microbatches_);
    for (uint32_t i = 0; i < stage_instances; ++i) {
      if (stage_pending_[i] == 0) MakeStageReady(i);
    }
  } else {
    const uint32_t instances = graph_.num_units() * static_cast<uint32_t>(microbatches_);
    for (uint32_t i = 0; i < instances; ++i) {
      if (pending_[i] == 0) MakeReady(i);
    }
  }
  for (int d = 0; d < cluster_.num_devices(); ++d) StartUnits(d, 0);

  double now = 0;
  while (!events_.empty()) {
    std::pop_heap(events_.begin(), events_.end(), EventLater());
    const Event event = events_.back();
    events_.pop_back();
    now = event.time;
    if (event.kind == kUnitFinished) {
      FinishUnit(event.id, now);
      StartUnits(placement.device[event.id % graph_.num_units()], now);
      // Local readers may have become ready on the same device only; remote
      // readers become ready when their copy arrives.
    } else if (event.kind == kCopyArrived) {
      ArriveCopy(event.id, now);
      StartUnits(copy_device_[event.id % copy_device_.size()], now);
    } else {
      RunStageUnits(event.id, now);
    }
  }
  result_.step_time_us = now;

  for (int d = 0; d < cluster_.num_devices(); ++d) {
    DeviceUsage& usage = result_.devices[d];
    usage.peak_memory_bytes = usage.param_bytes + usage.peak_activation_bytes;
    int64_t over = usage.peak_memory_bytes - cluster_.device(d).memory_bytes;
    if (over > 0) {
      result_.memory_overflow = true;
      result_.overflow_bytes += over;
    }
  }
  return result_;
}

}  // namespace autopar::costmodel
