// Gradient rules of pooling and feature-map normalisation: MaxPool,
// GlobalMaxPool, AveragePool, GlobalAveragePool, BatchNormalization (its
// inference form) and InstanceNormalization. The pooling gradients spread dY
// back over each window with a ConvTranspose (WindowTranspose, shared with
// Conv), so overlapping windows, pads, dilations and ceil_mode need no case
// of their own. Formulas: the table in gradient_rules.cc.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "training/gradient_rules_internal.h"

namespace autopar::training::rules {

namespace {

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t d : v) p *= d;
  return p;
}

std::vector<int64_t> Spatial(const std::vector<int64_t>& dims) {
  return std::vector<int64_t>(dims.begin() + 2, dims.end());
}

// [C, 1, ..., 1] for a per-channel vector broadcast over a rank-`rank` tensor
// [N, C, ...].
std::vector<int64_t> ChannelShape(int64_t channels, int64_t rank) {
  std::vector<int64_t> shape(static_cast<size_t>(rank - 1), 1);
  shape[0] = channels;
  return shape;
}

// Axis 0 and the spatial axes: what a per-channel gradient is summed over.
std::vector<int64_t> AllButChannels(int64_t rank) {
  std::vector<int64_t> axes = {0};
  for (int64_t a = 2; a < rank; ++a) axes.push_back(a);
  return axes;
}

// a mod b for non-negative int64 tensors, as a − (a / b)·b (Mod is opset 10+).
std::string ModInt(GraphEmitter& e, const std::string& a, int64_t b) {
  const std::string bs = e.Scalar(static_cast<double>(b), ir::DType::kInt64);
  return e.Op("Sub", {a, e.Op("Mul", {e.Op("Div", {a, bs}), bs})});
}

// The window of a pooling node, from its kernel_shape.
absl::StatusOr<Window> PoolWindow(const NodeGradient& n) {
  const std::vector<int64_t> kernel = n.node().GetInts("kernel_shape");
  if (kernel.size() + 2 != static_cast<size_t>(n.XRank(0))) {
    return n.Unsupported("kernel_shape does not give one size per spatial axis");
  }
  return ResolveWindow(n, kernel);
}

}  // namespace

absl::Status MaxPool(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  if (e.opset() < 8) return n.Unsupported("opset < 8 (MaxPool has no Indices output)");
  absl::StatusOr<Window> win = PoolWindow(n);
  if (!win.ok()) return win.status();
  const std::vector<int64_t> x_dims = n.XDims(0), y_dims = n.YDims(0);
  const std::vector<int64_t> in = Spatial(x_dims), out = Spatial(y_dims);
  const int64_t rank = n.XRank(0), spatial_rank = rank - 2;
  const int64_t nc = x_dims[0] * x_dims[1], taps = Product(win->kernel);
  // The argmax of each window, as MaxPool's Indices give it (the first
  // maximum in the window's row-major order on ties, as torch chooses):
  // recomputed with explicit pads and storage_order 0, whatever the forward
  // node asked for. Indices are flat positions in X; the spatial part is
  // taken mod the image size and turned into the tap k of the window.
  std::vector<onnx::AttributeProto> attrs = {AttrInts("kernel_shape", win->kernel),
                                             AttrInts("strides", win->strides),
                                             AttrInts("pads", win->Pads())};
  if (n.node().GetInt("ceil_mode", 0) != 0) attrs.push_back(AttrInt("ceil_mode", 1));
  if (std::any_of(win->dilations.begin(), win->dilations.end(), [](int64_t d) { return d != 1; })) {
    attrs.push_back(AttrInts("dilations", win->dilations));
  }
  const std::string indices = e.OpN("MaxPool", {n.X(0)}, 2, std::move(attrs), "argmax")[1];
  const std::string flat = ModInt(e, indices, Product(in));
  std::string tap;
  int64_t row = Product(in);
  for (int64_t j = 0; j < spatial_rank; ++j) {
    row /= in[j];
    // coordinate on axis j, minus the window's start o·s − pad, over d.
    std::string coord = e.Op("Div", {flat, e.Scalar(static_cast<double>(row), ir::DType::kInt64)});
    if (j > 0) coord = ModInt(e, coord, in[j]);
    std::vector<double> starts;
    for (int64_t o = 0; o < out[j]; ++o) {
      starts.push_back(static_cast<double>(o * win->strides[j] - win->pads_begin[j]));
    }
    std::vector<int64_t> start_dims(static_cast<size_t>(spatial_rank - j), 1);
    start_dims[0] = out[j];
    std::string k = e.Op("Sub", {coord, e.Tensor(start_dims, starts, ir::DType::kInt64)});
    if (win->dilations[j] != 1) {
      k = e.Op("Div", {k, e.Scalar(static_cast<double>(win->dilations[j]), ir::DType::kInt64)});
    }
    tap = j == 0 ? k
                 : e.Op("Add", {e.Op("Mul", {tap, e.Scalar(static_cast<double>(win->kernel[j]),
                                                           ir::DType::kInt64)}),
                                k});
  }
  // dY routed to its tap: one-hot over the taps [N, C, taps, out...], then
  // each tap's plane spread back by a ConvTranspose whose kernel is that
  // tap's one-hot (the batch and channels folded into one axis).
  std::vector<double> tap_ids;
  for (int64_t t = 0; t < taps; ++t) tap_ids.push_back(static_cast<double>(t));
  std::vector<int64_t> tap_dims(static_cast<size_t>(spatial_rank + 1), 1);
  tap_dims[0] = taps;
  const std::string hot =
      e.Op("Equal", {e.Unsqueeze(tap, {2}), e.Tensor(tap_dims, tap_ids, ir::DType::kInt64)});
  std::string routed = e.Op("Mul", {e.Cast(hot, n.XType(0)), e.Unsqueeze(n.dY(0), {2})});
  std::vector<int64_t> folded = {nc, taps};
  folded.insert(folded.end(), out.begin(), out.end());
  routed = e.Reshape(routed, folded);
  std::vector<int64_t> kernel_dims = {taps, 1};
  kernel_dims.insert(kernel_dims.end(), win->kernel.begin(), win->kernel.end());
  std::vector<double> one_hot(static_cast<size_t>(taps * taps), 0.0);
  for (int64_t t = 0; t < taps; ++t) one_hot[static_cast<size_t>(t * taps + t)] = 1.0;
  const std::string kernel = e.Tensor(kernel_dims, one_hot, n.XType(0));
  n.SetGradient(0, e.Reshape(WindowTranspose(e, routed, kernel, *win, out, in, 1), x_dims));
  return absl::OkStatus();
}

absl::Status GlobalMaxPool(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  const std::vector<int64_t> x_dims = n.XDims(0);
  const int64_t size = Product(Spatial(x_dims));
  // dY goes to the first maximum of each image (ArgMax's first occurrence).
  const std::string flat = e.Reshape(n.X(0), {x_dims[0], x_dims[1], size});
  const std::string argmax = e.Op("ArgMax", {flat}, {AttrInt("axis", 2), AttrInt("keepdims", 1)});
  std::vector<double> positions;
  for (int64_t i = 0; i < size; ++i) positions.push_back(static_cast<double>(i));
  const std::string hot = e.Op("Equal", {argmax, e.Tensor({size}, positions, ir::DType::kInt64)});
  const std::string dy = e.Reshape(n.dY(0), {x_dims[0], x_dims[1], 1});
  n.SetGradient(0, e.Reshape(e.Op("Mul", {e.Cast(hot, n.XType(0)), dy}), x_dims));
  return absl::OkStatus();
}

absl::Status AveragePool(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  absl::StatusOr<Window> win = PoolWindow(n);
  if (!win.ok()) return win.status();
  const std::vector<int64_t> x_dims = n.XDims(0), y_dims = n.YDims(0);
  const std::vector<int64_t> in = Spatial(x_dims), out = Spatial(y_dims);
  const bool include_pad = n.node().GetInt("count_include_pad", 0) != 0;
  // Each window's divisor: the taps inside the input (count_include_pad = 0)
  // or inside the padded input (= 1; a ceil_mode window past the end pads
  // still counts only its taps inside them, as torch and ONNX Runtime do).
  // A box, so the count is the product of the per-axis counts.
  std::vector<std::vector<int64_t>> counts(in.size());
  for (size_t j = 0; j < in.size(); ++j) {
    const int64_t low = include_pad ? -win->pads_begin[j] : 0;
    const int64_t high = include_pad ? in[j] + win->pads_end[j] : in[j];
    for (int64_t o = 0; o < out[j]; ++o) {
      int64_t c = 0;
      for (int64_t k = 0; k < win->kernel[j]; ++k) {
        const int64_t p = o * win->strides[j] + k * win->dilations[j] - win->pads_begin[j];
        c += p >= low && p < high ? 1 : 0;
      }
      counts[j].push_back(c);
    }
  }
  std::vector<double> divisors;
  for (int64_t i = 0; i < Product(out); ++i) {
    int64_t rest = i, count = 1;
    for (size_t j = in.size(); j-- > 0;) {
      count *= counts[j][static_cast<size_t>(rest % out[j])];
      rest /= out[j];
    }
    divisors.push_back(static_cast<double>(std::max<int64_t>(count, 1)));
  }
  std::string scaled = e.Op("Div", {n.dY(0), e.Tensor(out, divisors, n.XType(0))});
  std::vector<int64_t> folded = {x_dims[0] * x_dims[1], 1};
  folded.insert(folded.end(), out.begin(), out.end());
  std::vector<int64_t> kernel_dims = {1, 1};
  kernel_dims.insert(kernel_dims.end(), win->kernel.begin(), win->kernel.end());
  const std::string ones = e.Tensor(
      kernel_dims, std::vector<double>(static_cast<size_t>(Product(win->kernel)), 1.0), n.XType(0));
  n.SetGradient(
      0, e.Reshape(WindowTranspose(e, e.Reshape(scaled, folded), ones, *win, out, in, 1), x_dims));
  return absl::OkStatus();
}

absl::Status GlobalAveragePool(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  const std::vector<int64_t> x_dims = n.XDims(0);
  const double size = static_cast<double>(Product(Spatial(x_dims)));
  n.SetGradient(0, e.Op("Div", {e.Expand(n.dY(0), x_dims), e.Scalar(size, n.XType(0))}));
  return absl::OkStatus();
}

absl::Status BatchNormalization(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  // Training mode normalises by the batch's own statistics (and writes the
  // running ones): a different function, refused rather than differentiated
  // as if frozen.
  if (n.node().GetInt("training_mode", 0) != 0 || n.num_outputs() > 1) {
    return n.Unsupported(
        "training mode (training_mode=1 or the running-statistics outputs); the training step "
        "differentiates the inference form, with mean and variance frozen");
  }
  const std::vector<int64_t> x_dims = n.XDims(0);
  const int64_t rank = n.XRank(0);
  if (rank < 2) return n.Unsupported("input of rank < 2");
  const ir::DType t = n.XType(0);
  const std::vector<int64_t> c_shape = ChannelShape(x_dims[1], rank);
  // inv = 1 / sqrt(var + ε); Y = scale·(X − mean)·inv + B.
  const double eps = n.node().GetFloat("epsilon", 1e-5f);
  const std::string inv = e.Reshape(
      e.Op("Reciprocal", {e.Op("Sqrt", {e.Op("Add", {n.X(4), e.Scalar(eps, t)})})}), c_shape);
  if (n.Needs(0)) {
    n.SetGradient(0, e.Op("Mul", {n.dY(0), e.Op("Mul", {e.Reshape(n.X(1), c_shape), inv})}));
  }
  if (n.Needs(1)) {
    const std::string xhat = e.Op("Mul", {e.Op("Sub", {n.X(0), e.Reshape(n.X(3), c_shape)}), inv});
    n.SetGradient(1, e.ReduceSum(e.Op("Mul", {n.dY(0), xhat}), AllButChannels(rank), false));
  }
  if (n.Needs(2)) n.SetGradient(2, e.ReduceSum(n.dY(0), AllButChannels(rank), false));
  return absl::OkStatus();
}

absl::Status InstanceNormalization(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  const std::vector<int64_t> x_dims = n.XDims(0);
  const int64_t rank = n.XRank(0);
  if (rank < 3) return n.Unsupported("input of rank < 3");
  const ir::DType t = n.XType(0);
  std::vector<int64_t> spatial;
  for (int64_t a = 2; a < rank; ++a) spatial.push_back(a);
  // Per image and channel: x̂ = (X − μ)·inv, inv = 1 / sqrt(σ² + ε).
  const double eps = n.node().GetFloat("epsilon", 1e-5f);
  const std::string centred =
      e.Op("Sub", {n.X(0), e.ReduceMean(n.X(0), spatial, /*keep_dims=*/true)});
  const std::string var =
      e.ReduceMean(e.Op("Mul", {centred, centred}), spatial, /*keep_dims=*/true);
  const std::string inv =
      e.Op("Reciprocal", {e.Op("Sqrt", {e.Op("Add", {var, e.Scalar(eps, t)})})});
  const std::string xhat = e.Op("Mul", {centred, inv});
  if (n.Needs(0)) {
    // dX = inv·(g − mean(g) − x̂·mean(g·x̂)), g = dY·scale, means over space.
    const std::string g = e.Op("Mul", {n.dY(0), e.Reshape(n.X(1), ChannelShape(x_dims[1], rank))});
    const std::string mean_g = e.ReduceMean(g, spatial, true);
    const std::string mean_gx = e.ReduceMean(e.Op("Mul", {g, xhat}), spatial, true);
    const std::string inner = e.Op("Sub", {e.Op("Sub", {g, mean_g}), e.Op("Mul", {xhat, mean_gx})});
    n.SetGradient(0, e.Op("Mul", {inner, inv}));
  }
  if (n.Needs(1)) {
    n.SetGradient(1, e.ReduceSum(e.Op("Mul", {n.dY(0), xhat}), AllButChannels(rank), false));
  }
  if (n.Needs(2)) n.SetGradient(2, e.ReduceSum(n.dY(0), AllButChannels(rank), false));
  return absl::OkStatus();
}

}  // namespace autopar::training::rules
