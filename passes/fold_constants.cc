// FoldConstants: which values are known at the start, the dispatch of each
// operator to its evaluator, and what a fold writes into the IR.
#include "passes/fold_constants.h"

#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "passes/fold_constants_internal.h"

namespace autopar::passes {
namespace {

using fold::EvalContext;
using fold::Outputs;
using fold::Tensor;
using Evaluator = std::optional<Outputs> (*)(const EvalContext&);
using K = ir::OpKind;

// clang-format off
Evaluator FindEvaluator(K kind) {
  switch (kind) {
    case K::kIdentity: case K::kNeg: case K::kAbs: case K::kNot: return fold::EvalUnary;
    case K::kCast: case K::kCastLike: return fold::EvalCast;
    case K::kAdd: case K::kSub: case K::kMul: case K::kDiv: case K::kMod: case K::kMin:
    case K::kMax: case K::kSum:
      return fold::EvalArithmetic;
    case K::kEqual: case K::kLess: case K::kGreater: case K::kLessOrEqual:
    case K::kGreaterOrEqual:
      return fold::EvalComparison;
    case K::kAnd: case K::kOr: case K::kXor: return fold::EvalLogical;
    case K::kWhere: return fold::EvalWhere;
    case K::kShape: return fold::EvalShape;
    case K::kSize: return fold::EvalSize;
    case K::kGather: return fold::EvalGather;
    case K::kSlice: return fold::EvalSlice;
    case K::kConcat: return fold::EvalConcat;
    case K::kSqueeze: return fold::EvalSqueeze;
    case K::kUnsqueeze: return fold::EvalUnsqueeze;
    case K::kReshape: return fold::EvalReshape;
    case K::kFlatten: return fold::EvalFlatten;
    case K::kConstantOfShape: return fold::EvalConstantOfShape;
    case K::kRange: return fold::EvalRange;
    case K::kExpand: return fold::EvalExpand;
    case K::kTile: return fold::EvalTile;
    case K::kTranspose: return fold::EvalTranspose;
    case K::kNonZero: return fold::EvalNonZero;
    case K::kReduceSum: case K::kReduceProd: case K::kReduceMin: case K::kReduceMax:
      return fold::EvalReduce;
    case K::kArgMax: case K::kArgMin: return fold::EvalArgReduce;
    default: return nullptr;
  }
}
// clang-format on

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mantissa & 0x3ff) << 13;
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | mantissa << 13;
  } else {
    bits = sign | (exponent + 127 - 15) << 23 | mantissa << 13;
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// A tensor from its little-endian bytes; nullopt for other types or sizes.
std::optional<Tensor> Decode(ir::DType dtype, std::vector<int64_t> dims, const std::string& bytes) {
  std::optional<Tensor> t = fold::MakeTensor(dtype, std::move(dims));
  if (!t) return std::nullopt;
  const int64_t n = fold::NumElements(t->dims).value_or(-1);
  const int64_t width = ir::DTypeSizeBytes(dtype);
  if (n < 0 || static_cast<int64_t>(bytes.size()) != n * width) return std::nullopt;
  for (int64_t i = 0; i < n; ++i) {
    const char* p = bytes.data() + i * width;
    switch (dtype) {
      case ir::DType::kFloat:
        t->reals.push_back(Load<float>(p));
        break;
      case ir::DType::kDouble:
        t->reals.push_back(Load<double>(p));
        break;
      case ir::DType::kFloat16:
        t->reals.push_back(HalfToFloat(Load<uint16_t>(p)));
        break;
      case ir::DType::kBFloat16: {
        const uint32_t bits = static_cast<uint32_t>(Load<uint16_t>(p)) << 16;
        t->reals.push_back(Load<float>(reinterpret_cast<const char*>(&bits)));
        break;
      }
      case ir::DType::kBool:
      case ir::DType::kUint8:
        t->ints.push_back(Load<uint8_t>(p));
        break;
      case ir::DType::kInt8:
        t->ints.push_back(Load<int8_t>(p));
        break;
      case ir::DType::kInt16:
        t->ints.push_back(Load<int16_t>(p));
        break;
      case ir::DType::kUint16:
        t->ints.push_back(Load<uint16_t>(p));
        break;
      case ir::DType::kInt32:
        t->ints.push_back(Load<int32_t>(p));
        break;
      case ir::DType::kUint32:
        t->ints.push_back(Load<uint32_t>(p));
        break;
      case ir::DType::kInt64:
      case ir::DType::kUint64:
        t->ints.push_back(Load<int64_t>(p));
        break;
      default:
        return std::nullopt;
    }
  }
  fold::Normalize(*t);
  return t;
}

// What the pass knows while it runs, by value id, and how it learns more.
class Folder {
 public:
  Folder(const onnx_io::Model& model, const FoldOptions& options, ir::Graph& graph)
      : model_(model), options_(options), graph_(graph) {}

  absl::StatusOr<FoldResult> Run() {
    FoldResult result;
    for (const ir::Node& node : graph_.nodes()) {
      if (node.kind == K::kConstant) {
        absl::StatusOr<std::optional<Tensor>> value = AttributeTensor(node, "value");
        if (!value.ok()) return value.status();
        if (*value && node.outputs.size() == 1 && node.outputs[0].valid()) {
          Record(node.outputs[0], **std::move(value), result);
        }
        continue;
      }
      Evaluator evaluate = FindEvaluator(node.kind);
      if (evaluate == nullptr) continue;
      absl::StatusOr<std::optional<Outputs>> outputs = Evaluate(node, evaluate);
      if (!outputs.ok()) return outputs.status();
      if (!*outputs) continue;
      ++result.folded_nodes;
      for (size_t i = 0; i < node.outputs.size() && i < (*outputs)->size(); ++i) {
        if (node.outputs[i].valid()) Record(node.outputs[i], std::move((**outputs)[i]), result);
      }
    }
    return result;
  }

 private:
  absl::StatusOr<std::optional<Outputs>> Evaluate(const ir::Node& node, Evaluator evaluate) {
    EvalContext context{node, {}, {}, nullptr};
    const bool shape_only = node.kind == K::kShape || node.kind == K::kSize;
    // Cheap test first: weights are read only for nodes that may fold.
    if (!shape_only) {
      for (ir::ValueId id : node.inputs) {
        if (id.valid() && !MayBeKnown(id)) return std::nullopt;
      }
    }
    for (ir::ValueId id : node.inputs) {
      const ir::Shape* shape = nullptr;
      const Tensor* known = nullptr;
      if (id.valid()) {
        const ir::Value& v = graph_.value(id);
        if (v.type_kind == ir::TypeKind::kTensor && v.shape.IsStatic()) shape = &v.shape;
        if (!shape_only) {
          absl::StatusOr<const Tensor*> t = Known(id);
          if (!t.ok()) return t.status();
          known = *t;
          if (known == nullptr) return std::nullopt;
        }
      }
      context.inputs.push_back(known);
      context.input_shapes.push_back(shape);
    }
    std::optional<Tensor> value_attribute;
    if (node.kind == K::kConstantOfShape) {
      absl::StatusOr<std::optional<Tensor>> v = AttributeTensor(node, "value");
      if (!v.ok()) return v.status();
      value_attribute = *std::move(v);
      if (value_attribute) context.value_attribute = &*value_attribute;
    }
    return evaluate(context);
  }

  // Stores `t` as the value's contents and tells the IR its shape, dtype and
  // (for integers and bool) contents.
  void Record(ir::ValueId id, Tensor t, FoldResult& result) {
    ir::Value& v = graph_.mutable_value(id);
    if (v.type_kind != ir::TypeKind::kTensor) return;
    if (v.dtype != ir::DType::kUndefined && v.dtype != t.dtype) return;  // disagrees: trust the IR
    const ir::Shape shape(t.dims);
    if (v.shape.has_rank() && v.shape.rank() != t.dims.size()) return;
    bool learned = false;
    if (v.dtype == ir::DType::kUndefined) {
      v.dtype = t.dtype;
      learned = true;
    }
    if (!v.shape.IsStatic()) {
      v.shape = shape;
      learned = true;
    } else if (v.shape != shape) {
      return;
    }
    if (!t.is_real() && !v.int_data) {
      v.int_data = t.ints;
      learned = true;
    }
    if (learned) ++result.values_learned;
    known_.insert_or_assign(id.index(), std::move(t));
  }

  // False when Known(id) is sure to fail, without reading any bytes.
  bool MayBeKnown(ir::ValueId id) const {
    if (known_.contains(id.index())) return true;
    const ir::Value& v = graph_.value(id);
    if (v.type_kind != ir::TypeKind::kTensor || !v.shape.IsStatic() || !fold::IsFoldable(v.dtype))
      return false;
    std::optional<int64_t> n = v.shape.NumElements();
    if (!n || *n > kMaxFoldedElements) return false;
    return (v.int_data && !fold::IsRealType(v.dtype)) || v.kind == ir::ValueKind::kInitializer ||
           (v.kind == ir::ValueKind::kGraphInput && options_.input_values.contains(v.name));
  }

  // The contents of `id` when known or knowable; nullptr otherwise.
  absl::StatusOr<const Tensor*> Known(ir::ValueId id) {
    if (auto it = known_.find(id.index()); it != known_.end()) return &it->second;
    const ir::Value& v = graph_.value(id);
    if (v.type_kind != ir::TypeKind::kTensor || !v.shape.IsStatic() || !fold::IsFoldable(v.dtype))
      return nullptr;
    std::optional<int64_t> n = v.shape.NumElements();
    if (!n || *n > kMaxFoldedElements) return nullptr;
    std::optional<Tensor> t;
    if (v.int_data && !fold::IsRealType(v.dtype)) {
      t = fold::MakeTensor(v.dtype, v.shape.Values());
      if (t) t->ints = *v.int_data;
    } else if (v.kind == ir::ValueKind::kInitializer) {
      absl::StatusOr<std::optional<Tensor>> read = ReadInitializer(v);
      if (!read.ok()) return read.status();
      t = *std::move(read);
    } else if (v.kind == ir::ValueKind::kGraphInput) {
      auto bound = options_.input_values.find(v.name);
      if (bound != options_.input_values.end() &&
          static_cast<int64_t>(bound->second.size()) == *n) {
        t = fold::MakeTensor(v.dtype, v.shape.Values());
        for (double x : bound->second) {
          if (t) fold::PushReal(*t, x);
        }
        if (t) fold::Normalize(*t);
      }
    }
    if (!t || t->size() != *n) return nullptr;
    return &known_.insert_or_assign(id.index(), *std::move(t)).first->second;
  }

  absl::StatusOr<std::optional<Tensor>> ReadInitializer(const ir::Value& v) {
    if (initializers_.empty()) {
      for (const onnx::TensorProto& t : model_.proto.graph().initializer()) {
        initializers_.try_emplace(t.name(), &t);
      }
    }
    auto it = initializers_.find(v.name);
    if (it == initializers_.end()) return std::nullopt;
    return DecodeProto(*it->second);
  }

  absl::StatusOr<std::optional<Tensor>> DecodeProto(const onnx::TensorProto& proto) {
    const ir::DType dtype = ir::DTypeFromOnnx(proto.data_type());
    if (!fold::IsFoldable(dtype)) return std::nullopt;
    std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
    std::optional<int64_t> n = fold::NumElements(dims);
    if (!n || *n > kMaxFoldedElements) return std::nullopt;
    absl::StatusOr<std::string> bytes = onnx_io::ReadTensorBytes(model_, proto);
    if (!bytes.ok()) {
      // A malformed inline tensor is the importer's and checker's business;
      // an unreadable external file is an error of its own.
      if (onnx_io::IsExternal(proto)) return bytes.status();
      return std::nullopt;
    }
    return Decode(dtype, std::move(dims), *bytes);
  }

  // The tensor a Constant or ConstantOfShape node holds in `name` (for
  // Constant also value_float(s) and value_int(s)), read from its NodeProto.
  absl::StatusOr<std::optional<Tensor>> AttributeTensor(const ir::Node& node,
                                                        std::string_view name) {
    const onnx::GraphProto& g = model_.proto.graph();
    if (node.proto_index < 0 || node.proto_index >= g.node_size()) return std::nullopt;
    const onnx::NodeProto& proto = g.node(node.proto_index);
    if (proto.op_type() != node.op_type) return std::nullopt;
    for (const onnx::AttributeProto& a : proto.attribute()) {
      std::optional<Tensor> t;
      if (a.name() == name && a.has_t()) return DecodeProto(a.t());
      if (node.kind != K::kConstant) continue;
      if (a.name() == "value_float" || a.name() == "value_floats") {
        const bool scalar = a.name() == "value_float";
        t = fold::MakeTensor(ir::DType::kFloat, scalar ? std::vector<int64_t>{}
                                                       : std::vector<int64_t>{a.floats_size()});
        if (!t) return std::nullopt;
        if (scalar) t->reals.push_back(a.f());
        for (float f : a.floats()) t->reals.push_back(f);
        return t;
      }
      if (a.name() == "value_int" || a.name() == "value_ints") {
        const bool scalar = a.name() == "value_int";
        t = fold::MakeTensor(ir::DType::kInt64,
                             scalar ? std::vector<int64_t>{} : std::vector<int64_t>{a.ints_size()});
        if (!t) return std::nullopt;
        if (scalar) t->ints.push_back(a.i());
        for (int64_t i : a.ints()) t->ints.push_back(i);
        return t;
      }
    }
    return std::nullopt;
  }

  const onnx_io::Model& model_;
  const FoldOptions& options_;
  ir::Graph& graph_;
  // Node-based: Evaluate holds pointers to known inputs while Known() adds
  // more, and a flat map would move them on rehash.
  absl::node_hash_map<uint32_t, Tensor> known_;
  absl::flat_hash_map<std::string_view, const onnx::TensorProto*> initializers_;
};

}  // namespace

bool CanFold(ir::OpKind kind) { return FindEvaluator(kind) != nullptr; }

absl::StatusOr<FoldResult> FoldConstants(const onnx_io::Model& model, const FoldOptions& options,
                                         ir::Graph& graph) {
  return Folder(model, options, graph).Run();
}

}  // namespace autopar::passes
