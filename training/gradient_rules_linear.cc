// Gradient rules of the products (MatMul with batching and broadcasting,
// Gemm) and the convolutions (Conv, ConvTranspose: each is the other's
// adjoint, so dX of one is the other applied to dY, and dW of both is one
// Conv over the batch axis). Formulas: the table in gradient_rules.cc.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "training/gradient_rules_internal.h"

namespace autopar::training::rules {

namespace {

// The permutation swapping the last two axes of a rank-`rank` tensor.
std::vector<int64_t> SwapLastTwo(int64_t rank) {
  std::vector<int64_t> perm;
  for (int64_t a = 0; a < rank; ++a) perm.push_back(a);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return perm;
}

// Spatial axes 2.. of a rank-`rank` tensor.
std::vector<int64_t> SpatialAxes(int64_t rank) {
  std::vector<int64_t> axes;
  for (int64_t a = 2; a < rank; ++a) axes.push_back(a);
  return axes;
}

// The permutation swapping axes 0 and 1 (batch and channels).
std::vector<int64_t> SwapFirstTwo(int64_t rank) {
  std::vector<int64_t> perm = {1, 0};
  for (int64_t a = 2; a < rank; ++a) perm.push_back(a);
  return perm;
}

// The gradient of a convolution's kernel: `input` [N, Ci, ...] is the tensor
// the window slides over (with `win`'s pads, strides and dilations) and
// `grad` [N, Co, ...] the gradient at the window positions, so that
//   dW[co, ci', k] = Σ_{n,o} grad[n, co, o] · input_padded[n, g·Ci/g + ci', o·s + k·d].
// That is a Conv whose batch is ci', whose channels are (group, n) and whose
// kernel is `grad` with n as its channel, strides and dilations swapped:
// one Conv for every group at once (group = `group`). Its spatial size is at
// least the kernel's (the forward's end pads may leave a few more positions,
// sliced off). Returns dW, [Co, Ci/g, kernel...].
std::string KernelGradient(GraphEmitter& e, const std::string& input,
                           const std::vector<int64_t>& in_dims, const std::string& grad,
                           const std::vector<int64_t>& grad_dims, int64_t group,
                           const Window& win) {
  const int64_t rank = static_cast<int64_t>(in_dims.size());
  const int64_t n = in_dims[0], ci = in_dims[1];
  std::vector<int64_t> spatial(in_dims.begin() + 2, in_dims.end());
  std::string batched;  // [Ci/g, g·N, spatial...]
  if (group == 1) {
    batched = e.Transpose(input, SwapFirstTwo(rank));
  } else {
    std::vector<int64_t> split = {n, group, ci / group};
    split.insert(split.end(), spatial.begin(), spatial.end());
    std::vector<int64_t> perm = {2, 1, 0};
    for (int64_t a = 3; a < rank + 1; ++a) perm.push_back(a);
    std::vector<int64_t> merged = {ci / group, group * n};
    merged.insert(merged.end(), spatial.begin(), spatial.end());
    batched = e.Reshape(e.Transpose(e.Reshape(input, split), perm), merged);
  }
  std::string kernel = e.Transpose(grad, SwapFirstTwo(rank));  // [Co, N, out...]
  std::string dw = e.Op("Conv", {batched, kernel},
                        {AttrInt("group", group), AttrInts("strides", win.dilations),
                         AttrInts("dilations", win.strides), AttrInts("pads", win.Pads())});
  // Its spatial size: (in + pads − ((out − 1)·s + 1)) / d + 1 ≥ kernel.
  std::vector<int64_t> ends, axes;
  bool longer = false;
  for (size_t j = 0; j < spatial.size(); ++j) {
    const int64_t out = grad_dims[2 + j];
    const int64_t size =
        (spatial[j] + win.pads_begin[j] + win.pads_end[j] - ((out - 1) * win.strides[j] + 1)) /
            win.dilations[j] +
        1;
    longer = longer || size > win.kernel[j];
    ends.push_back(win.kernel[j]);
    axes.push_back(2 + static_cast<int64_t>(j));
  }
  if (longer) dw = e.Slice(dw, std::vector<int64_t>(ends.size(), 0), ends, axes);
  return e.Transpose(dw, SwapFirstTwo(rank));
}

}  // namespace

absl::Status MatMul(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  std::vector<int64_t> a_dims = n.XDims(0), b_dims = n.XDims(1), y_dims = n.YDims(0);
  // 1-D operands are promoted as numpy does (a vector A is [1, K], a vector B
  // [K, 1]); the gradient is computed in the promoted form and reshaped back.
  std::string a = n.X(0), b = n.X(1), dy = n.dY(0);
  std::vector<int64_t> a2 = a_dims, b2 = b_dims, y2 = y_dims;
  if (a_dims.size() == 1) {
    a2 = {1, a_dims[0]};
    a = e.Reshape(a, a2);
    y2.insert(y2.end() - (b_dims.size() == 1 ? 0 : 1), 1);
  }
  if (b_dims.size() == 1) {
    b2 = {b_dims[0], 1};
    b = e.Reshape(b, b2);
    y2.push_back(1);
  }
  if (y2 != y_dims) dy = e.Reshape(dy, y2);
  const int64_t rank = static_cast<int64_t>(y2.size());
  if (n.Needs(0)) {
    std::string bt = e.Transpose(b, SwapLastTwo(static_cast<int64_t>(b2.size())));
    std::string da = e.Op("MatMul", {dy, bt});
    std::vector<int64_t> da_dims = y2;
    da_dims[rank - 1] = a2.back();
    n.SetGradient(0, e.Reshape(e.SumToShape(da, da_dims, a2), a_dims));
  }
  if (n.Needs(1)) {
    std::string at = e.Transpose(a, SwapLastTwo(static_cast<int64_t>(a2.size())));
    std::string db = e.Op("MatMul", {at, dy});
    std::vector<int64_t> db_dims = y2;
    db_dims[rank - 2] = b2[b2.size() - 2];
    n.SetGradient(1, e.Reshape(e.SumToShape(db, db_dims, b2), b_dims));
  }
  return absl::OkStatus();
}

absl::Status Gemm(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  const float alpha = n.node().GetFloat("alpha", 1.0f);
  const float beta = n.node().GetFloat("beta", 1.0f);
  const bool trans_a = n.node().GetInt("transA", 0) != 0;
  const bool trans_b = n.node().GetInt("transB", 0) != 0;
  const ir::DType t = n.YType(0);
  std::string dy = n.dY(0);
  if (alpha != 1.0f) dy = e.Op("Mul", {dy, e.Scalar(alpha, t)});
  // op(A) = A or Aᵀ. d op(A) = dY·op(B)ᵀ and d op(B) = op(A)ᵀ·dY, written
  // with Gemm's own transpose flags so that no Transpose node is needed.
  if (n.Needs(0)) {
    // transA = 0: dA = dY · op(B)ᵀ;  transA = 1: dA = op(B) · dYᵀ.
    std::string da = trans_a ? e.Op("Gemm", {n.X(1), dy},
                                    {AttrInt("transA", trans_b ? 1 : 0), AttrInt("transB", 1)})
                             : e.Op("Gemm", {dy, n.X(1)}, {AttrInt("transB", trans_b ? 0 : 1)});
    n.SetGradient(0, da);
  }
  if (n.Needs(1)) {
    // transB = 0: dB = op(A)ᵀ · dY;  transB = 1: dB = dYᵀ · op(A).
    std::string db = trans_b ? e.Op("Gemm", {dy, n.X(0)},
                                    {AttrInt("transA", 1), AttrInt("transB", trans_a ? 1 : 0)})
                             : e.Op("Gemm", {n.X(0), dy}, {AttrInt("transA", trans_a ? 0 : 1)});
    n.SetGradient(1, db);
  }
  if (n.HasInput(2) && n.Needs(2)) {
    std::string dc = n.dY(0);
    if (beta != 1.0f) dc = e.Op("Mul", {dc, e.Scalar(beta, t)});
    n.SetGradient(2, e.SumToShape(dc, n.YDims(0), n.XDims(2)));
  }
  return absl::OkStatus();
}

std::vector<int64_t> Window::Pads() const {
  std::vector<int64_t> pads = pads_begin;
  pads.insert(pads.end(), pads_end.begin(), pads_end.end());
  return pads;
}

absl::StatusOr<Window> ResolveWindow(const NodeGradient& n, const std::vector<int64_t>& kernel) {
  const size_t k = kernel.size();
  Window win;
  win.kernel = kernel;
  auto per_axis = [&](const char* name, size_t size,
                      int64_t fill) -> absl::StatusOr<std::vector<int64_t>> {
    std::vector<int64_t> v = n.node().GetInts(name);
    if (v.empty()) return std::vector<int64_t>(size, fill);
    if (v.size() != size) {
      return n.Unsupported(
          absl::StrCat(name, " has ", v.size(), " values for ", k, " spatial axes"));
    }
    return v;
  };
  absl::StatusOr<std::vector<int64_t>> strides = per_axis("strides", k, 1);
  if (!strides.ok()) return strides.status();
  absl::StatusOr<std::vector<int64_t>> dilations = per_axis("dilations", k, 1);
  if (!dilations.ok()) return dilations.status();
  absl::StatusOr<std::vector<int64_t>> pads = per_axis("pads", 2 * k, 0);
  if (!pads.ok()) return pads.status();
  win.strides = *strides;
  win.dilations = *dilations;
  win.pads_begin.assign(pads->begin(), pads->begin() + static_cast<int64_t>(k));
  win.pads_end.assign(pads->begin() + static_cast<int64_t>(k), pads->end());
  const std::string auto_pad = n.node().GetString("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    win.pads_begin.assign(k, 0);
    win.pads_end.assign(k, 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    // The output has ceil(in / stride) positions; the padding that makes it
    // so is split evenly, the odd one at the end (UPPER) or start (LOWER).
    const std::vector<int64_t> x = n.XDims(0), y = n.YDims(0);
    for (size_t j = 0; j < k; ++j) {
      const int64_t total =
          std::max<int64_t>(0, (y[2 + j] - 1) * win.strides[j] + win.Extent(j) - x[2 + j]);
      const int64_t small = total / 2;
      win.pads_begin[j] = auto_pad == "SAME_UPPER" ? small : total - small;
      win.pads_end[j] = total - win.pads_begin[j];
    }
  } else if (auto_pad != "NOTSET") {
    return n.Unsupported(absl::StrCat("auto_pad '", auto_pad, "'"));
  }
  return win;
}

std::string WindowTranspose(GraphEmitter& e, const std::string& at_positions,
                            const std::string& kernel, const Window& win,
                            const std::vector<int64_t>& out_spatial,
                            const std::vector<int64_t>& in_spatial, int64_t group) {
  // ConvTranspose writes (out − 1)·s + extent − begin − end + output_padding
  // positions. Windows that reach past the input (end pads, ceil_mode) are
  // cropped by the end pads; inputs no window reaches (the floor of the
  // output size) are zeros that output_padding adds (always < stride).
  std::vector<int64_t> ends, output_padding;
  bool any_padding = false;
  for (size_t j = 0; j < in_spatial.size(); ++j) {
    const int64_t reach = (out_spatial[j] - 1) * win.strides[j] + win.Extent(j) - win.pads_begin[j];
    ends.push_back(std::max<int64_t>(0, reach - in_spatial[j]));
    output_padding.push_back(std::max<int64_t>(0, in_spatial[j] - reach));
    any_padding = any_padding || output_padding.back() != 0;
  }
  std::vector<int64_t> pads = win.pads_begin;
  pads.insert(pads.end(), ends.begin(), ends.end());
  std::vector<onnx::AttributeProto> attrs = {
      AttrInt("group", group), AttrInts("strides", win.strides),
      AttrInts("dilations", win.dilations), AttrInts("pads", pads)};
  if (any_padding) attrs.push_back(AttrInts("output_padding", output_padding));
  return e.Op("ConvTranspose", {at_positions, kernel}, std::move(attrs));
}

absl::Status Conv(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  const std::vector<int64_t> x_dims = n.XDims(0), w_dims = n.XDims(1), y_dims = n.YDims(0);
  const int64_t rank = static_cast<int64_t>(x_dims.size());
  if (rank < 3) return n.Unsupported("input of rank < 3");
  const int64_t group = n.node().GetInt("group", 1);
  absl::StatusOr<Window> win =
      ResolveWindow(n, std::vector<int64_t>(w_dims.begin() + 2, w_dims.end()));
  if (!win.ok()) return win.status();
  const std::string& dy = n.dY(0);
  if (n.Needs(0)) {
    // The adjoint of the convolution: W read as ConvTranspose's [Cin, Cout/g, k].
    n.SetGradient(
        0,
        WindowTranspose(e, dy, n.X(1), *win, std::vector<int64_t>(y_dims.begin() + 2, y_dims.end()),
                        std::vector<int64_t>(x_dims.begin() + 2, x_dims.end()), group));
  }
  if (n.Needs(1)) n.SetGradient(1, KernelGradient(e, n.X(0), x_dims, dy, y_dims, group, *win));
  if (n.HasInput(2) && n.Needs(2)) {
    std::vector<int64_t> axes = SpatialAxes(rank);
    axes.insert(axes.begin(), 0);
    n.SetGradient(2, e.ReduceSum(dy, axes, /*keep_dims=*/false));
  }
  return absl::OkStatus();
}

absl::Status ConvTranspose(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  const std::vector<int64_t> x_dims = n.XDims(0), w_dims = n.XDims(1), y_dims = n.YDims(0);
  const int64_t rank = static_cast<int64_t>(x_dims.size());
  if (rank < 3) return n.Unsupported("input of rank < 3");
  // The pads output_shape and auto_pad SAME imply are split one way by the
  // ONNX spec and another by some runtimes; only explicit pads are certain.
  if (!n.node().GetInts("output_shape").empty()) {
    return n.Unsupported("output_shape (give pads and output_padding instead)");
  }
  const std::string auto_pad = n.node().GetString("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    return n.Unsupported(absl::StrCat("auto_pad '", auto_pad, "' (give pads instead)"));
  }
  const int64_t group = n.node().GetInt("group", 1);
  absl::StatusOr<Window> win =
      ResolveWindow(n, std::vector<int64_t>(w_dims.begin() + 2, w_dims.end()));
  if (!win.ok()) return win.status();
  const std::string& dy = n.dY(0);
  if (n.Needs(0)) {
    // Its adjoint is the Conv with the same W, pads, strides and dilations;
    // output_padding ≥ stride would leave extra positions, sliced off.
    std::string dx = e.Op("Conv", {dy, n.X(1)},
                          {AttrInt("group", group), AttrInts("strides", win->strides),
                           AttrInts("dilations", win->dilations), AttrInts("pads", win->Pads())});
    std::vector<int64_t> ends, axes;
    bool longer = false;
    for (int64_t j = 0; j + 2 < rank; ++j) {
      const int64_t size =
          (y_dims[2 + j] + win->pads_begin[j] + win->pads_end[j] - win->Extent(j)) /
              win->strides[j] +
          1;
      longer = longer || size > x_dims[2 + j];
      ends.push_back(x_dims[2 + j]);
      axes.push_back(2 + j);
    }
    if (longer) dx = e.Slice(dx, std::vector<int64_t>(ends.size(), 0), ends, axes);
    n.SetGradient(0, dx);
  }
  if (n.Needs(1)) {
    // dW[ci, co', k] = Σ X[n, ci, i] · dY_full[n, g·Cout/g + co', i·s + k·d − pad]:
    // the Conv kernel gradient with dY as the slid-over input and X as the
    // gradient at its positions.
    n.SetGradient(1, KernelGradient(e, dy, y_dims, n.X(0), x_dims, group, *win));
  }
  if (n.HasInput(2) && n.Needs(2)) {
    std::vector<int64_t> axes = SpatialAxes(rank);
    axes.insert(axes.begin(), 0);
    n.SetGradient(2, e.ReduceSum(dy, axes, /*keep_dims=*/false));
  }
  return absl::OkStatus();
}

}  // namespace autopar::training::rules
