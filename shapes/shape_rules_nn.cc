// Shape rules of the compute-heavy operators: MatMul and Gemm (with their
// quantized and com.microsoft fused forms), Conv and ConvTranspose, pooling,
// Einsum and Det.
#include "shapes/shape_rules_internal.h"

namespace autopar::shapes::rules {
namespace {

using K = ir::OpKind;

ir::DType DTypeOr(ir::DType preferred, ir::DType fallback) {
  return preferred != ir::DType::kUndefined ? preferred : fallback;
}

// The attribute list `name`, or `size` copies of `fallback` when absent;
// nullopt when present with the wrong length.
std::optional<std::vector<int64_t>> IntsOr(const NodeView& node, std::string_view name, size_t size,
                                           int64_t fallback) {
  std::vector<int64_t> values = node.GetInts(name);
  if (values.empty()) return std::vector<int64_t>(size, fallback);
  if (values.size() != size) return std::nullopt;
  return values;
}

}  // namespace

Outputs MatMulRule(const NodeView& node) {
  switch (node.kind()) {
    case K::kMatMulInteger:
      return {WithShape(ir::DType::kInt32, MatMulShape(node.shape(0), node.shape(1)))};
    case K::kQLinearMatMul:
      // (a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point)
      return {WithShape(DTypeOr(node.dtype(7), node.dtype(0)),
                        MatMulShape(node.shape(0), node.shape(3)))};
    case K::kMsFusedMatMul:
    case K::kMsTransposeMatMul: {
      // transBatchA/B move batch dims next to the matrix dims; not resolved.
      if (node.GetInt("transBatchA", 0) != 0 || node.GetInt("transBatchB", 0) != 0) {
        return {Unranked(node.dtype(0))};
      }
      return {WithShape(node.dtype(0), MatMulShape(node.shape(0), node.shape(1),
                                                   {.trans_a = node.GetInt("transA", 0) != 0,
                                                    .trans_b = node.GetInt("transB", 0) != 0}))};
    }
    case K::kMsMatMulIntegerToFloat:
      // (A, B, a_scale, b_scale, ...): float of a_scale's type.
      return {WithShape(DTypeOr(node.dtype(2), ir::DType::kFloat),
                        MatMulShape(node.shape(0), node.shape(1)))};
    case K::kMsMatMulNBits: {
      // A [..., K] x packed B -> [..., N], N an attribute.
      const ir::Shape& a = node.shape(0);
      if (!a.has_rank() || a.rank() == 0 || !node.HasAttribute("N"))
        return {Unranked(node.dtype(0))};
      std::vector<ir::Dim> dims = a.dims();
      dims.back() = KnownDim(node.GetInt("N", -1));
      return {WithDims(node.dtype(0), std::move(dims))};
    }
    default:  // MatMul, DynamicQuantizeMatMul
      return {WithShape(node.dtype(0), MatMulShape(node.shape(0), node.shape(1)))};
  }
}

Outputs GemmRule(const NodeView& node) {
  // Gemm, FusedGemm: (A, B, C); QGemm: (A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp).
  const bool quantized = node.kind() == K::kMsQGemm;
  const ir::Shape& a = node.shape(0);
  const ir::Shape& b = node.shape(quantized ? 3 : 1);
  ir::DType dtype = node.dtype(0);
  if (quantized)
    dtype = node.has_input(7) ? DTypeOr(node.dtype(8), ir::DType::kUint8) : ir::DType::kFloat;
  if (!a.has_rank() || !b.has_rank() || a.rank() != 2 || b.rank() != 2) return {Unranked(dtype)};
  const bool trans_a = node.GetInt("transA", 0) != 0;
  const bool trans_b = node.GetInt("transB", 0) != 0;
  return {WithDims(dtype, {a.dim(trans_a ? 1 : 0), b.dim(trans_b ? 0 : 1)})};
}

Outputs ConvRule(const NodeView& node) {
  // Conv, FusedConv: (X, W, B...); ConvInteger: int32; QLinearConv:
  // (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B).
  const bool qlinear = node.kind() == K::kQLinearConv;
  const ir::Shape& x = node.shape(0);
  const ir::Shape& w = node.shape(qlinear ? 3 : 1);
  ir::DType dtype = node.dtype(0);
  if (node.kind() == K::kConvInteger) dtype = ir::DType::kInt32;
  if (qlinear) dtype = DTypeOr(node.dtype(7), node.dtype(0));
  if (!x.has_rank()) return {Unranked(dtype)};
  const size_t spatial = x.rank() >= 2 ? x.rank() - 2 : 0;
  const ir::Dim channels = w.has_rank() && w.rank() > 0 ? w.dim(0) : UnknownDim();
  return {WithShape(dtype, WindowedShape(node.node(), x, channels, WeightKernel(w, spatial)))};
}

Outputs ConvTransposeRule(const NodeView& node) {
  // X [N, C, D1..Dn], W [C, M/group, k1..kn] -> [N, M, O1..On] with
  //   O = stride * (D - 1) + output_padding + (k - 1) * dilation + 1 - pads
  // or output_shape when given, or D * stride with SAME_* auto_pad.
  const ir::Shape& x = node.shape(0);
  const ir::Shape& w = node.shape(1);
  const ir::DType dtype = node.dtype(0);
  if (!x.has_rank() || x.rank() < 3) return {Unranked(dtype)};
  const size_t spatial = x.rank() - 2;
  ir::Dim channels = UnknownDim();
  if (w.has_rank() && w.rank() == spatial + 2) {
    channels = MulDims(w.dim(1), KnownDim(node.GetInt("group", 1)));
  }
  std::vector<ir::Dim> dims = {x.dim(0), channels};
  const std::vector<int64_t> output_shape = node.GetInts("output_shape");
  if (!output_shape.empty()) {
    if (output_shape.size() != spatial && output_shape.size() != spatial + 2) {
      return {Unranked(dtype)};
    }
    for (size_t i = output_shape.size() - spatial; i < output_shape.size(); ++i) {
      dims.push_back(KnownDim(output_shape[i]));
    }
    return {WithDims(dtype, std::move(dims))};
  }
  std::optional<Window> win = ReadWindow(node.node(), spatial, WeightKernel(w, spatial));
  std::optional<std::vector<int64_t>> output_padding = IntsOr(node, "output_padding", spatial, 0);
  for (size_t i = 0; i < spatial; ++i) {
    const ir::Dim& in = x.dim(2 + i);
    if (!win || !output_padding || !in.known() || in.value == 0) {
      dims.push_back(UnknownDim());
      continue;
    }
    if (win->auto_pad == "SAME_UPPER" || win->auto_pad == "SAME_LOWER") {
      dims.push_back(KnownDim(ir::CheckedMul(in.value, win->strides[i])));
      continue;
    }
    const bool valid = win->auto_pad == "VALID";
    std::optional<int64_t> out = ir::CheckedMul(win->strides[i], in.value - 1);
    std::optional<int64_t> kernel = EffectiveKernel(*win, i);
    if (out) out = CheckedAdd(*out, (*output_padding)[i]);
    if (out && kernel) out = CheckedAdd(*out, *kernel);
    if (out && !valid) out = CheckedSub(*out, win->pads[i]);
    if (out && !valid) out = CheckedSub(*out, win->pads[i + spatial]);
    dims.push_back(KnownDim(kernel ? out : std::nullopt));
  }
  return {WithDims(dtype, std::move(dims))};
}

Outputs PoolRule(const NodeView& node) {
  // MaxPool (Y, Indices int64), AveragePool, LpPool; QLinearAveragePool
  // (x, x_scale, x_zero_point, y_scale, y_zero_point), NCHW only.
  ir::DType dtype = node.dtype(0);
  if (node.kind() == K::kMsQLinearAveragePool) {
    dtype = DTypeOr(node.dtype(4), node.dtype(0));
    if (node.GetInt("channels_last", 0) != 0) return {Unranked(dtype)};
  }
  const ir::Shape& x = node.shape(0);
  const ir::Dim channels = x.has_rank() && x.rank() >= 2 ? x.dim(1) : UnknownDim();
  ir::Shape shape = WindowedShape(node.node(), x, channels, std::nullopt);
  return {WithShape(dtype, shape), WithShape(ir::DType::kInt64, shape)};
}

Outputs GlobalPoolRule(const NodeView& node) {
  // [N, C, D1..Dn] -> [N, C, 1..1]; QLinearGlobalAveragePool may be NHWC.
  const ir::Shape& x = node.shape(0);
  ir::DType dtype = node.dtype(0);
  bool channels_last = false;
  if (node.kind() == K::kMsQLinearGlobalAveragePool) {
    dtype = DTypeOr(node.dtype(4), node.dtype(0));
    channels_last = node.GetInt("channels_last", 0) != 0;
  }
  if (!x.has_rank() || x.rank() < 2) return {Unranked(dtype)};
  std::vector<ir::Dim> dims(x.rank(), ir::Dim{1, ""});
  dims[0] = x.dim(0);
  if (channels_last) {
    dims.back() = x.dims().back();
  } else {
    dims[1] = x.dim(1);
  }
  return {WithDims(dtype, std::move(dims))};
}

Outputs RoiPoolRule(const NodeView& node) {
  // MaxRoiPool (X, rois [R, 5]) pooled_shape; RoiAlign (X, rois [R, 4],
  // batch_indices) output_height/width -> [R, C, h, w].
  const ir::Shape& x = node.shape(0);
  const ir::Shape& rois = node.shape(1);
  const ir::Dim channels = x.has_rank() && x.rank() == 4 ? x.dim(1) : UnknownDim();
  const ir::Dim num_rois = rois.has_rank() && rois.rank() == 2 ? rois.dim(0) : UnknownDim();
  if (node.kind() == K::kMaxRoiPool) {
    const std::vector<int64_t> pooled = node.GetInts("pooled_shape");
    if (pooled.size() != 2) return {Unranked(node.dtype(0))};
    return {
        WithDims(node.dtype(0), {num_rois, channels, KnownDim(pooled[0]), KnownDim(pooled[1])})};
  }
  return {WithDims(node.dtype(0), {num_rois, channels, KnownDim(node.GetInt("output_height", 1)),
                                   KnownDim(node.GetInt("output_width", 1))})};
}

Outputs MaxUnpoolRule(const NodeView& node) {
  // (X, I, output_shape?): output_shape when given, else per spatial dim
  // (D - 1) * stride + kernel - pad_begin - pad_end.
  const ir::Shape& x = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  if (node.has_input(2)) {
    std::optional<absl::Span<const int64_t>> shape = node.ints(2);
    if (shape) {
      std::vector<ir::Dim> dims;
      for (int64_t d : *shape) dims.push_back(KnownDim(d));
      return {WithDims(dtype, std::move(dims))};
    }
    if (std::optional<int64_t> rank = Length1D(node.shape(2))) {
      return {WithDims(dtype, std::vector<ir::Dim>(static_cast<size_t>(*rank)))};
    }
    return {Unranked(dtype)};
  }
  if (!x.has_rank() || x.rank() < 3) return {Unranked(dtype)};
  const size_t spatial = x.rank() - 2;
  std::optional<Window> w = ReadWindow(node.node(), spatial, std::nullopt);
  std::vector<ir::Dim> dims = {x.dim(0), x.dim(1)};
  for (size_t i = 0; i < spatial; ++i) {
    const ir::Dim& in = x.dim(2 + i);
    if (!w || !in.known() || in.value == 0) {
      dims.push_back(UnknownDim());
      continue;
    }
    std::optional<int64_t> out = ir::CheckedMul(in.value - 1, w->strides[i]);
    if (out) out = CheckedAdd(*out, w->kernel[i]);
    if (out) out = CheckedSub(*out, w->pads[i]);
    if (out) out = CheckedSub(*out, w->pads[i + spatial]);
    dims.push_back(KnownDim(out));
  }
  return {WithDims(dtype, std::move(dims))};
}

Outputs EinsumRule(const NodeView& node) {
  // "ij,jk->ik"; "..." broadcasts; without "->" the output is the ellipsis
  // dims followed by the letters used once, in alphabetical order.
  const ir::DType dtype = node.dtype(0);
  std::optional<EinsumEquation> equation = ParseEinsum(node.GetString("equation", ""));
  if (!equation) return {Unranked(dtype)};
  std::vector<ir::Shape> operands;
  for (size_t i = 0; i < node.num_inputs(); ++i) operands.push_back(node.shape(i));
  return {WithShape(dtype, EinsumShape(*equation, operands))};
}

Outputs DetRule(const NodeView& node) {
  // [*, M, M] -> [*]
  const ir::Shape& x = node.shape(0);
  if (!x.has_rank() || x.rank() < 2) return {Unranked(node.dtype(0))};
  return {WithDims(node.dtype(0), {x.dims().begin(), x.dims().end() - 2})};
}

}  // namespace autopar::shapes::rules
