// The rule functions of gradient_rules.cc's table, by operator family (one
// file each). Only gradient_rules.cc and the family files include this.
#ifndef AUTOPAR_TRAINING_GRADIENT_RULES_INTERNAL_H_
#define AUTOPAR_TRAINING_GRADIENT_RULES_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

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
absl::Status Conv(NodeGradient& n);
absl::Status ConvTranspose(NodeGradient& n);

/// The sliding window of a convolution or pooling node, per spatial axis,
/// auto_pad resolved to explicit pads (pooling's rules use it too).
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads_begin, pads_end;
  /// The span one window covers on spatial axis j: (kernel − 1)·dilation + 1.
  int64_t Extent(size_t j) const { return (kernel[j] - 1) * dilations[j] + 1; }
  /// The pads as ONNX orders them (all begins, then all ends).
  std::vector<int64_t> Pads() const;
};
/// The window of node `n` (input 0 slid over, output 0 the positions) whose
/// kernel is `kernel`: strides, dilations and pads from its attributes,
/// auto_pad SAME_UPPER / SAME_LOWER / VALID resolved from the static dims.
absl::StatusOr<Window> ResolveWindow(const NodeGradient& n, const std::vector<int64_t>& kernel);
/// ConvTranspose(`at_positions`, `kernel`) over `win`: spreads values at the
/// `out_spatial` window positions back onto the `in_spatial` input positions
/// each window covers (end pads and output_padding chosen so that the result
/// has exactly `in_spatial`; windows past the input are cropped).
std::string WindowTranspose(GraphEmitter& e, const std::string& at_positions,
                            const std::string& kernel, const Window& win,
                            const std::vector<int64_t>& out_spatial,
                            const std::vector<int64_t>& in_spatial, int64_t group);

// --- gradient_rules_reduce.cc: reductions and normalisations ----------------
absl::Status ReduceSum(NodeGradient& n);
absl::Status ReduceMean(NodeGradient& n);
absl::Status Softmax(NodeGradient& n);
absl::Status LogSoftmax(NodeGradient& n);
absl::Status LayerNormalization(NodeGradient& n);

// --- gradient_rules_cnn.cc: pooling and feature-map normalisation -----------
absl::Status MaxPool(NodeGradient& n);
absl::Status GlobalMaxPool(NodeGradient& n);
absl::Status AveragePool(NodeGradient& n);
absl::Status GlobalAveragePool(NodeGradient& n);
/// Inference form: mean and variance are frozen statistics, not trained.
absl::Status BatchNormalization(NodeGradient& n);
absl::Status InstanceNormalization(NodeGradient& n);

}  // namespace autopar::training::rules

#endif  // AUTOPAR_TRAINING_GRADIENT_RULES_INTERNAL_H_
