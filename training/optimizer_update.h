// The update model of a training step: one ONNX graph that takes each trained
// weight, its gradient (the mean over the step's micro-batches) and its
// optimizer state, and returns the new weight and state. The arithmetic is
// torch.optim's, operation for operation (torch 1.13, single-tensor path):
//   sgd       d = g + λw;                      w' = w − lr·d
//   momentum  d = g + λw;  b' = μb + d;        w' = w − lr·b'
//             (no dampening, not Nesterov; torch's first step sets b = d,
//              which μ·0 + d equals)
//   adam      d = g + λw;  m' = β₁m + (1−β₁)d;  v' = β₂v + (1−β₂)d²;
//             w' = w − (lr/(1−β₁ᵗ))·m' / (√v'/√(1−β₂ᵗ) + ε)
//   adamw     w ← w·(1 − lr·λ), then adam with λ = 0
// t is the step number (1 for the first), an input of the model.
// ONNX Runtime's inference sessions cannot change an initializer, so weights
// and state are inputs and outputs; the runner keeps them between steps.
#ifndef AUTOPAR_TRAINING_OPTIMIZER_UPDATE_H_
#define AUTOPAR_TRAINING_OPTIMIZER_UPDATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "costmodel/training.h"
#include "ir/dtype.h"
#include "onnx/onnx_pb.h"

namespace autopar::training {

struct OptimizerOptions {
  costmodel::Optimizer kind = costmodel::Optimizer::kAdam;
  double learning_rate = 1e-3;
  /// μ of momentum.
  double momentum = 0.9;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  /// λ: L2 (sgd, momentum, adam) or decoupled (adamw).
  double weight_decay = 0;
};

/// Defaults as torch.optim has them: lr 0.01 (sgd, momentum), 0.001 (adam,
/// adamw); weight decay 0.01 for adamw, 0 otherwise.
OptimizerOptions DefaultOptimizerOptions(costmodel::Optimizer kind);

/// One trained weight as the update model sees it.
struct UpdatedWeight {
  std::string name;
  std::vector<int64_t> dims;
  ir::DType dtype = ir::DType::kFloat;
  /// The source node its update is charged to (its first reader, as the cost
  /// model charges it, Note [Parameter state]); "" records no origin.
  std::string origin;
};

/// Names of one weight's tensors in the update model. `state[k]` and
/// `state_out[k]` are the k-th state buffer (momentum: "momentum_buffer";
/// adam: "exp_avg", "exp_avg_sq"), zeros before the first step.
struct UpdateNames {
  std::string weight, gradient, weight_out;
  std::vector<std::string> state, state_out;
};

struct UpdateModel {
  onnx::ModelProto proto;
  /// Indexed like the weights given.
  std::vector<UpdateNames> names;
  /// The float32 scalar input holding t (adam, adamw); empty otherwise.
  std::string step_input;
  /// Each node → the origin of the weight it updates (UpdatedWeight::origin);
  /// the per-step scalars every weight shares go to the first weight's. Measured
  /// update times are charged to these source nodes.
  absl::flat_hash_map<std::string, std::string> node_origin;
};

/// The names of the state buffers `kind` keeps per weight ("momentum_buffer";
/// "exp_avg", "exp_avg_sq"; none for sgd).
std::vector<std::string> StateBufferNames(costmodel::Optimizer kind);

/// The update model of `weights` at `opset` (the model's default-domain
/// opset). `gradient_names[k]` names weight k's gradient input. The nodes it
/// makes up avoid the names in `avoid` (the gradient model's nodes: one file
/// of measured times names the nodes of both models).
absl::StatusOr<UpdateModel> BuildUpdateModel(const std::vector<UpdatedWeight>& weights,
                                             const std::vector<std::string>& gradient_names,
                                             const OptimizerOptions& options, int64_t opset,
                                             const absl::flat_hash_set<std::string>& avoid = {});

}  // namespace autopar::training

#endif  // AUTOPAR_TRAINING_OPTIMIZER_UPDATE_H_
