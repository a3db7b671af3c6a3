// Analysis of a placement and ModelProto assembly helpers for the rewriter.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "onnx_io/shape_inference.h"
#include "passes/partition_internal.h"

namespace autopar::passes::partition_internal {
namespace {

void CollectGraphNames(const onnx::GraphProto& g, absl::flat_hash_set<absl::string_view>& names);

void CollectNodeNames(const onnx::NodeProto& node, absl::flat_hash_set<absl::string_view>& names) {
  names.insert(node.name());
  for (const std::string& name : node.input()) names.insert(name);
  for (const std::string& name : node.output()) names.insert(name);
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (attr.has_g()) CollectGraphNames(attr.g(), names);
    for (const onnx::GraphProto& body : attr.graphs()) CollectGraphNames(body, names);
  }
}

void CollectGraphNames(const onnx::GraphProto& g, absl::flat_hash_set<absl::string_view>& names) {
  for (const onnx::ValueInfoProto& v : g.input()) names.insert(v.name());
  for (const onnx::ValueInfoProto& v : g.output()) names.insert(v.name());
  for (const onnx::ValueInfoProto& v : g.value_info()) names.insert(v.name());
  for (const onnx::TensorProto& t : g.initializer()) names.insert(t.name());
  for (const onnx::SparseTensorProto& t : g.sparse_initializer()) {
    names.insert(t.values().name());
    names.insert(t.indices().name());
  }
  for (const onnx::NodeProto& node : g.node()) CollectNodeNames(node, names);
}

void SetTensorType(const ir::Value& value, onnx::TypeProto* type) {
  onnx::TypeProto::Tensor* tensor = type->mutable_tensor_type();
  tensor->set_elem_type(static_cast<int32_t>(value.dtype));
  if (!value.shape.has_rank()) return;
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  for (size_t i = 0; i < value.shape.rank(); ++i) {
    const ir::Dim& d = value.shape.dim(i);
    onnx::TensorShapeProto::Dimension* dim = shape->add_dim();
    if (value.shape_estimated) continue;  // the rank only: a run may differ
    // A bound symbol keeps its name, so the model serves any value of it; a
    // dim derived from one otherwise has no value (passes/symbolic_dims.h).
    if (!d.symbol.empty()) {
      dim->set_dim_param(d.symbol);
    } else if (i < value.unnamed_symbolic_dims.size() && value.unnamed_symbolic_dims[i] != 0) {
      continue;
    } else if (d.known()) {
      dim->set_dim_value(d.value);
    }
  }
}

std::vector<int32_t> PositionsByValue(const ir::Graph& graph, size_t size, const auto& entries,
                                      const auto& name_of) {
  std::vector<int32_t> positions(graph.num_values(), -1);
  for (size_t i = 0; i < size; ++i) {
    if (std::optional<ir::ValueId> id = graph.FindValue(name_of(entries[i]))) {
      if (positions[id->index()] < 0) positions[id->index()] = static_cast<int32_t>(i);
    }
  }
  return positions;
}

SourceIndex IndexSource(const onnx::GraphProto& g, const ir::Graph& graph) {
  auto info_name = [](const onnx::ValueInfoProto& v) -> const std::string& { return v.name(); };
  SourceIndex index;
  index.initializer = PositionsByValue(graph, g.initializer_size(), g.initializer(),
                                       [](const onnx::TensorProto& t) { return t.name(); });
  index.sparse_initializer =
      PositionsByValue(graph, g.sparse_initializer_size(), g.sparse_initializer(),
                       [](const onnx::SparseTensorProto& t) { return t.values().name(); });
  index.input = PositionsByValue(graph, g.input_size(), g.input(), info_name);
  index.output = PositionsByValue(graph, g.output_size(), g.output(), info_name);
  index.value_info = PositionsByValue(graph, g.value_info_size(), g.value_info(), info_name);
  return index;
}

// True when some node output is neither a tensor the IR types nor declared
// in the source: only then is ONNX's shape inference worth running.
bool NeedsInferredTypes(const ir::Graph& graph, const SourceIndex& index) {
  for (size_t i = 0; i < graph.num_values(); ++i) {
    const ir::Value& value = graph.values()[i];
    if (!value.producer.valid() || IsCarriable(value)) continue;
    if (index.value_info[i] < 0 && index.output[i] < 0) return true;
  }
  return false;
}

// The types ONNX's shape inference gives the main graph's values, run on a
// copy of the model without large weights' bytes. Best effort: a value it
// cannot type stays unknown, and is reported where it is needed.
absl::flat_hash_map<std::string, onnx::TypeProto> InferTypes(const onnx::ModelProto& model) {
  absl::flat_hash_map<std::string, onnx::TypeProto> types;
  absl::StatusOr<onnx::ModelProto> inferred = onnx_io::InferShapesOfCopy(model);
  if (!inferred.ok()) return types;
  for (const onnx::ValueInfoProto& info : inferred->graph().value_info()) {
    if (info.has_type()) types.emplace(info.name(), info.type());
  }
  return types;
}

void SortUnique(std::vector<int32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  if (!v.empty() && v.front() < 0) v.erase(v.begin());
}

}  // namespace

std::vector<int32_t> DevicesFedInput(const Analysis& a, ir::ValueId input) {
  const ir::Graph& graph = *a.graph;
  std::vector<int32_t> devices;
  for (ir::NodeId c : graph.value(input).consumers) devices.push_back(a.device[c.index()]);
  for (size_t j = 0; j < graph.outputs().size(); ++j) {
    if (graph.outputs()[j] == input) devices.push_back(a.output_device[j]);
  }
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  return devices;
}

bool IsShapeChainOp(const ir::Node& node) {
  if (!node.domain.empty() || !node.subgraphs.empty() || node.outputs.size() != 1 ||
      !node.outputs[0].valid()) {
    return false;
  }
  using K = ir::OpKind;
  switch (node.kind) {
    case K::kShape:
    case K::kSize:
    case K::kGather:
    case K::kUnsqueeze:
    case K::kSqueeze:
    case K::kConcat:
    case K::kSlice:
    case K::kCast:
    case K::kIdentity:
    case K::kReshape:
    case K::kAdd:
    case K::kSub:
    case K::kMul:
    case K::kDiv:
    case K::kConstantOfShape:
      return true;
    default:
      return false;
  }
}

bool IsReplicable(const ir::Graph& graph, const ir::Node& node, bool weight_identities) {
  if (!node.domain.empty() || !node.captured.empty() || node.outputs.size() != 1 ||
      !node.outputs[0].valid()) {
    return false;
  }
  if (node.kind == ir::OpKind::kConstant) return node.inputs.empty();
  const bool alias = node.kind == ir::OpKind::kIdentity || node.kind == ir::OpKind::kCast;
  if (!weight_identities || !alias || node.inputs.size() != 1 || !node.inputs[0].valid()) {
    return false;
  }
  // A weight, or a chain of them over one (an Identity of a cast weight).
  const ir::Value& input = graph.value(node.inputs[0]);
  return input.kind == ir::ValueKind::kInitializer ||
         (input.producer.valid() &&
          IsReplicable(graph, graph.nodes()[input.producer.index()], weight_identities));
}

onnx::ValueInfoProto GraphOutputInfo(const Analysis& a, size_t j) {
  onnx::ValueInfoProto info = a.source().output(static_cast<int>(j));
  const ir::Value& value = a.graph->value(a.graph->outputs()[j]);
  if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return info;
  onnx::TensorShapeProto* shape = info.mutable_type()->mutable_tensor_type()->mutable_shape();
  if (value.shape_estimated || !value.shape.has_rank() ||
      static_cast<size_t>(shape->dim_size()) != value.shape.rank()) {
    return info;
  }
  for (size_t i = 0; i < value.shape.rank(); ++i) {
    const std::string& symbol = value.shape.dim(i).symbol;
    onnx::TensorShapeProto::Dimension* dim = shape->mutable_dim(static_cast<int>(i));
    if (symbol.empty() || dim->has_dim_value()) continue;
    dim->set_dim_param(symbol);
  }
  return info;
}

absl::flat_hash_set<absl::string_view> CollectModelNames(const onnx::ModelProto& model) {
  absl::flat_hash_set<absl::string_view> names;
  CollectGraphNames(model.graph(), names);
  for (const onnx::FunctionProto& f : model.functions()) {
    for (const std::string& name : f.input()) names.insert(name);
    for (const std::string& name : f.output()) names.insert(name);
    for (const onnx::NodeProto& node : f.node()) CollectNodeNames(node, names);
  }
  names.erase("");
  return names;
}

std::string NameGenerator::Make(const std::string& base) {
  std::string name = base;
  for (int suffix = 1; taken_.contains(name); ++suffix) name = absl::StrCat(base, "_", suffix);
  taken_.insert(made_.emplace_back(name));
  return name;
}

absl::StatusOr<Analysis> Analyze(const onnx_io::Model& model, const ir::Graph& graph,
                                 absl::Span<const int32_t> node_device, int num_devices,
                                 bool weight_identities) {
  if (num_devices < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot partition onto ", num_devices, " devices"));
  }
  if (node_device.size() != graph.num_nodes()) {
    return absl::InvalidArgumentError(absl::StrCat("the placement has ", node_device.size(),
                                                   " entries for ", graph.num_nodes(), " nodes"));
  }
  Analysis a;
  a.model = &model;
  a.graph = &graph;
  a.device = node_device;
  a.num_devices = num_devices;
  const int source_nodes = model.proto.graph().node_size();
  const size_t n = graph.num_nodes();
  a.replicated.assign(n, 0);
  a.reads.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const ir::Node& node = graph.nodes()[i];
    if (node_device[i] < 0 || node_device[i] >= num_devices) {
      return absl::InvalidArgumentError(absl::StrCat("node '", node.name, "' is placed on device ",
                                                     node_device[i], " of ", num_devices));
    }
    if (node.proto_index < 0 || node.proto_index >= source_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name, "' has no source NodeProto to copy"));
    }
    a.replicated[i] = IsReplicable(graph, node, weight_identities);
    std::vector<ir::ValueId>& reads = a.reads[i];
    for (ir::ValueId v : node.inputs) {
      if (v.valid() && std::find(reads.begin(), reads.end(), v) == reads.end()) reads.push_back(v);
    }
    for (ir::ValueId v : node.captured) {
      if (v.valid() && std::find(reads.begin(), reads.end(), v) == reads.end()) reads.push_back(v);
    }
  }
  a.index = IndexSource(model.proto.graph(), graph);
  if (NeedsInferredTypes(graph, a.index)) a.inferred_types = InferTypes(model.proto);
  for (ir::ValueId v : graph.outputs()) {
    const ir::Value& value = graph.value(v);
    int32_t device = 0;
    if (value.producer.valid()) {
      device = node_device[value.producer.index()];
    } else if (!value.consumers.empty()) {
      // A graph input or weight passed straight through: the first device
      // that has it anyway.
      device = num_devices;
      for (ir::NodeId c : value.consumers) device = std::min(device, node_device[c.index()]);
    }
    a.output_device.push_back(device);
  }
  return a;
}

bool IsCarriable(const ir::Value& value) {
  return value.type_kind == ir::TypeKind::kTensor && value.dtype != ir::DType::kUndefined;
}

absl::StatusOr<onnx::ValueInfoProto> BoundaryValueInfo(const Analysis& a, ir::ValueId v) {
  const ir::Value& value = a.graph->value(v);
  if (IsCarriable(value)) {
    onnx::ValueInfoProto info;
    info.set_name(value.name);
    SetTensorType(value, info.mutable_type());
    return info;
  }
  const onnx::GraphProto& g = a.source();
  const int32_t i = v.index();
  if (a.index.output[i] >= 0 && g.output(a.index.output[i]).has_type()) {
    return g.output(a.index.output[i]);
  }
  if (a.index.value_info[i] >= 0 && g.value_info(a.index.value_info[i]).has_type()) {
    return g.value_info(a.index.value_info[i]);
  }
  if (a.index.input[i] >= 0 && g.input(a.index.input[i]).has_type()) {
    return g.input(a.index.input[i]);
  }
  if (auto it = a.inferred_types.find(value.name); it != a.inferred_types.end()) {
    onnx::ValueInfoProto info;
    info.set_name(value.name);
    *info.mutable_type() = it->second;
    return info;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "the type of '", value.name, "' is not known, and it must cross between stages or devices"));
}

onnx::ModelProto ModelShell(const onnx::ModelProto& source, const std::string& graph_name) {
  onnx::ModelProto m;
  m.set_ir_version(source.ir_version());
  *m.mutable_opset_import() = source.opset_import();
  if (source.has_producer_name()) m.set_producer_name(source.producer_name());
  if (source.has_producer_version()) m.set_producer_version(source.producer_version());
  if (source.has_domain()) m.set_domain(source.domain());
  if (source.has_model_version()) m.set_model_version(source.model_version());
  if (source.has_doc_string()) m.set_doc_string(source.doc_string());
  *m.mutable_metadata_props() = source.metadata_props();
  *m.mutable_functions() = source.functions();
  m.mutable_graph()->set_name(graph_name);
  return m;
}

void AddSourceParts(const Analysis& a, std::vector<ir::ValueId> needed,
                    std::vector<ir::ValueId> defined, onnx::GraphProto* g) {
  std::vector<int32_t> initializers, sparse, inputs, infos;
  for (ir::ValueId v : needed) {
    initializers.push_back(a.index.initializer[v.index()]);
    sparse.push_back(a.index.sparse_initializer[v.index()]);
    inputs.push_back(a.index.input[v.index()]);
  }
  for (ir::ValueId v : defined) infos.push_back(a.index.value_info[v.index()]);
  SortUnique(initializers);
  SortUnique(sparse);
  SortUnique(inputs);
  SortUnique(infos);
  const onnx::GraphProto& source = a.source();
  for (int32_t i : inputs) *g->add_input() = source.input(i);
  for (int32_t i : initializers) *g->add_initializer() = source.initializer(i);
  for (int32_t i : sparse) *g->add_sparse_initializer() = source.sparse_initializer(i);
  for (int32_t i : infos) *g->add_value_info() = source.value_info(i);
}

const onnx::NodeProto& SourceNode(const Analysis& a, size_t i) {
  return a.source().node(a.graph->nodes()[i].proto_index);
}

}  // namespace autopar::passes::partition_internal
