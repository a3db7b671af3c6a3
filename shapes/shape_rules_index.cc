// Shape rules of indexing, reductions, and the operators that make shapes or
// tensors from integers: Gather*, Reduce*, ArgMax/ArgMin, TopK, Shape, Size,
// ConstantOfShape, Range, OneHot, Resize/Upsample, Col2Im, and the
// data-dependent ops (NonZero, Unique...) whose sizes only a run can tell.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "shapes/shape_rules_internal.h"

namespace autopar::shapes::rules {
namespace {

using K = ir::OpKind;

// Dims of a shape given by a 1-D integer input: known contents, or its
// length with unknown dims, or unranked.
ir::Shape ShapeFromInput(const NodeView& node, size_t input) {
  if (std::optional<absl::Span<const int64_t>> values = node.ints(input)) {
    std::vector<ir::Dim> dims;
    for (int64_t d : *values) dims.push_back(KnownDim(d));
    return ir::Shape::FromDims(std::move(dims));
  }
  if (std::optional<int64_t> rank = Length1D(node.shape(input))) {
    return ir::Shape::FromDims(std::vector<ir::Dim>(static_cast<size_t>(*rank)));
  }
  return ir::Shape();
}

// Contents of Gather along `axis` of a static tensor with known contents.
std::optional<std::vector<int64_t>> GatherInts(const NodeView& node, int64_t axis) {
  std::optional<absl::Span<const int64_t>> data = node.ints(0);
  std::optional<absl::Span<const int64_t>> indices = node.ints(1);
  const ir::Shape& shape = node.shape(0);
  if (!data || !indices || !shape.IsStatic()) return std::nullopt;
  const absl::Span<const ir::Dim> dims = shape.dims();
  const int64_t along = dims[static_cast<size_t>(axis)].value;
  std::optional<int64_t> outer = Product(dims.subspan(0, static_cast<size_t>(axis)));
  std::optional<int64_t> inner = Product(dims.subspan(static_cast<size_t>(axis) + 1));
  std::optional<int64_t> total =
      outer ? ir::CheckedMul(*outer, static_cast<int64_t>(indices->size())) : std::nullopt;
  if (total && inner) total = ir::CheckedMul(*total, *inner);
  if (!total || *total > ir::kMaxKnownIntElements) return std::nullopt;
  std::vector<int64_t> result;
  result.reserve(static_cast<size_t>(*total));
  for (int64_t o = 0; o < *outer; ++o) {
    for (int64_t index : *indices) {
      if (index < -along || index >= along) return std::nullopt;
      if (index < 0) index += along;
      auto begin = data->begin() + (o * along + index) * *inner;
      result.insert(result.end(), begin, begin + *inner);
    }
  }
  return result;
}

std::optional<int64_t> FoldReduction(K kind, absl::Span<const int64_t> values) {
  if (values.empty()) return std::nullopt;
  int64_t acc = kind == K::kReduceProd ? 1 : (kind == K::kReduceSum ? 0 : values[0]);
  for (int64_t v : values) {
    std::optional<int64_t> next;
    switch (kind) {
      case K::kReduceSum:
        next = CheckedAdd(acc, v);
        break;
      case K::kReduceProd: {
        int64_t p;
        if (!__builtin_mul_overflow(acc, v, &p)) next = p;
        break;
      }
      case K::kReduceMax:
        next = std::max(acc, v);
        break;
      case K::kReduceMin:
        next = std::min(acc, v);
        break;
      default:
        return std::nullopt;
    }
    if (!next) return std::nullopt;
    acc = *next;
  }
  return acc;
}

// Number of elements of start:limit:delta, max(ceil((limit - start) / delta), 0).
std::optional<int64_t> RangeCount(int64_t start, int64_t limit, int64_t delta) {
  std::optional<int64_t> diff = CheckedSub(limit, start);
  if (!diff || delta == 0 || (delta == -1 && *diff == std::numeric_limits<int64_t>::min())) {
    return std::nullopt;
  }
  int64_t q = *diff / delta;
  if (*diff % delta != 0 && ((*diff > 0) == (delta > 0))) ++q;
  return std::max<int64_t>(q, 0);
}

}  // namespace

Outputs GatherRule(const NodeView& node) {
  // data[:axis] + indices.shape + data[axis + 1:]
  const ir::Shape& data = node.shape(0);
  const ir::Shape& indices = node.shape(1);
  const ir::DType dtype = node.dtype(0);
  std::optional<int64_t> axis = NormalizeAxis(node.GetInt("axis", 0), Rank(data).value_or(-1));
  if (!axis || !indices.has_rank()) return {Unranked(dtype)};
  std::vector<ir::Dim> dims(data.dims().begin(), data.dims().begin() + *axis);
  dims.insert(dims.end(), indices.dims().begin(), indices.dims().end());
  dims.insert(dims.end(), data.dims().begin() + *axis + 1, data.dims().end());
  OutputType out = WithDims(dtype, std::move(dims));
  out.int_data = GatherInts(node, *axis);
  return {out};
}

Outputs GatherElementsRule(const NodeView& node) {
  return {WithShape(node.dtype(0), node.shape(1))};
}

Outputs GatherNDRule(const NodeView& node) {
  // indices [i1..iq-1, k] -> indices[:-1] + data[batch_dims + k:]
  const ir::Shape& data = node.shape(0);
  const ir::Shape& indices = node.shape(1);
  const ir::DType dtype = node.dtype(0);
  const int64_t batch_dims = node.GetInt("batch_dims", 0);
  if (!data.has_rank() || !indices.has_rank() || indices.rank() == 0 ||
      !indices.dims().back().known() || batch_dims < 0) {
    return {Unranked(dtype)};
  }
  const int64_t k = indices.dims().back().value;
  std::optional<int64_t> used = CheckedAdd(batch_dims, k);
  if (!used || *used > static_cast<int64_t>(data.rank())) return {Unranked(dtype)};
  std::vector<ir::Dim> dims(indices.dims().begin(), indices.dims().end() - 1);
  dims.insert(dims.end(), data.dims().begin() + *used, data.dims().end());
  return {WithDims(dtype, std::move(dims))};
}

Outputs ReduceRule(const NodeView& node) {
  // axes: ReduceSum's input 1 from opset 13, the others' from opset 18; an
  // attribute before. No axes: all of them, or none with noop_with_empty_axes.
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  const bool keep_dims = node.GetInt("keepdims", 1) != 0;
  std::optional<int64_t> rank = Rank(in);
  IntList axes = ReadIntList(node, 1, "axes", node.kind() == K::kReduceSum ? 13 : 18);
  if (!rank) return {Unranked(dtype)};
  if (axes.given && !axes.values) {
    if (keep_dims) return {WithDims(dtype, std::vector<ir::Dim>(in.rank()))};
    std::optional<int64_t> count = Length1D(node.shape(1));
    if (!count || *count > *rank) return {Unranked(dtype)};
    return {WithDims(dtype, std::vector<ir::Dim>(static_cast<size_t>(*rank - *count)))};
  }
  std::vector<bool> reduced(in.rank(), true);
  if (axes.values && !axes.values->empty()) {
    std::optional<std::vector<int64_t>> normalized = NormalizeAxes(*axes.values, *rank);
    if (!normalized) return {Unranked(dtype)};
    reduced.assign(in.rank(), false);
    for (int64_t a : *normalized) reduced[static_cast<size_t>(a)] = true;
  } else if (node.GetInt("noop_with_empty_axes", 0) != 0) {
    return {LikeInput(node, 0)};
  }
  std::vector<ir::Dim> dims;
  for (size_t i = 0; i < in.rank(); ++i) {
    if (!reduced[i]) {
      dims.push_back(in.dim(i));
    } else if (keep_dims) {
      dims.push_back(ir::Dim{1, ""});
    }
  }
  OutputType out = WithDims(dtype, std::move(dims));
  // Sum, product, max or min of a whole 1-D shape tensor.
  std::optional<absl::Span<const int64_t>> data = node.ints(0);
  if (data && in.rank() == 1 && reduced[0]) {
    if (std::optional<int64_t> v = FoldReduction(node.kind(), *data)) out.int_data = {*v};
  }
  return {out};
}

Outputs ArgReduceRule(const NodeView& node) {
  // ArgMax/ArgMin: int64, `axis` removed or kept as 1.
  const ir::Shape& in = node.shape(0);
  std::optional<int64_t> axis = NormalizeAxis(node.GetInt("axis", 0), Rank(in).value_or(-1));
  if (!axis) return {Unranked(ir::DType::kInt64)};
  std::vector<ir::Dim> dims = in.dims();
  if (node.GetInt("keepdims", 1) != 0) {
    dims[static_cast<size_t>(*axis)] = ir::Dim{1, ""};
  } else {
    dims.erase(dims.begin() + *axis);
  }
  return {WithDims(ir::DType::kInt64, std::move(dims))};
}

Outputs TopKRule(const NodeView& node) {
  // (X, K) -> Values, Indices (int64), with `axis` of size K (attribute k in opset 1).
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  std::optional<int64_t> axis = NormalizeAxis(node.GetInt("axis", -1), Rank(in).value_or(-1));
  if (!axis) return {Unranked(dtype), Unranked(ir::DType::kInt64)};
  std::optional<int64_t> k = node.opset() >= 10 ? node.scalar(1) : node.GetInt("k", -1);
  std::vector<ir::Dim> dims = in.dims();
  dims[static_cast<size_t>(*axis)] = KnownDim(k);
  return {WithDims(dtype, dims), WithDims(ir::DType::kInt64, dims)};
}

Outputs ShapeRule(const NodeView& node) {
  // int64 [end - start] holding the dims [start, end) (opset 15), when known.
  const ir::Shape& in = node.shape(0);
  std::optional<int64_t> rank = Rank(in);
  if (!rank) return {WithDims(ir::DType::kInt64, {UnknownDim()})};
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + *rank : i, 0, *rank); };
  const int64_t start = clamp(node.GetInt("start", 0));
  const int64_t end = clamp(node.GetInt("end", *rank));
  OutputType out = WithDims(ir::DType::kInt64, {KnownDim(std::max<int64_t>(end - start, 0))});
  std::vector<int64_t> values;
  for (int64_t i = start; i < end; ++i) {
    const ir::Dim& d = in.dim(static_cast<size_t>(i));
    if (!d.known()) return {out};
    values.push_back(d.value);
  }
  out.int_data = std::move(values);
  return {out};
}

Outputs SizeRule(const NodeView& node) {
  OutputType out = WithDims(ir::DType::kInt64, {});
  if (std::optional<int64_t> n = node.shape(0).NumElements()) out.int_data = {*n};
  return {out};
}

Outputs ConstantOfShapeRule(const NodeView& node) {
  // Shape from input 0; type and value from the `value` tensor (float 0 by default).
  const ir::Attribute* value = node.node().FindAttribute("value");
  ir::DType dtype = ir::DType::kFloat;
  std::optional<int64_t> fill;
  if (value != nullptr && value->type == ir::AttributeType::kTensor) {
    dtype = value->tensor.dtype;
    if (value->tensor.int_data && value->tensor.int_data->size() == 1) {
      fill = (*value->tensor.int_data)[0];
    }
  }
  OutputType out = WithShape(dtype, ShapeFromInput(node, 0));
  std::optional<int64_t> n = out.shape.NumElements();
  if (fill && IsIntegerOrBool(dtype) && n && *n <= ir::kMaxKnownIntElements) {
    out.int_data = std::vector<int64_t>(static_cast<size_t>(*n), *fill);
  }
  return {out};
}

Outputs RangeRule(const NodeView& node) {
  // (start, limit, delta) scalars -> [max(ceil((limit - start) / delta), 0)]
  ir::DType dtype = node.dtype(0);
  std::optional<int64_t> start = node.scalar(0);
  std::optional<int64_t> limit = node.scalar(1);
  std::optional<int64_t> delta = node.scalar(2);
  std::optional<int64_t> count;
  if (start && limit && delta) count = RangeCount(*start, *limit, *delta);
  OutputType out = WithDims(dtype, {KnownDim(count)});
  if (count && *count <= ir::kMaxKnownIntElements) {
    std::vector<int64_t> values;
    values.reserve(static_cast<size_t>(*count));
    // |i * delta| <= |limit - start|: no overflow.
    for (int64_t i = 0; i < *count; ++i) values.push_back(*start + i * *delta);
    out.int_data = std::move(values);
  }
  return {out};
}

Outputs OneHotRule(const NodeView& node) {
  // (indices, depth, values) -> indices' dims with `depth` inserted at `axis`.
  const ir::Shape& indices = node.shape(0);
  const ir::DType dtype = node.dtype(2);
  std::optional<int64_t> rank = Rank(indices);
  if (!rank) return {Unranked(dtype)};
  std::optional<int64_t> axis = NormalizeAxis(node.GetInt("axis", -1), *rank + 1);
  if (!axis) return {Unranked(dtype)};
  std::vector<ir::Dim> dims = indices.dims();
  dims.insert(dims.begin() + *axis, KnownDim(node.scalar(1)));
  return {WithDims(dtype, std::move(dims))};
}

Outputs ResizeRule(const NodeView& node) {
  // Resize (opset 11+: X, roi, scales, sizes): only `sizes` can be resolved,
  // since the IR keeps no float contents (scales); opset 18 adds `axes` and
  // keep_aspect_ratio_policy. Upsample-7 has float `scales` as an attribute:
  // out = floor(in * scale).
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  std::optional<int64_t> rank = Rank(in);
  if (!rank) return {Unranked(dtype)};
  std::vector<ir::Dim> dims = in.dims();
  if (node.kind() == K::kUpsample) {
    const ir::Attribute* scales = node.node().FindAttribute("scales");
    if (scales == nullptr || scales->floats.size() != in.rank()) {
      return {WithDims(dtype, std::vector<ir::Dim>(in.rank()))};
    }
    for (size_t i = 0; i < in.rank(); ++i) {
      const double scaled = std::floor(static_cast<double>(in.dim(i).value) * scales->floats[i]);
      const bool ok = in.dim(i).known() && scaled >= 0 && scaled < 9.0e18;
      dims[i] = ok ? KnownDim(static_cast<int64_t>(scaled)) : UnknownDim();
    }
    return {WithDims(dtype, std::move(dims))};
  }
  std::vector<int64_t> axes = node.GetInts("axes");
  if (axes.empty()) {
    for (int64_t i = 0; i < *rank; ++i) axes.push_back(i);
  }
  std::optional<std::vector<int64_t>> normalized = NormalizeAxes(axes, *rank);
  if (!normalized) return {Unranked(dtype)};
  std::optional<absl::Span<const int64_t>> sizes =
      node.opset() >= 11 && node.has_input(3) ? node.ints(3) : std::nullopt;
  if (!sizes || sizes->size() != normalized->size()) {
    for (int64_t a : *normalized) dims[static_cast<size_t>(a)] = UnknownDim();
    return {WithDims(dtype, std::move(dims))};
  }
  const std::string policy = node.GetString("keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch") {
    for (size_t i = 0; i < normalized->size(); ++i) {
      dims[static_cast<size_t>((*normalized)[i])] = KnownDim((*sizes)[i]);
    }
    return {WithDims(dtype, std::move(dims))};
  }
  // not_larger / not_smaller: one scale for all axes, the min (max) of
  // sizes / in; each dim is round(scale * in), rounding half to even as the
  // ONNX reference does.
  std::optional<double> scale;
  for (size_t i = 0; i < normalized->size(); ++i) {
    const ir::Dim& d = in.dim(static_cast<size_t>((*normalized)[i]));
    if (!d.known() || d.value == 0) return {WithDims(dtype, std::vector<ir::Dim>(in.rank()))};
    const double s = static_cast<double>((*sizes)[i]) / static_cast<double>(d.value);
    if (!scale) scale = s;
    scale = policy == "not_larger" ? std::min(*scale, s) : std::max(*scale, s);
  }
  for (int64_t a : *normalized) {
    const double scaled =
        std::nearbyint(*scale * static_cast<double>(dims[static_cast<size_t>(a)].value));
    dims[static_cast<size_t>(a)] =
        scaled >= 0 && scaled < 9.0e18 ? KnownDim(static_cast<int64_t>(scaled)) : UnknownDim();
  }
  return {WithDims(dtype, std::move(dims))};
}

Outputs Col2ImRule(const NodeView& node) {
  // (input [N, C * prod(block_shape), L], image_shape, block_shape) -> [N, C, image_shape...]
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  std::optional<absl::Span<const int64_t>> image = node.ints(1);
  std::optional<absl::Span<const int64_t>> block = node.ints(2);
  if (!in.has_rank() || in.rank() != 3 || !image) return {Unranked(dtype)};
  ir::Dim channels = UnknownDim();
  std::optional<int64_t> block_size = block ? Product(*block) : std::nullopt;
  if (block_size && *block_size > 0 && in.dim(1).known() && in.dim(1).value % *block_size == 0) {
    channels = KnownDim(in.dim(1).value / *block_size);
  }
  std::vector<ir::Dim> dims = {in.dim(0), channels};
  for (int64_t d : *image) dims.push_back(KnownDim(d));
  return {WithDims(dtype, std::move(dims))};
}

// NonZero, NonMaxSuppression, Compress, Unique: how many elements survive
// depends on the data. The ranks and the certain dims are known; the count is
// estimated by its upper bound (every element non-zero or kept, every box
// selected, every element distinct) when the input's size is known — the
// size a placement must plan memory for.
Outputs DataDependentRule(const NodeView& node) {
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  std::optional<int64_t> rank = Rank(in);
  // The upper bound `bound` as a dim with its estimate note, or unknown.
  const bool estimate = node.options().estimate;
  auto bounded = [estimate](std::optional<int64_t> bound, OutputType t, size_t dim,
                            const char* why) {
    if (!estimate || !bound || !t.shape.has_rank() || dim >= t.shape.rank()) return t;
    t.shape.mutable_dims()[dim] = KnownDim(bound);
    t.estimate = absl::StrCat(*bound, " (the upper bound: ", why, ")");
    return t;
  };
  switch (node.kind()) {
    case K::kNonZero:
      return {bounded(in.NumElements(), WithDims(ir::DType::kInt64, {KnownDim(rank), UnknownDim()}),
                      1, "every element non-zero")};
    case K::kNonMaxSuppression: {
      // boxes [B, N, 4], scores [B, C, N], max_output_boxes_per_class.
      const ir::Shape& scores = node.shape(1);
      std::optional<int64_t> per_class =
          node.has_input(2) ? node.scalar(2) : std::optional<int64_t>(0);
      std::optional<int64_t> bound;
      if (scores.IsStatic() && scores.rank() == 3 && per_class && *per_class >= 0) {
        const std::vector<int64_t> d = scores.Values();
        const int64_t per = std::min(*per_class, d[2]);
        bound = Product(std::vector<int64_t>{d[0], d[1], per});
      }
      return {bounded(bound, WithDims(ir::DType::kInt64, {UnknownDim(), ir::Dim{3, ""}}), 0,
                      "every box selected")};
    }
    case K::kCompress: {
      if (!node.HasAttribute("axis")) {
        return {
            bounded(in.NumElements(), WithDims(dtype, {UnknownDim()}), 0, "every element kept")};
      }
      std::optional<int64_t> axis = NormalizeAxis(node.GetInt("axis", 0), rank.value_or(-1));
      if (!axis) return {Unranked(dtype)};
      std::vector<ir::Dim> dims = in.dims();
      const std::optional<int64_t> along = DimValue(dims[static_cast<size_t>(*axis)]);
      dims[static_cast<size_t>(*axis)] = UnknownDim();
      return {bounded(along, WithDims(dtype, std::move(dims)), static_cast<size_t>(*axis),
                      "every slice kept")};
    }
    case K::kUnique: {
      // Y, indices, inverse_indices, counts; inverse_indices has one entry
      // per element (or per slice along `axis`).
      if (!node.HasAttribute("axis")) {
        const std::optional<int64_t> n = in.NumElements();
        const char* why = "every element distinct";
        const OutputType count = bounded(n, WithDims(ir::DType::kInt64, {UnknownDim()}), 0, why);
        return {bounded(n, WithDims(dtype, {UnknownDim()}), 0, why), count,
                WithDims(ir::DType::kInt64, {KnownDim(n)}), count};
      }
      std::optional<int64_t> axis = NormalizeAxis(node.GetInt("axis", 0), rank.value_or(-1));
      const OutputType unknown_count = WithDims(ir::DType::kInt64, {UnknownDim()});
      if (!axis) return {Unranked(dtype), unknown_count, unknown_count, unknown_count};
      std::vector<ir::Dim> dims = in.dims();
      const ir::Dim along = dims[static_cast<size_t>(*axis)];
      dims[static_cast<size_t>(*axis)] = UnknownDim();
      const char* why = "every slice distinct";
      const OutputType count = bounded(DimValue(along), unknown_count, 0, why);
      return {bounded(DimValue(along), WithDims(dtype, std::move(dims)), static_cast<size_t>(*axis),
                      why),
              count, WithDims(ir::DType::kInt64, {along}), count};
    }
    default:
      return {Unranked(dtype)};
  }
}

}  // namespace autopar::shapes::rules
