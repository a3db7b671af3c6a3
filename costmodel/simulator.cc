#include "costmodel/simulator.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace autopar::costmodel {
namespace {

constexpr uint32_t kLocal = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kUnitFinished = 0;
constexpr uint32_t kCopyArrived = 1;
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
  std::vector<Ready>& heap = ready_[device];
  if (device_busy_[device] || heap.empty()) return;
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
  const auto num_copies = static_cast<uint32_t>(copy_device_.size());
  device_busy_[device] = 0;
  Release(device, static_cast<int64_t>(graph_.temp_bytes(u)));
  ReleaseInputs(instance);

  for (uint32_t t : graph_.outputs(u)) {
    const auto bytes = static_cast<int64_t>(graph_.tensor_bytes(t));
    if (local_refs_[m * num_tensors + t] == 0) Release(device, bytes);
    for (uint32_t e : graph_.tensor_uses(t)) {
      if (edge_copy_[e] != kLocal) continue;
      uint32_t reader = m * n + graph_.edge_dst(e);
      if (--pending_[reader] == 0) MakeReady(reader);
    }
    for (uint32_t k = copy_offsets_[t]; k < copy_offsets_[t + 1]; ++k) {
      const int dst = copy_device_[k];
      Allocate(dst, bytes);  // the receive buffer
      double& link_free = link_free_us_[static_cast<size_t>(device) * cluster_.num_devices() + dst];
      const double start = std::max(now, link_free);
      const double end = start + cluster_.TransferUs(device, dst, bytes);
      link_free = end;
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
    const int src = placement.device[graph_.tensor_producer(t)];
    int32_t local = graph_.tensor_is_graph_output(t) ? kKeepAlive : 0;
    const uint32_t first_copy = static_cast<uint32_t>(copy_device_.size());
    for (uint32_t e : graph_.tensor_uses(t)) {
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

const SimulationResult& Simulator::Run(const Placement& placement,
                                       const SimulationOptions& options) {
  options_ = options;
  Prepare(placement, options.microbatches);
  const uint32_t instances = graph_.num_units() * static_cast<uint32_t>(microbatches_);
  for (uint32_t i = 0; i < instances; ++i) {
    if (pending_[i] == 0) MakeReady(i);
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
    } else {
      ArriveCopy(event.id, now);
      StartUnits(copy_device_[event.id % copy_device_.size()], now);
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
