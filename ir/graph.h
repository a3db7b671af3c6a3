// The intermediate representation: a flat arena of nodes and values with strong
// ids. Every pass reads this; only importers and the test builder
// create it.
//
// Note [Topological order]: after Finalize() succeeds, nodes() is in topological
// order — every node comes after the producers of all its inputs and of the
// outer values its subgraphs capture. Passes rely on this and never re-sort.
// The order is the source order wherever the source order is already valid, so
// sorted models keep their node order exactly.
#ifndef AUTOPAR_IR_GRAPH_H_
#define AUTOPAR_IR_GRAPH_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "ir/attribute.h"
#include "ir/dtype.h"
#include "ir/ids.h"
#include "ir/op_kind.h"
#include "ir/shape.h"

namespace autopar::ir {

class Graph;

enum class ValueKind : uint8_t {
  kGraphInput,   // fed by the caller
  kInitializer,  // a weight stored in the model
  kNodeOutput,   // produced by a node of this graph
  kOuterScope,   // in a subgraph body: a value of an enclosing graph
};

/// What the value holds; only tensors have a dtype and a shape.
enum class TypeKind : uint8_t {
  kTensor,
  kSparseTensor,
  kSequence,
  kOptional,
  kMap,
  kUnknown,
};

struct Value {
  std::string name;
  ValueKind kind = ValueKind::kNodeOutput;
  TypeKind type_kind = TypeKind::kTensor;
  DType dtype = DType::kUndefined;
  Shape shape;
  /// The node producing it; invalid unless kind == kNodeOutput.
  NodeId producer;
  /// Nodes reading it (as an input or as a captured outer value), ascending,
  /// each once.
  std::vector<NodeId> consumers;
  bool is_graph_output = false;
  /// A weight: an initializer or the output of a Constant node. Several
  /// exporters store every weight in Constant nodes, so both count.
  bool is_parameter = false;
  /// Contents of small integer constants (shape tensors, axes, pads): known
  /// for initializers and Constant outputs up to kMaxKnownIntElements, and for
  /// values that shape propagation computes (Shape, Gather of a shape...).
  std::optional<std::vector<int64_t>> int_data;
  /// The shape rests on an estimate (an If's larger branch, an assumed trip
  /// count...; see passes/infer_shapes.h): it is planned for, but a run may
  /// see another, so written models declare its dims without values.
  bool shape_estimated = false;
  /// Symbolic dims (passes/symbolic_dims.h): per dim, or empty for none, 1
  /// where the planned number derives from a bound symbolic input dim but no
  /// symbol names it (batch × heads after a Reshape), so a run at another
  /// binding changes it: written models declare such a dim without a value.
  /// A dim that is the symbol itself keeps its name in Dim::symbol beside
  /// the planned value.
  std::vector<uint8_t> unnamed_symbolic_dims;

  /// Bytes of the tensor, or nullopt when the shape or dtype is not known or
  /// the size overflows.
  std::optional<int64_t> SizeBytes() const;
};

/// Integer constants up to this many elements keep their contents in the IR.
inline constexpr int64_t kMaxKnownIntElements = 1 << 16;

/// A control-flow body (If's then/else, Loop's and Scan's body).
struct Subgraph {
  std::string attribute;
  std::shared_ptr<const Graph> body;
};

struct Node {
  /// Unique within the graph. The importer keeps the source name when it is
  /// unique and non-empty and makes one up otherwise ("Conv_17"); the
  /// rewriter still copies the source NodeProto, with its own name.
  std::string name;
  std::string op_type;
  std::string domain;  // "" is the default ONNX domain
  OpKind kind = OpKind::kUnknown;
  /// The opset version of this node's domain in its model.
  int64_t opset = 0;
  /// Invalid ids stand for omitted optional inputs / outputs ("" in ONNX).
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  /// Outer values read inside this node's subgraphs; they are inputs of this
  /// node for scheduling and placement (the node needs them on its device).
  std::vector<ValueId> captured;
  std::vector<Attribute> attributes;
  std::vector<Subgraph> subgraphs;
  /// Index of the source NodeProto in its GraphProto; -1 when built in code.
  int32_t proto_index = -1;

  const Attribute* FindAttribute(std::string_view name) const;
  int64_t GetInt(std::string_view name, int64_t default_value) const;
  float GetFloat(std::string_view name, float default_value) const;
  std::string GetString(std::string_view name, std::string_view default_value) const;
  /// Empty when absent.
  std::vector<int64_t> GetInts(std::string_view name) const;
};

class Graph {
 public:
  Graph() = default;

  // --- Construction (importers and GraphBuilder) ---------------------------

  /// Adds a value; names must be unique (checked by Finalize).
  ValueId AddValue(Value value);
  /// Adds a node. Its outputs' `producer` is set by Finalize.
  NodeId AddNode(Node node);
  void AddInput(ValueId value) { inputs_.push_back(value); }
  void AddOutput(ValueId value) { outputs_.push_back(value); }
  void AddInitializer(ValueId value) { initializers_.push_back(value); }
  void SetOpsetImport(std::string domain, int64_t version);
  void set_name(std::string name) { name_ = std::move(name); }

  /// Links producers and consumers and sorts the nodes topologically (see
  /// Note [Topological order]). Fails on duplicate value names, a value
  /// produced twice, or a cycle (the message names a node on it). Node ids
  /// handed out by AddNode are not stable across Finalize.
  absl::Status Finalize();

  // --- Access ----------------------------------------------------------------

  const std::string& name() const { return name_; }
  size_t num_nodes() const { return nodes_.size(); }
  size_t num_values() const { return values_.size(); }
  const Node& node(NodeId id) const { return nodes_[id.index()]; }
  const Value& value(ValueId id) const { return values_[id.index()]; }
  Value& mutable_value(ValueId id) { return values_[id.index()]; }
  absl::Span<const Node> nodes() const { return nodes_; }
  absl::Span<const Value> values() const { return values_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  const std::vector<ValueId>& initializers() const { return initializers_; }
  /// Domain → version, ordered by domain.
  const std::map<std::string, int64_t>& opset_imports() const { return opset_imports_; }

  std::optional<ValueId> FindValue(std::string_view name) const;

  /// Nodes in this graph and, recursively, in the subgraphs of its nodes
  /// (those not counted by num_nodes()).
  int64_t NumSubgraphNodes() const;

 private:
  std::string name_;
  std::vector<Node> nodes_;
  std::vector<Value> values_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::vector<ValueId> initializers_;
  std::map<std::string, int64_t> opset_imports_;
  absl::flat_hash_map<std::string, ValueId> value_by_name_;
};

}  // namespace autopar::ir

#endif  // AUTOPAR_IR_GRAPH_H_
