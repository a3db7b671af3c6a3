#include "onnx_io/shape_inference.h"

#include <algorithm>
#include <exception>
#include <new>
#include <string>
#include <unordered_map>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/arena.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx_io/checker.h"
#include "onnx_io/import.h"

// After ONNX's headers: sys/mman.h defines MAP_TYPE, a name onnx/defs/parser.h
// uses for an enumerator.
#include <sys/mman.h>

namespace autopar::onnx_io {
namespace {

// Tensors up to this size keep their bytes in the inference copy: shape
// tensors, axes and pads are tiny, weights are not.
constexpr int64_t kMaxCopiedTensorBytes = 64 * 1024;
// External non-index tensors are read only up to this many elements: enough
// for Resize's scales and roi (2 x rank).
constexpr int64_t kMaxReadExternalFloatElements = 16;

// Operators whose output shapes depend on inputs or attributes that changed in
// opsets newer than ONNX 1.12 knows (18+): an opset-17 schema would infer a
// wrong shape for them (e.g. ReduceSum-18 takes axes as an input).
const absl::flat_hash_set<std::string>& ChangedAfterLibrary() {
  static const auto* ops = new absl::flat_hash_set<std::string>{
      "ReduceL1",        "ReduceL2",        "ReduceLogSum", "ReduceLogSumExp",
      "ReduceMax",       "ReduceMean",      "ReduceMin",    "ReduceProd",
      "ReduceSum",       "ReduceSumSquare", "Split",        "Pad",
      "Resize",          "AveragePool",     "MaxPool",      "LpPool",
      "ScatterElements", "ScatterND",       "DeformConv",   "Col2Im"};
  return *ops;
}

// Note [What ONNX 1.12's inference does not survive]: some of its shape
// functions trust attributes and ranks and crash (SIGFPE, SIGSEGV) instead of
// throwing. Found by the bad-input corpus (tests/robustness):
//  - conv and pool inference divides by every stride: strides < 1 are refused;
//  - DepthToSpace and SpaceToDepth divide by blocksize squared, which
//    overflows int64 (to 0 at 2^32): blocksizes from 2^31 on are refused;
//  - Shape's data propagation reads its input's type without checking that
//    there is one: a Shape (or Size) that reads a value computed from the
//    untyped outputs of a node the library cannot type (an opset-18 Split
//    feeding Relu feeding Shape) is kept from the library;
//  - STFT reads dims 0 and 1 of its signal whatever its rank: a main-graph
//    STFT is kept from the library unless its signal is known to have rank
//    >= 2 (OnnxMayInfer). One inside an If/Loop/Scan body is not guarded.
// Attributes are checked in bodies too.
std::string Describe(const onnx::NodeProto& node) {
  return node.name().empty() ? absl::StrCat("a ", node.op_type(), " node")
                             : absl::StrCat("node '", node.name(), "' (", node.op_type(), ")");
}

absl::Status CheckAttributesOnnxTrusts(const onnx::GraphProto& graph) {
  constexpr int64_t kMaxBlockSize = int64_t{1} << 31;
  for (const onnx::NodeProto& node : graph.node()) {
    for (const onnx::AttributeProto& attr : node.attribute()) {
      if (attr.name() == "strides" &&
          std::any_of(attr.ints().begin(), attr.ints().end(), [](int64_t s) { return s < 1; })) {
        return absl::InvalidArgumentError(
            absl::StrCat(Describe(node), ": strides must be positive"));
      }
      if (attr.name() == "blocksize" && attr.i() >= kMaxBlockSize) {
        return absl::InvalidArgumentError(
            absl::StrCat(Describe(node), ": blocksize ", attr.i(), " is too large"));
      }
      if (attr.has_g()) {
        if (absl::Status s = CheckAttributesOnnxTrusts(attr.g()); !s.ok()) return s;
      }
      for (const onnx::GraphProto& body : attr.graphs()) {
        if (absl::Status s = CheckAttributesOnnxTrusts(body); !s.ok()) return s;
      }
    }
  }
  return absl::OkStatus();
}

// False for a node whose input ranks would crash the library (Note [What ONNX
// 1.12's inference does not survive]); its outputs are then left to our rules.
bool OnnxMayInfer(const onnx::NodeProto& node, const ir::Graph& graph) {
  if (node.op_type() != "STFT" || node.input_size() == 0) return true;
  std::optional<ir::ValueId> signal = graph.FindValue(node.input(0));
  return signal && graph.value(*signal).shape.has_rank() && graph.value(*signal).shape.rank() >= 2;
}

void SetShape(const ir::Shape& shape, onnx::TensorShapeProto* proto) {
  proto->clear_dim();
  for (const ir::Dim& d : shape.dims()) {
    onnx::TensorShapeProto::Dimension* dim = proto->add_dim();
    if (d.known()) {
      dim->set_dim_value(d.value);
    } else if (!d.symbol.empty()) {
      dim->set_dim_param(d.symbol);
    }
  }
}

// Adds value_info for the node's outputs with the IR's current types.
void DeclareOutputs(const onnx::NodeProto& node, const ir::Graph& graph, onnx::GraphProto& copy) {
  for (const std::string& name : node.output()) {
    if (name.empty()) continue;
    std::optional<ir::ValueId> id = graph.FindValue(name);
    onnx::ValueInfoProto* info = copy.add_value_info();
    info->set_name(name);
    onnx::TypeProto_Tensor* tensor = info->mutable_type()->mutable_tensor_type();
    if (!id) continue;
    const ir::Value& v = graph.value(*id);
    if (v.type_kind != ir::TypeKind::kTensor) continue;
    tensor->set_elem_type(static_cast<int32_t>(v.dtype));
    if (v.shape.has_rank()) SetShape(v.shape, tensor->mutable_shape());
  }
}

// The inference copy lives in an arena whose blocks are mapped and unmapped
// directly: on a million-node model the copy and what inference adds to it
// take gigabytes in millions of small messages; an arena allocates them
// cheaply, frees them at once, and gives the memory back to the system rather
// than to a fragmented heap that the next phases would grow on top of.
constexpr size_t kArenaStartBlockBytes = size_t{1} << 20;
constexpr size_t kArenaMaxBlockBytes = size_t{8} << 20;

// Keeps a tensor attribute's dims and type but drops its bytes when it is
// larger than the inference copy keeps.
void DropLargeAttributeBytes(onnx::NodeProto& node) {
  for (onnx::AttributeProto& attr : *node.mutable_attribute()) {
    if (attr.has_t() && static_cast<int64_t>(attr.t().raw_data().size()) > kMaxCopiedTensorBytes) {
      attr.mutable_t()->clear_raw_data();
    }
  }
}

// The library's inference on `model` (changed in place), its exceptions as
// an error with their first line.
absl::Status RunOnnxInference(onnx::ModelProto& model, const onnx::ShapeInferenceOptions& options,
                              std::unordered_map<std::string, onnx::TensorShapeProto>* shape_data) {
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options,
                                       shape_data);
  } catch (const std::exception& e) {
    std::string message = e.what();
    if (size_t newline = message.find('\n'); newline != std::string::npos) message.resize(newline);
    return absl::InvalidArgumentError(message);
  }
  return absl::OkStatus();
}

void* MapBlock(size_t bytes) {
  void* block = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (block == MAP_FAILED) throw std::bad_alloc();
  return block;
}

void UnmapBlock(void* block, size_t bytes) { munmap(block, bytes); }

google::protobuf::ArenaOptions InferenceArenaOptions() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = kArenaStartBlockBytes;
  options.max_block_size = kArenaMaxBlockBytes;
  options.block_alloc = MapBlock;
  options.block_dealloc = UnmapBlock;
  return options;
}

// A copy of the graph without weights' bytes, value_info, or declared output
// shapes (so that a wrong declaration cannot make inference throw), allocated
// in `arena`.
absl::StatusOr<onnx::ModelProto*> InferenceCopy(const Model& model, const ir::Graph& graph,
                                                google::protobuf::Arena& arena) {
  onnx::ModelProto& copy = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  copy.set_ir_version(model.proto.ir_version());
  *copy.mutable_opset_import() = model.proto.opset_import();
  *copy.mutable_functions() = model.proto.functions();
  const onnx::GraphProto& source = model.proto.graph();
  onnx::GraphProto* g = copy.mutable_graph();
  g->set_name(source.name());
  *g->mutable_input() = source.input();
  *g->mutable_output() = source.output();
  for (onnx::ValueInfoProto& output : *g->mutable_output()) {
    if (output.type().has_tensor_type())
      output.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  for (onnx::ValueInfoProto& input : *g->mutable_input()) {
    std::optional<ir::ValueId> id = graph.FindValue(input.name());
    if (!id || !input.type().has_tensor_type()) continue;
    const ir::Value& v = graph.value(*id);
    if (v.kind == ir::ValueKind::kGraphInput && v.shape.has_rank()) {
      SetShape(v.shape, input.mutable_type()->mutable_tensor_type()->mutable_shape());
    }
  }
  for (const onnx::TensorProto& t : source.initializer()) {
    onnx::TensorProto* c = g->add_initializer();
    c->set_name(t.name());
    c->set_data_type(t.data_type());
    *c->mutable_dims() = t.dims();
    absl::StatusOr<int64_t> elements = TensorNumElements(t);
    if (!elements.ok()) return elements.status();
    int64_t bytes = *elements * ir::DTypeSizeBytes(ir::DTypeFromOnnx(t.data_type()));
    if (bytes > kMaxCopiedTensorBytes || t.data_type() == onnx::TensorProto::STRING) continue;
    // Reading external data costs a file access per tensor (hundreds of
    // thousands on a large model); inference needs the contents of index
    // tensors and of short float vectors (Resize's scales), not of weights.
    if (IsExternal(t) && !ir::IsIndexType(ir::DTypeFromOnnx(t.data_type())) &&
        *elements > kMaxReadExternalFloatElements) {
      continue;
    }
    absl::StatusOr<std::string> data = ReadTensorBytes(model, t);
    if (!data.ok()) return data.status();
    c->set_raw_data(*std::move(data));
  }
  *g->mutable_sparse_initializer() = source.sparse_initializer();

  const bool too_new = !OnnxLibraryKnowsModel(model.proto);
  if (too_new) {
    // Let the library apply its newest schemas, except to operators whose
    // shape semantics changed since (see ChangedAfterLibrary).
    copy.set_ir_version(std::min<int64_t>(copy.ir_version(), onnx::Version::IR_VERSION));
    const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    for (onnx::OperatorSetIdProto& opset : *copy.mutable_opset_import()) {
      auto it = known.find(opset.domain() == "ai.onnx" ? "" : opset.domain());
      if (it != known.end() && opset.version() > it->second.second) {
        opset.set_version(it->second.second);
      }
    }
  }
  std::unordered_map<std::string, int> versions;
  for (const onnx::OperatorSetIdProto& opset : copy.opset_import()) {
    versions[opset.domain() == "ai.onnx" ? "" : opset.domain()] = static_cast<int>(opset.version());
  }
  // Values the library may leave without any type (see Note [What ONNX
  // 1.12's inference does not survive]): outputs of nodes it does not type
  // whose dtype the IR does not know either, and what is computed from them.
  absl::flat_hash_set<std::string_view> untyped;
  auto dtype_unknown = [&graph](const std::string& name) {
    std::optional<ir::ValueId> id = graph.FindValue(name);
    return !id || graph.value(*id).dtype == ir::DType::kUndefined;
  };
  for (const onnx::ValueInfoProto& input : source.input()) {
    if (dtype_unknown(input.name())) untyped.insert(input.name());
  }
  for (const onnx::NodeProto& node : source.node()) {
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    const bool reads_untyped =
        std::any_of(node.input().begin(), node.input().end(),
                    [&untyped](const std::string& in) { return untyped.contains(in); });
    const bool skipped =
        (too_new && domain.empty() && ChangedAfterLibrary().contains(node.op_type())) ||
        !OnnxMayInfer(node, graph) ||
        (reads_untyped && (node.op_type() == "Shape" || node.op_type() == "Size"));
    const bool typed_by_library =
        !skipped &&
        onnx::OpSchemaRegistry::Schema(node.op_type(), versions[domain], domain) != nullptr;
    if (!typed_by_library || reads_untyped) {
      for (const std::string& out : node.output()) {
        if (!out.empty() && dtype_unknown(out)) untyped.insert(out);
      }
    }
    if (!typed_by_library) {
      // The library will not type these outputs. Declare what the IR knows
      // (possibly nothing but "a tensor"): ONNX 1.12 crashes in data
      // propagation when a Shape node reads a value with no type at all.
      DeclareOutputs(node, graph, *g);
    }
    if (skipped) continue;
    onnx::NodeProto* n = g->add_node();
    *n = node;
    DropLargeAttributeBytes(*n);  // large Constant tensors: dims and type remain
  }
  return &copy;
}

// Fills in what `inferred` knows and `value` does not.
void Merge(const ir::Value& inferred, ir::Value& value) {
  if (value.type_kind == ir::TypeKind::kUnknown) value.type_kind = inferred.type_kind;
  if (value.dtype == ir::DType::kUndefined) value.dtype = inferred.dtype;
  if (!inferred.shape.has_rank()) return;
  if (!value.shape.has_rank()) {
    value.shape = inferred.shape;
    return;
  }
  if (value.shape.rank() != inferred.shape.rank()) return;
  for (size_t i = 0; i < value.shape.rank(); ++i) {
    ir::Dim& d = value.shape.mutable_dims()[i];
    const ir::Dim& from = inferred.shape.dim(i);
    if (!d.known() && from.known()) d = from;
    if (!d.known() && d.symbol.empty()) d.symbol = from.symbol;
  }
}

void MergeInto(const onnx::ValueInfoProto& info, ir::Graph& graph) {
  std::optional<ir::ValueId> id = graph.FindValue(info.name());
  if (!id || graph.value(*id).kind != ir::ValueKind::kNodeOutput) return;
  ir::Value inferred;
  ApplyTypeProto(info.type(), inferred);
  Merge(inferred, graph.mutable_value(*id));
}

}  // namespace

absl::Status InferShapesWithOnnx(const Model& model, ir::Graph& graph) {
  if (absl::Status s = CheckAttributesOnnxTrusts(model.proto.graph()); !s.ok()) return s;
  google::protobuf::Arena arena(InferenceArenaOptions());
  absl::StatusOr<onnx::ModelProto*> copy = InferenceCopy(model, graph, arena);
  if (!copy.ok()) return copy.status();
  std::unordered_map<std::string, onnx::TensorShapeProto> shape_data;
  if (absl::Status s = RunOnnxInference(**copy,
                                        onnx::ShapeInferenceOptions(/*check_type_val=*/false,
                                                                    /*strict_mode_val=*/0,
                                                                    /*data_prop_val=*/true),
                                        &shape_data);
      !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("ONNX shape inference failed: ", s.message()));
  }
  for (const onnx::ValueInfoProto& info : (*copy)->graph().value_info()) MergeInto(info, graph);
  for (const onnx::ValueInfoProto& info : (*copy)->graph().output()) MergeInto(info, graph);

  // Data propagation: the contents of shape tensors it could compute.
  for (const auto& [name, data] : shape_data) {
    std::optional<ir::ValueId> id = graph.FindValue(name);
    if (!id || graph.value(*id).int_data) continue;
    std::vector<int64_t> ints;
    for (const onnx::TensorShapeProto::Dimension& d : data.dim()) {
      if (!d.has_dim_value()) break;
      ints.push_back(d.dim_value());
    }
    if (static_cast<int>(ints.size()) == data.dim_size()) {
      graph.mutable_value(*id).int_data = std::move(ints);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<onnx::ModelProto> InferShapesOfCopy(const onnx::ModelProto& model,
                                                   const CopyInferenceOptions& options) {
  onnx::ModelProto copy;
  copy.set_ir_version(model.ir_version());
  *copy.mutable_opset_import() = model.opset_import();
  *copy.mutable_functions() = model.functions();
  onnx::GraphProto* g = copy.mutable_graph();
  const onnx::GraphProto& source = model.graph();
  g->set_name(source.name());
  *g->mutable_input() = source.input();
  *g->mutable_output() = source.output();
  *g->mutable_value_info() = source.value_info();
  *g->mutable_sparse_initializer() = source.sparse_initializer();
  for (const onnx::TensorProto& t : source.initializer()) {
    onnx::TensorProto* c = g->add_initializer();
    if (static_cast<int64_t>(t.raw_data().size()) > kMaxCopiedTensorBytes) {
      c->set_name(t.name());
      c->set_data_type(t.data_type());
      *c->mutable_dims() = t.dims();
    } else {
      *c = t;
    }
  }
  for (const onnx::NodeProto& node : source.node()) {
    onnx::NodeProto* n = g->add_node();
    *n = node;
    DropLargeAttributeBytes(*n);
  }
  const int strict = options.strict ? 1 : 0;
  if (absl::Status s = RunOnnxInference(
          copy,
          onnx::ShapeInferenceOptions(/*check_type_val=*/options.strict, /*strict_mode_val=*/strict,
                                      /*data_prop_val=*/false),
          nullptr);
      !s.ok()) {
    return s;
  }
  return copy;
}

}  // namespace autopar::onnx_io
