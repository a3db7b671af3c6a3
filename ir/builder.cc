#include "ir/builder.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace autopar::ir {

GraphBuilder::GraphBuilder() { graph_.SetOpsetImport("", 17); }

ValueId GraphBuilder::Input(std::string name, DType dtype, std::vector<int64_t> dims) {
  Value v;
  v.name = std::move(name);
  v.kind = ValueKind::kGraphInput;
  v.dtype = dtype;
  v.shape = Shape(std::move(dims));
  ValueId id = graph_.AddValue(std::move(v));
  graph_.AddInput(id);
  return id;
}

ValueId GraphBuilder::Initializer(std::string name, DType dtype, std::vector<int64_t> dims,
                                  std::vector<int64_t> int_data) {
  Value v;
  v.name = std::move(name);
  v.kind = ValueKind::kInitializer;
  v.dtype = dtype;
  v.shape = Shape(std::move(dims));
  v.is_parameter = true;
  if (!int_data.empty()) v.int_data = std::move(int_data);
  ValueId id = graph_.AddValue(std::move(v));
  graph_.AddInitializer(id);
  return id;
}

ValueId GraphBuilder::Op(std::string_view op_type, std::vector<ValueId> inputs, TensorType output,
                         std::vector<Attribute> attributes, std::string name) {
  return MultiOp(op_type, std::move(inputs), {std::move(output)}, std::move(attributes),
                 std::move(name))[0];
}

std::vector<ValueId> GraphBuilder::MultiOp(std::string_view op_type, std::vector<ValueId> inputs,
                                           std::vector<TensorType> outputs,
                                           std::vector<Attribute> attributes, std::string name) {
  Node node;
  node.name = name.empty() ? absl::StrCat(std::string(op_type), "_", next_node_) : std::move(name);
  ++next_node_;
  node.op_type = std::string(op_type);
  node.kind = LookupOpKind("", op_type);
  node.opset = 17;
  node.inputs = std::move(inputs);
  node.attributes = std::move(attributes);
  for (size_t i = 0; i < outputs.size(); ++i) {
    Value v;
    v.name = absl::StrCat(node.name, ":", i);
    v.dtype = outputs[i].dtype;
    v.shape = Shape(std::move(outputs[i].dims));
    node.outputs.push_back(graph_.AddValue(std::move(v)));
  }
  std::vector<ValueId> ids = node.outputs;
  graph_.AddNode(std::move(node));
  return ids;
}

void GraphBuilder::Output(ValueId value) {
  graph_.mutable_value(value).is_graph_output = true;
  graph_.AddOutput(value);
}

absl::StatusOr<Graph> GraphBuilder::Build() && {
  if (absl::Status s = graph_.Finalize(); !s.ok()) return s;
  return std::move(graph_);
}

}  // namespace autopar::ir
