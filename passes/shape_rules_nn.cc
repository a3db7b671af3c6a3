// Shape rules of the compute-heavy operators: MatMul and Gemm (with their
// quantized and com.microsoft fused forms), Conv and ConvTranspose, pooling,
// Einsum and Det.
#include <algorithm>
#include <map>

#include "passes/shape_rules_internal.h"

namespace autopar::passes::shape_rules {
namespace {

using K = ir::OpKind;

ir::DType DTypeOr(ir::DType preferred, ir::DType fallback) {
  return preferred != ir::DType::kUndefined ? preferred : fallback;
}

// The output of A x B with numpy matmul semantics: 1-D operands get a dim
// prepended (A) or appended (B) that is removed again; batch dims broadcast.
ir::Shape MatMulShape(const ir::Shape& a_in, const ir::Shape& b_in, bool trans_a, bool trans_b) {
  if (!a_in.has_rank() || !b_in.has_rank() || a_in.rank() == 0 || b_in.rank() == 0) {
    return ir::Shape();
  }
  std::vector<ir::Dim> a = a_in.dims();
  std::vector<ir::Dim> b = b_in.dims();
  const bool a_vector = a.size() == 1;
  const bool b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), ir::Dim{1, ""});
  if (b_vector) b.push_back(ir::Dim{1, ""});
  if (trans_a && !a_vector) std::swap(a[a.size() - 1], a[a.size() - 2]);
  if (trans_b && !b_vector) std::swap(b[b.size() - 1], b[b.size() - 2]);
  const ir::Dim& k_a = a[a.size() - 1];
  const ir::Dim& k_b = b[b.size() - 2];
  if (k_a.known() && k_b.known() && k_a.value != k_b.value) return ir::Shape();
  ir::Shape batch = Broadcast({ir::Shape::FromDims({a.begin(), a.end() - 2}),
                               ir::Shape::FromDims({b.begin(), b.end() - 2})});
  if (!batch.has_rank()) return ir::Shape();
  std::vector<ir::Dim> out = batch.dims();
  if (!a_vector) out.push_back(a[a.size() - 2]);
  if (!b_vector) out.push_back(b[b.size() - 1]);
  return ir::Shape::FromDims(std::move(out));
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

// Convolution and pooling geometry of one node: what the output size of each
// spatial dim depends on.
struct Window {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  // begins, then ends
  std::string auto_pad;
  bool ceil_mode = false;
};

// Reads the window attributes for `spatial` dims; `kernel` comes from the
// kernel_shape attribute or, when that is absent, from `weight_kernel`.
std::optional<Window> ReadWindow(const NodeView& node, size_t spatial,
                                 const std::optional<std::vector<int64_t>>& weight_kernel) {
  Window w;
  w.kernel = node.GetInts("kernel_shape");
  if (w.kernel.empty() && weight_kernel) w.kernel = *weight_kernel;
  std::optional<std::vector<int64_t>> strides = IntsOr(node, "strides", spatial, 1);
  std::optional<std::vector<int64_t>> dilations = IntsOr(node, "dilations", spatial, 1);
  std::optional<std::vector<int64_t>> pads = IntsOr(node, "pads", 2 * spatial, 0);
  if (w.kernel.size() != spatial || !strides || !dilations || !pads) return std::nullopt;
  w.strides = *std::move(strides);
  w.dilations = *std::move(dilations);
  w.pads = *std::move(pads);
  w.auto_pad = node.GetString("auto_pad", "NOTSET");
  w.ceil_mode = node.GetInt("ceil_mode", 0) != 0;
  for (size_t i = 0; i < spatial; ++i) {
    if (w.kernel[i] <= 0 || w.strides[i] <= 0 || w.dilations[i] <= 0) return std::nullopt;
  }
  return w;
}

// (kernel - 1) * dilation + 1
std::optional<int64_t> EffectiveKernel(const Window& w, size_t i) {
  std::optional<int64_t> span = ir::CheckedMul(w.kernel[i] - 1, w.dilations[i]);
  return span ? CheckedAdd(*span, 1) : std::nullopt;
}

// Output size of spatial dim `i` of a convolution or pooling window.
//   SAME_UPPER/SAME_LOWER: ceil(in / stride)
//   NOTSET/VALID (VALID = no padding):
//     floor or ceil((in + pad_begin + pad_end - effective_kernel) / stride) + 1
// With ceil_mode, a last window that would start in the end padding is
// dropped, as PyTorch, ONNX Runtime and the ONNX reference (opset 19+) do.
ir::Dim WindowOutput(const ir::Dim& in, const Window& w, size_t i) {
  if (!in.known()) return UnknownDim();
  const int64_t stride = w.strides[i];
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") {
    return KnownDim(CeilDiv(in.value, stride));
  }
  const bool valid = w.auto_pad == "VALID";
  const int64_t pad_begin = valid ? 0 : w.pads[i];
  const int64_t pad_end = valid ? 0 : w.pads[i + w.kernel.size()];
  std::optional<int64_t> kernel = EffectiveKernel(w, i);
  std::optional<int64_t> padded = CheckedAdd(in.value, pad_begin);
  if (padded) padded = CheckedAdd(*padded, pad_end);
  if (!kernel || !padded || *padded < *kernel) return UnknownDim();
  const int64_t span = *padded - *kernel;
  if (!w.ceil_mode) return KnownDim(*FloorDiv(span, stride) + 1);
  int64_t out = *CeilDiv(span, stride) + 1;
  std::optional<int64_t> last_start = ir::CheckedMul(out - 1, stride);
  std::optional<int64_t> begin_limit = CheckedAdd(in.value, pad_begin);
  if (last_start && begin_limit && *last_start >= *begin_limit) --out;
  return KnownDim(out);
}

// Spatial kernel dims of a weight [M, C/group, k1, ..., kn], when known.
std::optional<std::vector<int64_t>> WeightKernel(const ir::Shape& w, size_t spatial) {
  if (!w.has_rank() || w.rank() != spatial + 2) return std::nullopt;
  std::vector<int64_t> kernel;
  for (size_t i = 2; i < w.rank(); ++i) {
    if (!w.dim(i).known()) return std::nullopt;
    kernel.push_back(w.dim(i).value);
  }
  return kernel;
}

// Output of a windowed op on x [N, C, D1..Dn] with `channels` output channels.
ir::Shape WindowedShape(const NodeView& node, const ir::Shape& x, const ir::Dim& channels,
                        const std::optional<std::vector<int64_t>>& weight_kernel) {
  if (!x.has_rank() || x.rank() < 3) return ir::Shape();
  const size_t spatial = x.rank() - 2;
  std::optional<Window> w = ReadWindow(node, spatial, weight_kernel);
  std::vector<ir::Dim> dims = {x.dim(0), channels};
  for (size_t i = 0; i < spatial; ++i) {
    dims.push_back(w ? WindowOutput(x.dim(2 + i), *w, i) : UnknownDim());
  }
  return ir::Shape::FromDims(std::move(dims));
}

// The letters of one Einsum term and where its ellipsis is (-1: none).
struct EinsumTerm {
  std::string letters;
  int ellipsis_at = -1;
};

std::optional<EinsumTerm> ParseEinsumTerm(std::string_view text) {
  EinsumTerm term;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      if (term.ellipsis_at >= 0 || text.substr(i, 3) != "...") return std::nullopt;
      term.ellipsis_at = static_cast<int>(term.letters.size());
      i += 2;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      term.letters.push_back(c);
    } else {
      return std::nullopt;
    }
  }
  return term;
}

std::vector<std::string_view> SplitOn(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == separator) {
      parts.push_back(text.substr(begin, i - begin));
      begin = i + 1;
    }
  }
  return parts;
}

}  // namespace

Outputs MatMulRule(const NodeView& node) {
  switch (node.kind()) {
    case K::kMatMulInteger:
      return {
          WithShape(ir::DType::kInt32, MatMulShape(node.shape(0), node.shape(1), false, false))};
    case K::kQLinearMatMul:
      // (a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point)
      return {WithShape(DTypeOr(node.dtype(7), node.dtype(0)),
                        MatMulShape(node.shape(0), node.shape(3), false, false))};
    case K::kMsFusedMatMul:
    case K::kMsTransposeMatMul: {
      // transBatchA/B move batch dims next to the matrix dims; not resolved.
      if (node.GetInt("transBatchA", 0) != 0 || node.GetInt("transBatchB", 0) != 0) {
        return {Unranked(node.dtype(0))};
      }
      return {WithShape(node.dtype(0),
                        MatMulShape(node.shape(0), node.shape(1), node.GetInt("transA", 0) != 0,
                                    node.GetInt("transB", 0) != 0))};
    }
    case K::kMsMatMulIntegerToFloat:
      // (A, B, a_scale, b_scale, ...): float of a_scale's type.
      return {WithShape(DTypeOr(node.dtype(2), ir::DType::kFloat),
                        MatMulShape(node.shape(0), node.shape(1), false, false))};
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
      return {WithShape(node.dtype(0), MatMulShape(node.shape(0), node.shape(1), false, false))};
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
  return {WithShape(dtype, WindowedShape(node, x, channels, WeightKernel(w, spatial)))};
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
  std::optional<Window> win = ReadWindow(node, spatial, WeightKernel(w, spatial));
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
  ir::Shape shape = WindowedShape(node, x, channels, std::nullopt);
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
  std::optional<Window> w = ReadWindow(node, spatial, std::nullopt);
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
  std::string equation;
  for (char c : node.GetString("equation", "")) {
    if (c != ' ') equation.push_back(c);
  }
  const size_t arrow = equation.find("->");
  const std::string_view lhs = std::string_view(equation).substr(0, arrow);
  std::vector<std::string_view> terms = SplitOn(lhs, ',');
  if (terms.size() != node.num_inputs()) return {Unranked(dtype)};

  std::map<char, ir::Dim> letter_dims;
  std::map<char, int> letter_uses;
  std::vector<ir::Shape> ellipsis_shapes;
  for (size_t t = 0; t < terms.size(); ++t) {
    std::optional<EinsumTerm> term = ParseEinsumTerm(terms[t]);
    const ir::Shape& shape = node.shape(t);
    if (!term || !shape.has_rank()) return {Unranked(dtype)};
    const size_t letters = term->letters.size();
    if (term->ellipsis_at < 0 ? shape.rank() != letters : shape.rank() < letters) {
      return {Unranked(dtype)};
    }
    const size_t ellipsis_rank = shape.rank() - letters;
    size_t dim = 0;
    for (size_t l = 0; l <= letters; ++l) {
      if (static_cast<int>(l) == term->ellipsis_at) {
        ellipsis_shapes.push_back(ir::Shape::FromDims(
            {shape.dims().begin() + dim, shape.dims().begin() + dim + ellipsis_rank}));
        dim += ellipsis_rank;
      }
      if (l == letters) break;
      const char c = term->letters[l];
      const ir::Dim& d = shape.dim(dim++);
      ++letter_uses[c];
      auto [it, inserted] = letter_dims.try_emplace(c, d);
      if (inserted || d == it->second) continue;
      // The same letter on two dims: broadcast 1 against n, keep a known value.
      ir::Shape merged = Broadcast({ir::Shape::FromDims({it->second}), ir::Shape::FromDims({d})});
      if (!merged.has_rank()) return {Unranked(dtype)};
      it->second = merged.dim(0);
    }
  }
  ir::Shape ellipsis = Broadcast(ellipsis_shapes);
  if (!ellipsis.has_rank()) return {Unranked(dtype)};

  EinsumTerm output;
  if (arrow == std::string::npos) {
    output.ellipsis_at = ellipsis_shapes.empty() ? -1 : 0;
    for (const auto& [c, uses] : letter_uses) {
      if (uses == 1) output.letters.push_back(c);  // std::map: in character order
    }
  } else {
    std::optional<EinsumTerm> parsed =
        ParseEinsumTerm(std::string_view(equation).substr(arrow + 2));
    if (!parsed) return {Unranked(dtype)};
    output = *std::move(parsed);
  }
  std::vector<ir::Dim> dims;
  for (size_t l = 0; l <= output.letters.size(); ++l) {
    if (static_cast<int>(l) == output.ellipsis_at) {
      dims.insert(dims.end(), ellipsis.dims().begin(), ellipsis.dims().end());
    }
    if (l == output.letters.size()) break;
    auto it = letter_dims.find(output.letters[l]);
    if (it == letter_dims.end()) return {Unranked(dtype)};
    dims.push_back(it->second);
  }
  return {WithDims(dtype, std::move(dims))};
}

Outputs DetRule(const NodeView& node) {
  // [*, M, M] -> [*]
  const ir::Shape& x = node.shape(0);
  if (!x.has_rank() || x.rank() < 2) return {Unranked(node.dtype(0))};
  return {WithDims(node.dtype(0), {x.dims().begin(), x.dims().end() - 2})};
}

}  // namespace autopar::passes::shape_rules
