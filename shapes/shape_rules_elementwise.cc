// Shape rules of element-wise operators: unary ops (same shape as input 0),
// broadcasting binary and variadic ops (with integer folding of shape
// arithmetic), Where, Dropout, Cast, quantization, random and constant
// generators.
#include <limits>

#include "shapes/shape_rules_internal.h"

namespace autopar::shapes::rules {
namespace {

using K = ir::OpKind;

std::optional<int64_t> SignedMul(int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_mul_overflow(a, b, &result)) return std::nullopt;
  return result;
}

// ONNX integer Div truncates toward zero, as C does.
std::optional<int64_t> TruncDiv(int64_t a, int64_t b) {
  if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return std::nullopt;
  return a / b;
}

// Mod with fmod=0 takes the sign of the divisor (like Python); fmod=1 that of
// the dividend (like C).
std::optional<int64_t> IntMod(int64_t a, int64_t b, bool fmod) {
  if (b == 0) return std::nullopt;
  if (b == -1) return 0;  // also avoids INT64_MIN % -1
  int64_t r = a % b;
  if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// The integer folding of a broadcasting op, or nullptr when it has none.
std::optional<IntOp> FoldingOf(const NodeView& node) {
  auto fold_all = [](auto step) -> IntOp {
    return [step](absl::Span<const int64_t> args) -> std::optional<int64_t> {
      std::optional<int64_t> acc = args[0];
      for (size_t i = 1; i < args.size() && acc; ++i) acc = step(*acc, args[i]);
      return acc;
    };
  };
  auto binary = [](auto f) -> IntOp {
    return [f](absl::Span<const int64_t> args) -> std::optional<int64_t> {
      if (args.size() != 2) return std::nullopt;
      return f(args[0], args[1]);
    };
  };
  switch (node.kind()) {
    case K::kAdd:
    case K::kSum:
      return fold_all(CheckedAdd);
    case K::kSub:
      return binary(CheckedSub);
    case K::kMul:
      return fold_all(SignedMul);
    case K::kDiv:
      return binary(TruncDiv);
    case K::kMod: {
      const bool fmod = node.GetInt("fmod", 0) != 0;
      return binary([fmod](int64_t a, int64_t b) { return IntMod(a, b, fmod); });
    }
    case K::kMax:
      return fold_all(
          [](int64_t a, int64_t b) -> std::optional<int64_t> { return std::max(a, b); });
    case K::kMin:
      return fold_all(
          [](int64_t a, int64_t b) -> std::optional<int64_t> { return std::min(a, b); });
    case K::kEqual:
      return binary([](int64_t a, int64_t b) -> std::optional<int64_t> { return a == b; });
    case K::kLess:
      return binary([](int64_t a, int64_t b) -> std::optional<int64_t> { return a < b; });
    case K::kLessOrEqual:
      return binary([](int64_t a, int64_t b) -> std::optional<int64_t> { return a <= b; });
    case K::kGreater:
      return binary([](int64_t a, int64_t b) -> std::optional<int64_t> { return a > b; });
    case K::kGreaterOrEqual:
      return binary([](int64_t a, int64_t b) -> std::optional<int64_t> { return a >= b; });
    case K::kAnd:
      return binary(
          [](int64_t a, int64_t b) -> std::optional<int64_t> { return a != 0 && b != 0; });
    case K::kOr:
      return binary(
          [](int64_t a, int64_t b) -> std::optional<int64_t> { return a != 0 || b != 0; });
    case K::kXor:
      return binary(
          [](int64_t a, int64_t b) -> std::optional<int64_t> { return (a != 0) != (b != 0); });
    case K::kBitwiseAnd:
      return binary([](int64_t a, int64_t b) -> std::optional<int64_t> { return a & b; });
    case K::kBitwiseOr:
      return binary([](int64_t a, int64_t b) -> std::optional<int64_t> { return a | b; });
    case K::kBitwiseXor:
      return binary([](int64_t a, int64_t b) -> std::optional<int64_t> { return a ^ b; });
    default:
      return std::nullopt;
  }
}

bool ReturnsBool(K kind) {
  switch (kind) {
    case K::kEqual:
    case K::kLess:
    case K::kLessOrEqual:
    case K::kGreater:
    case K::kGreaterOrEqual:
    case K::kAnd:
    case K::kOr:
    case K::kXor:
      return true;
    default:
      return false;
  }
}

// The first known dtype among the inputs.
ir::DType FirstKnownDType(const NodeView& node, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs) {
    if (node.dtype(i) != ir::DType::kUndefined) return node.dtype(i);
  }
  return ir::DType::kUndefined;
}

// Whether `value` fits in `dtype` (for Cast folding; int64 holds them all).
bool FitsIn(int64_t value, ir::DType dtype) {
  auto in = [value](int64_t lo, int64_t hi) { return value >= lo && value <= hi; };
  switch (dtype) {
    case ir::DType::kUint8:
      return in(0, 255);
    case ir::DType::kInt8:
      return in(-128, 127);
    case ir::DType::kUint16:
      return in(0, 65535);
    case ir::DType::kInt16:
      return in(-32768, 32767);
    case ir::DType::kInt32:
      return in(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
    case ir::DType::kUint32:
      return in(0, std::numeric_limits<uint32_t>::max());
    case ir::DType::kUint64:
      return value >= 0;
    case ir::DType::kInt64:
    case ir::DType::kBool:
      return true;
    default:
      return false;
  }
}

}  // namespace

Outputs SameAsInput(const NodeView& node) { return {LikeInput(node, 0)}; }

Outputs UnaryRule(const NodeView& node) {
  OutputType out = LikeInput(node, 0);
  std::optional<absl::Span<const int64_t>> data = node.ints(0);
  if (!data) return {out};
  std::vector<int64_t> result;
  result.reserve(data->size());
  for (int64_t v : *data) {
    std::optional<int64_t> r;
    switch (node.kind()) {
      case K::kIdentity:
        r = v;
        break;
      case K::kNeg:
        r = CheckedSub(0, v);
        break;
      case K::kAbs:
        r = v < 0 ? CheckedSub(0, v) : v;
        break;
      case K::kNot:
        r = v == 0;
        break;
      default:
        return {out};
    }
    if (!r) return {out};
    result.push_back(*r);
  }
  out.int_data = std::move(result);
  return {out};
}

Outputs BoolOfInputRule(const NodeView& node) {
  return {WithShape(ir::DType::kBool, node.shape(0))};
}

Outputs BroadcastRule(const NodeView& node) {
  std::vector<ir::Shape> shapes;
  std::vector<size_t> inputs;
  ir::DType dtype = ir::DType::kUndefined;
  for (size_t i = 0; i < node.num_inputs(); ++i) {
    if (!node.has_input(i)) continue;
    shapes.push_back(node.shape(i));
    inputs.push_back(i);
    if (dtype == ir::DType::kUndefined) dtype = node.dtype(i);
  }
  if (ReturnsBool(node.kind())) dtype = ir::DType::kBool;
  if (inputs.empty()) return {Unranked(dtype)};
  OutputType out = WithShape(dtype, Broadcast(shapes));
  if (std::optional<IntOp> op = FoldingOf(node))
    out.int_data = FoldInts(node, inputs, out.shape, *op);
  return {out};
}

Outputs WhereRule(const NodeView& node) {
  OutputType out = WithShape(FirstKnownDType(node, {1, 2}),
                             Broadcast({node.shape(0), node.shape(1), node.shape(2)}));
  const size_t inputs[] = {0, 1, 2};
  out.int_data =
      FoldInts(node, inputs, out.shape, [](absl::Span<const int64_t> a) -> std::optional<int64_t> {
        return a[0] != 0 ? a[1] : a[2];
      });
  return {out};
}

Outputs DropoutRule(const NodeView& node) {
  // The mask is bool from opset 10; before, it had the data's type.
  const ir::DType mask = node.opset() >= 10 ? ir::DType::kBool : node.dtype(0);
  return {LikeInput(node, 0), WithShape(mask, node.shape(0))};
}

Outputs CastRule(const NodeView& node) {
  const ir::DType to = node.kind() == K::kCastLike
                           ? node.dtype(1)
                           : ir::DTypeFromOnnx(static_cast<int32_t>(node.GetInt("to", 0)));
  OutputType out = WithShape(to, node.shape(0));
  std::optional<absl::Span<const int64_t>> data = node.ints(0);
  if (!data || !IsIntegerOrBool(node.dtype(0)) || !IsIntegerOrBool(to)) return {out};
  std::vector<int64_t> result;
  result.reserve(data->size());
  for (int64_t v : *data) {
    if (!FitsIn(v, to)) return {out};
    result.push_back(to == ir::DType::kBool ? (v != 0) : v);
  }
  out.int_data = std::move(result);
  return {out};
}

Outputs QuantizeLinearRule(const NodeView& node) {
  // The zero point's type; else opset 21's output_dtype; else uint8.
  ir::DType dtype = node.dtype(2);
  if (dtype == ir::DType::kUndefined) {
    dtype = ir::DTypeFromOnnx(static_cast<int32_t>(node.GetInt("output_dtype", 0)));
  }
  if (dtype == ir::DType::kUndefined) dtype = ir::DType::kUint8;
  return {WithShape(dtype, node.shape(0))};
}

Outputs DequantizeLinearRule(const NodeView& node) {
  // The scale's type (float, or float16/bfloat16 from opset 19).
  const ir::DType dtype =
      node.dtype(1) != ir::DType::kUndefined ? node.dtype(1) : ir::DType::kFloat;
  return {WithShape(dtype, node.shape(0))};
}

Outputs DynamicQuantizeLinearRule(const NodeView& node) {
  return {WithShape(ir::DType::kUint8, node.shape(0)), WithDims(ir::DType::kFloat, {}),
          WithDims(ir::DType::kUint8, {})};
}

Outputs QLinearBinaryRule(const NodeView& node) {
  // (A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point)
  return {WithShape(FirstKnownDType(node, {7, 0}), Broadcast({node.shape(0), node.shape(3)}))};
}

Outputs RandomRule(const NodeView& node) {
  auto dtype_attr = [&](ir::DType fallback) {
    if (!node.HasAttribute("dtype")) return fallback;
    return ir::DTypeFromOnnx(static_cast<int32_t>(node.GetInt("dtype", 0)));
  };
  switch (node.kind()) {
    case K::kRandomNormal:
    case K::kRandomUniform: {
      std::vector<ir::Dim> dims;
      for (int64_t d : node.GetInts("shape")) dims.push_back(KnownDim(d));
      return {WithDims(dtype_attr(ir::DType::kFloat), std::move(dims))};
    }
    case K::kMultinomial: {
      const ir::Shape& in = node.shape(0);
      const ir::Dim batch = in.has_rank() && in.rank() == 2 ? in.dim(0) : UnknownDim();
      return {WithDims(dtype_attr(ir::DType::kInt32),
                       {batch, KnownDim(node.GetInt("sample_size", 1))})};
    }
    default:  // RandomNormalLike, RandomUniformLike, Bernoulli, EyeLike
      return {WithShape(dtype_attr(node.dtype(0)), node.shape(0))};
  }
}

Outputs ConstantRule(const NodeView& node) {
  for (const ir::Attribute& a : node.node().attributes) {
    if (a.name == "value" && a.type == ir::AttributeType::kTensor) {
      std::vector<ir::Dim> dims;
      for (int64_t d : a.tensor.dims) dims.push_back(KnownDim(d));
      OutputType out = WithDims(a.tensor.dtype, std::move(dims));
      out.int_data = a.tensor.int_data;
      return {out};
    }
    if (a.name == "value_int") {
      OutputType out = WithDims(ir::DType::kInt64, {});
      out.int_data = std::vector<int64_t>{a.i};
      return {out};
    }
    if (a.name == "value_ints") {
      OutputType out = WithDims(ir::DType::kInt64, {KnownDim(static_cast<int64_t>(a.ints.size()))});
      out.int_data = a.ints;
      return {out};
    }
    if (a.name == "value_float") return {WithDims(ir::DType::kFloat, {})};
    if (a.name == "value_floats") {
      return {WithDims(ir::DType::kFloat, {KnownDim(static_cast<int64_t>(a.floats.size()))})};
    }
    if (a.name == "value_string") return {WithDims(ir::DType::kString, {})};
    if (a.name == "value_strings") {
      return {WithDims(ir::DType::kString, {KnownDim(static_cast<int64_t>(a.strings.size()))})};
    }
  }
  return {Unranked(ir::DType::kUndefined)};
}

Outputs WindowRule(const NodeView& node) {
  const ir::DType dtype =
      ir::DTypeFromOnnx(static_cast<int32_t>(node.GetInt("output_datatype", 1)));
  if (node.kind() == K::kMelWeightMatrix) {
    // (num_mel_bins, dft_length, ...) -> [dft_length / 2 + 1, num_mel_bins]
    std::optional<int64_t> bins = node.scalar(0);
    std::optional<int64_t> dft = node.scalar(1);
    ir::Dim rows = UnknownDim();
    if (dft && *dft >= 0) rows = KnownDim(*dft / 2 + 1);
    return {WithDims(dtype, {rows, KnownDim(bins)})};
  }
  return {WithDims(dtype, {KnownDim(node.scalar(0))})};
}

}  // namespace autopar::shapes::rules
