#include "tools/artifacts/plan_json.h"

#include <set>
#include <vector>

#include "passes/symbolic_dims.h"
#include "tools/artifacts/training_json.h"

namespace autopar::tools {
namespace {

using Json = nlohmann::ordered_json;

Json DeviceEntries(const PlanRecord& r) {
  const int num_devices = r.cluster->num_devices();
  std::vector<int64_t> flops(num_devices, 0);
  for (size_t i = 0; i < r.node_device.size(); ++i)
    flops[r.node_device[i]] += r.node_costs[i].flops;
  Json devices = Json::array();
  for (int d = 0; d < num_devices; ++d) {
    const passes::DeviceModel& model = passes::DeviceModelOrUnused(*r.deployment, d);
    const costmodel::DeviceUsage& usage = r.simulation->devices[d];
    devices.push_back({{"id", d},
                       {"name", r.cluster->device(d).name},
                       {"model", model.unused ? Json() : Json(model.file)},
                       {"nodes", model.num_nodes},
                       {"sends", model.num_sends},
                       {"recvs", model.num_recvs},
                       {"flops", flops[d]},
                       {"param_bytes", usage.param_bytes},
                       {"peak_memory_bytes", usage.peak_memory_bytes},
                       {"memory_capacity_bytes", r.cluster->device(d).memory_bytes},
                       {"busy_us", usage.busy_us}});
  }
  return devices;
}

Json TransferEntries(const passes::Deployment& deployment) {
  Json transfers = Json::array();
  for (const passes::Transfer& t : deployment.transfers) {
    Json shape = Json::array();
    for (int64_t dim : t.shape) shape.push_back(dim);
    transfers.push_back({{"tag", t.tag},
                         {"tensor", t.tensor},
                         {"src", t.src},
                         {"dst", t.dst},
                         {"bytes", t.bytes},
                         {"dtype", std::string(ir::DTypeName(t.dtype))},
                         {"shape", shape}});
  }
  return transfers;
}

// `graph`: the one the deployment was split from, whose nodes a stage's
// `recomputed` indices name.
Json StageEntries(const passes::Deployment& deployment, const ir::Graph& graph) {
  Json stages = Json::array();
  for (const passes::Stage& s : deployment.stages) {
    Json entry = {{"id", s.id},           {"device", s.device},   {"level", s.level},
                  {"model", s.file},      {"nodes", s.num_nodes}, {"inputs", s.inputs},
                  {"outputs", s.outputs}, {"after", s.after}};
    // The shape values it computes itself rather than receive (Note
    // [Recomputed shapes] in passes/partition_stages.cc), by tensor name.
    if (!s.recomputed.empty()) {
      Json values = Json::array();
      for (int32_t i : s.recomputed) {
        values.push_back(graph.value(graph.nodes()[static_cast<size_t>(i)].outputs[0]).name);
      }
      entry["recomputed"] = std::move(values);
    }
    stages.push_back(std::move(entry));
  }
  return stages;
}

Json EstimateEntries(absl::Span<const passes::ShapeEstimate> estimates) {
  Json entries = Json::array();
  for (const passes::ShapeEstimate& e : estimates) {
    entries.push_back({{"kind", std::string(passes::EstimateKindName(e.kind))},
                       {"value", e.value},
                       {"assumed", e.assumed}});
  }
  return entries;
}

}  // namespace

double PredictedStepUs(const PlanRecord& r) {
  return r.measured_step != nullptr ? r.measured_step->step_us : r.simulation->step_time_us;
}

nlohmann::ordered_json SlowerSplitJson(const PlanRecord& r) {
  if (!r.slower_split) return nullptr;
  return {{"split_devices", r.slower_split->devices},
          {"split_step_time_us", r.slower_split->step_time_us},
          {"one_device_step_time_us", r.simulation->step_time_us},
          {"device", r.slower_split->device}};
}

nlohmann::ordered_json SymbolicDimsJson(const ir::Graph& graph,
                                        const passes::Deployment& deployment) {
  Json symbols = Json::object();
  std::set<std::string> seen_symbols;
  for (ir::ValueId id : graph.inputs()) {
    for (const ir::Dim& d : graph.value(id).shape.dims()) {
      if (d.symbol.empty() || !d.known() || !seen_symbols.insert(d.symbol).second) continue;
      symbols[d.symbol] = d.value;
    }
  }
  if (symbols.empty()) return nullptr;
  // The boundary tensors, each once, in a stable order.
  std::vector<ir::ValueId> boundary;
  std::set<uint32_t> taken;
  auto add = [&](const std::string& name) {
    std::optional<ir::ValueId> id = graph.FindValue(name);
    if (id && taken.insert(id->index()).second) boundary.push_back(*id);
  };
  for (ir::ValueId id : graph.inputs()) add(graph.value(id).name);
  for (ir::ValueId id : graph.outputs()) add(graph.value(id).name);
  for (const passes::Stage& s : deployment.stages) {
    for (const std::string& name : s.inputs) add(name);
    for (const std::string& name : s.outputs) add(name);
  }
  for (const passes::Transfer& t : deployment.transfers) add(t.tensor);
  int64_t named = 0;
  for (ir::ValueId id : boundary) {
    const ir::Value& v = graph.value(id);
    if (std::any_of(v.shape.dims().begin(), v.shape.dims().end(),
                    [](const ir::Dim& d) { return !d.symbol.empty(); })) {
      ++named;
    }
  }
  Json unnamed = Json::array();
  for (const passes::UnnamedBoundaryDim& d : passes::UnnamedDimsOf(graph, boundary)) {
    unnamed.push_back({{"tensor", d.tensor},
                       {"dim", d.dim},
                       {"planned", d.planned},
                       {"why", std::string(passes::UnnamedDimReasonText(d.reason))}});
  }
  return {{"symbols", symbols},
          {"boundary_tensors", boundary.size()},
          {"named_boundary_tensors", named},
          {"unnamed", unnamed}};
}

nlohmann::ordered_json PlanJson(const PlanRecord& r) {
  Json inputs = Json::array();
  for (const passes::InputUse& use : r.deployment->inputs) {
    // The model is one micro-batch: each of a step's micro-batches brings its
    // own value of every graph input and gets its own outputs.
    inputs.push_back({{"name", use.name}, {"devices", use.devices}, {"per_microbatch", true}});
  }
  Json outputs = Json::array();
  for (const passes::OutputOwner& owner : r.deployment->outputs) {
    outputs.push_back({{"name", owner.name}, {"device", owner.device}, {"per_microbatch", true}});
  }
  // ordered_json's operator[] searches its entries one by one: quadratic for
  // a million nodes. Node names are unique (the importer makes them so), so
  // the entries are appended to its underlying vector without a search.
  Json node_to_device = Json::object();
  Json::object_t& entries = node_to_device.get_ref<Json::object_t&>();
  entries.reserve(r.graph->num_nodes());
  for (uint32_t i = 0; i < r.graph->num_nodes(); ++i) {
    entries.emplace_back(r.graph->node(ir::NodeId(i)).name, r.node_device[i]);
  }
  const costmodel::SimulationResult& sim = *r.simulation;
  Json plan = {
      {"format", "onnx-autopar-plan"},
      {"version", kPlanFormatVersion},
      {"source",
       {{"path", r.source_path}, {"sha256", r.source_sha256}, {"nodes", r.graph->num_nodes()}}},
      {"algorithm", r.algorithm},
      {"seed", r.seed},
      {"search_time_ms", nullptr},
      {"microbatches", r.microbatches},
      {"costs", costmodel::CostSourceJson(r.cost_source)},
      {"cluster", costmodel::ClusterToJson(*r.cluster)},
      {"devices", DeviceEntries(r)},
      {"inputs", inputs},
      {"outputs", outputs},
      {"transfers", TransferEntries(*r.deployment)},
      {"stages", StageEntries(*r.deployment, *r.graph)},
      {"predicted",
       {{"step_time_us", PredictedStepUs(r)},
        {"lower_bound_us", r.lower_bound_us},
        {"single_device_step_us", r.single_device_step_us},
        {"microbatches", r.microbatches},
        {"mode", std::string(costmodel::StepModeName(r.step.mode))},
        {"optimizer",
         r.step.mode == costmodel::StepMode::kTraining
             ? nlohmann::ordered_json(std::string(costmodel::OptimizerName(r.step.optimizer)))
             : nlohmann::ordered_json()},
        {"comm_bytes", sim.comm_bytes},
        {"transfers", sim.transfers},
        {"feasible", !sim.memory_overflow},
        {"split_predicted_slower", SlowerSplitJson(r)}}},
      {"estimates", EstimateEntries(r.estimates)}};
  // The key keeps its place in the documented order when it is written.
  if (r.search_time_ms) {
    plan["search_time_ms"] = *r.search_time_ms;
  } else {
    plan.erase("search_time_ms");
  }
  if (Json symbolic = SymbolicDimsJson(*r.graph, *r.deployment); !symbolic.is_null()) {
    plan["symbolic_dims"] = std::move(symbolic);
  }
  if (r.measured_step != nullptr)
    plan["predicted"]["measured_step"] = costmodel::TrainingStepTimesJson(*r.measured_step);
  if (r.training_step != nullptr) {
    plan["mode"] = "training";
    plan["training"] = TrainingStepJson(*r.training_step, *r.training_options, r.training_split);
  }
  // Moved in last, not copied through an initializer list.
  plan["node_to_device"] = std::move(node_to_device);
  return plan;
}

}  // namespace autopar::tools
