// The training step (`--mode training`): what one step of
// training adds to the forward pass that NodeCost describes — the backward
// pass, the activations it reads, gradients and optimizer state. Every factor
// is documented here and in training.cc, in one place:
//
// Note [Training factors]: per node, with n = the number of its operands that
// need a gradient (see "needs a gradient" below):
//
//   op class                backward FLOPs     backward bytes    kernels
//   conv, matmul, recurrent fwd × n_gemm       fwd × n_gemm      fwd × n_gemm
//   normalization           fwd × 2            fwd × 1.5         fwd
//     Softmax, LogSoftmax   fwd × 0.5          fwd × 1.5         fwd
//   pooling, element-wise   fwd × 1            fwd × 1.5         fwd
//   reduction, other        fwd × 1            fwd × 1           fwd
//   data movement           0                  fwd × 1           fwd
//   metadata (views, Shape) 0                  0                 fwd
//
// n_gemm ∈ {1, 2}: one product the size of the forward one per side that needs
// a gradient — the data operand's (dX = dY·Wᵀ) and the weights' (dW = Xᵀ·dY)
// — so a hidden layer costs 2× its forward FLOPs and the first layer, whose
// input is data, 1× (the usual "backward ≈ 2× forward": Kaplan et al.,
// "Scaling Laws for Neural Language Models", 2020, §2.1; Narayanan et al.,
// "Efficient Large-Scale Language Model Training on GPU Clusters using
// Megatron-LM", SC 2021). A node none of whose inputs needs a gradient has no
// backward pass at all.
//
// Needs a gradient: a trainable parameter — every floating-point weight
// (initializer or Constant output) read where a gradient flows; ONNX does not
// mark frozen weights, so they count as trainable, the safe side for memory —
// and every floating-point output of a differentiable node with an input that
// needs one (autograd's requires_grad propagation). Not differentiable:
// integer/bool tensors, comparisons and logic, Shape/Size, ArgMax/ArgMin,
// NonZero, random generators; slots that take no gradient: BatchNorm's
// running mean and variance, Resize's roi and scales, Clip's bounds, Pad's
// constant, Dropout's ratio.
//
// Note [Saved activations]: the tensors a node's backward reads (the saved
// tensors of autograd's derivative formulas) stay allocated from their
// production until the backward pass, which the step model places at its end:
//   conv / matmul / gemm / einsum: each operand whose partner needs a
//       gradient (dW needs X, dX needs W — weights are held anyway);
//   recurrent and attention ops: inputs and outputs, and their workspace
//       (gate buffers, attention probabilities) as persistent bytes;
//   normalizations: the data inputs; Softmax family: the output;
//   Relu, Sigmoid, Tanh, Exp, Sqrt, Reciprocal: the output;
//   other element-wise math (Mul, Div, Pow, Gelu, Erf, Log, Max, Where...):
//       the inputs; Add, Sub, Neg, Sum, Mean, Cast: nothing;
//   MaxPool / LpPool / GlobalMax / Reduce{Max,Min,Prod,L2,LogSumExp...}:
//       input and output; AveragePool, ReduceSum/Mean: nothing;
//   Gather family: the indices; other data movement and views: nothing;
//   Dropout with a mask output: the mask; other ops: the inputs.
//
// Note [Parameter state]: a trainable parameter of P bytes and E elements
// holds, for the whole step, the weight (P), its gradient (P, same dtype) and
// the optimizer's state (Rajbhandari et al., "ZeRO", SC 2020, §3.1): SGD none,
// momentum one fp32 buffer (4E), Adam and AdamW two fp32 moments (8E); a parameter
// narrower than fp32 (fp16/bf16: mixed precision) also keeps an fp32 master
// copy (4E) — Adam on fp32 weights is 4P in all, on fp16 weights 8P. The
// update runs once per step per parameter, charged to its first reader, as
// element-wise work: SGD 2 FLOPs per element, momentum 4, Adam 18, reading
// weight, gradient and state and writing weight and state. No kernel launches
// are charged for it: frameworks update all parameters with a few fused
// multi-tensor kernels (PyTorch's foreach / fused optimizers, ONNX Runtime
// training's multi-tensor apply), not one launch per parameter.
#ifndef AUTOPAR_COSTMODEL_TRAINING_H_
#define AUTOPAR_COSTMODEL_TRAINING_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "costmodel/device.h"
#include "costmodel/node_cost.h"
#include "ir/graph.h"

namespace autopar::costmodel {

/// What one step of the model does.
enum class StepMode : uint8_t {
  kInference,  // the forward pass
  kTraining,   // forward, backward and the optimizer's update
};

/// The optimizer a training step updates its parameters with.
enum class Optimizer : uint8_t { kSgd, kMomentum, kAdam, kAdamW };

/// "inference", "training".
std::string_view StepModeName(StepMode mode);
std::optional<StepMode> StepModeFromName(std::string_view name);
/// "sgd", "momentum", "adam", "adamw".
std::string_view OptimizerName(Optimizer optimizer);
std::optional<Optimizer> OptimizerFromName(std::string_view name);

struct StepOptions {
  StepMode mode = StepMode::kInference;
  /// Used in training mode only.
  Optimizer optimizer = Optimizer::kAdam;
};

/// What a training step adds to one node's forward cost.
struct NodeTrainingCost {
  /// The backward pass (Note [Training factors]); zero when no input of the
  /// node needs a gradient. op_class and dtype_class are the forward's.
  NodeCost backward;
  /// The optimizer's update of the trainable parameters this node is the
  /// first reader of (Note [Parameter state]).
  NodeCost update;
  /// Internal state the backward reads besides tensors (RNN gate buffers,
  /// attention probabilities), held to the end of the step.
  int64_t persistent_bytes = 0;
  /// Bytes of activation gradients alive while the backward runs: the
  /// gradient arriving for each output and the one leaving for each input
  /// that needs it (parameter gradients are counted with the parameters).
  int64_t gradient_workspace_bytes = 0;
};

struct TrainingCosts {
  /// Indexed like graph.nodes().
  std::vector<NodeTrainingCost> nodes;
  /// Per value (ValueId index): a backward pass reads it (Note [Saved
  /// activations]); it stays allocated until the end of the step.
  std::vector<bool> saved;
  /// Per value: a trainable parameter.
  std::vector<bool> trainable;
  /// Per value: it needs a gradient.
  std::vector<bool> needs_gradient;

  // --- Totals over the graph ---------------------------------------------
  /// Weights of trainable parameters, each once.
  int64_t trainable_param_bytes = 0;
  int64_t gradient_bytes = 0;
  /// Optimizer state and fp32 master copies.
  int64_t optimizer_state_bytes = 0;
  /// Node outputs that are saved, each once (graph inputs, held by the
  /// caller, are not counted in either mode).
  int64_t saved_activation_bytes = 0;
  int64_t persistent_bytes = 0;
  int64_t backward_flops = 0;
  int64_t update_flops = 0;
};

/// The training costs of `graph`, whose forward costs are `forward` (as
/// ComputeGraphCosts returns them), with `optimizer`.
TrainingCosts ComputeTrainingCosts(const ir::Graph& graph, absl::Span<const NodeCost> forward,
                                   Optimizer optimizer);

/// Bytes a parameter holds during a training step: the weight, its gradient
/// and the optimizer's state (Note [Parameter state]); just the weight when
/// it is not trainable.
int64_t TrainingParameterBytes(const ir::Value& value, bool trainable, Optimizer optimizer);

/// Forward + backward + update of one node on `device`: the node's share of
/// a training step.
double TrainingTimeUs(const NodeCost& forward, const NodeTrainingCost& training,
                      const DeviceSpec& device);

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_TRAINING_H_
