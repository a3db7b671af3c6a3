// ONNX's own shape inference, run on a weight-free copy of the model: with data
// propagation and its results written into the IR (InferShapesWithOnnx), or
// on a model proto as it stands (InferShapesOfCopy), for the rewriter's types
// and the validation of what it writes. Both copies leave out the same bytes.
#ifndef AUTOPAR_ONNX_IO_SHAPE_INFERENCE_H_
#define AUTOPAR_ONNX_IO_SHAPE_INFERENCE_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "onnx_io/model.h"

namespace autopar::onnx_io {

/// Runs ONNX's shape inference on `model` with the graph inputs typed as in
/// `graph` (so dims bound there take effect) and fills every value of `graph`
/// whose shape is not fully known from what it infers. Values computed by data
/// propagation (shape tensors) get `int_data`.
///
/// Nodes whose operator changed shape semantics after the library's newest
/// opset (opset 18's Reduce*, Split, Pad, Resize...) are left out when the
/// model imports a newer opset than the library knows, so that an old schema
/// never produces a wrong shape; passes::InferShapes covers them.
absl::Status InferShapesWithOnnx(const Model& model, ir::Graph& graph);

struct CopyInferenceOptions {
  /// The library's strict mode with type checks: the first node it cannot
  /// type, or whose types do not match its schema, is an error. Off, it types
  /// what it can and leaves the rest.
  bool strict = false;
};

/// ONNX's shape inference, without data propagation, on a copy of `model` in
/// which tensors over 64 KiB (initializers, and tensor attributes such as
/// large Constants) keep their name, type and dims but not their bytes:
/// inference reads dims, never weights, and weights are most of a model's
/// memory. Returns the copy with what was inferred in its graph's value_info;
/// an error carries the library's message (its first line).
absl::StatusOr<onnx::ModelProto> InferShapesOfCopy(const onnx::ModelProto& model,
                                                   const CopyInferenceOptions& options = {});

}  // namespace autopar::onnx_io

#endif  // AUTOPAR_ONNX_IO_SHAPE_INFERENCE_H_
