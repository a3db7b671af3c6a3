// The constant folder's tensor and the helpers its evaluators share.
#include <cmath>
#include <limits>

#include "passes/fold_constants.h"
#include "passes/fold_constants_internal.h"

namespace autopar::passes::fold {

bool IsRealType(ir::DType dtype) {
  return dtype == ir::DType::kFloat || dtype == ir::DType::kDouble ||
         dtype == ir::DType::kFloat16 || dtype == ir::DType::kBFloat16;
}

bool IsFoldable(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat:
    case ir::DType::kDouble:
    case ir::DType::kFloat16:
    case ir::DType::kBFloat16:
    case ir::DType::kBool:
    case ir::DType::kInt8:
    case ir::DType::kInt16:
    case ir::DType::kInt32:
    case ir::DType::kInt64:
    case ir::DType::kUint8:
    case ir::DType::kUint16:
    case ir::DType::kUint32:
    case ir::DType::kUint64:
      return true;
    default:
      return false;
  }
}

bool Tensor::is_real() const { return IsRealType(dtype); }

int64_t Tensor::size() const {
  return static_cast<int64_t>(is_real() ? reals.size() : ints.size());
}

double Tensor::real(int64_t i) const { return is_real() ? reals[i] : static_cast<double>(ints[i]); }

int64_t Tensor::integer(int64_t i) const {
  if (!is_real()) return ints[i];
  const double v = reals[i];
  // Out of range and NaN: what a cast on x86 gives, without UB.
  if (!(v > -9.2e18 && v < 9.2e18)) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

std::optional<int64_t> NumElements(absl::Span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    std::optional<int64_t> m = ir::CheckedMul(n, d);
    if (!m) return std::nullopt;
    n = *m;
  }
  return n;
}

std::optional<Tensor> MakeTensor(ir::DType dtype, std::vector<int64_t> dims) {
  std::optional<int64_t> n = NumElements(dims);
  if (!n || *n > kMaxFoldedElements || !IsFoldable(dtype)) return std::nullopt;
  Tensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  if (t.is_real()) {
    t.reals.reserve(*n);
  } else {
    t.ints.reserve(*n);
  }
  return t;
}

void PushReal(Tensor& t, double value) {
  if (t.is_real()) {
    t.reals.push_back(value);
  } else {
    Tensor one;
    one.dtype = ir::DType::kDouble;
    one.reals = {value};
    t.ints.push_back(one.integer(0));
  }
}

void PushInt(Tensor& t, int64_t value) {
  if (t.is_real()) {
    t.reals.push_back(static_cast<double>(value));
  } else {
    t.ints.push_back(value);
  }
}

void Normalize(Tensor& t) {
  switch (t.dtype) {
    case ir::DType::kFloat:
    case ir::DType::kFloat16:
    case ir::DType::kBFloat16:
      for (double& v : t.reals) v = static_cast<double>(static_cast<float>(v));
      return;
    case ir::DType::kBool:
      for (int64_t& v : t.ints) v = v != 0;
      return;
    case ir::DType::kInt8:
      for (int64_t& v : t.ints) v = static_cast<int8_t>(static_cast<uint64_t>(v));
      return;
    case ir::DType::kInt16:
      for (int64_t& v : t.ints) v = static_cast<int16_t>(static_cast<uint64_t>(v));
      return;
    case ir::DType::kInt32:
      for (int64_t& v : t.ints) v = static_cast<int32_t>(static_cast<uint64_t>(v));
      return;
    case ir::DType::kUint8:
      for (int64_t& v : t.ints) v = static_cast<uint8_t>(static_cast<uint64_t>(v));
      return;
    case ir::DType::kUint16:
      for (int64_t& v : t.ints) v = static_cast<uint16_t>(static_cast<uint64_t>(v));
      return;
    case ir::DType::kUint32:
      for (int64_t& v : t.ints) v = static_cast<uint32_t>(static_cast<uint64_t>(v));
      return;
    default:  // int64, uint64 (kept as its bit pattern), double
      return;
  }
}

std::vector<int64_t> Strides(absl::Span<const int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

std::vector<int64_t> BroadcastIndices(absl::Span<const int64_t> in, absl::Span<const int64_t> out) {
  const int64_t n = NumElements(out).value_or(0);
  const size_t offset = out.size() - in.size();
  const std::vector<int64_t> in_strides = Strides(in);
  return SourceOffsets(out, n, [&](const std::vector<int64_t>& index) {
    int64_t source = 0;
    for (size_t d = 0; d < in.size(); ++d) {
      if (in[d] != 1) source += index[offset + d] * in_strides[d];
    }
    return source;
  });
}

int64_t EvalContext::opset() const { return node.opset > 0 ? node.opset : 23; }

std::optional<std::vector<int64_t>> EvalContext::ints(size_t i) const {
  const Tensor* t = in(i);
  if (t == nullptr || t->is_real()) return std::nullopt;
  return t->ints;
}

std::optional<std::vector<int64_t>> EvalContext::IntList(size_t input, std::string_view attribute,
                                                         int64_t first_input_opset) const {
  if (opset() >= first_input_opset) {
    if (!has_input(input)) return std::vector<int64_t>{};
    return ints(input);
  }
  return node.GetInts(attribute);
}

}  // namespace autopar::passes::fold
