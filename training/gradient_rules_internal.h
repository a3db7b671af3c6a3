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

// --- gradient_rules_shape.cc: layout and data movement -----------------------
/// Reshape, Flatten, Squeeze, Unsqueeze: the gradient is reshaped back.
absl::Status ReshapeBack(NodeGradient& n);
absl::Status Transpose(NodeGradient& n);

// --- gradient_rules_linear.cc: products and convolutions --------------------
absl::Status MatMul(NodeGradient& n);
absl::Status Gemm(NodeGradient& n);

// --- gradient_rules_reduce.cc: reductions and normalisations ----------------
absl::Status ReduceSum(NodeGradient& n);
absl::Status ReduceMean(NodeGradient& n);

}  // namespace autopar::training::rules

#endif  // AUTOPAR_TRAINING_GRADIENT_RULES_INTERNAL_H_
