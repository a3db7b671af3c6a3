// The gradient pass: reverse-mode differentiation of an ir::Graph, written as
// standard ONNX nodes appended to the graph's ONNX form (the backward pass of
// a training step). Each forward node on the gradient path gets its
// operator's rule from the table (training/gradient_rules.h); gradients that
// reach a value along several paths are summed.
//
// Which values carry a gradient (autograd's requires_grad, restricted to what
// the loss depends on): a value needs one when it is differentiable — a
// floating-point tensor — and both
//   - it is one of `wrt` or is computed, through an input slot that takes a
//     gradient (the table's slots), from one that is; and
//   - a seed depends on it through such slots.
// Integer and bool tensors, shapes and constants never carry one. A node on
// the gradient path without a rule, or with control flow (If, Loop, Scan),
// is an error naming the node and its operator: a gradient is never
// silently zero.
#ifndef AUTOPAR_TRAINING_GRADIENT_PASS_H_
#define AUTOPAR_TRAINING_GRADIENT_PASS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "training/graph_emitter.h"

namespace autopar::training {

struct GradientRequest {
  /// Where the backward pass starts: (value, the name of its gradient,
  /// already written). A loss's seed is dL/dL = 1 on the loss; a loss
  /// written with its own derivative seeds the values it reads.
  std::vector<std::pair<ir::ValueId, std::string>> seeds;
  /// The values whose gradients are wanted (weights, or a stage's inputs).
  std::vector<ir::ValueId> wrt;
};

struct GradientResult {
  /// Indexed like `wrt`: the name of each gradient, or "" where the seeds do
  /// not depend on the value.
  std::vector<std::string> gradients;
  /// Forward nodes whose rule ran.
  int64_t differentiated_nodes = 0;
};

/// The values of `graph` that the seeds depend on through differentiable
/// slots of floating-point tensors, indexed by ValueId (the backward reach of
/// the loss; the trainable weights are the initializers among them).
std::vector<bool> ValuesTheSeedsDependOn(const ir::Graph& graph,
                                         const std::vector<ir::ValueId>& seeds);

/// Appends the backward pass of `graph` for `request` through `emit`. Every
/// value on the gradient path must have a static shape.
absl::StatusOr<GradientResult> BuildBackward(const ir::Graph& graph, const GradientRequest& request,
                                             GraphEmitter& emit);

/// The name of the first node (in graph order) that reads `value`, or "":
/// the node a weight's summed gradient is placed with (GraphEmitter origins).
std::string FirstReaderName(const ir::Graph& graph, ir::ValueId value);

/// True for the dtypes that carry gradients (float16, bfloat16, float32,
/// float64).
bool IsDifferentiableType(ir::DType dtype);

}  // namespace autopar::training

#endif  // AUTOPAR_TRAINING_GRADIENT_PASS_H_
