// Shape rules of the operators that move data without computing on it:
// Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat, Split, Slice,
// Expand, Tile, Pad and friends. They carry int_data through, so that shape
// arithmetic (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) resolves.
#include <algorithm>
#include <limits>

#include "shapes/shape_rules_internal.h"

namespace autopar::shapes::rules {
namespace {

using K = ir::OpKind;

// Slice `ends` at or above this count as "to the end" even for unknown dims
// (exporters write INT_MAX or INT64_MAX).
constexpr int64_t kSliceToEnd = std::numeric_limits<int32_t>::max();

// The output with input 0's contents when they are known (a pure reshaping op).
OutputType KeepContents(const NodeView& node, OutputType out) {
  if (std::optional<absl::Span<const int64_t>> data = node.ints(0)) {
    out.int_data.emplace(data->begin(), data->end());
  }
  return out;
}

// Whether the dims' product is known up to the same named symbols: returns
// the known part, with `symbols` collecting the names. nullopt for an unnamed
// unknown dim or overflow.
std::optional<int64_t> KnownPart(absl::Span<const ir::Dim> dims,
                                 std::vector<std::string>& symbols) {
  int64_t product = 1;
  for (const ir::Dim& d : dims) {
    if (!d.known()) {
      if (d.symbol.empty()) return std::nullopt;
      symbols.push_back(d.symbol);
      continue;
    }
    std::optional<int64_t> p = ir::CheckedMul(product, d.value);
    if (!p) return std::nullopt;
    product = *p;
  }
  std::sort(symbols.begin(), symbols.end());
  return product;
}

// One Slice along a dim of size `dim`: the elements taken, or nullopt for an
// invalid step. Follows the ONNX spec: negative starts/ends count from the
// end, then clamp to [0, dim] (step > 0) or [0, dim - 1] / [-1, dim - 1]
// (step < 0).
struct SliceRange {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

std::optional<SliceRange> ResolveSlice(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (step == 0 || dim < 0) return std::nullopt;
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  SliceRange r;
  r.step = step;
  if (dim == 0) return r;
  if (step > 0) {
    r.start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    r.count = end > r.start ? *CeilDiv(end - r.start, step) : 0;
  } else {
    r.start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    // -INT64_MIN overflows; INT64_MAX takes the same (at most one) element.
    const int64_t stride =
        step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
    r.count = r.start > end ? *CeilDiv(r.start - end, stride) : 0;
  }
  return r;
}

// Dims of the inputs `inputs` concatenated along `axis`.
ir::Shape ConcatShape(const NodeView& node, const std::vector<size_t>& inputs, int64_t axis_attr) {
  std::optional<int64_t> rank;
  for (size_t i : inputs) {
    if (node.shape(i).has_rank()) rank = Rank(node.shape(i));
  }
  if (!rank) return ir::Shape();
  std::optional<int64_t> axis = NormalizeAxis(axis_attr, *rank);
  if (!axis) return ir::Shape();
  std::vector<ir::Dim> dims(static_cast<size_t>(*rank));
  std::optional<int64_t> total = 0;
  for (size_t i : inputs) {
    const ir::Shape& s = node.shape(i);
    if (!s.has_rank()) {
      total.reset();
      continue;
    }
    if (s.rank() != dims.size()) return ir::Shape();
    for (size_t d = 0; d < dims.size(); ++d) {
      if (static_cast<int64_t>(d) == *axis) continue;
      if (!dims[d].known() && (s.dim(d).known() || dims[d].symbol.empty())) dims[d] = s.dim(d);
    }
    const ir::Dim& along = s.dim(static_cast<size_t>(*axis));
    total = total && along.known() ? CheckedAdd(*total, along.value) : std::nullopt;
  }
  dims[static_cast<size_t>(*axis)] = KnownDim(total);
  return ir::Shape::FromDims(std::move(dims));
}

// The contents of the concatenation, when every input's are known.
std::optional<std::vector<int64_t>> ConcatInts(const NodeView& node,
                                               const std::vector<size_t>& inputs,
                                               const ir::Shape& out, int64_t axis_attr) {
  std::optional<int64_t> axis = NormalizeAxis(axis_attr, Rank(out).value_or(-1));
  if (!out.IsStatic() || !axis) return std::nullopt;
  const absl::Span<const ir::Dim> dims = out.dims();
  std::optional<int64_t> outer = Product(dims.subspan(0, static_cast<size_t>(*axis)));
  std::optional<int64_t> inner = Product(dims.subspan(static_cast<size_t>(*axis) + 1));
  if (!outer || !inner) return std::nullopt;
  std::vector<absl::Span<const int64_t>> data;
  std::vector<int64_t> block;  // elements per outer index, per input
  for (size_t i : inputs) {
    std::optional<absl::Span<const int64_t>> d = node.ints(i);
    const ir::Shape& s = node.shape(i);
    if (!d || !s.IsStatic()) return std::nullopt;
    std::optional<int64_t> b = ir::CheckedMul(s.dim(static_cast<size_t>(*axis)).value, *inner);
    std::optional<int64_t> n = b ? ir::CheckedMul(*b, *outer) : std::nullopt;
    if (!n || *n != static_cast<int64_t>(d->size())) return std::nullopt;
    data.push_back(*d);
    block.push_back(*b);
  }
  std::vector<int64_t> result;
  for (int64_t o = 0; o < *outer; ++o) {
    for (size_t k = 0; k < data.size(); ++k) {
      auto begin = data[k].begin() + o * block[k];
      result.insert(result.end(), begin, begin + block[k]);
    }
  }
  return result;
}

}  // namespace

Outputs ReshapeRule(const NodeView& node) {
  // (data, shape): 0 copies the input dim (unless allowzero), -1 is inferred.
  const ir::DType dtype = node.dtype(0);
  const ir::Shape& in = node.shape(0);
  std::optional<absl::Span<const int64_t>> target = node.ints(1);
  if (!target) {
    std::optional<int64_t> rank = Length1D(node.shape(1));
    if (!rank) return {Unranked(dtype)};
    return {WithDims(dtype, std::vector<ir::Dim>(static_cast<size_t>(*rank)))};
  }
  const bool allow_zero = node.GetInt("allowzero", 0) != 0;
  std::vector<ir::Dim> dims;
  std::optional<size_t> inferred;
  for (size_t i = 0; i < target->size(); ++i) {
    const int64_t t = (*target)[i];
    if (t == -1) {
      if (inferred) return {Unranked(dtype)};
      inferred = i;
      dims.push_back(UnknownDim());
    } else if (t == 0 && !allow_zero) {
      if (!in.has_rank() || i >= in.rank()) return {Unranked(dtype)};
      dims.push_back(in.dim(i));
    } else if (t < 0) {
      return {Unranked(dtype)};
    } else {
      dims.push_back(KnownDim(t));
    }
  }
  if (inferred && in.has_rank()) {
    // total / product of the other dims, when both are known up to the same
    // symbols ([batch, 12, 64] to [batch, -1] gives 768).
    std::vector<ir::Dim> others = dims;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(*inferred));
    std::vector<std::string> in_symbols, out_symbols;
    std::optional<int64_t> total = KnownPart(in.dims(), in_symbols);
    std::optional<int64_t> rest = KnownPart(others, out_symbols);
    if (total && rest && *rest > 0 && in_symbols == out_symbols && *total % *rest == 0) {
      dims[*inferred] = KnownDim(*total / *rest);
    }
  }
  return {KeepContents(node, WithDims(dtype, std::move(dims)))};
}

Outputs FlattenRule(const NodeView& node) {
  // [d0..dn] -> [d0 * .. * d(axis-1), d(axis) * .. * dn]
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  std::optional<int64_t> rank = Rank(in);
  if (!rank) return {Unranked(dtype)};
  const int64_t axis_attr = node.GetInt("axis", 1);
  std::optional<int64_t> axis =
      axis_attr == *rank ? *rank : NormalizeAxis(axis_attr, *rank);  // axis may equal rank
  if (!axis) return {Unranked(dtype)};
  ir::Dim outer{1, ""};
  ir::Dim inner{1, ""};
  for (int64_t i = 0; i < *rank; ++i) {
    ir::Dim& side = i < *axis ? outer : inner;
    side = MulDims(side, in.dim(static_cast<size_t>(i)));
  }
  return {KeepContents(node, WithDims(dtype, {outer, inner}))};
}

Outputs TransposeRule(const NodeView& node) {
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  std::optional<int64_t> rank = Rank(in);
  if (!rank) return {Unranked(dtype)};
  std::vector<int64_t> perm = node.GetInts("perm");
  if (perm.empty()) {
    for (int64_t i = *rank - 1; i >= 0; --i) perm.push_back(i);
  }
  std::optional<std::vector<int64_t>> axes = NormalizeAxes(perm, *rank);
  if (!axes || static_cast<int64_t>(axes->size()) != *rank) return {Unranked(dtype)};
  std::vector<ir::Dim> dims;
  for (int64_t a : *axes) dims.push_back(in.dim(static_cast<size_t>(a)));
  OutputType out = WithDims(dtype, std::move(dims));
  return {*rank <= 1 ? KeepContents(node, std::move(out)) : std::move(out)};
}

Outputs SqueezeRule(const NodeView& node) {
  // axes: attribute before opset 13, input 1 from it; none = every dim of 1.
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  std::optional<int64_t> rank = Rank(in);
  IntList axes = ReadIntList(node, 1, "axes", 13);
  if (!rank || (axes.given && !axes.values)) return {Unranked(dtype)};
  std::vector<bool> removed(static_cast<size_t>(*rank), false);
  if (axes.given) {
    std::optional<std::vector<int64_t>> normalized = NormalizeAxes(*axes.values, *rank);
    if (!normalized) return {Unranked(dtype)};
    for (int64_t a : *normalized) {
      const ir::Dim& d = in.dim(static_cast<size_t>(a));
      if (d.known() && d.value != 1) return {Unranked(dtype)};
      removed[static_cast<size_t>(a)] = true;
    }
  } else {
    for (size_t i = 0; i < in.rank(); ++i) {
      if (!in.dim(i).known()) return {Unranked(dtype)};  // might be 1 or not
      removed[i] = in.dim(i).value == 1;
    }
  }
  std::vector<ir::Dim> dims;
  for (size_t i = 0; i < in.rank(); ++i) {
    if (!removed[i]) dims.push_back(in.dim(i));
  }
  return {KeepContents(node, WithDims(dtype, std::move(dims)))};
}

Outputs UnsqueezeRule(const NodeView& node) {
  // axes (attribute before opset 13, input 1 from it) index the output.
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  std::optional<int64_t> rank = Rank(in);
  IntList axes = ReadIntList(node, 1, "axes", 13);
  if (!rank || !axes.values) return {Unranked(dtype)};
  const int64_t out_rank = *rank + static_cast<int64_t>(axes.values->size());
  std::optional<std::vector<int64_t>> normalized = NormalizeAxes(*axes.values, out_rank);
  if (!normalized) return {Unranked(dtype)};
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : *normalized) inserted[static_cast<size_t>(a)] = true;
  std::vector<ir::Dim> dims;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    dims.push_back(inserted[static_cast<size_t>(i)] ? ir::Dim{1, ""} : in.dim(next++));
  }
  return {KeepContents(node, WithDims(dtype, std::move(dims)))};
}

Outputs ConcatRule(const NodeView& node) {
  // Concat; QLinearConcat (Y_scale, Y_zero_point, then X, X_scale, X_zero_point...).
  std::vector<size_t> inputs;
  ir::DType dtype = node.dtype(0);
  if (node.kind() == K::kMsQLinearConcat) {
    dtype = node.dtype(1);
    for (size_t i = 2; i < node.num_inputs(); i += 3) inputs.push_back(i);
  } else {
    for (size_t i = 0; i < node.num_inputs(); ++i) inputs.push_back(i);
  }
  if (inputs.empty() || !node.HasAttribute("axis")) return {Unranked(dtype)};
  const int64_t axis = node.GetInt("axis", 0);
  OutputType out = WithShape(dtype, ConcatShape(node, inputs, axis));
  out.int_data = ConcatInts(node, inputs, out.shape, axis);
  return {out};
}

Outputs SplitRule(const NodeView& node) {
  // Sizes from `split` (attribute before opset 13, input 1 from it), else
  // num_outputs (opset 18) or the number of outputs: equal parts, the last
  // one smaller when uneven (opset 18; earlier opsets require even parts).
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  const size_t n = node.num_outputs();
  Outputs out(n, Unranked(dtype));
  std::optional<int64_t> rank = Rank(in);
  std::optional<int64_t> axis = NormalizeAxis(node.GetInt("axis", 0), rank.value_or(-1));
  if (!rank || !axis || n == 0) return out;
  const ir::Dim& along = in.dim(static_cast<size_t>(*axis));

  std::optional<std::vector<int64_t>> sizes;
  IntList split = ReadIntList(node, 1, "split", 13);
  if (split.given) {
    if (split.values && split.values->size() == n) sizes = split.values;
  } else if (along.known()) {
    const int64_t parts = node.GetInt("num_outputs", static_cast<int64_t>(n));
    if (parts == static_cast<int64_t>(n)) {
      const int64_t chunk = *CeilDiv(along.value, parts);
      std::optional<int64_t> leading = ir::CheckedMul(chunk, parts - 1);
      if (along.value % parts == 0) {
        sizes = std::vector<int64_t>(n, along.value / parts);
      } else if (node.opset() >= 18 && leading && *leading <= along.value) {
        sizes = std::vector<int64_t>(n, chunk);
        sizes->back() = along.value - *leading;
      }
    }
  }
  // Sizes must be non-negative and add up to the dim.
  if (sizes) {
    std::optional<int64_t> total = 0;
    for (int64_t s : *sizes) total = s >= 0 && total ? CheckedAdd(*total, s) : std::nullopt;
    if (!total || (along.known() && *total != along.value)) sizes.reset();
  }
  std::optional<absl::Span<const int64_t>> data = node.ints(0);
  int64_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    std::vector<ir::Dim> dims = in.dims();
    dims[static_cast<size_t>(*axis)] = sizes ? KnownDim((*sizes)[i]) : UnknownDim();
    out[i] = WithDims(dtype, std::move(dims));
    if (!sizes) continue;
    // Contents of a split 1-D tensor (offset + size <= total: no overflow).
    const int64_t size = (*sizes)[i];
    if (data && *rank == 1 && offset + size <= static_cast<int64_t>(data->size())) {
      out[i].int_data.emplace(data->begin() + offset, data->begin() + offset + size);
    }
    offset += size;
  }
  return out;
}

Outputs SliceRule(const NodeView& node) {
  // (data, starts, ends, axes?, steps?) from opset 10; attributes before.
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  std::optional<int64_t> rank = Rank(in);
  if (!rank) return {Unranked(dtype)};
  IntList starts = ReadIntList(node, 1, "starts", 10);
  IntList ends = ReadIntList(node, 2, "ends", 10);
  IntList axes = ReadIntList(node, 3, "axes", 10);
  IntList steps = node.opset() >= 10 ? ReadIntList(node, 4, "", 10) : IntList{};
  std::vector<ir::Dim> dims = in.dims();
  if (!axes.given) {
    axes.values.emplace();
    for (size_t i = 0; starts.values && i < starts.values->size(); ++i) {
      axes.values->push_back(static_cast<int64_t>(i));
    }
  }
  std::optional<std::vector<int64_t>> normalized;
  if (axes.values && starts.values) normalized = NormalizeAxes(*axes.values, *rank);
  if (!starts.values || !ends.values || !normalized || (steps.given && !steps.values)) {
    // Which dims change is unknown, or by how much.
    if (normalized) {
      for (int64_t a : *normalized) dims[static_cast<size_t>(a)] = UnknownDim();
      return {WithDims(dtype, std::move(dims))};
    }
    return {WithDims(dtype, std::vector<ir::Dim>(dims.size()))};
  }
  const size_t n = normalized->size();
  if (starts.values->size() != n || ends.values->size() != n ||
      (steps.values && steps.values->size() != n)) {
    return {Unranked(dtype)};
  }
  std::optional<SliceRange> only_range;  // for contents of 1-D data
  for (size_t i = 0; i < n; ++i) {
    const size_t a = static_cast<size_t>((*normalized)[i]);
    const int64_t start = (*starts.values)[i];
    const int64_t end = (*ends.values)[i];
    const int64_t step = steps.values ? (*steps.values)[i] : 1;
    if (!in.dim(a).known()) {
      // [0:end-of-dim:1] keeps even an unknown dim.
      const bool whole = start == 0 && end >= kSliceToEnd && step == 1;
      if (!whole) dims[a] = UnknownDim();
      continue;
    }
    std::optional<SliceRange> range = ResolveSlice(in.dim(a).value, start, end, step);
    if (!range) return {Unranked(dtype)};
    dims[a] = KnownDim(range->count);
    if (*rank == 1) only_range = range;
  }
  OutputType out = WithDims(dtype, std::move(dims));
  std::optional<absl::Span<const int64_t>> data = node.ints(0);
  if (data && *rank == 1 && in.IsStatic()) {
    const SliceRange r = only_range.value_or(SliceRange{0, 1, static_cast<int64_t>(data->size())});
    std::vector<int64_t> result;
    for (int64_t k = 0, index = r.start; k < r.count; ++k, index += r.step) {
      if (index < 0 || index >= static_cast<int64_t>(data->size())) return {out};
      result.push_back((*data)[static_cast<size_t>(index)]);
    }
    out.int_data = std::move(result);
  }
  return {out};
}

Outputs ExpandRule(const NodeView& node) {
  // Broadcast of the input with `shape` (bidirectional: 1s in shape keep the
  // input's dim).
  const ir::DType dtype = node.dtype(0);
  ir::Shape target;
  if (std::optional<absl::Span<const int64_t>> shape = node.ints(1)) {
    std::vector<ir::Dim> dims;
    for (int64_t d : *shape) dims.push_back(KnownDim(d));
    target = ir::Shape::FromDims(std::move(dims));
  } else if (std::optional<int64_t> rank = Length1D(node.shape(1))) {
    target = ir::Shape::FromDims(std::vector<ir::Dim>(static_cast<size_t>(*rank)));
  }
  OutputType out = WithShape(dtype, Broadcast({node.shape(0), target}));
  if (std::optional<absl::Span<const int64_t>> data = node.ints(0)) {
    out.int_data = BroadcastInts(*data, node.shape(0), out.shape);
  }
  return {out};
}

Outputs TileRule(const NodeView& node) {
  // out[i] = in[i] * repeats[i]
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  std::optional<absl::Span<const int64_t>> repeats = node.ints(1);
  if (!in.has_rank()) return {Unranked(dtype)};
  if (!repeats) return {WithDims(dtype, std::vector<ir::Dim>(in.rank()))};
  if (repeats->size() != in.rank()) return {Unranked(dtype)};
  std::vector<ir::Dim> dims;
  for (size_t i = 0; i < in.rank(); ++i)
    dims.push_back(MulDims(in.dim(i), KnownDim((*repeats)[i])));
  return {WithDims(dtype, std::move(dims))};
}

Outputs PadRule(const NodeView& node) {
  // out = in + pad_begin + pad_end along `axes` (input 3, opset 18; all axes
  // by default). Pads: attribute `paddings` (opset 1), `pads` (opset 2-10),
  // input 1 from opset 11.
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  std::optional<int64_t> rank = Rank(in);
  if (!rank) return {Unranked(dtype)};
  IntList pads = ReadIntList(node, 1, node.opset() < 2 ? "paddings" : "pads", 11);
  std::optional<std::vector<int64_t>> axes;
  if (node.opset() >= 18 && node.has_input(3)) {
    if (std::optional<absl::Span<const int64_t>> given = node.ints(3)) {
      axes = NormalizeAxes(*given, *rank);
      if (!axes) return {Unranked(dtype)};
    }
  } else {
    axes.emplace();
    for (int64_t i = 0; i < *rank; ++i) axes->push_back(i);
  }
  std::vector<ir::Dim> dims = in.dims();
  if (!axes) return {WithDims(dtype, std::vector<ir::Dim>(dims.size()))};
  const size_t n = axes->size();
  if (!pads.values) {
    for (int64_t a : *axes) dims[static_cast<size_t>(a)] = UnknownDim();
    return {WithDims(dtype, std::move(dims))};
  }
  if (pads.values->size() != 2 * n) return {Unranked(dtype)};
  for (size_t i = 0; i < n; ++i) {
    ir::Dim& d = dims[static_cast<size_t>((*axes)[i])];
    const int64_t begin = (*pads.values)[i];
    const int64_t end = (*pads.values)[i + n];
    if (begin == 0 && end == 0) continue;
    std::optional<int64_t> size = d.known() ? CheckedAdd(d.value, begin) : std::nullopt;
    if (size) size = CheckedAdd(*size, end);
    d = KnownDim(size);
  }
  return {WithDims(dtype, std::move(dims))};
}

Outputs CenterCropPadRule(const NodeView& node) {
  // (input, shape) with optional `axes`: those dims become `shape`.
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  std::optional<int64_t> rank = Rank(in);
  std::optional<absl::Span<const int64_t>> shape = node.ints(1);
  if (!rank) return {Unranked(dtype)};
  std::vector<int64_t> axes = node.GetInts("axes");
  if (axes.empty()) {
    for (int64_t i = 0; i < *rank; ++i) axes.push_back(i);
  }
  std::optional<std::vector<int64_t>> normalized = NormalizeAxes(axes, *rank);
  if (!normalized) return {Unranked(dtype)};
  std::vector<ir::Dim> dims = in.dims();
  if (shape && shape->size() != normalized->size()) return {Unranked(dtype)};
  for (size_t i = 0; i < normalized->size(); ++i) {
    dims[static_cast<size_t>((*normalized)[i])] = shape ? KnownDim((*shape)[i]) : UnknownDim();
  }
  return {WithDims(dtype, std::move(dims))};
}

Outputs DepthToSpaceRule(const NodeView& node) {
  // [N, C, H, W] -> [N, C / b^2, H * b, W * b]
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  const int64_t b = node.GetInt("blocksize", 0);
  std::optional<int64_t> area = ir::CheckedMul(b, b);
  if (!in.has_rank() || in.rank() != 4 || b <= 0 || !area) return {Unranked(dtype)};
  ir::Dim channels = UnknownDim();
  if (in.dim(1).known() && in.dim(1).value % *area == 0)
    channels = KnownDim(in.dim(1).value / *area);
  return {WithDims(dtype, {in.dim(0), channels, MulDims(in.dim(2), KnownDim(b)),
                           MulDims(in.dim(3), KnownDim(b))})};
}

Outputs SpaceToDepthRule(const NodeView& node) {
  // [N, C, H, W] -> [N, C * b^2, H / b, W / b]
  const ir::Shape& in = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  const int64_t b = node.GetInt("blocksize", 0);
  std::optional<int64_t> area = ir::CheckedMul(b, b);
  if (!in.has_rank() || in.rank() != 4 || b <= 0 || !area) return {Unranked(dtype)};
  auto divided = [b](const ir::Dim& d) {
    return d.known() && d.value % b == 0 ? KnownDim(d.value / b) : UnknownDim();
  };
  return {WithDims(dtype, {in.dim(0), MulDims(in.dim(1), KnownDim(*area)), divided(in.dim(2)),
                           divided(in.dim(3))})};
}

}  // namespace autopar::shapes::rules
