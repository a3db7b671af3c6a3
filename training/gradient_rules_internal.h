// The rule functions of gradient_rules.cc's table, by operator family (one
// file each). Only gradient_rules.cc and the family files include this.
#ifndef AUTOPAR_TRAINING_GRADIENT_RULES_INTERNAL_H_
#define AUTOPAR_TRAINING_GRADIENT_RULES_INTERNAL_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "training/gradient_rules.h"

namespace autopar::training::rules {

// --- gradient_rules_elementwise.cc: arithmetic, math and activations ---------
absl::Status Add(NodeGradient& n);
absl::Status Sub(NodeGradient& n);
absl::Status Mul(NodeGradient& n);
absl::Status Div(NodeGradient& n);
absl::Status Neg(NodeGradient& n);
absl::Status Identity(NodeGradient& n);
absl::Status Relu(NodeGradient& n);
absl::Status Sigmoid(NodeGradient& n);
absl::Status Tanh(NodeGradient& n);
absl::Status Exp(NodeGradient& n);
absl::Status Clip(NodeGradient& n);
/// Cast and CastLike: dY cast back to X's type.
absl::Status CastBack(NodeGradient& n);
absl::Status Pow(NodeGradient& n);
absl::Status Sqrt(NodeGradient& n);
absl::Status Log(NodeGradient& n);
absl::Status Reciprocal(NodeGradient& n);
absl::Status Abs(NodeGradient& n);
absl::Status LeakyRelu(NodeGradient& n);
absl::Status Elu(NodeGradient& n);
absl::Status Erf(NodeGradient& n);
absl::Status Softplus(NodeGradient& n);
absl::Status HardSigmoid(NodeGradient& n);
absl::Status HardSwish(NodeGradient& n);
absl::Status Gelu(NodeGradient& n);
/// The variadic Sum, Mean, Max and Min (with broadcasting).
absl::Status SumInputs(NodeGradient& n);
absl::Status MeanInputs(NodeGradient& n);
absl::Status MaxMinInputs(NodeGradient& n);
absl::Status Dropout(NodeGradient& n);

// --- gradient_rules_shape.cc: layout and data movement -----------------------
/// Reshape, Flatten, Squeeze, Unsqueeze: the gradient is reshaped back.
absl::Status ReshapeBack(NodeGradient& n);
absl::Status Transpose(NodeGradient& n);
absl::Status Slice(NodeGradient& n);
absl::Status Concat(NodeGradient& n);
absl::Status Split(NodeGradient& n);
absl::Status Gather(NodeGradient& n);
absl::Status Pad(NodeGradient& n);
absl::Status Where(NodeGradient& n);
absl::Status Expand(NodeGradient& n);
absl::Status Tile(NodeGradient& n);

// --- gradient_rules_linear.cc: products and convolutions --------------------
absl::Status MatMul(NodeGradient& n);
absl::Status Gemm(NodeGradient& n);

// --- gradient_rules_reduce.cc: reductions and normalisations ----------------
absl::Status ReduceSum(NodeGradient& n);
absl::Status ReduceMean(NodeGradient& n);
absl::Status Softmax(NodeGradient& n);
absl::Status LogSoftmax(NodeGradient& n);
absl::Status LayerNormalization(NodeGradient& n);

}  // namespace autopar::training::rules

#endif  // AUTOPAR_TRAINING_GRADIENT_RULES_INTERNAL_H_
