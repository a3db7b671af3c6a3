#include "onnx_io/import.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace autopar::onnx_io {
namespace {

// Names visible from enclosing graphs while importing a subgraph body,
// innermost first.
struct Scope {
  const ir::Graph* graph;
  const Scope* parent;

  bool Defines(const std::string& name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent) {
      if (s->graph->FindValue(name)) return true;
    }
    return false;
  }
};

ir::Shape ShapeFromProto(const onnx::TensorShapeProto& proto) {
  std::vector<ir::Dim> dims;
  dims.reserve(proto.dim_size());
  for (const onnx::TensorShapeProto::Dimension& d : proto.dim()) {
    ir::Dim dim;
    if (d.has_dim_value() && d.dim_value() >= 0) {
      dim.value = d.dim_value();
    } else if (d.has_dim_param()) {
      dim.symbol = d.dim_param();
    }
    dims.push_back(std::move(dim));
  }
  return ir::Shape::FromDims(std::move(dims));
}

ir::Attribute ConvertAttribute(const Model& model, const onnx::AttributeProto& proto) {
  ir::Attribute a;
  a.name = proto.name();
  switch (proto.type()) {
    case onnx::AttributeProto::FLOAT:
      a.type = ir::AttributeType::kFloat;
      a.f = proto.f();
      break;
    case onnx::AttributeProto::INT:
      a.type = ir::AttributeType::kInt;
      a.i = proto.i();
      break;
    case onnx::AttributeProto::STRING:
      a.type = ir::AttributeType::kString;
      a.s = proto.s();
      break;
    case onnx::AttributeProto::FLOATS:
      a.type = ir::AttributeType::kFloats;
      a.floats.assign(proto.floats().begin(), proto.floats().end());
      break;
    case onnx::AttributeProto::INTS:
      a.type = ir::AttributeType::kInts;
      a.ints.assign(proto.ints().begin(), proto.ints().end());
      break;
    case onnx::AttributeProto::STRINGS:
      a.type = ir::AttributeType::kStrings;
      a.strings.assign(proto.strings().begin(), proto.strings().end());
      break;
    case onnx::AttributeProto::TENSOR: {
      a.type = ir::AttributeType::kTensor;
      const onnx::TensorProto& t = proto.t();
      a.tensor.dtype = ir::DTypeFromOnnx(t.data_type());
      a.tensor.dims.assign(t.dims().begin(), t.dims().end());
      absl::StatusOr<int64_t> elements = TensorNumElements(t);
      if (elements.ok() && *elements <= ir::kMaxKnownIntElements) {
        absl::StatusOr<std::vector<int64_t>> ints = ReadTensorInts(model, t);
        if (ints.ok()) a.tensor.int_data = *std::move(ints);
      }
      break;
    }
    case onnx::AttributeProto::GRAPH:
      a.type = ir::AttributeType::kGraph;
      break;
    default:
      a.type = ir::AttributeType::kOther;
      break;
  }
  return a;
}

// What a Constant node produces, from whichever value attribute it has.
void ApplyConstantAttribute(const ir::Attribute& a, ir::Value& out) {
  out.type_kind = ir::TypeKind::kTensor;
  if (a.name == "value" && a.type == ir::AttributeType::kTensor) {
    out.dtype = a.tensor.dtype;
    out.shape = ir::Shape(a.tensor.dims);
    out.int_data = a.tensor.int_data;
  } else if (a.name == "value_int") {
    out.dtype = ir::DType::kInt64;
    out.shape = ir::Shape(std::vector<int64_t>{});
    out.int_data = std::vector<int64_t>{a.i};
  } else if (a.name == "value_ints") {
    out.dtype = ir::DType::kInt64;
    out.shape = ir::Shape({static_cast<int64_t>(a.ints.size())});
    out.int_data = a.ints;
  } else if (a.name == "value_float") {
    out.dtype = ir::DType::kFloat;
    out.shape = ir::Shape(std::vector<int64_t>{});
  } else if (a.name == "value_floats") {
    out.dtype = ir::DType::kFloat;
    out.shape = ir::Shape({static_cast<int64_t>(a.floats.size())});
  } else if (a.name == "value_string") {
    out.dtype = ir::DType::kString;
    out.shape = ir::Shape(std::vector<int64_t>{});
  } else if (a.name == "value_strings") {
    out.dtype = ir::DType::kString;
    out.shape = ir::Shape({static_cast<int64_t>(a.strings.size())});
  }
}

class GraphImporter {
 public:
  GraphImporter(const Model& model, const std::map<std::string, int64_t>& opsets,
                const Scope* outer)
      : model_(model), opsets_(opsets), outer_(outer) {}

  absl::StatusOr<ir::Graph> Import(const onnx::GraphProto& proto);

 private:
  absl::Status DefineInitializer(const onnx::TensorProto& tensor, bool sparse);
  absl::Status DefineNodeOutputs(const onnx::GraphProto& proto);
  absl::Status ResolveNode(const onnx::NodeProto& proto, int index);
  // The id of `name` as read by `reader`: a value of this graph, or an outer
  // value this (body) graph captures.
  absl::StatusOr<ir::ValueId> Resolve(const std::string& name, const std::string& reader);
  std::string UniqueNodeName(const onnx::NodeProto& proto, int index);

  const Model& model_;
  const std::map<std::string, int64_t>& opsets_;
  const Scope* outer_;
  ir::Graph graph_;
  std::vector<ir::Node> pending_nodes_;
  absl::flat_hash_set<std::string> node_names_;
};

absl::Status GraphImporter::DefineInitializer(const onnx::TensorProto& tensor, bool sparse) {
  if (graph_.FindValue(tensor.name())) {
    return absl::InvalidArgumentError(
        absl::StrCat("initializer '", tensor.name(), "' is defined twice"));
  }
  ir::Value v;
  v.name = tensor.name();
  v.kind = ir::ValueKind::kInitializer;
  v.type_kind = sparse ? ir::TypeKind::kSparseTensor : ir::TypeKind::kTensor;
  v.dtype = ir::DTypeFromOnnx(tensor.data_type());
  v.shape = ir::Shape(std::vector<int64_t>(tensor.dims().begin(), tensor.dims().end()));
  v.is_parameter = true;
  absl::StatusOr<int64_t> elements = TensorNumElements(tensor);
  if (!elements.ok()) return elements.status();
  if (!sparse && ir::IsIndexType(v.dtype) && *elements <= ir::kMaxKnownIntElements) {
    absl::StatusOr<std::vector<int64_t>> ints = ReadTensorInts(model_, tensor);
    if (!ints.ok()) return ints.status();
    v.int_data = *std::move(ints);
  }
  graph_.AddInitializer(graph_.AddValue(std::move(v)));
  return absl::OkStatus();
}

absl::Status GraphImporter::DefineNodeOutputs(const onnx::GraphProto& proto) {
  pending_nodes_.resize(proto.node_size());
  for (int i = 0; i < proto.node_size(); ++i) {
    const onnx::NodeProto& np = proto.node(i);
    ir::Node& node = pending_nodes_[i];
    node.name = UniqueNodeName(np, i);
    for (const std::string& name : np.output()) {
      if (name.empty()) {
        node.outputs.push_back(ir::ValueId());
        continue;
      }
      if (graph_.FindValue(name)) {
        return absl::InvalidArgumentError(
            absl::StrCat("node '", node.name, "' (", np.op_type(), ") writes '", name,
                         "', which is already defined by an input, initializer or another node"));
      }
      ir::Value v;
      v.name = name;
      v.kind = ir::ValueKind::kNodeOutput;
      node.outputs.push_back(graph_.AddValue(std::move(v)));
    }
  }
  return absl::OkStatus();
}

std::string GraphImporter::UniqueNodeName(const onnx::NodeProto& proto, int index) {
  std::string name = proto.name();
  if (name.empty() || node_names_.contains(name)) {
    name = absl::StrCat(proto.op_type(), "_", index);
    for (int suffix = 1; node_names_.contains(name); ++suffix) {
      name = absl::StrCat(proto.op_type(), "_", index, "_", suffix);
    }
  }
  node_names_.insert(name);
  return name;
}

absl::StatusOr<ir::ValueId> GraphImporter::Resolve(const std::string& name,
                                                   const std::string& reader) {
  if (std::optional<ir::ValueId> id = graph_.FindValue(name)) return *id;
  if (outer_ != nullptr && outer_->Defines(name)) {
    ir::Value v;
    v.name = name;
    v.kind = ir::ValueKind::kOuterScope;
    v.type_kind = ir::TypeKind::kUnknown;
    return graph_.AddValue(std::move(v));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      reader, " reads '", name, "', which no node, graph input or initializer defines"));
}

absl::Status GraphImporter::ResolveNode(const onnx::NodeProto& proto, int index) {
  ir::Node& node = pending_nodes_[index];
  const std::string reader = absl::StrCat("node '", node.name, "' (", proto.op_type(), ")");
  node.op_type = proto.op_type();
  node.domain = proto.domain() == "ai.onnx" ? "" : proto.domain();
  node.kind = ir::LookupOpKind(node.domain, node.op_type);
  node.proto_index = index;
  if (auto it = opsets_.find(node.domain); it != opsets_.end()) node.opset = it->second;
  for (const std::string& name : proto.input()) {
    if (name.empty()) {
      node.inputs.push_back(ir::ValueId());
      continue;
    }
    absl::StatusOr<ir::ValueId> id = Resolve(name, reader);
    if (!id.ok()) return id.status();
    node.inputs.push_back(*id);
  }

  for (const onnx::AttributeProto& attr : proto.attribute()) {
    node.attributes.push_back(ConvertAttribute(model_, attr));
    std::vector<const onnx::GraphProto*> bodies;
    if (attr.type() == onnx::AttributeProto::GRAPH) bodies.push_back(&attr.g());
    for (const onnx::GraphProto& g : attr.graphs()) bodies.push_back(&g);
    for (const onnx::GraphProto* body_proto : bodies) {
      Scope scope{&graph_, outer_};
      absl::StatusOr<ir::Graph> body = GraphImporter(model_, opsets_, &scope).Import(*body_proto);
      if (!body.ok()) {
        return absl::Status(body.status().code(),
                            absl::StrCat("in the '", attr.name(), "' body of ", reader, ": ",
                                         body.status().message()));
      }
      // The body's outer-scope values are values this node reads.
      for (const ir::Value& v : body->values()) {
        if (v.kind != ir::ValueKind::kOuterScope) continue;
        absl::StatusOr<ir::ValueId> id = Resolve(v.name, reader);
        if (!id.ok()) return id.status();
        if (std::find(node.captured.begin(), node.captured.end(), *id) == node.captured.end()) {
          node.captured.push_back(*id);
        }
      }
      node.subgraphs.push_back({attr.name(), std::make_shared<const ir::Graph>(*std::move(body))});
    }
  }

  if (node.kind == ir::OpKind::kConstant && node.outputs.size() == 1 && node.outputs[0].valid() &&
      !node.attributes.empty()) {
    ir::Value& out = graph_.mutable_value(node.outputs[0]);
    out.is_parameter = true;
    ApplyConstantAttribute(node.attributes[0], out);
  }
  return absl::OkStatus();
}

absl::StatusOr<ir::Graph> GraphImporter::Import(const onnx::GraphProto& proto) {
  graph_.set_name(proto.name());
  for (const auto& [domain, version] : opsets_) graph_.SetOpsetImport(domain, version);

  for (const onnx::TensorProto& t : proto.initializer()) {
    if (absl::Status s = DefineInitializer(t, /*sparse=*/false); !s.ok()) return s;
  }
  for (const onnx::SparseTensorProto& t : proto.sparse_initializer()) {
    onnx::TensorProto shape_only;
    shape_only.set_name(t.values().name());
    shape_only.set_data_type(t.values().data_type());
    shape_only.mutable_dims()->CopyFrom(t.dims());
    if (absl::Status s = DefineInitializer(shape_only, /*sparse=*/true); !s.ok()) return s;
  }
  // Graph inputs; before IR version 4 initializers were listed as inputs too,
  // and such an input is a weight, not something the caller feeds.
  for (const onnx::ValueInfoProto& input : proto.input()) {
    if (std::optional<ir::ValueId> existing = graph_.FindValue(input.name())) {
      ir::Value& v = graph_.mutable_value(*existing);
      if (v.kind != ir::ValueKind::kInitializer) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph input '", input.name(), "' is declared twice"));
      }
      continue;
    }
    ir::Value v;
    v.name = input.name();
    v.kind = ir::ValueKind::kGraphInput;
    ApplyTypeProto(input.type(), v);
    graph_.AddInput(graph_.AddValue(std::move(v)));
  }
  if (absl::Status s = DefineNodeOutputs(proto); !s.ok()) return s;
  for (int i = 0; i < proto.node_size(); ++i) {
    if (absl::Status s = ResolveNode(proto.node(i), i); !s.ok()) return s;
  }
  for (ir::Node& node : pending_nodes_) graph_.AddNode(std::move(node));

  for (const onnx::ValueInfoProto& info : proto.value_info()) {
    std::optional<ir::ValueId> id = graph_.FindValue(info.name());
    if (!id || graph_.value(*id).kind != ir::ValueKind::kNodeOutput) continue;
    ApplyTypeProto(info.type(), graph_.mutable_value(*id));
  }
  for (const onnx::ValueInfoProto& output : proto.output()) {
    std::optional<ir::ValueId> id = graph_.FindValue(output.name());
    if (!id) {
      // A body's output may simply pass an outer value through.
      absl::StatusOr<ir::ValueId> outer =
          Resolve(output.name(), absl::StrCat("graph output '", output.name(), "'"));
      if (!outer.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph output '", output.name(),
                         "' is not produced by any node, input or initializer"));
      }
      id = *outer;
    }
    ir::Value& v = graph_.mutable_value(*id);
    // A body may return one value twice (a Loop's carried value and its scan
    // output); a model's outputs are names a caller fetches, each once.
    if (outer_ == nullptr && v.is_graph_output) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", output.name(), "' is listed twice"));
    }
    if (v.kind == ir::ValueKind::kNodeOutput && output.has_type()) ApplyTypeProto(output.type(), v);
    v.is_graph_output = true;
    graph_.AddOutput(*id);
  }
  if (absl::Status s = graph_.Finalize(); !s.ok()) return s;
  return std::move(graph_);
}

}  // namespace

void ApplyTypeProto(const onnx::TypeProto& type, ir::Value& value) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType:
      value.type_kind = ir::TypeKind::kTensor;
      value.dtype = ir::DTypeFromOnnx(type.tensor_type().elem_type());
      if (type.tensor_type().has_shape()) value.shape = ShapeFromProto(type.tensor_type().shape());
      break;
    case onnx::TypeProto::kSparseTensorType:
      value.type_kind = ir::TypeKind::kSparseTensor;
      value.dtype = ir::DTypeFromOnnx(type.sparse_tensor_type().elem_type());
      if (type.sparse_tensor_type().has_shape()) {
        value.shape = ShapeFromProto(type.sparse_tensor_type().shape());
      }
      break;
    case onnx::TypeProto::kSequenceType:
      value.type_kind = ir::TypeKind::kSequence;
      break;
    case onnx::TypeProto::kOptionalType:
      value.type_kind = ir::TypeKind::kOptional;
      break;
    case onnx::TypeProto::kMapType:
      value.type_kind = ir::TypeKind::kMap;
      break;
    default:
      value.type_kind = ir::TypeKind::kUnknown;
      break;
  }
}

absl::StatusOr<ir::Graph> BuildGraph(const Model& model) {
  std::map<std::string, int64_t> opsets;
  for (const onnx::OperatorSetIdProto& opset : model.proto.opset_import()) {
    std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
    opsets[domain] = opset.version();
  }
  // IR version < 3 models carry no opset_import; they use opset 1.
  if (opsets.empty()) opsets[""] = 1;
  return GraphImporter(model, opsets, /*outer=*/nullptr).Import(model.proto.graph());
}

}  // namespace autopar::onnx_io
