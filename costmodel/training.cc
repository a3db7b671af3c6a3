// The training step's factors (Notes in training.h): which values need a
// gradient, what each node's backward costs and keeps, and what parameters
// hold. The tables are the switches below; training.h has them in prose.
#include "costmodel/training.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "costmodel/op_costs_internal.h"

namespace autopar::costmodel {
namespace {

using K = ir::OpKind;

constexpr std::array<std::string_view, 2> kStepModeNames = {"inference", "training"};
constexpr std::array<std::string_view, 4> kOptimizerNames = {"sgd", "momentum", "adam", "adamw"};

bool IsFloating(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat:
    case ir::DType::kFloat16:
    case ir::DType::kDouble:
    case ir::DType::kBFloat16:
    case ir::DType::kFloat8E4M3FN:
    case ir::DType::kFloat8E4M3FNUZ:
    case ir::DType::kFloat8E5M2:
    case ir::DType::kFloat8E5M2FNUZ:
      return true;
    default:
      return false;
  }
}

// Ops whose outputs carry no gradient whatever their inputs: tests, indices,
// shapes, random numbers, and the piecewise-constant functions whose
// gradient is zero.
bool Differentiable(K kind) {
  switch (kind) {
    case K::kAnd:
    case K::kArgMax:
    case K::kArgMin:
    case K::kBernoulli:
    case K::kCeil:
    case K::kConstant:
    case K::kConstantOfShape:
    case K::kEqual:
    case K::kEyeLike:
    case K::kFloor:
    case K::kGreater:
    case K::kGreaterOrEqual:
    case K::kIsInf:
    case K::kIsNaN:
    case K::kLess:
    case K::kLessOrEqual:
    case K::kMultinomial:
    case K::kNonMaxSuppression:
    case K::kNonZero:
    case K::kNot:
    case K::kOr:
    case K::kRandomNormal:
    case K::kRandomNormalLike:
    case K::kRandomUniform:
    case K::kRandomUniformLike:
    case K::kRange:
    case K::kRound:
    case K::kShape:
    case K::kSign:
    case K::kSize:
    case K::kUnique:
    case K::kXor:
      return false;
    default:
      return true;
  }
}

// Whether input `slot` of `node` receives a gradient (given that it needs
// one): the floating-point inputs that are statistics, coordinates or bounds
// do not.
bool TakesGradient(const ir::Node& node, size_t slot) {
  switch (node.kind) {
    case K::kBatchNormalization:  // X, scale, B; not the running mean / var
      return slot < 3;
    case K::kClip:     // min, max
    case K::kDropout:  // ratio, training_mode
    case K::kPad:      // pads, constant_value, axes
    case K::kResize:   // roi, scales, sizes
    case K::kUpsample:
      return slot == 0;
    default:
      return true;
  }
}

// What a node's backward reads (Note [Saved activations]).
enum class Saves : uint8_t {
  kNothing,
  kInputs,
  kOutputs,
  kInputsAndOutputs,
  kPartners,  // each operand of a product whose partner needs a gradient
  kIndices,   // input 1
  kMask,      // output 1
};

Saves SavedBy(const ir::Node& node, OpClass op_class) {
  switch (node.kind) {
    case K::kConv:
    case K::kConvTranspose:
    case K::kEinsum:
    case K::kGemm:
    case K::kMatMul:
    case K::kMsFusedConv:
    case K::kMsFusedGemm:
    case K::kMsFusedMatMul:
    case K::kMsTransposeMatMul:
      return Saves::kPartners;
    case K::kGRU:
    case K::kLSTM:
    case K::kRNN:
    case K::kAttention:
    case K::kMsAttention:
    case K::kMsGroupQueryAttention:
    case K::kMsMultiHeadAttention:
      return Saves::kInputsAndOutputs;
    case K::kExp:
    case K::kLogSoftmax:
    case K::kMsBiasSoftmax:
    case K::kReciprocal:
    case K::kRelu:
    case K::kSigmoid:
    case K::kSoftmax:
    case K::kSqrt:
    case K::kTanh:
      return Saves::kOutputs;
    case K::kAdd:
    case K::kAveragePool:
    case K::kCast:
    case K::kCastLike:
    case K::kCumSum:
    case K::kGlobalAveragePool:
    case K::kMean:
    case K::kMsBiasAdd:
    case K::kNeg:
    case K::kReduceMean:
    case K::kReduceSum:
    case K::kSub:
    case K::kSum:
      return Saves::kNothing;
    case K::kGlobalLpPool:
    case K::kGlobalMaxPool:
    case K::kLpPool:
    case K::kMaxPool:
    case K::kReduceL2:
    case K::kReduceLogSum:
    case K::kReduceLogSumExp:
    case K::kReduceMax:
    case K::kReduceMin:
    case K::kReduceProd:
      return Saves::kInputsAndOutputs;
    case K::kGather:
    case K::kGatherElements:
    case K::kGatherND:
      return Saves::kIndices;
    case K::kDropout:
      return Saves::kMask;
    default:
      break;
  }
  switch (op_class) {
    case OpClass::kDataMovement:
    case OpClass::kMetadata:
      return Saves::kNothing;
    default:  // normalizations and element-wise math: their data inputs
      return Saves::kInputs;
  }
}

// Backward FLOPs and bytes per forward FLOP and byte (Note [Training
// factors]); the GEMM-like classes are scaled by their operand count instead.
struct Factors {
  double flops = 1;
  double bytes = 1;
};

Factors BackwardFactors(K kind, OpClass op_class) {
  if (kind == K::kSoftmax || kind == K::kLogSoftmax || kind == K::kMsBiasSoftmax) {
    return {0.5, 1.5};  // dX = Y ⊙ (dY − Σ dY ⊙ Y): no exponentials
  }
  switch (op_class) {
    case OpClass::kConv:
    case OpClass::kMatMul:
    case OpClass::kRecurrent:
      return {1, 1};  // per operand that needs a gradient
    case OpClass::kNormalization:
      return {2, 1.5};  // gradients through the mean and the variance
    case OpClass::kPooling:
    case OpClass::kElementwise:
      return {1, 1.5};  // reads dY and what it saved, writes dX
    case OpClass::kReduction:
    case OpClass::kOther:
      return {1, 1};
    case OpClass::kDataMovement:
      return {0, 1};  // the gradient moved back
    case OpClass::kMetadata:
      return {0, 0};  // a view of the gradient
  }
  return {1, 1};
}

bool GemmLike(OpClass op_class) {
  return op_class == OpClass::kConv || op_class == OpClass::kMatMul ||
         op_class == OpClass::kRecurrent;
}

// `value` × `factor`, saturating like Count.
int64_t Scale(int64_t value, double factor) {
  if (value <= 0 || factor <= 0) return 0;
  if (value == kSaturatedCount) return kSaturatedCount;
  double scaled = static_cast<double>(value) * factor;
  if (scaled >= 9.2e18) return kSaturatedCount;
  return std::llround(scaled);
}

// Optimizer state and master copy per element (Note [Parameter state]).
int64_t StateBytesPerElement(ir::DType dtype, Optimizer optimizer) {
  int64_t moments = optimizer == Optimizer::kAdam || optimizer == Optimizer::kAdamW ? 2
                    : optimizer == Optimizer::kMomentum                             ? 1
                                                                                    : 0;
  int64_t master = ir::DTypeSizeBytes(dtype) < 4 ? 1 : 0;
  return 4 * (moments + master);
}

int64_t UpdateFlopsPerElement(Optimizer optimizer) {
  namespace w = internal::weights;
  switch (optimizer) {
    case Optimizer::kSgd:  // p -= lr·g
      return 2;
    case Optimizer::kMomentum:  // v = μv + g; p -= lr·v
      return 4;
    case Optimizer::kAdam:  // m: 3, v: 4, p -= lr·m / (√v + ε): √, +, ÷, ·, −
      return 3 + 4 + w::kSqrt + 1 + w::kDivide + 2;
    case Optimizer::kAdamW:  // Adam's, plus the decoupled decay p -= lr·λ·p
      return 3 + 4 + w::kSqrt + 1 + w::kDivide + 2 + 2;
  }
  return 0;
}

int64_t Elements(const ir::Value& value) {
  int64_t size = ir::DTypeSizeBytes(value.dtype);
  return size > 0 ? value.SizeBytes().value_or(0) / size : 0;
}

int64_t Bytes(const ir::Value& value) { return value.SizeBytes().value_or(0); }

}  // namespace

std::string_view StepModeName(StepMode mode) { return kStepModeNames[static_cast<size_t>(mode)]; }

std::optional<StepMode> StepModeFromName(std::string_view name) {
  for (size_t i = 0; i < kStepModeNames.size(); ++i) {
    if (kStepModeNames[i] == name) return static_cast<StepMode>(i);
  }
  return std::nullopt;
}

std::string_view OptimizerName(Optimizer optimizer) {
  return kOptimizerNames[static_cast<size_t>(optimizer)];
}

std::optional<Optimizer> OptimizerFromName(std::string_view name) {
  for (size_t i = 0; i < kOptimizerNames.size(); ++i) {
    if (kOptimizerNames[i] == name) return static_cast<Optimizer>(i);
  }
  return std::nullopt;
}

int64_t TrainingParameterBytes(const ir::Value& value, bool trainable, Optimizer optimizer) {
  const int64_t bytes = Bytes(value);
  if (!trainable) return bytes;
  return (Count(bytes) * 2 + Count(Elements(value)) * StateBytesPerElement(value.dtype, optimizer))
      .value();
}

TrainingCosts ComputeTrainingCosts(const ir::Graph& graph, absl::Span<const NodeCost> forward,
                                   Optimizer optimizer) {
  TrainingCosts out;
  const size_t num_values = graph.num_values();
  out.saved.assign(num_values, false);
  out.trainable.assign(num_values, false);
  out.needs_gradient.assign(num_values, false);
  out.nodes.resize(graph.num_nodes());
  auto is_float = [&](ir::ValueId v) { return IsFloating(graph.value(v).dtype); };

  // 1. Trainable parameters: floating-point weights read where a gradient
  //    flows (inputs at gradient slots of differentiable nodes, captured
  //    values of control flow).
  for (const ir::Node& node : graph.nodes()) {
    if (!Differentiable(node.kind)) continue;
    auto mark = [&](ir::ValueId v) {
      if (v.valid() && graph.value(v).is_parameter && is_float(v)) out.trainable[v.index()] = true;
    };
    for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
      if (TakesGradient(node, slot)) mark(node.inputs[slot]);
    }
    for (ir::ValueId v : node.captured) mark(v);
  }
  for (size_t v = 0; v < num_values; ++v) out.needs_gradient[v] = out.trainable[v];

  // 2. In topological order: which outputs need a gradient, and each node's
  //    backward, saved tensors and parameter updates.
  const int64_t update_flops = UpdateFlopsPerElement(optimizer);
  std::vector<bool> updated(num_values, false);
  Count backward_flops, all_update_flops, persistent;
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& node = graph.nodes()[i];
    const NodeCost& fwd = forward[i];
    NodeTrainingCost& t = out.nodes[i];
    t.backward.kernels = 0;
    t.update.kernels = 0;
    t.backward.op_class = fwd.op_class;
    t.backward.dtype_class = fwd.dtype_class;
    t.backward.rule = fwd.rule;
    t.backward.has_formula = fwd.has_formula;
    t.backward.estimated = fwd.estimated;
    t.update.op_class = OpClass::kElementwise;
    t.update.rule = CostRule::kFormula;
    t.update.has_formula = true;

    // 2a. The optimizer updates the parameters this node reads first.
    Count update_read, update_written, update_elements;
    auto charge = [&](ir::ValueId v) {
      if (!v.valid() || !out.trainable[v.index()] || updated[v.index()]) return;
      updated[v.index()] = true;
      const ir::Value& value = graph.value(v);
      const Count state = Count(Elements(value)) * StateBytesPerElement(value.dtype, optimizer);
      update_elements += Elements(value);
      update_read += Count(Bytes(value)) * 2 + state;  // weight, gradient, state
      update_written += Count(Bytes(value)) + state;   // weight, state
      out.trainable_param_bytes += Bytes(value);
      out.gradient_bytes += Bytes(value);
      out.optimizer_state_bytes += state.value();
    };
    for (ir::ValueId v : node.inputs) charge(v);
    for (ir::ValueId v : node.captured) charge(v);
    t.update.flops = (update_elements * update_flops).value();
    t.update.bytes_read = update_read.value();
    t.update.bytes_written = update_written.value();
    all_update_flops += t.update.flops;

    // 2b. Does a gradient flow through this node, and to how many operands?
    if (!Differentiable(node.kind)) continue;
    bool data_needs = false;   // input 0
    bool others_need = false;  // any other input or captured value
    int64_t gradient_in_bytes = 0;
    for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
      ir::ValueId v = node.inputs[slot];
      if (!v.valid() || !TakesGradient(node, slot) || !out.needs_gradient[v.index()]) continue;
      (slot == 0 ? data_needs : others_need) = true;
      if (!graph.value(v).is_parameter) gradient_in_bytes += Bytes(graph.value(v));
    }
    for (ir::ValueId v : node.captured) others_need = others_need || out.needs_gradient[v.index()];
    if (!data_needs && !others_need) continue;
    int64_t gradient_out_bytes = 0;
    for (ir::ValueId v : node.outputs) {
      if (!v.valid() || !is_float(v)) continue;
      out.needs_gradient[v.index()] = true;
      gradient_out_bytes += Bytes(graph.value(v));
    }

    // 2c. The backward pass (Note [Training factors]).
    const int64_t operands = (data_needs ? 1 : 0) + (others_need ? 1 : 0);
    const bool gemm = GemmLike(fwd.op_class);
    const Factors f = gemm ? Factors{static_cast<double>(operands), static_cast<double>(operands)}
                           : BackwardFactors(node.kind, fwd.op_class);
    t.backward.macs = Scale(fwd.macs, f.flops);
    t.backward.flops = Scale(fwd.flops, f.flops);
    t.backward.bytes_read = Scale(fwd.bytes_read, f.bytes);
    t.backward.bytes_written = Scale(fwd.bytes_written, f.bytes);
    t.backward.kernels = gemm ? fwd.kernels * operands : fwd.kernels;
    t.backward.workspace_bytes = fwd.workspace_bytes;
    t.backward.saturated = t.backward.macs == kSaturatedCount ||
                           t.backward.flops == kSaturatedCount ||
                           t.backward.bytes_read == kSaturatedCount;
    backward_flops += t.backward.flops;
    t.gradient_workspace_bytes =
        (Count(gradient_out_bytes) + gradient_in_bytes + fwd.workspace_bytes).value();

    // 2d. What the backward reads (Note [Saved activations]).
    auto save = [&](ir::ValueId v) {
      if (v.valid() && !graph.value(v).is_parameter) out.saved[v.index()] = true;
    };
    switch (SavedBy(node, fwd.op_class)) {
      case Saves::kNothing:
        break;
      case Saves::kInputsAndOutputs:
        for (ir::ValueId v : node.outputs) save(v);
        // RNN gate buffers and attention probabilities: their workspace.
        if (GemmLike(fwd.op_class)) t.persistent_bytes = fwd.workspace_bytes;
        [[fallthrough]];
      case Saves::kInputs:
        for (ir::ValueId v : node.inputs) save(v);
        break;
      case Saves::kOutputs:
        for (ir::ValueId v : node.outputs) save(v);
        break;
      case Saves::kPartners: {
        // dW needs X and dX needs W: operand 0 is kept when the others need
        // a gradient, operand 1 when operand 0 does (Einsum: every operand).
        const size_t last = node.kind == K::kEinsum ? node.inputs.size() : 2;
        for (size_t slot = 0; slot < std::min(last, node.inputs.size()); ++slot) {
          if (slot == 0 ? others_need : (data_needs || node.kind == K::kEinsum)) {
            save(node.inputs[slot]);
          }
        }
        break;
      }
      case Saves::kIndices:
        if (node.inputs.size() > 1) save(node.inputs[1]);
        break;
      case Saves::kMask:
        if (node.outputs.size() > 1) save(node.outputs[1]);
        break;
    }
    persistent += t.persistent_bytes;
  }

  // 3. Totals.
  Count saved;
  for (size_t v = 0; v < num_values; ++v) {
    const ir::Value& value = graph.values()[v];
    if (out.saved[v] && value.kind == ir::ValueKind::kNodeOutput) saved += Bytes(value);
  }
  out.saved_activation_bytes = saved.value();
  out.persistent_bytes = persistent.value();
  out.backward_flops = backward_flops.value();
  out.update_flops = all_update_flops.value();
  return out;
}

double TrainingTimeUs(const NodeCost& forward, const NodeTrainingCost& training,
                      const DeviceSpec& device) {
  return PredictTimeUs(forward, device) + PredictTimeUs(training.backward, device) +
         PredictTimeUs(training.update, DTypeClass::kFp32, device);
}

}  // namespace autopar::costmodel
