// The constant folder's shape and data-movement operators: Shape, Size,
// Gather, Slice, Concat, Squeeze, Unsqueeze, Reshape, Flatten,
// ConstantOfShape, Range, Expand, Tile, Transpose, NonZero.
#include <algorithm>
#include <cmath>
#include <limits>

#include "passes/fold_constants.h"
#include "passes/fold_constants_internal.h"

namespace autopar::passes::fold {
namespace {

// A tensor of `dtype` and `dims` whose element i is x's element `from[i]`.
std::optional<Tensor> Pick(const Tensor& x, std::vector<int64_t> dims,
                           const std::vector<int64_t>& from) {
  std::optional<Tensor> out = MakeTensor(x.dtype, std::move(dims));
  if (!out) return std::nullopt;
  for (int64_t i : from) {
    if (x.is_real()) {
      out->reals.push_back(x.reals[i]);
    } else {
      out->ints.push_back(x.ints[i]);
    }
  }
  return out;
}

// A copy of `x` with other dims (same element count).
std::optional<Outputs> Reshaped(const Tensor& x, std::vector<int64_t> dims) {
  std::optional<int64_t> n = NumElements(dims);
  if (!n || *n != x.size()) return std::nullopt;
  Tensor out = x;
  out.dims = std::move(dims);
  return Outputs{std::move(out)};
}

std::optional<Outputs> Int64Vector(std::vector<int64_t> values) {
  Tensor out;
  out.dtype = ir::DType::kInt64;
  out.dims = {static_cast<int64_t>(values.size())};
  out.ints = std::move(values);
  return Outputs{std::move(out)};
}

}  // namespace

// Shape(x) with start/end (opset 15): only x's static shape is needed.
std::optional<Outputs> EvalShape(const EvalContext& c) {
  if (c.input_shapes.empty() || c.input_shapes[0] == nullptr) return std::nullopt;
  std::vector<int64_t> dims = c.input_shapes[0]->Values();
  const int64_t rank = static_cast<int64_t>(dims.size());
  auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clamp(c.node.GetInt("start", 0));
  const int64_t end = clamp(c.node.GetInt("end", rank));
  if (start >= end) return Int64Vector({});
  return Int64Vector(std::vector<int64_t>(dims.begin() + start, dims.begin() + end));
}

// Size(x): a scalar int64.
std::optional<Outputs> EvalSize(const EvalContext& c) {
  if (c.input_shapes.empty() || c.input_shapes[0] == nullptr) return std::nullopt;
  std::optional<int64_t> n = c.input_shapes[0]->NumElements();
  if (!n) return std::nullopt;
  Tensor out;
  out.dtype = ir::DType::kInt64;
  out.ints = {*n};
  return Outputs{std::move(out)};
}

// Gather(data, indices, axis): negative indices count from the end.
std::optional<Outputs> EvalGather(const EvalContext& c) {
  const Tensor* data = c.in(0);
  const Tensor* indices = c.in(1);
  if (data == nullptr || indices == nullptr || indices->is_real()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(data->dims.size());
  std::optional<int64_t> axis = NormalizeAxis(c.node.GetInt("axis", 0), rank);
  if (!axis) return std::nullopt;
  const int64_t axis_dim = data->dims[*axis];
  std::vector<int64_t> dims(data->dims.begin(), data->dims.begin() + *axis);
  dims.insert(dims.end(), indices->dims.begin(), indices->dims.end());
  dims.insert(dims.end(), data->dims.begin() + *axis + 1, data->dims.end());
  std::optional<int64_t> n = NumElements(dims);
  if (!n || *n > kMaxFoldedElements) return std::nullopt;
  const int64_t outer = NumElements(absl::MakeSpan(data->dims).subspan(0, *axis)).value_or(0);
  const int64_t inner = NumElements(absl::MakeSpan(data->dims).subspan(*axis + 1)).value_or(0);
  std::vector<int64_t> from;
  from.reserve(*n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t index : indices->ints) {
      if (index < -axis_dim || index >= axis_dim) return std::nullopt;
      if (index < 0) index += axis_dim;
      for (int64_t i = 0; i < inner; ++i) from.push_back((o * axis_dim + index) * inner + i);
    }
  }
  std::optional<Tensor> out = Pick(*data, std::move(dims), from);
  if (!out) return std::nullopt;
  return Outputs{*std::move(out)};
}

// Slice: starts/ends/axes/steps as inputs (opset 10+) or attributes.
std::optional<Outputs> EvalSlice(const EvalContext& c) {
  const Tensor* data = c.in(0);
  if (data == nullptr) return std::nullopt;
  std::optional<std::vector<int64_t>> starts = c.IntList(1, "starts", 10);
  std::optional<std::vector<int64_t>> ends = c.IntList(2, "ends", 10);
  std::optional<std::vector<int64_t>> axes = c.IntList(3, "axes", 10);
  std::optional<std::vector<int64_t>> steps =
      c.opset() >= 10 ? c.IntList(4, "", 10) : std::vector<int64_t>{};
  if (!starts || !ends || !axes || !steps || starts->size() != ends->size()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(data->dims.size());
  if (axes->empty()) {
    for (size_t i = 0; i < starts->size(); ++i) axes->push_back(static_cast<int64_t>(i));
  }
  if (steps->empty()) steps->assign(starts->size(), 1);
  if (axes->size() != starts->size() || steps->size() != starts->size()) return std::nullopt;
  std::vector<int64_t> begin(rank, 0);
  std::vector<int64_t> step(rank, 1);
  std::vector<int64_t> dims = data->dims;
  std::vector<bool> seen(rank, false);
  for (size_t k = 0; k < axes->size(); ++k) {
    std::optional<int64_t> axis = NormalizeAxis((*axes)[k], rank);
    if (!axis || seen[*axis] || (*steps)[k] == 0) return std::nullopt;
    seen[*axis] = true;
    const int64_t d = data->dims[*axis];
    const int64_t s = (*steps)[k];
    int64_t b = (*starts)[k];
    int64_t e = (*ends)[k];
    if (b < 0) b = b < -d ? 0 : b + d;  // as the runtime clamps: min(max(x, lo), hi)
    if (e < 0) e = e < -d ? -1 : e + d;
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
    } else {
      b = std::clamp<int64_t>(b, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
    }
    int64_t count = 0;
    if (s > 0 && e > b) count = (e - b + s - 1) / s;
    if (s < 0 && b > e) count = (b - e + (-s) - 1) / (-s);
    begin[*axis] = b;
    step[*axis] = s;
    dims[*axis] = count;
  }
  std::optional<int64_t> n = NumElements(dims);
  if (!n || *n > kMaxFoldedElements) return std::nullopt;
  const std::vector<int64_t> strides = Strides(data->dims);
  std::vector<int64_t> from;
  from.reserve(*n);
  std::vector<int64_t> index(rank, 0);
  for (int64_t flat = 0; flat < *n; ++flat) {
    int64_t source = 0;
    for (int64_t d = 0; d < rank; ++d) source += (begin[d] + index[d] * step[d]) * strides[d];
    from.push_back(source);
    for (int64_t d = rank; d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  std::optional<Tensor> out = Pick(*data, std::move(dims), from);
  if (!out) return std::nullopt;
  return Outputs{*std::move(out)};
}

// Concat(inputs..., axis).
std::optional<Outputs> EvalConcat(const EvalContext& c) {
  if (c.node.inputs.empty()) return std::nullopt;
  for (size_t i = 0; i < c.node.inputs.size(); ++i) {
    if (c.in(i) == nullptr) return std::nullopt;
  }
  const Tensor& first = *c.in(0);
  const int64_t rank = static_cast<int64_t>(first.dims.size());
  std::optional<int64_t> axis = NormalizeAxis(c.node.GetInt("axis", 0), rank);
  if (!axis) return std::nullopt;
  std::vector<int64_t> dims = first.dims;
  dims[*axis] = 0;
  for (size_t i = 0; i < c.node.inputs.size(); ++i) {
    const Tensor& t = *c.in(i);
    if (t.dtype != first.dtype || t.dims.size() != first.dims.size()) return std::nullopt;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != *axis && t.dims[d] != first.dims[d]) return std::nullopt;
    }
    dims[*axis] += t.dims[*axis];
  }
  std::optional<Tensor> out = MakeTensor(first.dtype, dims);
  if (!out) return std::nullopt;
  const int64_t outer = NumElements(absl::MakeSpan(first.dims).subspan(0, *axis)).value_or(0);
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < c.node.inputs.size(); ++i) {
      const Tensor& t = *c.in(i);
      const int64_t block = NumElements(absl::MakeSpan(t.dims).subspan(*axis)).value_or(0);
      for (int64_t k = o * block; k < (o + 1) * block; ++k) {
        if (t.is_real()) {
          out->reals.push_back(t.reals[k]);
        } else {
          out->ints.push_back(t.ints[k]);
        }
      }
    }
  }
  return Outputs{*std::move(out)};
}

// Squeeze(data, axes): axes from opset 13 on an input; none = every 1-dim.
std::optional<Outputs> EvalSqueeze(const EvalContext& c) {
  const Tensor* data = c.in(0);
  std::optional<std::vector<int64_t>> axes = c.IntList(1, "axes", 13);
  if (data == nullptr || !axes) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(data->dims.size());
  std::vector<bool> drop(rank, false);
  if (axes->empty()) {
    for (int64_t d = 0; d < rank; ++d) drop[d] = data->dims[d] == 1;
  }
  for (int64_t a : *axes) {
    std::optional<int64_t> axis = NormalizeAxis(a, rank);
    if (!axis || data->dims[*axis] != 1) return std::nullopt;
    drop[*axis] = true;
  }
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (!drop[d]) dims.push_back(data->dims[d]);
  }
  return Reshaped(*data, std::move(dims));
}

// Unsqueeze(data, axes): axes index the output.
std::optional<Outputs> EvalUnsqueeze(const EvalContext& c) {
  const Tensor* data = c.in(0);
  std::optional<std::vector<int64_t>> axes = c.IntList(1, "axes", 13);
  if (data == nullptr || !axes || axes->empty()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(data->dims.size() + axes->size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    std::optional<int64_t> axis = NormalizeAxis(a, rank);
    if (!axis || inserted[*axis]) return std::nullopt;
    inserted[*axis] = true;
  }
  std::vector<int64_t> dims;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) dims.push_back(inserted[d] ? 1 : data->dims[next++]);
  return Reshaped(*data, std::move(dims));
}

// Reshape(data, shape): 0 copies the input dim (unless allowzero), -1 is
// inferred.
std::optional<Outputs> EvalReshape(const EvalContext& c) {
  const Tensor* data = c.in(0);
  std::optional<std::vector<int64_t>> shape = c.opset() >= 5 ? c.ints(1) : c.node.GetInts("shape");
  if (data == nullptr || !shape) return std::nullopt;
  const bool allow_zero = c.node.GetInt("allowzero", 0) != 0;
  std::vector<int64_t> dims = *shape;
  int64_t inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && !allow_zero) {
      if (i >= data->dims.size()) return std::nullopt;
      dims[i] = data->dims[i];
    }
    if (dims[i] == -1) {
      if (inferred >= 0) return std::nullopt;
      inferred = static_cast<int64_t>(i);
      continue;
    }
    if (dims[i] < 0) return std::nullopt;
    std::optional<int64_t> m = ir::CheckedMul(known, dims[i]);
    if (!m) return std::nullopt;
    known = *m;
  }
  if (inferred >= 0) {
    if (known == 0 || data->size() % known != 0) return std::nullopt;
    dims[inferred] = data->size() / known;
  }
  return Reshaped(*data, std::move(dims));
}

// Flatten(input, axis) → 2-D.
std::optional<Outputs> EvalFlatten(const EvalContext& c) {
  const Tensor* data = c.in(0);
  if (data == nullptr) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(data->dims.size());
  int64_t axis = c.node.GetInt("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return std::nullopt;
  const int64_t rows = NumElements(absl::MakeSpan(data->dims).subspan(0, axis)).value_or(-1);
  const int64_t cols = NumElements(absl::MakeSpan(data->dims).subspan(axis)).value_or(-1);
  if (rows < 0 || cols < 0) return std::nullopt;
  return Reshaped(*data, {rows, cols});
}

// ConstantOfShape(shape) with `value` (default float 0).
std::optional<Outputs> EvalConstantOfShape(const EvalContext& c) {
  std::optional<std::vector<int64_t>> shape = c.ints(0);
  if (!shape) return std::nullopt;
  Tensor fill;
  if (c.value_attribute != nullptr) {
    fill = *c.value_attribute;
    if (fill.size() != 1) return std::nullopt;
  } else if (c.node.FindAttribute("value") != nullptr) {
    return std::nullopt;  // present but not decodable
  } else {
    fill.dtype = ir::DType::kFloat;
    fill.reals = {0.0};
  }
  std::optional<Tensor> out = MakeTensor(fill.dtype, *shape);
  if (!out) return std::nullopt;
  const int64_t n = NumElements(*shape).value_or(0);
  if (out->is_real()) {
    out->reals.assign(n, fill.reals[0]);
  } else {
    out->ints.assign(n, fill.ints[0]);
  }
  return Outputs{*std::move(out)};
}

// Range(start, limit, delta): max(ceil((limit - start) / delta), 0) elements.
std::optional<Outputs> EvalRange(const EvalContext& c) {
  const Tensor* start = c.in(0);
  const Tensor* limit = c.in(1);
  const Tensor* delta = c.in(2);
  if (start == nullptr || limit == nullptr || delta == nullptr || start->size() != 1 ||
      limit->size() != 1 || delta->size() != 1 || start->dtype != limit->dtype ||
      start->dtype != delta->dtype) {
    return std::nullopt;
  }
  const ir::DType dtype = start->dtype;
  if (start->is_real()) {
    const double s = start->reals[0];
    const double d = delta->reals[0];
    const double count = std::ceil((limit->reals[0] - s) / d);
    if (!(count < static_cast<double>(kMaxFoldedElements + 1))) return std::nullopt;
    const int64_t n = std::max<int64_t>(static_cast<int64_t>(count), 0);
    std::optional<Tensor> out = MakeTensor(dtype, {n});
    if (!out) return std::nullopt;
    for (int64_t i = 0; i < n; ++i) out->reals.push_back(s + static_cast<double>(i) * d);
    Normalize(*out);
    return Outputs{*std::move(out)};
  }
  const int64_t s = start->ints[0];
  const int64_t d = delta->ints[0];
  if (d == 0) return std::nullopt;
  int64_t span = 0;
  if (__builtin_sub_overflow(limit->ints[0], s, &span)) return std::nullopt;
  int64_t count = span / d;
  if (count * d != span && ((span > 0) == (d > 0))) ++count;  // ceil
  if (count < 0) count = 0;
  if (count > kMaxFoldedElements) return std::nullopt;
  std::optional<Tensor> out = MakeTensor(dtype, {count});
  if (!out) return std::nullopt;
  for (int64_t i = 0; i < count; ++i) out->ints.push_back(s + i * d);
  Normalize(*out);
  return Outputs{*std::move(out)};
}

// Expand(input, shape): bidirectional broadcasting.
std::optional<Outputs> EvalExpand(const EvalContext& c) {
  const Tensor* data = c.in(0);
  std::optional<std::vector<int64_t>> shape = c.ints(1);
  if (data == nullptr || !shape) return std::nullopt;
  for (int64_t d : *shape) {
    if (d < 0) return std::nullopt;
  }
  std::optional<std::vector<int64_t>> dims = BroadcastDims({data->dims, *shape});
  if (!dims) return std::nullopt;
  std::optional<int64_t> n = NumElements(*dims);
  if (!n || *n > kMaxFoldedElements) return std::nullopt;
  std::optional<Tensor> out = Pick(*data, *dims, BroadcastIndices(data->dims, *dims));
  if (!out) return std::nullopt;
  return Outputs{*std::move(out)};
}

// Tile(input, repeats).
std::optional<Outputs> EvalTile(const EvalContext& c) {
  const Tensor* data = c.in(0);
  std::optional<std::vector<int64_t>> repeats = c.ints(1);
  if (data == nullptr || !repeats || repeats->size() != data->dims.size()) return std::nullopt;
  const size_t rank = data->dims.size();
  std::vector<int64_t> dims(rank);
  for (size_t d = 0; d < rank; ++d) {
    if ((*repeats)[d] < 0) return std::nullopt;
    std::optional<int64_t> m = ir::CheckedMul(data->dims[d], (*repeats)[d]);
    if (!m) return std::nullopt;
    dims[d] = *m;
  }
  std::optional<int64_t> n = NumElements(dims);
  if (!n || *n > kMaxFoldedElements) return std::nullopt;
  const std::vector<int64_t> strides = Strides(data->dims);
  std::vector<int64_t> from = SourceOffsets(dims, *n, [&](const std::vector<int64_t>& index) {
    int64_t source = 0;
    for (size_t d = 0; d < rank; ++d) source += (index[d] % data->dims[d]) * strides[d];
    return source;
  });
  std::optional<Tensor> out = Pick(*data, std::move(dims), from);
  if (!out) return std::nullopt;
  return Outputs{*std::move(out)};
}

// Transpose(data, perm): perm defaults to reversing the dims.
std::optional<Outputs> EvalTranspose(const EvalContext& c) {
  const Tensor* data = c.in(0);
  if (data == nullptr) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(data->dims.size());
  std::vector<int64_t> perm = c.node.GetInts("perm");
  if (perm.empty()) {
    for (int64_t d = rank; d-- > 0;) perm.push_back(d);
  }
  if (static_cast<int64_t>(perm.size()) != rank) return std::nullopt;
  std::vector<bool> used(rank, false);
  std::vector<int64_t> dims(rank);
  for (int64_t d = 0; d < rank; ++d) {
    std::optional<int64_t> p = NormalizeAxis(perm[d], rank);
    if (!p || used[*p]) return std::nullopt;
    used[*p] = true;
    perm[d] = *p;
    dims[d] = data->dims[*p];
  }
  const std::vector<int64_t> strides = Strides(data->dims);
  const int64_t n = data->size();
  std::vector<int64_t> from = SourceOffsets(dims, n, [&](const std::vector<int64_t>& index) {
    int64_t source = 0;
    for (int64_t d = 0; d < rank; ++d) source += index[d] * strides[perm[d]];
    return source;
  });
  std::optional<Tensor> out = Pick(*data, std::move(dims), from);
  if (!out) return std::nullopt;
  return Outputs{*std::move(out)};
}

// NonZero(x) → int64 [rank, count], the coordinates of the non-zero elements
// in row-major order.
std::optional<Outputs> EvalNonZero(const EvalContext& c) {
  const Tensor* x = c.in(0);
  if (x == nullptr) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x->dims.size());
  if (rank == 0) return std::nullopt;
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x->size(); ++i) {
    if (x->real(i) != 0) hits.push_back(i);
  }
  const int64_t count = static_cast<int64_t>(hits.size());
  std::optional<Tensor> out = MakeTensor(ir::DType::kInt64, {rank, count});
  if (!out) return std::nullopt;
  out->ints.assign(rank * count, 0);
  const std::vector<int64_t> strides = Strides(x->dims);
  for (int64_t k = 0; k < count; ++k) {
    int64_t rest = hits[k];
    for (int64_t d = 0; d < rank; ++d) {
      out->ints[d * count + k] = rest / strides[d];
      rest %= strides[d];
    }
  }
  return Outputs{*std::move(out)};
}

}  // namespace autopar::passes::fold
