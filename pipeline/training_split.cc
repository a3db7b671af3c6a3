#include "pipeline/training_split.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "onnx_io/checker.h"
#include "onnx_io/import.h"
#include "onnx_io/model.h"
#include "passes/annotate_costs.h"
#include "passes/infer_shapes.h"

namespace autopar::pipeline {
namespace {

// A model built in memory (the gradient or an update model) with its IR and
// shapes: what costing and partitioning need.
struct Analyzed {
  onnx_io::Model model;
  ir::Graph graph;
};

absl::StatusOr<Analyzed> Analyze(const onnx::ModelProto& proto, const std::string& directory,
                                 std::string_view what) {
  auto fail = [what](const absl::Status& s) {
    return absl::InternalError(absl::StrCat("the ", std::string(what), " model: ", s.message()));
  };
  absl::StatusOr<onnx_io::Model> model = onnx_io::ModelFromProto(proto, directory);
  if (!model.ok()) return fail(model.status());
  absl::StatusOr<ir::Graph> graph = onnx_io::BuildGraph(*model);
  if (!graph.ok()) return fail(graph.status());
  if (absl::Status s = passes::InferShapes(*model, {}, *graph); !s.ok()) return fail(s);
  return Analyzed{*std::move(model), *std::move(graph)};
}

// The cost of every node of `a` on each device kind of `cluster`, measured
// times applied to the nodes they name.
absl::StatusOr<costmodel::CostGraph> NodeCosts(const Analyzed& a, const costmodel::Cluster& cluster,
                                               const costmodel::NodeTimes* node_times) {
  absl::StatusOr<passes::AnnotatedGraph> annotated = passes::AnnotateCosts(a.graph, cluster);
  if (!annotated.ok()) return annotated.status();
  if (node_times != nullptr) {
    // Times of nodes the step does not have (a recurrent node that was
    // unrolled) are left out; the others scale the rest.
    absl::flat_hash_set<std::string> names;
    for (const ir::Node& n : a.graph.nodes()) names.insert(n.name);
    costmodel::NodeTimes known{.source = node_times->source, .node_us = {}};
    for (const auto& [name, us] : node_times->node_us) {
      if (names.contains(name)) known.node_us.emplace_back(name, us);
    }
    if (!known.node_us.empty()) {
      absl::StatusOr<costmodel::CostSource> applied =
          costmodel::ApplyNodeTimes(known, annotated->graph);
      if (!applied.ok()) return applied.status();
    }
  }
  return std::move(annotated->graph);
}

// The names of the gradient model's backward nodes (TrainingStep::backward_begin on).
absl::flat_hash_set<std::string> BackwardNodeNames(const training::TrainingStep& step) {
  absl::flat_hash_set<std::string> backward;
  const auto& protos = step.gradient_model.graph().node();
  for (int k = step.backward_begin; k < protos.size(); ++k) backward.insert(protos[k].name());
  return backward;
}

// The device each node of the gradient model runs on (Note [Gradient
// colocation]) and its phase (0 forward and loss, 1 backward).
absl::Status PlaceStepNodes(const training::TrainingStep& step,
                            const absl::flat_hash_map<std::string, int32_t>& device_of,
                            const ir::Graph& gradient, std::vector<int32_t>& device,
                            std::vector<uint8_t>& phase) {
  const absl::flat_hash_set<std::string> backward = BackwardNodeNames(step);
  device.assign(gradient.num_nodes(), 0);
  phase.assign(gradient.num_nodes(), 0);
  for (size_t i = 0; i < gradient.num_nodes(); ++i) {
    const ir::Node& node = gradient.nodes()[i];
    phase[i] = backward.contains(node.name) ? 1 : 0;
    auto origin = step.node_origin.find(node.name);
    const std::string& name = origin == step.node_origin.end() ? node.name : origin->second;
    auto placed = device_of.find(name);
    if (placed != device_of.end()) {
      device[i] = placed->second;
    } else if (node.kind != ir::OpKind::kConstant) {
      // Constants are copied into every stage that reads them: their own
      // device does not matter.
      return absl::InternalError(absl::StrCat("node '", node.name,
                                              "' of the gradient model works for '", name,
                                              "', which the placement does not place"));
    }
  }
  return absl::OkStatus();
}

int64_t BytesOf(const ir::Graph& graph, const std::string& name) {
  std::optional<ir::ValueId> v = graph.FindValue(name);
  return v ? graph.value(*v).SizeBytes().value_or(0) : 0;
}

}  // namespace

absl::StatusOr<SplitTrainingStep> SplitTraining(const training::TrainingStep& step,
                                                const ir::Graph& source,
                                                const std::vector<int32_t>& node_device,
                                                const costmodel::Cluster& cluster,
                                                const std::string& directory,
                                                const TrainingSplitOptions& options) {
  if (node_device.size() != source.num_nodes()) {
    return absl::InternalError(absl::StrCat("the placement has ", node_device.size(),
                                            " devices for ", source.num_nodes(), " nodes"));
  }
  absl::StatusOr<Analyzed> gradient = Analyze(step.gradient_model, directory, "gradient");
  if (!gradient.ok()) return gradient.status();
  const ir::Graph& graph = gradient->graph;

  // Each source node's device, by name.
  absl::flat_hash_map<std::string, int32_t> source_device;
  for (size_t i = 0; i < source.num_nodes(); ++i)
    source_device[source.nodes()[i].name] = node_device[i];
  passes::PartitionOptions partition{.stages = true, .node_phase = {}};
  std::vector<int32_t> device;
  if (absl::Status s = PlaceStepNodes(step, source_device, graph, device, partition.node_phase);
      !s.ok())
    return s;
  absl::StatusOr<passes::Deployment> deployment =
      passes::Partition(gradient->model, graph, device, cluster.num_devices(), partition);
  if (!deployment.ok()) return deployment.status();
  absl::StatusOr<costmodel::CostGraph> costs = NodeCosts(*gradient, cluster, options.node_times);
  if (!costs.ok()) return costs.status();

  SplitTrainingStep out;
  out.schedule = options.schedule;
  out.microbatches = options.microbatches;
  absl::flat_hash_map<std::string, uint32_t> node_index;
  for (size_t i = 0; i < graph.num_nodes(); ++i)
    node_index[graph.nodes()[i].name] = static_cast<uint32_t>(i);
  absl::flat_hash_set<std::string> weight_names;
  for (const training::TrainedWeight& w : step.weights) weight_names.insert(w.name);
  absl::flat_hash_map<std::string, int32_t> made_by;  // tensor → stage
  // Note [Measured run costs]: a step measurement (NodeTimes::run_us) also
  // gives each model's cost per session run beyond its nodes: binding the
  // weights and data it is fed, fetching what it returns. A stage run pays
  // the gradient model's share by the bytes it is fed and returns; a device's
  // update, the update model's by the bytes of the weights it updates. The
  // runner's gradient sums (RunCosts::gradient_sum_us, all weights, per
  // micro-batch) are charged the same way: to each stage by the bytes of the
  // weight gradients it outputs, as work after its run (the runner hands the
  // outputs on first); the means (gradient_mean_us) to each device's update
  // by its weights' bytes.
  const costmodel::NodeTimes::RunCosts* run_us =
      options.node_times != nullptr && options.node_times->run_us ? &*options.node_times->run_us
                                                                  : nullptr;
  absl::flat_hash_map<std::string, int64_t> gradient_bytes;  // weight gradient → bytes
  int64_t all_weight_bytes = 0;                              // a weight's gradient has its bytes
  for (const training::TrainedWeight& w : step.weights) {
    gradient_bytes[w.gradient] = w.bytes;
    all_weight_bytes += w.bytes;
  }
  int64_t model_io_bytes = 0;
  for (ir::ValueId v : graph.inputs()) model_io_bytes += graph.value(v).SizeBytes().value_or(0);
  for (ir::ValueId v : graph.outputs()) model_io_bytes += graph.value(v).SizeBytes().value_or(0);
  for (passes::Stage& s : deployment->stages) {
    TrainingStage stage;
    stage.kind = s.phase == 0 ? costmodel::StageKind::kForward : costmodel::StageKind::kBackward;
    for (const onnx::NodeProto& n : s.proto.graph().node()) {
      if (auto it = node_index.find(n.name()); it != node_index.end())
        stage.compute_us += costs->compute_us(it->second, cluster.device(s.device).kind);
    }
    if (run_us != nullptr && model_io_bytes > 0) {
      int64_t io = 0;
      for (const std::string& name : s.inputs) io += BytesOf(graph, name);
      for (const std::string& name : s.outputs) io += BytesOf(graph, name);
      stage.compute_us +=
          run_us->gradient_us * static_cast<double>(io) / static_cast<double>(model_io_bytes);
    }
    if (run_us != nullptr && all_weight_bytes > 0) {
      int64_t summed = 0;
      for (const std::string& name : s.outputs) {
        if (auto it = gradient_bytes.find(name); it != gradient_bytes.end()) summed += it->second;
      }
      stage.after_us = run_us->gradient_sum_us * static_cast<double>(summed) /
                       static_cast<double>(all_weight_bytes);
    }
    for (const std::string& o : s.outputs) made_by[o] = s.id;
    if (std::find(out.devices.begin(), out.devices.end(), s.device) == out.devices.end())
      out.devices.push_back(s.device);
    stage.stage = std::move(s);
    out.stages.push_back(std::move(stage));
  }
  std::sort(out.devices.begin(), out.devices.end());

  // Each weight's device: where its gradient is made.
  for (const training::TrainedWeight& w : step.weights) {
    auto it = made_by.find(w.gradient);
    if (it == made_by.end()) {
      return absl::InternalError(
          absl::StrCat("no stage outputs the gradient of weight '", w.name, "'"));
    }
    out.weight_device.push_back(out.stages[it->second].stage.device);
  }

  // The update model of each device, built for its own weights; its names
  // must be those of the whole step's update model, which plan.json lists.
  const int64_t opset = onnx_io::DefaultDomainOpset(step.gradient_model);
  std::vector<int64_t> fixed_bytes(cluster.num_devices(), 0);
  std::vector<double> update_us(cluster.num_devices(), 0);
  const size_t state_buffers = training::StateBufferNames(options.optimizer.kind).size();
  // Measured: each device's update nodes, found through the file's update
  // origins (the first reader of the weight each updates).
  std::vector<double> measured_update_us(cluster.num_devices(), 0);
  if (run_us != nullptr) {
    for (const auto& [name, us] : options.node_times->node_us) {
      if (!options.node_times->update_nodes.contains(name)) continue;
      auto origin = options.node_times->origin.find(name);
      if (origin == options.node_times->origin.end()) continue;
      auto placed = source_device.find(origin->second);
      if (placed != source_device.end()) measured_update_us[placed->second] += us;
    }
  }
  for (int32_t d : out.devices) {
    std::vector<training::UpdatedWeight> weights;
    std::vector<std::string> gradients;
    std::vector<size_t> index;
    int64_t weight_bytes = 0;
    for (size_t k = 0; k < step.weights.size(); ++k) {
      if (out.weight_device[k] != d) continue;
      const training::TrainedWeight& w = step.weights[k];
      weights.push_back({.name = w.name, .dims = w.dims, .dtype = w.dtype});
      gradients.push_back(w.gradient);
      index.push_back(k);
      weight_bytes += w.bytes;
    }
    // Its weights' gradient accumulators and optimizer state (the weights
    // themselves are counted with the stages that read them).
    fixed_bytes[d] += weight_bytes * static_cast<int64_t>(1 + state_buffers);
    if (weights.empty()) continue;
    absl::StatusOr<training::UpdateModel> update =
        training::BuildUpdateModel(weights, gradients, options.optimizer, opset);
    if (!update.ok()) return update.status();
    for (size_t j = 0; j < index.size(); ++j) {
      const training::UpdateNames& mine = update->names[j];
      const training::UpdateNames& whole = step.update.names[index[j]];
      if (mine.weight != whole.weight || mine.gradient != whole.gradient ||
          mine.weight_out != whole.weight_out || mine.state != whole.state ||
          mine.state_out != whole.state_out || update->step_input != step.update.step_input) {
        return absl::InternalError(absl::StrCat("the update model of device ", d, " names weight '",
                                                weights[j].name,
                                                "' differently from the whole step's"));
      }
    }
    if (absl::Status s = onnx_io::CheckModel(update->proto, {}); !s.ok()) {
      return absl::InternalError(
          absl::StrCat("the update model of device ", d, " fails the ONNX checker: ", s.message()));
    }
    DeviceUpdate u{.device = d,
                   .file = absl::StrCat("step/update_d", d, ".onnx"),
                   .proto = std::move(update->proto),
                   .weights = {},
                   .compute_us = 0};
    for (const training::UpdatedWeight& w : weights) u.weights.push_back(w.name);
    if (run_us != nullptr) {
      // Measured: its update nodes and its share of the run cost (Note
      // [Measured run costs]).
      const double share = all_weight_bytes > 0 ? static_cast<double>(weight_bytes) /
                                                      static_cast<double>(all_weight_bytes)
                                                : 0;
      u.compute_us = measured_update_us[d] + (run_us->update_us + run_us->gradient_mean_us) * share;
    } else {
      absl::StatusOr<Analyzed> analyzed = Analyze(u.proto, {}, "update");
      if (!analyzed.ok()) return analyzed.status();
      absl::StatusOr<costmodel::CostGraph> update_costs = NodeCosts(*analyzed, cluster, nullptr);
      if (!update_costs.ok()) return update_costs.status();
      for (uint32_t n = 0; n < update_costs->num_units(); ++n)
        u.compute_us += update_costs->compute_us(n, cluster.device(d).kind);
    }
    update_us[d] = u.compute_us;
    out.updates.push_back(std::move(u));
  }

  // The stage-level problem (Note [Training schedule]).
  costmodel::PipelineStepProblem problem;
  problem.microbatches = options.microbatches;
  problem.schedule = options.schedule;
  problem.update_us = update_us;
  std::vector<absl::flat_hash_set<std::string>> held(cluster.num_devices());     // weights read
  std::vector<absl::flat_hash_set<std::string>> stashed(cluster.num_devices());  // for backward
  std::vector<int32_t> first_forward(cluster.num_devices(), -1);
  std::vector<absl::flat_hash_set<std::string>> arrived(cluster.num_devices());
  for (const TrainingStage& t : out.stages) {
    const passes::Stage& s = t.stage;
    costmodel::PipelineStage p;
    p.device = s.device;
    p.kind = t.kind;
    p.compute_us = t.compute_us;
    p.after_us = t.after_us;
    int64_t largest_output = 0;
    for (const onnx::NodeProto& n : s.proto.graph().node()) {
      for (const std::string& o : n.output())
        largest_output = std::max(largest_output, BytesOf(graph, o));
    }
    p.transient_bytes = largest_output;
    for (const std::string& in : s.inputs) {
      const int64_t bytes = BytesOf(graph, in);
      if (weight_names.contains(in)) {
        if (held[s.device].insert(in).second) fixed_bytes[s.device] += bytes;
        continue;
      }
      p.transient_bytes += bytes;
      auto producer = made_by.find(in);
      if (producer != made_by.end()) {
        // A tensor an earlier stage of this device received is there
        // already: the runner sends it once per device. The edge stays,
        // without bytes, for the dependency.
        const bool received = !arrived[s.device].insert(in).second &&
                              out.stages[producer->second].stage.device != s.device;
        p.inputs.push_back({.stage = producer->second, .bytes = received ? 0 : bytes});
      }
      const bool from_forward = producer == made_by.end() ||
                                out.stages[producer->second].kind == costmodel::StageKind::kForward;
      if (t.kind == costmodel::StageKind::kBackward && from_forward) stashed[s.device].insert(in);
    }
    for (const std::string& o : s.outputs) p.transient_bytes += BytesOf(graph, o);
    // Frozen weights stay initializers of the stages that read them.
    for (const onnx::TensorProto& init : s.proto.graph().initializer()) {
      if (held[s.device].insert(init.name()).second)
        fixed_bytes[s.device] += BytesOf(graph, init.name());
    }
    if (t.kind == costmodel::StageKind::kForward && first_forward[s.device] < 0)
      first_forward[s.device] = s.id;
    problem.stages.push_back(std::move(p));
  }
  // A device's stash (what its backward runs read of the forward pass) is
  // held from its first forward run of a micro-batch to its last backward.
  for (int d = 0; d < cluster.num_devices(); ++d) {
    if (first_forward[d] < 0) continue;
    for (const std::string& name : stashed[d])
      problem.stages[first_forward[d]].stash_bytes += BytesOf(graph, name);
  }
  problem.fixed_bytes = std::move(fixed_bytes);
  absl::StatusOr<costmodel::PipelineStepResult> predicted =
      costmodel::SimulatePipelineStep(problem, cluster);
  if (!predicted.ok()) return predicted.status();
  out.predicted = *std::move(predicted);
  return out;
}

absl::StatusOr<SourceNodeTimes> StepTimesBySourceNode(const training::TrainingStep& step,
                                                      const ir::Graph& source,
                                                      const costmodel::Cluster& cluster,
                                                      const std::string& directory,
                                                      const costmodel::NodeTimes* node_times) {
  absl::StatusOr<Analyzed> gradient = Analyze(step.gradient_model, directory, "gradient");
  if (!gradient.ok()) return gradient.status();
  const ir::Graph& graph = gradient->graph;
  absl::StatusOr<costmodel::CostGraph> costs = NodeCosts(*gradient, cluster, node_times);
  if (!costs.ok()) return costs.status();
  absl::flat_hash_map<std::string, uint32_t> index_of;
  for (size_t i = 0; i < source.num_nodes(); ++i)
    index_of[source.nodes()[i].name] = static_cast<uint32_t>(i);
  const absl::flat_hash_set<std::string> backward = BackwardNodeNames(step);
  SourceNodeTimes out;
  out.num_kinds = static_cast<int>(cluster.kinds.size());
  const size_t kinds = static_cast<size_t>(out.num_kinds);
  out.forward_us.assign(source.num_nodes() * kinds, 0);
  out.backward_us.assign(source.num_nodes() * kinds, 0);
  if (node_times != nullptr && node_times->run_us) {
    out.gradient_sum_us = node_times->run_us->gradient_sum_us;
    out.gradient_mean_us = node_times->run_us->gradient_mean_us;
  }
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& node = graph.nodes()[i];
    if (node.kind == ir::OpKind::kConstant) continue;
    auto origin = step.node_origin.find(node.name);
    const std::string& name = origin == step.node_origin.end() ? node.name : origin->second;
    auto placed = index_of.find(name);
    if (placed == index_of.end()) continue;
    std::vector<double>& into = backward.contains(node.name) ? out.backward_us : out.forward_us;
    for (size_t k = 0; k < kinds; ++k) {
      into[placed->second * kinds + k] +=
          costs->compute_us(static_cast<uint32_t>(i), static_cast<int>(k));
    }
  }
  return out;
}

}  // namespace autopar::pipeline
