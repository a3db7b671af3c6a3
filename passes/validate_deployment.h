// ValidateDeployment: checks a rewritten deployment against the graph and the
// placement it came from (validation is separate and always runs). It re-derives what
// must hold from the graph rather than trusting the rewriter's bookkeeping:
//
//  1. Every Send has exactly one Recv with its tag, on the device its Remote
//     names and naming it back; both carry the same tensors with the same
//     element_types, which match the tensors' types.
//  2. The crossings are exactly the cut edges: one per (tensor, src, dst)
//     with the tensor produced on src and read on dst != src (Constants
//     excepted: they are copied), and Deployment::transfers lists them.
//  3. Every node is in the model of the device it is placed on, once
//     (Constants may be copied); every graph output is an output of the device
//     Deployment::outputs names.
//  4. No model reads a value nothing defines before it, in any scope, and no
//     value is defined twice.
//  5. Generated names (Send/Recv nodes and signals, the signal and Remote
//     initializers) collide with no name of the source model nor each other.
//  6. Stages: ids in order, `after` only names earlier stages (so the stage
//     graph is acyclic), every stage input is a graph input or an output of a
//     stage in its `after`, every node is in exactly one stage on its device,
//     every graph output comes out of exactly one stage, no Send/Recv.
//  7. Every device and stage model passes the ONNX checker (Send/Recv schemas
//     registered) and, optionally, ONNX's strict shape inference.
#ifndef AUTOPAR_PASSES_VALIDATE_DEPLOYMENT_H_
#define AUTOPAR_PASSES_VALIDATE_DEPLOYMENT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "ir/graph.h"
#include "onnx_io/model.h"
#include "passes/partition.h"

namespace autopar::passes {

struct ValidateOptions {
  /// Run the ONNX checker on every model (rule 7).
  bool check_models = true;
  /// Also run ONNX's shape inference in strict mode with type checks on every
  /// model the library knows (slower; weights are not read).
  bool infer_shapes = false;
};

/// OK, or the first violated rule with the model and the name involved.
absl::Status ValidateDeployment(const onnx_io::Model& model, const ir::Graph& graph,
                                absl::Span<const int32_t> node_device, const Deployment& deployment,
                                const ValidateOptions& options = {});

}  // namespace autopar::passes

#endif  // AUTOPAR_PASSES_VALIDATE_DEPLOYMENT_H_
