// Element-wise formulas and the generic rules (data movement, selection,
// metadata, estimates) the other families build on.
#include <algorithm>
#include <cctype>
#include <string>

#include "costmodel/op_costs_internal.h"

namespace autopar::costmodel::internal {

namespace w = weights;

Work Elementwise(const OpContext& c, int64_t weight, OpClass op_class) {
  Work work;
  work.op_class = op_class;
  work.flops = c.OutputElements() * weight;
  work.estimated = c.OutputEstimated();
  return work;
}

Work Variadic(const OpContext& c, int64_t extra_per_element) {
  int64_t operands = 0;
  for (const TensorInfo& t : c.inputs) operands += t.present ? 1 : 0;
  Work work = Elementwise(c, std::max<int64_t>(operands - 1, 0) + extra_per_element);
  return work;
}

Work DataMovement(const OpContext& c) {
  Work work;
  work.op_class = OpClass::kDataMovement;
  work.rule = CostRule::kDataMovement;
  work.estimated = c.OutputEstimated();
  return work;
}

Work Selection(const OpContext& c) {
  Work work = DataMovement(c);
  Count read = c.out(0).known() ? c.out(0).bytes() : c.in(0).bytes();
  for (size_t i = 1; i < c.inputs.size(); ++i) read += c.in(i).bytes();
  work.bytes_read = read;
  return work;
}

Work Metadata(const OpContext& c) {
  Work work;
  work.op_class = OpClass::kMetadata;
  work.rule = CostRule::kMetadata;
  work.bytes_read = 0;
  if (c.node.kind == ir::OpKind::kConstant) {
    // Folded into the model's weights by every runtime: nothing runs.
    work.bytes_written = 0;
    work.kernels = 0;
  }
  return work;
}

// Note [Views]: Reshape, Flatten, Squeeze, Unsqueeze and Identity (and
// Optional / OptionalGetElement, which wrap or unwrap a value) produce their
// input's data under another shape or type. ONNX Runtime declares their
// output an alias of input 0 (KernelDefBuilder().Alias(0, 0) in its CPU and
// CUDA kernels): the allocation planner gives the output the input's buffer
// and the kernel's copy finds source == destination, so nothing is read or
// written — measured, these nodes take the dispatch overhead only. The output
// still has its full size (output_bytes): it is the same data, and what
// crosses a link when a consumer sits on another device. Runtimes copy when
// they cannot alias (a graph output computed from a graph input or a
// weight); that rare copy is not modelled. Not views: Expand and Tile (they
// materialize the broadcast), Transpose and Slice (strided copies), Dropout
// from opset 12 (its kernel copies).
Work View(const OpContext& c) {
  Work work = Metadata(c);
  work.bytes_written = 0;
  work.estimated = c.OutputEstimated();
  return work;
}

Work Estimate(const OpContext& c, int64_t weight, OpClass op_class) {
  Work work;
  work.op_class = op_class;
  work.flops = c.MaxElements() * weight;
  work.estimated = true;
  return work;
}

int64_t ActivationWeight(std::string_view activation) {
  // Names as FusedConv/FusedGemm ("Relu") and the RNN ops ("Relu", "Tanh",
  // "Sigmoid", "Affine", "LeakyRelu", ...) spell them.
  std::string name(activation);
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (name.empty()) return 0;
  if (name == "relu" || name == "thresholdedrelu") return w::kSimple;
  if (name == "leakyrelu" || name == "affine") return 2;
  if (name == "clip" || name == "hardsigmoid") return w::kHardSigmoid;
  if (name == "tanh") return w::kTanh;
  if (name == "scaledtanh") return w::kTanh + 2;
  if (name == "sigmoid") return w::kSigmoid;
  if (name == "elu") return w::kElu;
  if (name == "softsign") return w::kSoftsign;
  if (name == "softplus") return w::kSoftplus;
  if (name == "hardswish") return w::kHardSwish;
  if (name == "gelu") return w::kGeluErf;
  return w::kSigmoid;  // an activation we do not know: a transcendental one
}

Work Clip(const OpContext& c) {
  // One comparison per bound given (opset 11+: inputs; before: attributes,
  // which always bound both sides).
  int64_t bounds = c.node.opset >= 11 ? (c.in(1).present ? 1 : 0) + (c.in(2).present ? 1 : 0) : 2;
  return Elementwise(c, std::max<int64_t>(bounds, 1));
}

Work Dropout(const OpContext& c) {
  // Inference (no mask output requested): an identity. With the mask: one
  // random number, a comparison and a scale per element.
  if (c.outputs.size() < 2 || !c.out(1).present) return DataMovement(c);
  return Elementwise(c, w::kRandom + 2);
}

Work Gelu(const OpContext& c) {
  return Elementwise(
      c, c.node.GetString("approximate", "none") == "tanh" ? w::kGeluTanh : w::kGeluErf);
}

Work QuantizeLinear(const OpContext& c) { return Elementwise(c, w::kQuantize); }

Work DequantizeLinear(const OpContext& c) { return Elementwise(c, w::kDequantize); }

Work DynamicQuantizeLinear(const OpContext& c) {
  // A min/max pass (2 per element) computes scale and zero point, then
  // quantize. Outputs 1 and 2 are scalars: use the input's size.
  Work work;
  work.op_class = OpClass::kElementwise;
  work.flops = c.in(0).elements * (2 + w::kQuantize);
  work.estimated = !c.in(0).known();
  return work;
}

}  // namespace autopar::costmodel::internal
