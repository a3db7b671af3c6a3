#include "tools/artifacts/training_json.h"

#include <vector>

namespace autopar::tools {
namespace {

using Json = nlohmann::ordered_json;

Json Dims(const std::vector<int64_t>& dims) { return Json(dims); }

// A graph input's name, dtype and static shape.
Json InputEntry(const onnx::ValueInfoProto& input) {
  const onnx::TypeProto_Tensor& t = input.type().tensor_type();
  std::vector<int64_t> dims;
  for (const onnx::TensorShapeProto_Dimension& d : t.shape().dim()) dims.push_back(d.dim_value());
  return {{"name", input.name()},
          {"dtype", std::string(ir::DTypeName(ir::DTypeFromOnnx(t.elem_type())))},
          {"shape", Dims(dims)}};
}

Json OptimizerEntry(const training::OptimizerOptions& o, const std::string& step_input) {
  Json j = {{"name", std::string(costmodel::OptimizerName(o.kind))},
            {"learning_rate", o.learning_rate}};
  switch (o.kind) {
    case costmodel::Optimizer::kSgd:
      break;
    case costmodel::Optimizer::kMomentum:
      j["momentum"] = o.momentum;
      break;
    case costmodel::Optimizer::kAdam:
    case costmodel::Optimizer::kAdamW:
      j["betas"] = {o.beta1, o.beta2};
      j["eps"] = o.eps;
      break;
  }
  j["weight_decay"] = o.weight_decay;
  j["step_input"] = step_input.empty() ? Json() : Json(step_input);
  return j;
}

Json PipelineEntry(const pipeline::SplitTrainingStep& split) {
  Json stages = Json::array();
  for (const pipeline::TrainingStage& t : split.stages) {
    const passes::Stage& s = t.stage;
    stages.push_back({{"id", s.id},
                      {"kind", t.kind == costmodel::StageKind::kForward ? "forward" : "backward"},
                      {"device", s.device},
                      {"file", s.file},
                      {"inputs", s.inputs},
                      {"outputs", s.outputs},
                      {"after", s.after},
                      {"per_microbatch", true},
                      {"predicted_us", t.compute_us}});
  }
  int32_t id = static_cast<int32_t>(split.stages.size());
  for (const pipeline::DeviceUpdate& u : split.updates) {
    stages.push_back({{"id", id++},
                      {"kind", "update"},
                      {"device", u.device},
                      {"file", u.file},
                      {"weights", u.weights},
                      {"per_microbatch", false},
                      {"predicted_us", u.compute_us}});
  }
  const costmodel::PipelineStepResult& p = split.predicted;
  Json order = Json::array();
  Json peak = Json::array();
  Json stashes = Json::array();
  for (int32_t d : split.devices) {
    Json runs = Json::array();
    for (const auto& [stage, microbatch] : p.order[d]) runs.push_back({stage, microbatch});
    order.push_back({{"device", d}, {"runs", runs}});
    peak.push_back(p.peak_memory_bytes[d]);
    stashes.push_back(p.max_stashes[d]);
  }
  return {{"schedule", std::string(costmodel::PipelineScheduleName(split.schedule))},
          {"microbatches", split.microbatches},
          {"devices", split.devices},
          {"stages", stages},
          {"order", order},
          {"predicted",
           {{"step_us", p.step_us}, {"peak_memory_bytes", peak}, {"max_stashes", stashes}}}};
}

}  // namespace

nlohmann::ordered_json TrainingStepJson(const training::TrainingStep& step,
                                        const training::TrainingOptions& options,
                                        const pipeline::SplitTrainingStep* split) {
  Json data_inputs = Json::array();
  for (const onnx::ValueInfoProto& input : step.gradient_model.graph().input()) {
    for (const std::string& name : step.data_inputs) {
      if (name == input.name()) data_inputs.push_back(InputEntry(input));
    }
  }
  Json weights = Json::array();
  for (size_t k = 0; k < step.weights.size(); ++k) {
    const training::TrainedWeight& w = step.weights[k];
    const training::UpdateNames& names = step.update.names[k];
    Json state = Json::array();
    for (size_t s = 0; s < names.state.size(); ++s) {
      state.push_back({{"name", names.state[s]}, {"output", names.state_out[s]}});
    }
    weights.push_back({{"name", w.name},
                       {"dtype", std::string(ir::DTypeName(w.dtype))},
                       {"shape", Dims(w.dims)},
                       {"bytes", w.bytes},
                       {"initial", w.initial},
                       {"gradient", w.gradient},
                       {"update",
                        {{"weight", names.weight},
                         {"gradient", names.gradient},
                         {"output", names.weight_out},
                         {"state", state}}}});
    if (split != nullptr) weights.back()["device"] = split->weight_device[k];
  }
  const int64_t all_nodes = step.gradient_model.graph().node_size();
  Json out = {
      {"models",
       {{"init", kInitModelPath}, {"gradient", kGradientModelPath}, {"update", kUpdateModelPath}}},
      {"loss",
       {{"spec", training::LossSpecText(options.loss)},
        {"output", step.loss},
        {"input", step.loss_input.empty() ? Json() : Json(step.loss_input)},
        {"classes", step.classes > 0 ? Json(step.classes) : Json()}}},
      {"data_inputs", data_inputs},
      {"optimizer", OptimizerEntry(options.optimizer, step.update.step_input)},
      {"weights", weights},
      {"frozen", step.frozen},
      {"nodes",
       {{"forward", all_nodes - step.backward_nodes},
        {"backward", step.backward_nodes},
        {"differentiated", step.differentiated_nodes}}}};
  // Which source node each added node works for, in the gradient model's
  // order: measured times of the step's nodes are charged to them.
  Json origin = Json::object();
  for (const onnx::NodeProto& n : step.gradient_model.graph().node()) {
    auto it = step.node_origin.find(n.name());
    if (it != step.node_origin.end()) origin[n.name()] = it->second;
  }
  out["node_origin"] = std::move(origin);
  // The same for the update model's nodes: the first reader of the weight
  // each updates.
  Json update_origin = Json::object();
  for (const onnx::NodeProto& n : step.update.proto.graph().node()) {
    auto it = step.update.node_origin.find(n.name());
    if (it != step.update.node_origin.end()) update_origin[n.name()] = it->second;
  }
  out["update_origin"] = std::move(update_origin);
  if (split != nullptr) out["pipeline"] = PipelineEntry(*split);
  return out;
}

}  // namespace autopar::tools
