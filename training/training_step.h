// The training step of a model as standard ONNX models (one device):
//   init model      no inputs; outputs the trained weights' initial values
//                   (it holds them: ONNX Runtime does not let a caller feed
//                   an initializer, so trained weights are plain inputs of
//                   the other models);
//   gradient model  the forward pass, the loss and the backward pass: inputs
//                   are the model's inputs, the loss's labels or target and
//                   the trained weights; outputs are the loss and one
//                   gradient per trained weight;
//   update model    the optimizer (training/optimizer_update.h).
// A step runs the gradient model on each micro-batch, averages the gradients
// and runs the update model once (tools/runner/train.mjs).
//
// Trained weights: every floating-point initializer the loss depends on
// through a differentiable slot, except those --freeze matches. Weights held
// in Constant nodes and integer initializers are never trained.
#ifndef AUTOPAR_TRAINING_TRAINING_STEP_H_
#define AUTOPAR_TRAINING_TRAINING_STEP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "onnx/onnx_pb.h"
#include "onnx_io/model.h"
#include "training/loss.h"
#include "training/optimizer_update.h"

namespace autopar::training {

struct TrainingOptions {
  LossSpec loss;
  OptimizerOptions optimizer;
  /// Initializers whose names this ECMAScript regex matches (anywhere in the
  /// name) are frozen; empty: none.
  std::string freeze;
};

struct TrainedWeight {
  std::string name;
  std::vector<int64_t> dims;
  ir::DType dtype = ir::DType::kFloat;
  int64_t bytes = 0;
  /// Its gradient's output name in the gradient model.
  std::string gradient;
  /// Its initial value's output name in the init model.
  std::string initial;
};

struct TrainingStep {
  onnx::ModelProto init_model;
  onnx::ModelProto gradient_model;
  UpdateModel update;
  std::vector<TrainedWeight> weights;
  /// Floating-point initializers the loss depends on that --freeze kept.
  std::vector<std::string> frozen;
  /// The loss output of the gradient model.
  std::string loss;
  /// The gradient model's inputs that are data (the model's own and the
  /// loss's labels or target), in order.
  std::vector<std::string> data_inputs;
  /// The loss's labels or target input (added or the model's own), or
  /// empty for output:.
  std::string loss_input;
  /// Cross-entropy's number of classes (labels lie in [0, classes)); 0
  /// for other losses.
  int64_t classes = 0;
  /// Forward nodes whose gradient rule ran, and nodes the backward pass and
  /// the loss added.
  int64_t differentiated_nodes = 0;
  int64_t backward_nodes = 0;
  /// The gradient model's nodes [0, backward_begin) are the forward pass and
  /// the loss; the rest are the backward pass.
  int backward_begin = 0;
  /// Every gradient-model node that is not a node of the source model (by
  /// name) → the source node it works for: a lowered recurrent node → the
  /// LSTM/GRU/RNN it replaces; a loss node → the producer of the value the
  /// loss reads; a backward node → the forward node whose rule wrote it (a
  /// weight's summed gradient: its first reader). Note [Gradient
  /// colocation] (pipeline/training_split.h) places each node with it.
  absl::flat_hash_map<std::string, std::string> node_origin;
};

/// The training step of `model`, whose IR (shapes inferred, every dim on
/// the gradient path static) is `graph`. Errors (InvalidArgument, one line):
/// a bad loss, no trained weight, an operator on the gradient path without
/// a rule, a freeze pattern that does not parse.
absl::StatusOr<TrainingStep> BuildTrainingStep(const onnx_io::Model& model, const ir::Graph& graph,
                                               const TrainingOptions& options);

}  // namespace autopar::training

#endif  // AUTOPAR_TRAINING_TRAINING_STEP_H_
