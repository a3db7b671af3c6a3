#include "pipeline/training_estimate.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "costmodel/device.h"
#include "costmodel/training.h"

namespace autopar::pipeline {

absl::StatusOr<TrainingStepEstimator> TrainingStepEstimator::Create(
    const PlanningProblem& problem, const TrainingEstimateOptions& options,
    const SourceNodeTimes* step_times) {
  if (!problem.model || !problem.nodes || !problem.nodes->training) {
    return absl::FailedPreconditionError(
        "a training estimate needs a model prepared for a training step");
  }
  TrainingStepEstimator e(problem, options);
  const ir::Graph& graph = problem.model->graph;
  const costmodel::CostGraph& units = problem.node_graph();
  const costmodel::TrainingCosts& training = *problem.nodes->training;
  const costmodel::Cluster& cluster = problem.cluster;
  if (units.num_units() != graph.num_nodes()) {
    return absl::InternalError(absl::StrCat("the node graph has ", units.num_units(), " units for ",
                                            graph.num_nodes(), " nodes"));
  }
  const size_t n = graph.num_nodes();
  if (step_times != nullptr && (step_times->num_kinds != static_cast<int>(cluster.kinds.size()) ||
                                step_times->forward_us.size() != n * cluster.kinds.size())) {
    return absl::InvalidArgumentError("the step times do not match the problem's nodes");
  }
  e.num_kinds_ = static_cast<int>(cluster.kinds.size());
  const size_t k = static_cast<size_t>(e.num_kinds_);
  e.forward_us_.assign(n * k, 0);
  e.backward_us_.assign(n * k, 0);
  e.update_us_.assign(n * k, 0);
  e.replicated_.assign(n, 0);
  e.persistent_bytes_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    e.replicated_[i] = graph.nodes()[i].kind == ir::OpKind::kConstant ? 1 : 0;
    e.persistent_bytes_[i] = training.nodes[i].persistent_bytes;
    for (size_t kind = 0; kind < k; ++kind) {
      const costmodel::DeviceSpec& spec = cluster.kinds[kind];
      const double f = costmodel::PredictTimeUs(problem.nodes->costs[i], spec);
      const double b = costmodel::PredictTimeUs(training.nodes[i].backward, spec);
      const double u =
          costmodel::PredictTimeUs(training.nodes[i].update, costmodel::DTypeClass::kFp32, spec);
      // The node graph's time is the sum, or a measured one: scale all three.
      const double total = units.compute_us(static_cast<uint32_t>(i), static_cast<int>(kind));
      const double sum = f + b + u;
      const double scale = sum > 0 ? total / sum : 0;
      e.forward_us_[i * k + kind] = sum > 0 ? f * scale : total;
      e.backward_us_[i * k + kind] = b * scale;
      e.update_us_[i * k + kind] = u * scale;
      if (step_times != nullptr) {
        e.forward_us_[i * k + kind] = step_times->forward_us[i * k + kind];
        e.backward_us_[i * k + kind] = step_times->backward_us[i * k + kind];
      }
    }
  }
  const size_t values = graph.num_values();
  e.bytes_.assign(values, 0);
  e.saved_.assign(values, 0);
  e.needs_gradient_.assign(values, 0);
  e.trainable_.assign(values, 0);
  e.parameter_state_bytes_.assign(values, 0);
  e.first_reader_.assign(values, -1);
  for (size_t v = 0; v < values; ++v) {
    const ir::Value& value = graph.values()[v];
    e.bytes_[v] = value.SizeBytes().value_or(0);
    e.saved_[v] = v < training.saved.size() && training.saved[v] ? 1 : 0;
    e.needs_gradient_[v] = v < training.needs_gradient.size() && training.needs_gradient[v] ? 1 : 0;
    e.trainable_[v] = v < training.trainable.size() && training.trainable[v] ? 1 : 0;
    if (value.is_parameter) {
      e.parameter_state_bytes_[v] =
          costmodel::TrainingParameterBytes(value, e.trainable_[v] != 0, problem.step.optimizer);
    }
    for (ir::NodeId c : value.consumers) {
      if (!e.replicated_[c.index()]) {
        e.first_reader_[v] = static_cast<int32_t>(c.index());
        break;
      }
    }
    if (value.is_parameter && e.trainable_[v] && e.first_reader_[v] >= 0) {
      e.trained_weights_.push_back(static_cast<int32_t>(v));
      e.trained_bytes_ += e.bytes_[v];
    }
  }
  if (step_times != nullptr) {
    e.gradient_sum_us_ = step_times->gradient_sum_us;
    e.gradient_mean_us_ = step_times->gradient_mean_us;
  }
  return e;
}

absl::StatusOr<costmodel::PipelineStepProblem> TrainingStepEstimator::BuildProblem(
    const std::vector<int32_t>& node_device) const {
  const ir::Graph& graph = problem_->model->graph;
  const costmodel::Cluster& cluster = problem_->cluster;
  const size_t n = graph.num_nodes();
  const int num_devices = cluster.num_devices();
  if (node_device.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("the placement has ", node_device.size(), " devices for ", n, " nodes"));
  }
  auto reads = [&graph](size_t i, auto&& f) {
    const ir::Node& node = graph.nodes()[i];
    for (ir::ValueId v : node.inputs)
      if (v.valid()) f(v.index());
    for (ir::ValueId v : node.captured)
      if (v.valid()) f(v.index());
  };
  auto producer_of = [&graph, this](size_t v) -> int64_t {
    const ir::NodeId p = graph.values()[v].producer;
    if (!p.valid() || replicated_[p.index()]) return -1;
    return static_cast<int64_t>(p.index());
  };

  // Levels (Note [Stage levels]); the IR's node order is topological.
  std::vector<int32_t> level(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (replicated_[i]) continue;
    const int32_t d = node_device[i];
    if (d < 0 || d >= num_devices)
      return absl::InvalidArgumentError(absl::StrCat("node ", i, " has device ", d));
    reads(i, [&](size_t v) {
      const int64_t p = producer_of(v);
      if (p < 0) return;
      level[i] = std::max(level[i], level[p] + (node_device[p] != d ? 1 : 0));
    });
  }
  // Forward stages in (level, device) order.
  std::vector<std::pair<int32_t, int32_t>> keys;
  keys.reserve(n);
  for (size_t i = 0; i < n; ++i)
    if (!replicated_[i]) keys.emplace_back(level[i], node_device[i]);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  const int32_t num_forward = static_cast<int32_t>(keys.size());
  std::vector<int32_t> stage_of(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (replicated_[i]) continue;
    stage_of[i] = static_cast<int32_t>(
        std::lower_bound(keys.begin(), keys.end(), std::make_pair(level[i], node_device[i])) -
        keys.begin());
  }

  const int k = num_kinds_;
  auto kind_of = [&cluster](int32_t d) { return cluster.device(d).kind; };
  std::vector<double> forward_us(num_forward, 0), backward_us(num_forward, 0);
  std::vector<int64_t> largest_output(num_forward, 0);
  costmodel::PipelineStepProblem out;
  out.microbatches = options_.microbatches;
  out.schedule = options_.schedule;
  out.update_us.assign(num_devices, 0);
  out.fixed_bytes.assign(num_devices, 0);
  for (size_t i = 0; i < n; ++i) {
    if (replicated_[i]) continue;
    const int32_t s = stage_of[i];
    const size_t at = i * k + kind_of(node_device[i]);
    forward_us[s] += forward_us_[at];
    backward_us[s] += backward_us_[at];
    out.update_us[node_device[i]] += update_us_[at];
    for (ir::ValueId v : graph.nodes()[i].outputs)
      if (v.valid()) largest_output[s] = std::max(largest_output[s], bytes_[v.index()]);
  }

  // Backward stage ids: the forward stages with backward work, reversed.
  std::vector<int32_t> backward_of(num_forward, -1);
  int32_t next = num_forward;
  for (int32_t s = num_forward; s-- > 0;)
    if (backward_us[s] > 0) backward_of[s] = next++;
  out.stages.resize(next);
  for (int32_t s = 0; s < num_forward; ++s) {
    costmodel::PipelineStage& f = out.stages[s];
    f.device = keys[s].second;
    f.kind = costmodel::StageKind::kForward;
    f.compute_us = forward_us[s];
    f.transient_bytes = largest_output[s];
    if (backward_of[s] < 0) continue;
    costmodel::PipelineStage& b = out.stages[backward_of[s]];
    b.device = keys[s].second;
    b.kind = costmodel::StageKind::kBackward;
    b.compute_us = backward_us[s];
    b.transient_bytes = largest_output[s];
  }

  // Edges, as (reading stage, value, producing stage), each once.
  struct Edge {
    int32_t reader;
    int32_t value;
    int32_t producer;
    bool operator<(const Edge& o) const {
      return std::tie(reader, value, producer) < std::tie(o.reader, o.value, o.producer);
    }
    bool operator==(const Edge& o) const {
      return reader == o.reader && value == o.value && producer == o.producer;
    }
  };
  std::vector<Edge> forward_edges, backward_edges;
  // Per device, the stashed values (each once) and the weights held.
  std::vector<std::vector<int32_t>> stash(num_devices), held(num_devices);
  for (size_t i = 0; i < n; ++i) {
    if (replicated_[i]) continue;
    const int32_t s = stage_of[i];
    const int32_t d = node_device[i];
    const int32_t b = backward_of[s];
    reads(i, [&](size_t v) {
      const ir::Value& value = graph.values()[v];
      if (value.is_parameter) {
        held[d].push_back(static_cast<int32_t>(v));
        return;
      }
      const int64_t p = producer_of(v);
      const int32_t ps = p < 0 ? -1 : stage_of[p];
      if (ps >= 0 && ps != s) {
        forward_edges.push_back({s, static_cast<int32_t>(v), ps});
        // The gradient of v goes back from this stage's backward to ps's.
        if (needs_gradient_[v] && b >= 0 && backward_of[ps] >= 0)
          backward_edges.push_back({backward_of[ps], static_cast<int32_t>(v), b});
      }
      if (saved_[v] && b >= 0) {
        stash[d].push_back(static_cast<int32_t>(v));
        if (ps >= 0) backward_edges.push_back({b, static_cast<int32_t>(v), ps});
      }
    });
    if (b >= 0) {
      for (ir::ValueId o : graph.nodes()[i].outputs) {
        if (!o.valid() || !saved_[o.index()]) continue;
        stash[d].push_back(static_cast<int32_t>(o.index()));
        backward_edges.push_back({b, static_cast<int32_t>(o.index()), s});
      }
    }
  }
  for (auto* edges : {&forward_edges, &backward_edges}) {
    std::sort(edges->begin(), edges->end());
    edges->erase(std::unique(edges->begin(), edges->end()), edges->end());
  }
  // A tensor a device received once is not sent again (SplitTraining's
  // rule); a value's gradient is a tensor of its own.
  std::vector<uint8_t> arrived(bytes_.size() * 2 * static_cast<size_t>(num_devices), 0);
  auto add = [&](const Edge& e, bool gradient) {
    costmodel::PipelineStage& reader = out.stages[e.reader];
    const int32_t d = reader.device;
    const int64_t bytes = bytes_[e.value];
    const size_t slot =
        (static_cast<size_t>(e.value) * 2 + (gradient ? 1 : 0)) * static_cast<size_t>(num_devices) +
        static_cast<size_t>(d);
    const bool again = arrived[slot] != 0;
    arrived[slot] = 1;
    const bool received = again && out.stages[e.producer].device != d;
    reader.inputs.push_back({.stage = e.producer, .bytes = received ? 0 : bytes});
    reader.transient_bytes += bytes;
  };
  // Stage ids ascend with the edge order's readers, forward before backward.
  for (const Edge& e : forward_edges) add(e, false);
  for (const Edge& e : backward_edges) {
    const bool gradient = out.stages[e.producer].kind == costmodel::StageKind::kBackward;
    add(e, gradient);
  }

  // Stashes on each device's first forward stage; weights and their state.
  std::vector<int32_t> first_forward(num_devices, -1);
  for (int32_t s = 0; s < num_forward; ++s)
    if (first_forward[out.stages[s].device] < 0) first_forward[out.stages[s].device] = s;
  for (int d = 0; d < num_devices; ++d) {
    std::sort(stash[d].begin(), stash[d].end());
    stash[d].erase(std::unique(stash[d].begin(), stash[d].end()), stash[d].end());
    if (first_forward[d] >= 0)
      for (int32_t v : stash[d]) out.stages[first_forward[d]].stash_bytes += bytes_[v];
    std::sort(held[d].begin(), held[d].end());
    held[d].erase(std::unique(held[d].begin(), held[d].end()), held[d].end());
    for (int32_t v : held[d]) {
      const int32_t first = first_reader_[v];
      const bool updates_here = first >= 0 && node_device[first] == d;
      out.fixed_bytes[d] += updates_here ? parameter_state_bytes_[v] : bytes_[v];
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (replicated_[i] || persistent_bytes_[i] == 0) continue;
    const int32_t d = node_device[i];
    if (first_forward[d] >= 0) out.stages[first_forward[d]].stash_bytes += persistent_bytes_[i];
  }
  // The runner's gradient sums and means, where the weight's gradient is made.
  if (trained_bytes_ > 0 && gradient_sum_us_ + gradient_mean_us_ > 0) {
    for (int32_t v : trained_weights_) {
      const int32_t reader = first_reader_[v];
      const double share = static_cast<double>(bytes_[v]) / static_cast<double>(trained_bytes_);
      const int32_t b = backward_of[stage_of[reader]];
      if (b >= 0) out.stages[b].after_us += gradient_sum_us_ * share;
      out.update_us[node_device[reader]] += gradient_mean_us_ * share;
    }
  }
  return out;
}

absl::StatusOr<costmodel::PipelineStepResult> TrainingStepEstimator::Estimate(
    const std::vector<int32_t>& node_device) const {
  absl::StatusOr<costmodel::PipelineStepProblem> built = BuildProblem(node_device);
  if (!built.ok()) return built.status();
  return costmodel::SimulatePipelineStep(*built, problem_->cluster);
}

double TrainingStepEstimator::StepUs(const std::vector<int32_t>& node_device) const {
  absl::StatusOr<costmodel::PipelineStepResult> result = Estimate(node_device);
  return result.ok() ? result->step_us : std::numeric_limits<double>::infinity();
}

}  // namespace autopar::pipeline
