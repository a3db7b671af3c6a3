// The constant folder's element-wise operators: Identity, Neg, Abs, Not, Cast,
// the broadcasting arithmetic, comparisons and logic, and Where.
#include <cmath>
#include <limits>

#include "passes/fold_constants.h"
#include "passes/fold_constants_internal.h"

namespace autopar::passes::fold {
namespace {

using K = ir::OpKind;

// Wrapping integer arithmetic (what the runtime does on overflow), without UB.
int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t WrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t WrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// The broadcast shape of the given inputs and, per input, the index each
// output element reads; nullopt when one is unknown or they do not broadcast.
struct Broadcasted {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> indices;
};
std::optional<Broadcasted> BroadcastInputs(const std::vector<const Tensor*>& inputs) {
  std::vector<absl::Span<const int64_t>> shapes;
  for (const Tensor* t : inputs) {
    if (t == nullptr) return std::nullopt;
    shapes.push_back(t->dims);
  }
  std::optional<std::vector<int64_t>> dims = BroadcastDims(shapes);
  if (!dims) return std::nullopt;
  std::optional<int64_t> n = NumElements(*dims);
  if (!n || *n > kMaxFoldedElements) return std::nullopt;
  Broadcasted b{*dims, {}};
  for (const Tensor* t : inputs) b.indices.push_back(BroadcastIndices(t->dims, *dims));
  return b;
}

// Inputs of a variadic or binary node, all of which must be known.
std::optional<std::vector<const Tensor*>> AllInputs(const EvalContext& c) {
  std::vector<const Tensor*> inputs;
  for (size_t i = 0; i < c.node.inputs.size(); ++i) {
    if (c.in(i) == nullptr) return std::nullopt;
    inputs.push_back(c.in(i));
  }
  if (inputs.empty()) return std::nullopt;
  return inputs;
}

std::optional<int64_t> IntOp(K kind, int64_t a, int64_t b, bool fmod) {
  switch (kind) {
    case K::kAdd:
    case K::kSum:
      return WrapAdd(a, b);
    case K::kSub:
      return WrapSub(a, b);
    case K::kMul:
      return WrapMul(a, b);
    case K::kDiv:
      if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return std::nullopt;
      return a / b;  // truncates, as the runtime's integer Div
    case K::kMod: {
      if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return std::nullopt;
      int64_t r = a % b;                                    // fmod=1: the sign of the dividend
      if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;  // fmod=0: the divisor's
      return r;
    }
    case K::kMin:
      return std::min(a, b);
    case K::kMax:
      return std::max(a, b);
    default:
      return std::nullopt;
  }
}

std::optional<double> RealOp(K kind, double a, double b, bool fmod) {
  switch (kind) {
    case K::kAdd:
    case K::kSum:
      return a + b;
    case K::kSub:
      return a - b;
    case K::kMul:
      return a * b;
    case K::kDiv:
      return a / b;
    case K::kMod: {
      if (!fmod) return std::nullopt;  // float Mod requires fmod=1
      return std::fmod(a, b);
    }
    case K::kMin:
      return std::isnan(a) || std::isnan(b) ? std::nan("") : std::min(a, b);
    case K::kMax:
      return std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b);
    default:
      return std::nullopt;
  }
}

}  // namespace

// Identity, Neg, Abs, Not: same type and shape as the input.
std::optional<Outputs> EvalUnary(const EvalContext& c) {
  const Tensor* x = c.in(0);
  if (x == nullptr) return std::nullopt;
  Tensor out = *x;
  switch (c.node.kind) {
    case K::kIdentity:
      break;
    case K::kNeg:
      for (double& v : out.reals) v = -v;
      for (int64_t& v : out.ints) v = WrapSub(0, v);
      break;
    case K::kAbs:
      for (double& v : out.reals) v = std::fabs(v);
      for (int64_t& v : out.ints) v = v < 0 ? WrapSub(0, v) : v;
      break;
    case K::kNot:
      if (out.dtype != ir::DType::kBool) return std::nullopt;
      for (int64_t& v : out.ints) v = v == 0;
      break;
    default:
      return std::nullopt;
  }
  Normalize(out);
  return Outputs{std::move(out)};
}

// Cast (`to`) and CastLike (the second input's type). Float to integer
// truncates toward zero; to bool is "not zero".
std::optional<Outputs> EvalCast(const EvalContext& c) {
  const Tensor* x = c.in(0);
  if (x == nullptr) return std::nullopt;
  ir::DType to;
  if (c.node.kind == K::kCastLike) {
    if (c.in(1) == nullptr) return std::nullopt;
    to = c.in(1)->dtype;
  } else {
    to = static_cast<ir::DType>(c.node.GetInt("to", 0));
  }
  std::optional<Tensor> out = MakeTensor(to, x->dims);
  if (!out) return std::nullopt;
  for (int64_t i = 0; i < x->size(); ++i) {
    if (to == ir::DType::kBool) {
      PushInt(*out, x->real(i) != 0);
    } else if (x->is_real()) {
      PushReal(*out, x->reals[i]);
    } else {
      PushInt(*out, x->ints[i]);
    }
  }
  Normalize(*out);
  return Outputs{*std::move(out)};
}

// Add, Sub, Mul, Div, Mod, Min, Max (and Sum): numpy broadcasting, in the
// inputs' type. Integer division truncates; integer division by zero does
// not fold.
std::optional<Outputs> EvalArithmetic(const EvalContext& c) {
  std::optional<std::vector<const Tensor*>> inputs = AllInputs(c);
  if (!inputs) return std::nullopt;
  const ir::DType dtype = (*inputs)[0]->dtype;
  for (const Tensor* t : *inputs) {
    if (t->dtype != dtype) return std::nullopt;
  }
  if (dtype == ir::DType::kBool) return std::nullopt;
  std::optional<Broadcasted> b = BroadcastInputs(*inputs);
  if (!b) return std::nullopt;
  std::optional<Tensor> out = MakeTensor(dtype, b->dims);
  if (!out) return std::nullopt;
  const bool fmod = c.node.GetInt("fmod", 0) != 0;
  const int64_t n = NumElements(b->dims).value_or(0);
  for (int64_t i = 0; i < n; ++i) {
    if (out->is_real()) {
      double acc = (*inputs)[0]->reals[b->indices[0][i]];
      for (size_t k = 1; k < inputs->size(); ++k) {
        std::optional<double> r =
            RealOp(c.node.kind, acc, (*inputs)[k]->reals[b->indices[k][i]], fmod);
        if (!r) return std::nullopt;
        acc = *r;
      }
      out->reals.push_back(acc);
    } else {
      int64_t acc = (*inputs)[0]->ints[b->indices[0][i]];
      for (size_t k = 1; k < inputs->size(); ++k) {
        std::optional<int64_t> r =
            IntOp(c.node.kind, acc, (*inputs)[k]->ints[b->indices[k][i]], fmod);
        if (!r) return std::nullopt;
        acc = *r;
      }
      out->ints.push_back(acc);
    }
  }
  Normalize(*out);
  return Outputs{*std::move(out)};
}

// Equal, Less, Greater, LessOrEqual, GreaterOrEqual → bool.
std::optional<Outputs> EvalComparison(const EvalContext& c) {
  const Tensor* a = c.in(0);
  const Tensor* b = c.in(1);
  if (a == nullptr || b == nullptr || a->dtype != b->dtype) return std::nullopt;
  std::optional<Broadcasted> bc = BroadcastInputs({a, b});
  if (!bc) return std::nullopt;
  std::optional<Tensor> out = MakeTensor(ir::DType::kBool, bc->dims);
  if (!out) return std::nullopt;
  const int64_t n = NumElements(bc->dims).value_or(0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ia = bc->indices[0][i];
    const int64_t ib = bc->indices[1][i];
    // Compare in the inputs' own kind: int64 values beyond 2^53 stay exact.
    auto cmp = [&](auto x, auto y) {
      switch (c.node.kind) {
        case K::kEqual:
          return x == y;
        case K::kLess:
          return x < y;
        case K::kGreater:
          return x > y;
        case K::kLessOrEqual:
          return x <= y;
        default:
          return x >= y;
      }
    };
    out->ints.push_back(a->is_real() ? cmp(a->reals[ia], b->reals[ib])
                                     : cmp(a->ints[ia], b->ints[ib]));
  }
  return Outputs{*std::move(out)};
}

// And, Or, Xor on bools.
std::optional<Outputs> EvalLogical(const EvalContext& c) {
  const Tensor* a = c.in(0);
  const Tensor* b = c.in(1);
  if (a == nullptr || b == nullptr || a->dtype != ir::DType::kBool ||
      b->dtype != ir::DType::kBool) {
    return std::nullopt;
  }
  std::optional<Broadcasted> bc = BroadcastInputs({a, b});
  if (!bc) return std::nullopt;
  std::optional<Tensor> out = MakeTensor(ir::DType::kBool, bc->dims);
  if (!out) return std::nullopt;
  const int64_t n = NumElements(bc->dims).value_or(0);
  for (int64_t i = 0; i < n; ++i) {
    const bool x = a->ints[bc->indices[0][i]] != 0;
    const bool y = b->ints[bc->indices[1][i]] != 0;
    const bool r = c.node.kind == K::kAnd ? (x && y) : c.node.kind == K::kOr ? (x || y) : (x != y);
    out->ints.push_back(r);
  }
  return Outputs{*std::move(out)};
}

// Where(condition, x, y), all three broadcast.
std::optional<Outputs> EvalWhere(const EvalContext& c) {
  const Tensor* cond = c.in(0);
  const Tensor* x = c.in(1);
  const Tensor* y = c.in(2);
  if (cond == nullptr || x == nullptr || y == nullptr || cond->dtype != ir::DType::kBool ||
      x->dtype != y->dtype) {
    return std::nullopt;
  }
  std::optional<Broadcasted> bc = BroadcastInputs({cond, x, y});
  if (!bc) return std::nullopt;
  std::optional<Tensor> out = MakeTensor(x->dtype, bc->dims);
  if (!out) return std::nullopt;
  const int64_t n = NumElements(bc->dims).value_or(0);
  for (int64_t i = 0; i < n; ++i) {
    const Tensor* from = cond->ints[bc->indices[0][i]] != 0 ? x : y;
    const int64_t at = bc->indices[from == x ? 1 : 2][i];
    if (out->is_real()) {
      out->reals.push_back(from->reals[at]);
    } else {
      out->ints.push_back(from->ints[at]);
    }
  }
  return Outputs{*std::move(out)};
}

}  // namespace autopar::passes::fold
