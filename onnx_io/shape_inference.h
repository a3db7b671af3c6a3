// ONNX's own shape inference (with data propagation), run on a weight-free copy
// of the model, its results written into the IR.
#ifndef AUTOPAR_ONNX_IO_SHAPE_INFERENCE_H_
#define AUTOPAR_ONNX_IO_SHAPE_INFERENCE_H_

#include "absl/status/status.h"
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

}  // namespace autopar::onnx_io

#endif  // AUTOPAR_ONNX_IO_SHAPE_INFERENCE_H_
