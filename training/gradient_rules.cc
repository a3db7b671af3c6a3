#include "training/gradient_rules.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "training/gradient_rules_internal.h"

namespace autopar::training {

using ir::OpKind;

// Note [Gradient rules] in the header says what a rule does. One line per
// operator: the kind, its rule, the inputs that take a gradient, the formula
// (dY: the output's gradient; ∑↓: summed back to the operand's shape).
static constexpr GradientRule kRules[] = {
    // --- element-wise (gradient_rules_elementwise.cc) ---
    {OpKind::kAdd, rules::Add, kAllInputs, "dA = ∑↓dY, dB = ∑↓dY"},
    {OpKind::kSub, rules::Sub, kAllInputs, "dA = ∑↓dY, dB = −∑↓dY"},
    {OpKind::kMul, rules::Mul, kAllInputs, "dA = ∑↓(dY·B), dB = ∑↓(dY·A)"},
    {OpKind::kDiv, rules::Div, kAllInputs, "dA = ∑↓(dY/B), dB = −∑↓(dY·Y/B)"},
    {OpKind::kNeg, rules::Neg, kAllInputs, "dX = −dY"},
    {OpKind::kIdentity, rules::Identity, kAllInputs, "dX = dY"},
    {OpKind::kRelu, rules::Relu, kAllInputs, "dX = dY·[Y > 0]"},
    {OpKind::kSigmoid, rules::Sigmoid, kAllInputs, "dX = dY·Y·(1 − Y)"},
    {OpKind::kTanh, rules::Tanh, kAllInputs, "dX = dY·(1 − Y²)"},
    {OpKind::kExp, rules::Exp, kAllInputs, "dX = dY·Y"},
    {OpKind::kClip, rules::Clip, kAllInputs,
     "dX = dY·[min < X < max], dmin = ∑↓(dY·[X ≤ min]), dmax = ∑↓(dY·[X ≥ max])"},
    {OpKind::kCast, rules::CastBack, kAllInputs, "dX = cast(dY, type(X))"},
    {OpKind::kCastLike, rules::CastBack, Slots({0}), "dX = cast(dY, type(X))"},
    {OpKind::kPow, rules::Pow, kAllInputs, "dA = ∑↓(dY·B·A^(B−1)), dB = ∑↓(dY·Y·ln A)"},
    {OpKind::kSqrt, rules::Sqrt, kAllInputs, "dX = dY / 2Y"},
    {OpKind::kLog, rules::Log, kAllInputs, "dX = dY / X"},
    {OpKind::kReciprocal, rules::Reciprocal, kAllInputs, "dX = −dY·Y²"},
    {OpKind::kAbs, rules::Abs, kAllInputs, "dX = dY·sign(X)"},
    {OpKind::kLeakyRelu, rules::LeakyRelu, kAllInputs, "dX = dY·(X > 0 ? 1 : α)"},
    {OpKind::kElu, rules::Elu, kAllInputs, "dX = dY·(X > 0 ? 1 : Y + α)"},
    {OpKind::kErf, rules::Erf, kAllInputs, "dX = dY·(2/√π)·exp(−X²)"},
    {OpKind::kSoftplus, rules::Softplus, kAllInputs, "dX = dY·σ(X)"},
    {OpKind::kHardSigmoid, rules::HardSigmoid, kAllInputs, "dX = dY·α·[0 < αX + β < 1]"},
    {OpKind::kHardSwish, rules::HardSwish, kAllInputs,
     "dX = dY·(X < −3 ? 0 : X > 3 ? 1 : X/3 + 1/2)"},
    {OpKind::kGelu, rules::Gelu, kAllInputs,
     "dX = dY·(Φ(X) + X·φ(X)); tanh form: dY·d/dX[X(1 + tanh u)/2]"},
    {OpKind::kSum, rules::SumInputs, kAllInputs, "dXᵢ = ∑↓dY"},
    {OpKind::kMean, rules::MeanInputs, kAllInputs, "dXᵢ = ∑↓dY / n"},
    {OpKind::kMax, rules::MaxMinInputs, kAllInputs, "dXᵢ = ∑↓(dY·[Xᵢ = Y] / #ties)"},
    {OpKind::kMin, rules::MaxMinInputs, kAllInputs, "dXᵢ = ∑↓(dY·[Xᵢ = Y] / #ties)"},
    {OpKind::kDropout, rules::Dropout, Slots({0}), "inference form: dX = dY"},
    // --- end element-wise ---

    // --- layout and data movement (gradient_rules_shape.cc) ---
    {OpKind::kReshape, rules::ReshapeBack, Slots({0}), "dX = reshape(dY, shape(X))"},
    {OpKind::kFlatten, rules::ReshapeBack, Slots({0}), "dX = reshape(dY, shape(X))"},
    {OpKind::kSqueeze, rules::ReshapeBack, Slots({0}), "dX = reshape(dY, shape(X))"},
    {OpKind::kUnsqueeze, rules::ReshapeBack, Slots({0}), "dX = reshape(dY, shape(X))"},
    {OpKind::kTranspose, rules::Transpose, Slots({0}), "dX = transpose(dY, perm⁻¹)"},
    {OpKind::kSlice, rules::Slice, Slots({0}), "dX = zeros(X) with dY at the sliced elements"},
    {OpKind::kConcat, rules::Concat, kAllInputs, "dXᵢ = dY[offsetᵢ : offsetᵢ + sizeᵢ] on axis"},
    {OpKind::kSplit, rules::Split, Slots({0}), "dX = concat(dYᵢ or zeros, axis)"},
    {OpKind::kGather, rules::Gather, Slots({0}),
     "dData = onehot(indices)ᵀ·dY on axis (scatter-add; repeats summed)"},
    {OpKind::kPad, rules::Pad, Slots({0, 2}),
     "constant mode: dX = dY[X's part] (zeros where cropped), dvalue = ∑dY − ∑dY[X's part]"},
    {OpKind::kWhere, rules::Where, Slots({1, 2}), "dA = ∑↓(C ? dY : 0), dB = ∑↓(C ? 0 : dY)"},
    {OpKind::kExpand, rules::Expand, Slots({0}), "dX = ∑↓dY"},
    {OpKind::kTile, rules::Tile, Slots({0}), "dX = ∑ over the repeats of dY"},
    // --- end layout and data movement ---

    // --- products and convolutions (gradient_rules_linear.cc) ---
    {OpKind::kMatMul, rules::MatMul, kAllInputs, "dA = ∑↓(dY·Bᵀ), dB = ∑↓(Aᵀ·dY)"},
    {OpKind::kGemm, rules::Gemm, kAllInputs,
     "Y = α·op(A)·op(B) + β·C: dop(A) = α·dY·op(B)ᵀ, dop(B) = α·op(A)ᵀ·dY, dC = β·∑↓dY"},
    {OpKind::kConv, rules::Conv, kAllInputs,
     "dX = ConvTranspose(dY, W) (output_padding to X), dW = Conv(Xᵀ, dYᵀ)ᵀ over the batch "
     "(per group; strides ↔ dilations), dB = ∑dY"},
    {OpKind::kConvTranspose, rules::ConvTranspose, kAllInputs,
     "dX = Conv(dY, W), dW = Conv(dYᵀ, Xᵀ)ᵀ over the batch (per group), dB = ∑dY"},
    // --- end products and convolutions ---

    // --- reductions and normalisations (gradient_rules_reduce.cc) ---
    {OpKind::kReduceSum, rules::ReduceSum, Slots({0}), "dX = expand(dY, shape(X))"},
    {OpKind::kReduceMean, rules::ReduceMean, Slots({0}), "dX = expand(dY, shape(X)) / n"},
    {OpKind::kSoftmax, rules::Softmax, kAllInputs, "dX = Y·(dY − ∑ₐ(dY·Y))"},
    {OpKind::kLogSoftmax, rules::LogSoftmax, kAllInputs, "dX = dY − exp(Y)·∑ₐdY"},
    {OpKind::kLayerNormalization, rules::LayerNormalization, kAllInputs,
     "x̂ = (X − μ)·r: dX = r·(g − mean(g) − x̂·mean(g·x̂)), g = dY·S; dS = ∑↓(dY·x̂), dB = ∑↓dY"},
    // --- end reductions and normalisations ---

    // --- pooling and normalisation of feature maps (gradient_rules_cnn.cc) ---
    {OpKind::kMaxPool, rules::MaxPool, Slots({0}),
     "dX = ConvTranspose(dY·onehot(argmax tap), onehot taps): dY to each window's first max"},
    {OpKind::kGlobalMaxPool, rules::GlobalMaxPool, Slots({0}),
     "dX = dY·[i = first argmax of the image]"},
    {OpKind::kAveragePool, rules::AveragePool, Slots({0}),
     "dX = ConvTranspose(dY / count, ones): count = taps in X (or in the padded X)"},
    {OpKind::kGlobalAveragePool, rules::GlobalAveragePool, Slots({0}),
     "dX = expand(dY, shape(X)) / (H·W·…)"},
    {OpKind::kBatchNormalization, rules::BatchNormalization, Slots({0, 1, 2}),
     "frozen mean, var; x̂ = (X − mean)/√(var + ε): dX = dY·scale/√(var + ε), dscale = ∑dY·x̂, "
     "dB = ∑dY"},
    {OpKind::kInstanceNormalization, rules::InstanceNormalization, kAllInputs,
     "dX = (g − mean(g) − x̂·mean(g·x̂))/√(σ² + ε), g = dY·scale; dscale = ∑dY·x̂, dB = ∑dY"},
    // --- end pooling and normalisation of feature maps ---
};

const GradientRule* FindGradientRule(ir::OpKind kind) {
  for (const GradientRule& rule : kRules) {
    if (rule.kind == kind) return &rule;
  }
  return nullptr;
}

absl::Span<const GradientRule> AllGradientRules() { return kRules; }

bool SlotTakesGradient(ir::OpKind kind, int slot) {
  const GradientRule* rule = FindGradientRule(kind);
  if (rule == nullptr) return true;
  return slot < 32 && (rule->differentiable_inputs >> slot) & 1u;
}

// --- NodeGradient --------------------------------------------------------------

NodeGradient::NodeGradient(const ir::Graph& graph, const ir::Node& node, GraphEmitter& emit,
                           std::vector<std::string> output_gradients,
                           std::vector<bool> needs_input_gradient)
    : graph_(graph),
      node_(node),
      emit_(emit),
      output_gradients_(std::move(output_gradients)),
      needs_input_gradient_(std::move(needs_input_gradient)),
      input_gradients_(node.inputs.size()) {}

bool NodeGradient::HasInput(int i) const { return i < num_inputs() && node_.inputs[i].valid(); }

const std::string& NodeGradient::X(int i) const { return graph_.value(node_.inputs[i]).name; }
const std::string& NodeGradient::Y(int i) const { return graph_.value(node_.outputs[i]).name; }

std::vector<int64_t> NodeGradient::XDims(int i) const {
  return graph_.value(node_.inputs[i]).shape.Values();
}
std::vector<int64_t> NodeGradient::YDims(int i) const {
  return graph_.value(node_.outputs[i]).shape.Values();
}
ir::DType NodeGradient::XType(int i) const { return graph_.value(node_.inputs[i]).dtype; }
ir::DType NodeGradient::YType(int i) const { return graph_.value(node_.outputs[i]).dtype; }

const std::optional<std::vector<int64_t>>& NodeGradient::XInts(int i) const {
  return graph_.value(node_.inputs[i]).int_data;
}

std::string NodeGradient::dYOrZeros(int i) {
  if (!output_gradients_[i].empty()) return output_gradients_[i];
  return emit_.Zeros(YDims(i), YType(i));
}

void NodeGradient::SetGradient(int i, std::string gradient) {
  input_gradients_[i] = std::move(gradient);
}

absl::Status NodeGradient::Unsupported(std::string_view what) const {
  return absl::InvalidArgumentError(
      absl::StrCat("node '", node_.name, "' (", node_.op_type, "): ", std::string(what)));
}

}  // namespace autopar::training
