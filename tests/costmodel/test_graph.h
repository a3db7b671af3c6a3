// TestGraph: builds IR graphs for cost tests with what ir::GraphBuilder does
// not offer — operators of any domain by OpKind, values without shapes,
// outer-scope values and control-flow bodies.
#ifndef AUTOPAR_TESTS_COSTMODEL_TEST_GRAPH_H_
#define AUTOPAR_TESTS_COSTMODEL_TEST_GRAPH_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/graph.h"

namespace autopar::costmodel::testing {

/// Dims of a value; nullopt builds a value without a shape.
using Dims = std::optional<std::vector<int64_t>>;

/// The dims of a scalar (rank 0), which `{{}}` cannot spell for a Dims.
inline Dims Scalar() { return std::vector<int64_t>{}; }

class TestGraph {
 public:
  ir::ValueId Input(std::string name, ir::DType dtype, Dims dims) {
    ir::ValueId id = Add(std::move(name), ir::ValueKind::kGraphInput, dtype, std::move(dims));
    graph_.AddInput(id);
    return id;
  }
  /// An initializer (a parameter); `int_data` for small integer constants.
  ir::ValueId Weight(std::string name, ir::DType dtype, std::vector<int64_t> dims,
                     std::vector<int64_t> int_data = {}) {
    ir::ValueId id = Add(std::move(name), ir::ValueKind::kInitializer, dtype, std::move(dims));
    ir::Value& v = graph_.mutable_value(id);
    v.is_parameter = true;
    if (!int_data.empty()) v.int_data = std::move(int_data);
    graph_.AddInitializer(id);
    return id;
  }
  /// A value of an enclosing graph, read inside this body.
  ir::ValueId Outer(std::string name) {
    ir::ValueId id =
        Add(std::move(name), ir::ValueKind::kOuterScope, ir::DType::kUndefined, std::nullopt);
    graph_.mutable_value(id).type_kind = ir::TypeKind::kUnknown;
    return id;
  }
  /// A node of `kind` with one output per entry of `outputs`.
  std::vector<ir::ValueId> Node(ir::OpKind kind, std::vector<ir::ValueId> inputs,
                                std::vector<Dims> outputs,
                                std::vector<ir::Attribute> attributes = {},
                                ir::DType dtype = ir::DType::kFloat,
                                std::vector<ir::Subgraph> subgraphs = {},
                                std::vector<ir::ValueId> captured = {}) {
    ir::Node node;
    node.kind = kind;
    node.op_type = std::string(ir::OpKindName(kind));
    node.domain = std::string(ir::OpKindDomain(kind));
    node.name = absl::StrCat(node.op_type, "_", next_node_++);
    node.opset = 17;
    node.inputs = std::move(inputs);
    node.attributes = std::move(attributes);
    node.subgraphs = std::move(subgraphs);
    node.captured = std::move(captured);
    for (size_t i = 0; i < outputs.size(); ++i) {
      node.outputs.push_back(Add(absl::StrCat(node.name, ":", i), ir::ValueKind::kNodeOutput, dtype,
                                 std::move(outputs[i])));
    }
    std::vector<ir::ValueId> ids = node.outputs;
    graph_.AddNode(std::move(node));
    return ids;
  }
  ir::ValueId Op(ir::OpKind kind, std::vector<ir::ValueId> inputs, Dims output,
                 std::vector<ir::Attribute> attributes = {}) {
    return Node(kind, std::move(inputs), {std::move(output)}, std::move(attributes))[0];
  }
  void Output(ir::ValueId id) {
    graph_.mutable_value(id).is_graph_output = true;
    graph_.AddOutput(id);
  }
  ir::Value& value(ir::ValueId id) { return graph_.mutable_value(id); }

  absl::StatusOr<ir::Graph> Build() && {
    if (absl::Status s = graph_.Finalize(); !s.ok()) return s;
    return std::move(graph_);
  }

 private:
  ir::ValueId Add(std::string name, ir::ValueKind kind, ir::DType dtype, Dims dims) {
    ir::Value v;
    v.name = std::move(name);
    v.kind = kind;
    v.dtype = dtype;
    if (dims) v.shape = ir::Shape(std::move(*dims));
    return graph_.AddValue(std::move(v));
  }

  ir::Graph graph_;
  int next_node_ = 0;
};

/// The graph `g` builds; fails the running test (and returns an empty graph)
/// when it does not finalize.
inline ir::Graph Built(TestGraph&& g) {
  absl::StatusOr<ir::Graph> graph = std::move(g).Build();
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *std::move(graph) : ir::Graph();
}

}  // namespace autopar::costmodel::testing

#endif  // AUTOPAR_TESTS_COSTMODEL_TEST_GRAPH_H_
