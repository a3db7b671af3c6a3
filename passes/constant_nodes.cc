#include "passes/constant_nodes.h"

#include "passes/partition.h"

namespace autopar::passes {
namespace {

bool IsRandom(const ir::Node& node) {
  switch (node.kind) {
    case ir::OpKind::kRandomNormal:
    case ir::OpKind::kRandomNormalLike:
    case ir::OpKind::kRandomUniform:
    case ir::OpKind::kRandomUniformLike:
    case ir::OpKind::kBernoulli:
    case ir::OpKind::kMultinomial:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::vector<uint8_t> ConstantNodes(const ir::Graph& graph) {
  std::vector<uint8_t> constant(graph.num_nodes(), 0);
  auto is_constant_value = [&](ir::ValueId id) {
    const ir::Value& value = graph.value(id);
    if (value.kind == ir::ValueKind::kInitializer || value.is_parameter) return true;
    return value.kind == ir::ValueKind::kNodeOutput && constant[value.producer.index()] != 0;
  };
  // Nodes are in topological order, so every producer is decided first.
  for (uint32_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& node = graph.node(ir::NodeId(i));
    bool all = !IsRandom(node);
    for (ir::ValueId in : node.inputs) all = all && (!in.valid() || is_constant_value(in));
    for (ir::ValueId in : node.captured) all = all && is_constant_value(in);
    constant[i] = all ? 1 : 0;
  }
  return constant;
}

int64_t MoveConstantNodesToReaders(const ir::Graph& graph, std::vector<int32_t>& node_device) {
  if (node_device.size() != graph.num_nodes()) return 0;
  const std::vector<uint8_t> constant = ConstantNodes(graph);
  std::vector<uint8_t> pinned(graph.num_nodes(), 0);
  for (const auto& [producer, reader] : NonTensorColocations(graph)) {
    pinned[producer] = 1;
    pinned[reader] = 1;
  }
  int64_t moved = 0;
  for (uint32_t i = graph.num_nodes(); i-- > 0;) {
    if (!constant[i] || pinned[i]) continue;
    const ir::Node& node = graph.node(ir::NodeId(i));
    int32_t readers_device = -1;
    bool one_device = true;
    for (ir::ValueId out : node.outputs) {
      if (!out.valid()) continue;
      const ir::Value& value = graph.value(out);
      if (value.is_graph_output) one_device = false;
      for (ir::NodeId reader : value.consumers) {
        const int32_t d = node_device[reader.index()];
        if (readers_device >= 0 && d != readers_device) one_device = false;
        readers_device = d;
      }
    }
    if (!one_device || readers_device < 0 || readers_device == node_device[i]) continue;
    node_device[i] = readers_device;
    ++moved;
  }
  return moved;
}

}  // namespace autopar::passes
