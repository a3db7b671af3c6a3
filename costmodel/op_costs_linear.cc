// Linear-algebra formulas: convolutions, GEMM, MatMul (batched and
// broadcast), Einsum, determinants, and their quantized and fused forms.
// These are the ops whose multiply-accumulates count as MACs. Output sizes,
// window geometry and Einsum indices come from shapes/dims.h, the rules the
// shape inference uses.
#include <algorithm>
#include <string>

#include "costmodel/op_costs_internal.h"

namespace autopar::costmodel::internal {
namespace {

bool IsPointwise(const ir::Node& node, const std::vector<int64_t>& kernel) {
  for (int64_t k : kernel) {
    if (k != 1) return false;
  }
  for (int64_t s : node.GetInts("strides")) {
    if (s != 1) return false;
  }
  for (int64_t p : node.GetInts("pads")) {
    if (p != 0) return false;
  }
  return true;
}

// The contracted dimension of a MatMul operand.
int64_t ContractedDim(const TensorInfo& a, const TensorInfo& b, bool trans_a, bool trans_b) {
  if (a.known()) {
    if (a.rank() == 1) return a.Dim(0);
    return trans_a ? a.Dim(-2) : a.Dim(-1);
  }
  if (b.known()) {
    if (b.rank() == 1) return b.Dim(0);
    return trans_b ? b.Dim(-1) : b.Dim(-2);
  }
  return -1;
}

}  // namespace

std::optional<std::vector<int64_t>> ConvOutputSpatial(const ir::Node& node, const TensorInfo& x,
                                                      const std::vector<int64_t>& kernel) {
  const size_t n = kernel.size();
  if (!x.known() || x.rank() != static_cast<int64_t>(n) + 2) return std::nullopt;
  std::optional<shapes::Window> window = shapes::ReadWindow(node, n, kernel);
  if (!window) return std::nullopt;
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    ir::Dim d = shapes::WindowOutput(ir::Dim{(*x.dims)[i + 2], ""}, *window, i);
    if (!d.known()) return std::nullopt;
    out[i] = d.value;
  }
  return out;
}

// Note [Convolution MACs]: N × C_out × prod(out_spatial) × (C_in / group) ×
// prod(kernel). Strides, dilations and padding act through the output's
// spatial size; groups through W's second dim (C_in / group). Bias and the
// fused activation/sum are FLOPs per output element, not MACs.
Work Conv(const OpContext& c, const ConvSlots& slots, int64_t per_output) {
  const TensorInfo& x = c.in(slots.x);
  const TensorInfo& weight = c.in(slots.w);
  const TensorInfo& y = c.out(0);
  if (!weight.known() || weight.rank() < 3) return Estimate(c, 2, OpClass::kConv);
  std::vector<int64_t> kernel(weight.dims->begin() + 2, weight.dims->end());
  Count kernel_elements = weight.DimProduct(2, weight.rank());
  int64_t c_out = weight.Dim(0);
  int64_t c_in_per_group = weight.Dim(1);

  // Output positions: N × prod(out_spatial).
  Count positions;
  Count positions_per_image;
  bool estimated = false;
  std::optional<std::vector<int64_t>> spatial = ConvOutputSpatial(c.node, x, kernel);
  if (y.known() && !y.estimated && y.rank() == weight.rank()) {
    positions_per_image = y.DimProduct(2, y.rank());
    positions = positions_per_image * y.Dim(0);
  } else if (spatial) {  // the output's size from the attributes
    positions_per_image = 1;
    for (int64_t d : *spatial) positions_per_image *= d;
    positions = positions_per_image * x.Dim(0);
    estimated = x.estimated;
  } else if (y.known() && y.rank() == weight.rank()) {
    positions_per_image = y.DimProduct(2, y.rank());
    positions = positions_per_image * y.Dim(0);
    estimated = true;
  } else {
    return Estimate(c, 2, OpClass::kConv);
  }

  Work work;
  work.op_class = OpClass::kConv;
  work.estimated = estimated;
  work.macs = positions * c_out * c_in_per_group * kernel_elements;
  Count outputs = positions * c_out;
  int64_t extra = per_output;
  if (slots.bias && c.in(*slots.bias).present) extra += 1;
  if (slots.sum && c.in(*slots.sum).present) extra += 1;
  work.flops = work.macs * 2 + outputs * extra;
  // im2col buffer of one image and group (CPU kernels; GPU libraries use a
  // workspace of the same order), unless the convolution is pointwise.
  if (!IsPointwise(c.node, kernel)) {
    work.workspace_bytes =
        Count(c_in_per_group) * kernel_elements * positions_per_image * ir::DTypeSizeBytes(x.dtype);
  }
  return work;
}

// ConvTranspose: every input element is multiplied into (C_out / group) ×
// prod(kernel) outputs: N × C_in × prod(in_spatial) × W[1] × prod(kernel).
Work ConvTranspose(const OpContext& c) {
  const TensorInfo& x = c.in(0);
  const TensorInfo& weight = c.in(1);
  if (!x.known() || !weight.known() || weight.rank() < 3) return Estimate(c, 2, OpClass::kConv);
  Count kernel_elements = weight.DimProduct(2, weight.rank());
  Work work;
  work.op_class = OpClass::kConv;
  work.macs = x.elements * weight.Dim(1) * kernel_elements;
  work.flops = work.macs * 2;
  if (c.in(2).present) work.flops += c.OutputElements();
  work.estimated = x.estimated || (c.in(2).present && c.OutputEstimated());
  // col2im buffer of one image and group.
  work.workspace_bytes = Count(weight.Dim(1)) * kernel_elements * x.DimProduct(2, x.rank()) *
                         ir::DTypeSizeBytes(x.dtype);
  return work;
}

std::optional<std::vector<int64_t>> MatMulOutputDims(const TensorInfo& a, const TensorInfo& b,
                                                     bool trans_a, bool trans_b) {
  ir::Shape out = shapes::MatMulShape(
      a.shape(), b.shape(),
      {.trans_a = trans_a, .trans_b = trans_b, .conflict = shapes::DimConflict::kLarger});
  if (!out.IsStatic()) return std::nullopt;
  return out.Values();
}

// Note [MatMul MACs]: out_elements × K, which covers batched and broadcast
// MatMul (the output holds batch × M × N elements) and 1-D operands.
Work MatMul(const OpContext& c, const MatMulSlots& slots, int64_t per_output) {
  const TensorInfo& a = c.in(slots.a);
  const TensorInfo& b = c.in(slots.b);
  int64_t k = ContractedDim(a, b, slots.trans_a, slots.trans_b);
  Count outputs;
  bool estimated = false;
  if (c.out(0).known()) {
    outputs = c.out(0).elements;
    estimated = c.out(0).estimated;
  } else if (std::optional<std::vector<int64_t>> dims =
                 MatMulOutputDims(a, b, slots.trans_a, slots.trans_b)) {
    outputs = 1;
    for (int64_t d : *dims) outputs *= d;
    estimated = a.estimated || b.estimated;
  } else {
    return Estimate(c, 2, OpClass::kMatMul);
  }
  if (k < 0) return Estimate(c, 2, OpClass::kMatMul);
  Work work;
  work.op_class = OpClass::kMatMul;
  work.estimated = estimated;
  work.macs = outputs * k;
  int64_t extra = per_output + (slots.bias && c.in(*slots.bias).present ? 1 : 0);
  work.flops = work.macs * 2 + outputs * extra;
  return work;
}

// Gemm: Y = alpha·op(A)·op(B) + beta·C. M × N × K MACs; alpha ≠ 1 costs one
// multiply per output, C one add (two with beta ≠ 1).
Work Gemm(const OpContext& c, const MatMulSlots& slots, int64_t per_output) {
  const TensorInfo& a = c.in(slots.a);
  const TensorInfo& b = c.in(slots.b);
  int64_t m = a.rank() == 2 ? (slots.trans_a ? a.Dim(1) : a.Dim(0)) : c.out(0).Dim(0);
  int64_t k = a.rank() == 2 ? (slots.trans_a ? a.Dim(0) : a.Dim(1))
                            : (b.rank() == 2 ? (slots.trans_b ? b.Dim(1) : b.Dim(0)) : -1);
  int64_t n = b.rank() == 2 ? (slots.trans_b ? b.Dim(0) : b.Dim(1)) : c.out(0).Dim(1);
  if (m < 0 || n < 0 || k < 0) return Estimate(c, 2, OpClass::kMatMul);
  Work work;
  work.op_class = OpClass::kMatMul;
  work.estimated = a.estimated || b.estimated;
  work.macs = Count(m) * n * k;
  int64_t extra = per_output;
  if (c.node.GetFloat("alpha", 1.0f) != 1.0f) extra += 1;
  if (slots.bias && c.in(*slots.bias).present) {
    extra += c.node.GetFloat("beta", 1.0f) != 1.0f ? 2 : 1;
  }
  work.flops = work.macs * 2 + Count(m) * n * extra;
  return work;
}

// com.microsoft FusedMatMul / TransposeMatMul: MatMul with transposed
// operands and a scale. (transBatchA/B permute batch dims, which changes
// neither the output size nor K.)
Work FusedMatMul(const OpContext& c) {
  bool scaled = c.node.GetFloat("alpha", 1.0f) != 1.0f;
  return MatMul(c,
                {.a = 0,
                 .b = 1,
                 .trans_a = c.node.GetInt("transA", 0) != 0,
                 .trans_b = c.node.GetInt("transB", 0) != 0},
                scaled ? 1 : 0);
}

// com.microsoft MatMulNBits: A (float) × B (K × N, 2–8 bit blocks): rows × N ×
// K MACs plus dequantizing the weights once (kDequantize per weight).
Work MatMulNBits(const OpContext& c) {
  int64_t k = c.node.GetInt("K", -1);
  int64_t n = c.node.GetInt("N", -1);
  const TensorInfo& a = c.in(0);
  if (k <= 0 || n <= 0 || !a.known()) return Estimate(c, 2, OpClass::kMatMul);
  Work work;
  work.op_class = OpClass::kMatMul;
  work.estimated = a.estimated;
  Count rows = a.elements / k;
  work.macs = rows * n * k;
  work.flops = work.macs * 2 + Count(n) * k * weights::kDequantize;
  if (c.in(5).present) work.flops += rows * n;
  work.workspace_bytes = Count(n) * k * ir::DTypeSizeBytes(a.dtype);
  return work;
}

// Note [Einsum]: the naive loop nest over every distinct index (ellipsis dims
// broadcast): (operands − 1) multiplies per point, each with an add, so
// (operands − 1) × prod(index sizes) MACs. For two operands that is the exact
// contraction; for more, an upper bound (a runtime may contract pairwise in a
// cheaper order). One operand: a sum (points FLOPs) when indices are reduced,
// else a transposition / diagonal (no arithmetic).
Work Einsum(const OpContext& c) {
  const std::string text = c.node.GetString("equation", "");
  std::optional<shapes::EinsumEquation> equation = shapes::ParseEinsum(text);
  std::vector<ir::Shape> operands;
  for (const TensorInfo& t : c.inputs) {
    if (t.present) operands.push_back(t.shape());
  }
  if (!equation || text.find_first_not_of(' ') == std::string::npos) {
    return Estimate(c, 2, OpClass::kMatMul);
  }
  // Sizes of estimated operands may disagree; the larger counts.
  std::optional<shapes::EinsumIndices> indices =
      shapes::BindEinsumIndices(*equation, operands, shapes::DimConflict::kLarger);
  if (!indices || !indices->ellipsis.IsStatic()) return Estimate(c, 2, OpClass::kMatMul);

  Count points = 1;
  for (const auto& [letter, size] : indices->letters) points *= size.value;
  for (int64_t d : indices->ellipsis.Values()) points *= d;

  Work work;
  work.op_class = OpClass::kMatMul;
  if (operands.size() >= 2) {
    work.macs = points * static_cast<int64_t>(operands.size() - 1);
    work.flops = work.macs * 2;
    return work;
  }
  if (points > c.OutputElements()) {
    work.flops = points;
    work.op_class = OpClass::kReduction;
  } else {
    work.op_class = OpClass::kDataMovement;
  }
  return work;
}

// Det: LU decomposition, M³/3 multiply-adds per matrix.
Work Det(const OpContext& c) {
  const TensorInfo& x = c.in(0);
  if (!x.known() || x.rank() < 2) return Estimate(c, 2, OpClass::kMatMul);
  int64_t m = x.Dim(-1);
  Work work;
  work.op_class = OpClass::kMatMul;
  work.macs = x.DimProduct(0, x.rank() - 2) * m * m * m / 3;
  work.flops = work.macs * 2;
  return work;
}

}  // namespace autopar::costmodel::internal
