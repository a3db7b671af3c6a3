#include "passes/annotate_costs.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "costmodel/device.h"
#include "passes/constant_nodes.h"

namespace autopar::passes {

absl::StatusOr<AnnotatedGraph> AnnotateCosts(const ir::Graph& graph,
                                             const costmodel::Cluster& cluster,
                                             const costmodel::CostOptions& options,
                                             const costmodel::StepOptions& step) {
  AnnotatedGraph out;
  out.costs = costmodel::ComputeGraphCosts(graph, options);
  if (step.mode == costmodel::StepMode::kTraining) {
    out.training = costmodel::ComputeTrainingCosts(graph, out.costs, step.optimizer);
  }
  const costmodel::TrainingCosts* training = out.training ? &*out.training : nullptr;
  const int kinds = static_cast<int>(cluster.kinds.size());
  costmodel::CostGraph::Builder builder(kinds);

  // 1. Parameter blocks, one per weight value (Note [Weights are not edges]);
  //    in training with its gradient and optimizer state.
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> param_of_value(graph.num_values(), kNone);
  for (uint32_t v = 0; v < graph.num_values(); ++v) {
    const ir::Value& value = graph.value(ir::ValueId(v));
    if (!value.is_parameter) continue;
    param_of_value[v] = builder.AddParameter(
        training ? costmodel::TrainingParameterBytes(value, training->trainable[v], step.optimizer)
                 : value.SizeBytes().value_or(0));
  }

  // 2. One unit per node, in the graph's topological order. In inference,
  //    nodes computed from weights only are folded when a session starts
  //    (passes/constant_nodes.h) and take no time.
  const std::vector<uint8_t> folded =
      training ? std::vector<uint8_t>(graph.num_nodes(), 0) : ConstantNodes(graph);
  for (uint32_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& node = graph.node(ir::NodeId(i));
    const costmodel::NodeCost& cost = out.costs[i];
    costmodel::CostGraph::UnitSpec unit;
    unit.name = node.name;
    unit.op = node.domain.empty() ? node.op_type : absl::StrCat(node.domain, ".", node.op_type);
    for (const costmodel::DeviceSpec& kind : cluster.kinds) {
      unit.compute_us.push_back(training ? costmodel::TrainingTimeUs(cost, training->nodes[i], kind)
                                : folded[i] ? 0.0
                                            : costmodel::PredictTimeUs(cost, kind));
    }
    auto add_param = [&](ir::ValueId v) {
      if (!v.valid() || param_of_value[v.index()] == kNone) return;
      uint32_t p = param_of_value[v.index()];
      if (std::find(unit.params.begin(), unit.params.end(), p) == unit.params.end()) {
        unit.params.push_back(p);
      }
    };
    for (ir::ValueId v : node.inputs) add_param(v);
    for (ir::ValueId v : node.captured) add_param(v);
    unit.temp_bytes = cost.workspace_bytes;
    unit.flops = cost.flops;
    if (training) {
      const costmodel::NodeTrainingCost& t = training->nodes[i];
      if (t.persistent_bytes > 0) unit.params.push_back(builder.AddParameter(t.persistent_bytes));
      unit.temp_bytes = std::max(unit.temp_bytes, t.gradient_workspace_bytes);
      unit.flops = (costmodel::Count(cost.flops) + t.backward.flops + t.update.flops).value();
    }
    builder.AddUnit(std::move(unit));
  }

  // 3. Tensors: node outputs that are not weights, read by their consumers.
  for (uint32_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& node = graph.node(ir::NodeId(i));
    for (ir::ValueId v : node.outputs) {
      if (!v.valid()) continue;
      const ir::Value& value = graph.value(v);
      if (value.is_parameter) continue;
      std::optional<int64_t> bytes = value.SizeBytes();
      if (!bytes && value.type_kind == ir::TypeKind::kTensor) {
        return absl::InvalidArgumentError(absl::StrCat(
            "value '", value.name, "' of node '", node.name, "' ",
            value.shape.IsStatic() ? "is too large: its size in bytes overflows 64 bits "
                                   : "has no static size ",
            value.shape.ToString()));
      }
      // Saved for the backward pass: kept to the end of the step like a graph
      // output (Note [Training step]).
      const bool saved = training && training->saved[v.index()];
      uint32_t tensor = builder.AddTensor({.name = value.name,
                                           .producer = i,
                                           .bytes = bytes.value_or(0),
                                           .is_graph_output = value.is_graph_output || saved});
      for (ir::NodeId reader : value.consumers) builder.AddUse(tensor, reader.index());
    }
  }
  absl::StatusOr<costmodel::CostGraph> cost_graph = std::move(builder).Build();
  if (!cost_graph.ok()) return cost_graph.status();
  out.graph = *std::move(cost_graph);
  return out;
}

}  // namespace autopar::passes
