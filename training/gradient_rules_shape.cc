// Gradient rules of the layout and data-movement operators: views that only
// reshape, permutations, slicing, joining, splitting, gathering, padding,
// selecting and broadcasting. Formulas: the table in gradient_rules.cc.
#include <algorithm>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "training/gradient_rules_internal.h"

namespace autopar::training::rules {

absl::Status ReshapeBack(NodeGradient& n) {
  n.SetGradient(0, n.emit().Reshape(n.dY(0), n.XDims(0)));
  return absl::OkStatus();
}

absl::Status Transpose(NodeGradient& n) {
  std::vector<int64_t> perm = n.node().GetInts("perm");
  const int64_t rank = n.XRank(0);
  if (perm.empty()) {  // default: reverse the axes
    for (int64_t a = rank - 1; a >= 0; --a) perm.push_back(a);
  }
  std::vector<int64_t> inverse(perm.size());
  for (size_t a = 0; a < perm.size(); ++a) inverse[perm[a]] = static_cast<int64_t>(a);
  n.SetGradient(0, n.emit().Transpose(n.dY(0), inverse));
  return absl::OkStatus();
}

namespace {

// A constant integer input of `n` (axes, starts, pads), or an error naming it.
absl::StatusOr<std::vector<int64_t>> ConstantInts(NodeGradient& n, int i, std::string_view what) {
  if (!n.XInts(i).has_value()) {
    return n.Unsupported(absl::StrCat(std::string(what), " are not a constant"));
  }
  return *n.XInts(i);
}

// `axis` made non-negative for a rank-`rank` tensor.
int64_t NormalizeAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

}  // namespace

absl::Status Slice(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  const std::vector<int64_t> x_dims = n.XDims(0);
  const int64_t rank = static_cast<int64_t>(x_dims.size());
  // Opset < 10 carries starts/ends/axes as attributes; later ones as inputs,
  // with optional axes and steps.
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.HasInput(1)) {
    absl::StatusOr<std::vector<int64_t>> s = ConstantInts(n, 1, "starts");
    if (!s.ok()) return s.status();
    starts = *s;
    absl::StatusOr<std::vector<int64_t>> t = ConstantInts(n, 2, "ends");
    if (!t.ok()) return t.status();
    ends = *t;
    if (n.HasInput(3)) {
      absl::StatusOr<std::vector<int64_t>> a = ConstantInts(n, 3, "axes");
      if (!a.ok()) return a.status();
      axes = *a;
    }
    if (n.HasInput(4)) {
      absl::StatusOr<std::vector<int64_t>> st = ConstantInts(n, 4, "steps");
      if (!st.ok()) return st.status();
      steps = *st;
    }
  } else {
    starts = n.node().GetInts("starts");
    ends = n.node().GetInts("ends");
    axes = n.node().GetInts("axes");
  }
  if (axes.empty()) {
    for (int64_t a = 0; a < static_cast<int64_t>(starts.size()); ++a) axes.push_back(a);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return n.Unsupported("starts, ends, axes and steps differ in length");
  }

  // Per axis, the elements the slice takes are lowest, lowest + |step|, ...
  // (count of them); numpy's clamping rules, as ONNX defines them.
  std::vector<int64_t> lowest(rank, 0), stride(rank, 1), count = x_dims;
  std::vector<bool> reversed(rank, false);
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t a = NormalizeAxis(axes[k], rank);
    if (a < 0 || a >= rank) return n.Unsupported("an axis is out of range");
    const int64_t d = x_dims[a], step = steps[k];
    if (step == 0) return n.Unsupported("a step is 0");
    int64_t start = starts[k], end = ends[k];
    if (start < 0) start += d;
    if (end < 0) end += d;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, d);
      end = std::clamp<int64_t>(end, 0, d);
      count[a] = end > start ? (end - start + step - 1) / step : 0;
      lowest[a] = start;
    } else {
      start = std::clamp<int64_t>(start, 0, d - 1);
      end = std::clamp<int64_t>(end, -1, d - 1);
      count[a] = start > end ? (start - end - step - 1) / -step : 0;
      lowest[a] = start + (count[a] - 1) * step;
      reversed[a] = true;
    }
    stride[a] = step > 0 ? step : -step;
  }
  if (count != n.YDims(0)) {
    return n.Unsupported("the slice's computed shape differs from its output's");
  }
  for (int64_t c : count) {
    if (c == 0) {  // an empty slice: nothing flows back
      n.SetGradient(0, e.Zeros(x_dims, n.XType(0)));
      return absl::OkStatus();
    }
  }

  std::string g = n.dY(0);
  // Negative steps: reverse dY along those axes, so it runs in X's order.
  std::vector<int64_t> rev_axes;
  for (int64_t a = 0; a < rank; ++a) {
    if (reversed[a] && count[a] > 1) rev_axes.push_back(a);
  }
  if (!rev_axes.empty()) {
    const int64_t kMin = std::numeric_limits<int64_t>::min();
    g = e.Slice(g, std::vector<int64_t>(rev_axes.size(), -1),
                std::vector<int64_t>(rev_axes.size(), kMin), rev_axes,
                std::vector<int64_t>(rev_axes.size(), -1));
  }
  // Steps beyond 1: interleave zeros. Each strided axis of length c becomes
  // [c, 1], is padded to [c, s] and merged to c·s, then cut to (c−1)·s + 1.
  std::vector<int64_t> split_dims, pads_begin, pads_end, merged, cut_axes, cut_ends;
  bool strided = false;
  for (int64_t a = 0; a < rank; ++a) {
    split_dims.push_back(count[a]);
    pads_begin.push_back(0);
    pads_end.push_back(0);
    if (stride[a] > 1 && count[a] > 1) {
      strided = true;
      split_dims.push_back(1);
      pads_begin.push_back(0);
      pads_end.push_back(stride[a] - 1);
      merged.push_back(count[a] * stride[a]);
      cut_axes.push_back(a);
      cut_ends.push_back((count[a] - 1) * stride[a] + 1);
    } else {
      merged.push_back(count[a]);
    }
  }
  std::vector<int64_t> spread = count;  // the extent covered in X, per axis
  if (strided) {
    g = e.Reshape(g, split_dims);
    std::vector<int64_t> pads = pads_begin;
    pads.insert(pads.end(), pads_end.begin(), pads_end.end());
    g = e.PadZeros(g, pads);
    g = e.Reshape(g, merged);
    g = e.Slice(g, std::vector<int64_t>(cut_axes.size(), 0), cut_ends, cut_axes);
    for (size_t k = 0; k < cut_axes.size(); ++k) spread[cut_axes[k]] = cut_ends[k];
  }
  // Zeros around the slice's extent.
  std::vector<int64_t> pads(2 * rank, 0);
  bool any_pad = false;
  for (int64_t a = 0; a < rank; ++a) {
    pads[a] = lowest[a];
    pads[rank + a] = x_dims[a] - lowest[a] - spread[a];
    any_pad = any_pad || pads[a] != 0 || pads[rank + a] != 0;
  }
  if (any_pad) g = e.PadZeros(g, pads);
  n.SetGradient(0, g);
  return absl::OkStatus();
}

absl::Status Concat(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  const int64_t rank = n.XRank(0);
  const int64_t axis = NormalizeAxis(n.node().GetInt("axis", 0), rank);
  int64_t offset = 0;
  for (int i = 0; i < n.num_inputs(); ++i) {
    const int64_t size = n.XDims(i)[axis];
    if (n.Needs(i)) n.SetGradient(i, e.Slice(n.dY(0), {offset}, {offset + size}, {axis}));
    offset += size;
  }
  return absl::OkStatus();
}

absl::Status Split(NodeGradient& n) {
  // The sizes (attribute before opset 13, input after, or equal parts) are
  // the outputs' extents along the axis; outputs without a gradient give
  // zeros of their shape.
  const int64_t axis = NormalizeAxis(n.node().GetInt("axis", 0), n.XRank(0));
  std::vector<std::string> parts;
  for (int i = 0; i < n.num_outputs(); ++i) parts.push_back(n.dYOrZeros(i));
  n.SetGradient(
      0, parts.size() == 1 ? parts.front() : n.emit().Op("Concat", parts, {AttrInt("axis", axis)}));
  return absl::OkStatus();
}

absl::Status Gather(NodeGradient& n) {
  // Scatter-add as a product with a one-hot matrix: with data viewed as
  // [P, V, Q] (V the gathered axis) and dY as [P, N, Q] (N indices),
  // dData = onehotᵀ[V, N] · dY. A product sums the rows of repeated indices,
  // at every opset and deterministically; ScatterND/ScatterElements without
  // reduction (before opset 16) keep one of them instead. The one-hot matrix
  // costs N·V, the same order as a tied output projection's own gradient.
  GraphEmitter& e = n.emit();
  const std::vector<int64_t> x_dims = n.XDims(0);
  const int64_t rank = static_cast<int64_t>(x_dims.size());
  const int64_t axis = NormalizeAxis(n.node().GetInt("axis", 0), rank);
  int64_t p = 1, q = 1, count = 1;
  for (int64_t a = 0; a < axis; ++a) p *= x_dims[a];
  for (int64_t a = axis + 1; a < rank; ++a) q *= x_dims[a];
  for (int64_t d : n.XDims(1)) {
    if (d < 0) return n.Unsupported("the indices have no static shape");
    count *= d;
  }
  const int64_t v = x_dims[axis];
  std::string indices = n.X(1);
  if (n.XType(1) != ir::DType::kInt64) indices = e.Cast(indices, ir::DType::kInt64);
  indices = e.Reshape(indices, {1, count});
  // Negative indices count from the end.
  std::string negative = e.Op("Less", {indices, e.Scalar(0, ir::DType::kInt64)});
  std::string wrapped = e.Op("Add", {indices, e.Scalar(static_cast<double>(v), ir::DType::kInt64)});
  indices = e.Op("Where", {negative, wrapped, indices});
  // onehotᵀ[V, N]: row k is 1 where the index is k.
  std::vector<double> rows(v);
  for (int64_t k = 0; k < v; ++k) rows[k] = static_cast<double>(k);
  std::string range = e.Tensor({v, 1}, rows, ir::DType::kInt64);
  std::string one_hot_t = e.Cast(e.Op("Equal", {range, indices}), n.XType(0));
  std::string dy = e.Reshape(n.dY(0), {p, count, q});
  std::string dx = e.Op("MatMul", {one_hot_t, dy});  // [P, V, Q]
  n.SetGradient(0, e.Reshape(dx, x_dims));
  return absl::OkStatus();
}

absl::Status Pad(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  const std::string mode = n.node().GetString("mode", "constant");
  if (mode != "constant") {
    return n.Unsupported(
        absl::StrCat("Pad mode '", mode, "' has no gradient rule (only 'constant' has)"));
  }
  const std::vector<int64_t> x_dims = n.XDims(0), y_dims = n.YDims(0);
  const int64_t rank = static_cast<int64_t>(x_dims.size());
  // Pads per axis (begins, then ends): the attribute before opset 11, the
  // input after, for the axes input's axes only from opset 18.
  std::vector<int64_t> given;
  std::vector<int64_t> axes;
  if (n.HasInput(1)) {
    absl::StatusOr<std::vector<int64_t>> p = ConstantInts(n, 1, "pads");
    if (!p.ok()) return p.status();
    given = *p;
    if (n.HasInput(3)) {
      absl::StatusOr<std::vector<int64_t>> a = ConstantInts(n, 3, "axes");
      if (!a.ok()) return a.status();
      axes = *a;
    }
  } else {
    given = n.node().GetInts("pads");
  }
  if (axes.empty()) {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  const int64_t k = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(given.size()) != 2 * k) {
    return n.Unsupported("pads do not have two entries per axis");
  }
  std::vector<int64_t> begin(rank, 0), end(rank, 0);
  for (int64_t j = 0; j < k; ++j) {
    const int64_t a = NormalizeAxis(axes[j], rank);
    begin[a] = given[j];
    end[a] = given[k + j];
  }
  // The part of dY over X's own elements: cut the padding (positive pads)
  // and put zeros back where the forward pass cropped X (negative pads).
  std::vector<int64_t> starts, stops, cut_axes, crop(2 * rank, 0);
  bool cropped = false;
  for (int64_t a = 0; a < rank; ++a) {
    const int64_t lo = std::max<int64_t>(begin[a], 0), hi = std::max<int64_t>(end[a], 0);
    if (lo != 0 || hi != 0) {
      starts.push_back(lo);
      stops.push_back(y_dims[a] - hi);
      cut_axes.push_back(a);
    }
    crop[a] = std::max<int64_t>(-begin[a], 0);
    crop[rank + a] = std::max<int64_t>(-end[a], 0);
    cropped = cropped || crop[a] != 0 || crop[rank + a] != 0;
  }
  std::string inner = cut_axes.empty() ? n.dY(0) : e.Slice(n.dY(0), starts, stops, cut_axes);
  if (n.Needs(0)) n.SetGradient(0, cropped ? e.PadZeros(inner, crop) : inner);
  if (n.HasInput(2) && n.Needs(2)) {
    // The constant fills every padded element: its gradient is dY's sum
    // outside X's part.
    std::vector<int64_t> all(rank);
    for (int64_t a = 0; a < rank; ++a) all[a] = a;
    std::string total = e.ReduceSum(n.dY(0), all, /*keep_dims=*/false);
    std::string own = e.ReduceSum(inner, all, /*keep_dims=*/false);
    n.SetGradient(2, e.Reshape(e.Op("Sub", {total, own}), n.XDims(2)));
  }
  return absl::OkStatus();
}

absl::Status Where(NodeGradient& n) {
  // The condition is boolean and takes no gradient; each branch gets dY
  // where it was chosen.
  GraphEmitter& e = n.emit();
  std::string zero = e.Scalar(0, n.YType(0));
  if (n.Needs(1)) {
    std::string g = e.Op("Where", {n.X(0), n.dY(0), zero});
    n.SetGradient(1, e.SumToShape(g, n.YDims(0), n.XDims(1)));
  }
  if (n.Needs(2)) {
    std::string g = e.Op("Where", {n.X(0), zero, n.dY(0)});
    n.SetGradient(2, e.SumToShape(g, n.YDims(0), n.XDims(2)));
  }
  return absl::OkStatus();
}

absl::Status Expand(NodeGradient& n) {
  n.SetGradient(0, n.emit().SumToShape(n.dY(0), n.YDims(0), n.XDims(0)));
  return absl::OkStatus();
}

absl::Status Tile(NodeGradient& n) {
  // Y = X repeated r_a times along each axis a: view dY as [r_0, d_0, r_1,
  // d_1, ...] and sum the repeat axes.
  GraphEmitter& e = n.emit();
  const std::vector<int64_t> x_dims = n.XDims(0), y_dims = n.YDims(0);
  std::vector<int64_t> split, repeat_axes;
  for (size_t a = 0; a < x_dims.size(); ++a) {
    if (x_dims[a] == 0 || y_dims[a] % x_dims[a] != 0) {
      return n.Unsupported("an output dim is not a multiple of the input's");
    }
    const int64_t r = y_dims[a] / x_dims[a];
    if (r != 1) {
      repeat_axes.push_back(static_cast<int64_t>(split.size()));
      split.push_back(r);
    }
    split.push_back(x_dims[a]);
  }
  std::string g = n.dY(0);
  if (!repeat_axes.empty()) {
    g = e.ReduceSum(e.Reshape(g, split), repeat_axes, /*keep_dims=*/false);
  }
  n.SetGradient(0, e.Reshape(g, x_dims));
  return absl::OkStatus();
}

}  // namespace autopar::training::rules
