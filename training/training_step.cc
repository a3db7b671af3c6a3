#include "training/training_step.h"

#include <algorithm>
#include <optional>
#include <regex>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "onnx_io/checker.h"
#include "onnx_io/export.h"
#include "training/gradient_pass.h"
#include "training/recurrent_lowering.h"

namespace autopar::training {

namespace {

// Sets `info`'s type to `value`'s dtype and static shape.
void SetTensorType(const ir::Value& value, onnx::ValueInfoProto& info) {
  info.set_name(value.name);
  onnx::TypeProto_Tensor* t = info.mutable_type()->mutable_tensor_type();
  t->set_elem_type(static_cast<int32_t>(value.dtype));
  onnx::TensorShapeProto* shape = t->mutable_shape();
  shape->clear_dim();
  for (const ir::Dim& d : value.shape.dims()) {
    if (d.known()) {
      shape->add_dim()->set_dim_value(d.value);
    } else {
      shape->add_dim()->set_dim_param(d.symbol);
    }
  }
}

// Every name the forward model uses: values, nodes, inputs and outputs.
absl::flat_hash_set<std::string> TakenNames(const ir::Graph& graph, const onnx::GraphProto& proto) {
  absl::flat_hash_set<std::string> taken;
  for (const ir::Value& v : graph.values()) taken.insert(v.name);
  for (const onnx::NodeProto& n : proto.node()) {
    taken.insert(n.name());
    for (const std::string& o : n.output()) taken.insert(o);
  }
  return taken;
}

// The init model: the trained weights' initializers, moved out of
// `gradient_graph`, each returned through an Identity as "<name>.initial"
// (names stay those of the source, where external data is looked up).
onnx::ModelProto MoveOutInitialWeights(std::vector<TrainedWeight>& weights,
                                       onnx::GraphProto& gradient_graph,
                                       const onnx::ModelProto& like) {
  onnx::ModelProto init;
  init.set_ir_version(like.ir_version());
  init.set_producer_name("onnx-autopar");
  *init.mutable_opset_import() = like.opset_import();
  onnx::GraphProto* graph = init.mutable_graph();
  graph->set_name("initial_weights");
  absl::flat_hash_set<std::string> trained;
  for (const TrainedWeight& w : weights) trained.insert(w.name);
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (onnx::TensorProto& t : *gradient_graph.mutable_initializer()) {
    if (trained.contains(t.name())) {
      *graph->add_initializer() = std::move(t);
    } else {
      *kept.Add() = std::move(t);
    }
  }
  gradient_graph.mutable_initializer()->Swap(&kept);
  absl::flat_hash_set<std::string> taken = trained;
  GraphEmitter emit(graph, taken, onnx_io::DefaultDomainOpset(like), "");
  for (TrainedWeight& w : weights) {
    w.initial = absl::StrCat(w.name, ".initial");
    for (int n = 1; !emit.Reserve(w.initial); ++n) w.initial = absl::StrCat(w.name, ".initial_", n);
    emit.OpTo("Identity", {w.name}, w.initial);
    onnx::ValueInfoProto* out = graph->add_output();
    out->set_name(w.initial);
    onnx::TypeProto_Tensor* t = out->mutable_type()->mutable_tensor_type();
    t->set_elem_type(static_cast<int32_t>(w.dtype));
    onnx::TensorShapeProto* shape = t->mutable_shape();
    for (int64_t d : w.dims) shape->add_dim()->set_dim_value(d);
  }
  return init;
}

// The floating-point initializers the loss's seeds depend on, less those
// --freeze matches (added to `frozen` when given).
std::vector<ir::ValueId> TrainedWeights(
    const ir::Graph& graph, const std::vector<std::pair<ir::ValueId, std::string>>& seeds,
    const std::optional<std::regex>& freeze, std::vector<std::string>* frozen) {
  std::vector<ir::ValueId> seed_values;
  for (const auto& [value, gradient] : seeds) seed_values.push_back(value);
  const std::vector<bool> reached = ValuesTheSeedsDependOn(graph, seed_values);
  std::vector<ir::ValueId> trained;
  for (ir::ValueId id : graph.initializers()) {
    const ir::Value& v = graph.value(id);
    if (!reached[id.index()] || !IsDifferentiableType(v.dtype)) continue;
    if (freeze && std::regex_search(v.name, *freeze)) {
      if (frozen != nullptr) frozen->push_back(v.name);
      continue;
    }
    trained.push_back(id);
  }
  return trained;
}

// The step of a model whose gradient path holds only operators with rules
// (recurrent nodes already unrolled).
// `lowered_from`: the recurrent lowering's origins (written node → the
// recurrent node it replaces), empty when nothing was lowered.
absl::StatusOr<TrainingStep> BuildStep(
    const onnx_io::Model& model, const ir::Graph& graph, const TrainingOptions& options,
    const std::optional<std::regex>& freeze,
    const absl::flat_hash_map<std::string, std::string>& lowered_from) {
  absl::StatusOr<onnx::ModelProto> exported = onnx_io::ExportModel(graph, model);
  if (!exported.ok()) return exported.status();
  TrainingStep step;
  step.gradient_model = *std::move(exported);
  onnx::GraphProto* proto = step.gradient_model.mutable_graph();
  const int64_t opset = onnx_io::DefaultDomainOpset(step.gradient_model);
  const int forward_nodes = proto->node_size();
  GraphEmitter emit(proto, TakenNames(graph, *proto), opset, "grad/");

  // The loss's nodes work for the node whose output it reads.
  if (std::optional<ir::ValueId> read = graph.FindValue(options.loss.value)) {
    if (graph.value(*read).producer.valid())
      emit.set_origin(graph.node(graph.value(*read).producer).name);
  }
  absl::StatusOr<WrittenLoss> loss = WriteLoss(graph, options.loss, emit);
  if (!loss.ok()) return loss.status();
  step.loss = loss->loss;
  step.classes = loss->classes;

  // The trained weights: floating-point initializers the loss depends on.
  const std::vector<ir::ValueId> trained = TrainedWeights(graph, loss->seeds, freeze, &step.frozen);
  if (trained.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("nothing to train: no floating-point initializer that the loss '",
                     LossSpecText(options.loss), "' depends on",
                     step.frozen.empty()
                         ? ""
                         : absl::StrCat(" is left by --freeze (", step.frozen.size(), " frozen)")));
  }

  step.backward_begin = proto->node_size();
  absl::StatusOr<GradientResult> backward =
      BuildBackward(graph, {.seeds = loss->seeds, .wrt = trained}, emit);
  if (!backward.ok()) return backward.status();
  step.differentiated_nodes = backward->differentiated_nodes;

  // Inputs: the model's data inputs with their bound shapes, the loss's
  // input, then the trained weights (initializers too: their initial values).
  proto->clear_input();
  for (ir::ValueId id : graph.inputs()) {
    SetTensorType(graph.value(id), *proto->add_input());
    step.data_inputs.push_back(graph.value(id).name);
  }
  if (loss->added_input) {
    *proto->add_input() = *loss->added_input;
    step.data_inputs.push_back(loss->input);
  }
  step.loss_input = loss->input;
  proto->clear_output();
  onnx::ValueInfoProto* loss_info = proto->add_output();
  if (std::optional<ir::ValueId> id = graph.FindValue(step.loss)) {
    SetTensorType(graph.value(*id), *loss_info);
  } else {
    loss_info->set_name(step.loss);
    onnx::TypeProto_Tensor* t = loss_info->mutable_type()->mutable_tensor_type();
    t->set_elem_type(static_cast<int32_t>(graph.value(loss->seeds.front().first).dtype));
    t->mutable_shape();  // a scalar
  }
  for (size_t k = 0; k < trained.size(); ++k) {
    const ir::Value& v = graph.value(trained[k]);
    SetTensorType(v, *proto->add_input());
    TrainedWeight w{.name = v.name,
                    .dims = v.shape.Values(),
                    .dtype = v.dtype,
                    .bytes = v.SizeBytes().value_or(0)};
    w.gradient = absl::StrCat(v.name, "_grad");
    for (int n = 1; !emit.Reserve(w.gradient); ++n) w.gradient = absl::StrCat(v.name, "_grad_", n);
    const std::string& g = backward->gradients[k];
    if (g.empty()) {
      return absl::InternalError(absl::StrCat("weight '", v.name, "' got no gradient"));
    }
    emit.set_origin(FirstReaderName(graph, trained[k]));
    emit.OpTo("Identity", {g}, w.gradient);
    onnx::ValueInfoProto* out = proto->add_output();
    SetTensorType(v, *out);
    out->set_name(w.gradient);
    step.weights.push_back(std::move(w));
  }
  step.backward_nodes = proto->node_size() - forward_nodes;
  // Origins in terms of the source model: through the lowering, if any.
  for (const auto& [node, origin] : lowered_from) step.node_origin[node] = origin;
  for (const auto& [node, origin] : emit.origins()) {
    auto through = lowered_from.find(origin);
    step.node_origin[node] = through == lowered_from.end() ? origin : through->second;
  }
  step.init_model = MoveOutInitialWeights(step.weights, *proto, step.gradient_model);

  for (const auto& [what, proto_to_check] :
       {std::pair{"gradient", &step.gradient_model}, std::pair{"init", &step.init_model}}) {
    if (absl::Status s = onnx_io::CheckModel(*proto_to_check, model.directory()); !s.ok()) {
      return absl::InternalError(
          absl::StrCat("the written ", what, " model fails the ONNX checker: ", s.message()));
    }
  }

  // Each weight's update works for the node its gradient's output does (its
  // first reader); the update model's nodes avoid the gradient model's names.
  std::vector<UpdatedWeight> updated;
  std::vector<std::string> gradient_names;
  for (const TrainedWeight& w : step.weights) {
    auto origin = step.node_origin.find(w.gradient);
    updated.push_back({.name = w.name,
                       .dims = w.dims,
                       .dtype = w.dtype,
                       .origin = origin == step.node_origin.end() ? "" : origin->second});
    gradient_names.push_back(w.gradient);
  }
  absl::flat_hash_set<std::string> gradient_nodes;
  for (const onnx::NodeProto& n : step.gradient_model.graph().node())
    gradient_nodes.insert(n.name());
  absl::StatusOr<UpdateModel> update =
      BuildUpdateModel(updated, gradient_names, options.optimizer, opset, gradient_nodes);
  if (!update.ok()) return update.status();
  step.update = *std::move(update);
  if (absl::Status s = onnx_io::CheckModel(step.update.proto, {}); !s.ok()) {
    return absl::InternalError(
        absl::StrCat("the written update model fails the ONNX checker: ", s.message()));
  }
  return step;
}

}  // namespace

absl::StatusOr<TrainingStep> BuildTrainingStep(const onnx_io::Model& model, const ir::Graph& graph,
                                               const TrainingOptions& options) {
  std::optional<std::regex> freeze;
  if (!options.freeze.empty()) {
    try {
      freeze.emplace(options.freeze, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("--freeze '", options.freeze, "' is not a regular expression: ", e.what()));
    }
  }
  // LSTM, GRU and RNN nodes on the gradient path are unrolled into operators
  // with rules first (training/recurrent_lowering.h). Which nodes those are
  // depends on the loss and the trained weights: the loss is written into a
  // scratch graph to find its seeds, and written for real by BuildStep.
  const bool any_recurrent = std::any_of(graph.nodes().begin(), graph.nodes().end(),
                                         [](const ir::Node& n) { return IsRecurrent(n.kind); });
  if (any_recurrent) {
    onnx::GraphProto scratch;
    GraphEmitter probe(&scratch, TakenNames(graph, model.proto.graph()),
                       onnx_io::DefaultDomainOpset(model.proto), "grad/");
    absl::StatusOr<WrittenLoss> loss = WriteLoss(graph, options.loss, probe);
    if (!loss.ok()) return loss.status();
    std::vector<ir::ValueId> seed_values;
    for (const auto& [value, gradient] : loss->seeds) seed_values.push_back(value);
    const std::vector<ir::NodeId> recurrent =
        RecurrentNodesOnGradientPath(graph, ValuesTheSeedsDependOn(graph, seed_values),
                                     TrainedWeights(graph, loss->seeds, freeze, nullptr));
    if (!recurrent.empty()) {
      absl::StatusOr<LoweredModel> lowered = LowerRecurrentNodes(model, graph, recurrent);
      if (!lowered.ok()) return lowered.status();
      return BuildStep(lowered->model, lowered->graph, options, freeze, lowered->origins);
    }
  }
  return BuildStep(model, graph, options, freeze, {});
}

}  // namespace autopar::training
