// ONNX → IR: builds an ir::Graph from a loaded model. Shapes come from the model's declared types
// and value_info; passes::InferShapes fills in the rest.
#ifndef AUTOPAR_ONNX_IO_IMPORT_H_
#define AUTOPAR_ONNX_IO_IMPORT_H_

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "onnx/onnx_pb.h"
#include "onnx_io/model.h"

namespace autopar::onnx_io {

/// Builds the IR of the model's main graph. Control-flow bodies become
/// subgraphs of their node, and the outer values they read become the node's
/// `captured` inputs. Fails with the offending node or value named when a node
/// reads a value nothing defines, a value is defined twice, or the graph has a
/// cycle.
absl::StatusOr<ir::Graph> BuildGraph(const Model& model);

/// The IR type of a TypeProto: sets `type_kind`, `dtype` and `shape` of `value`.
void ApplyTypeProto(const onnx::TypeProto& type, ir::Value& value);

}  // namespace autopar::onnx_io

#endif  // AUTOPAR_ONNX_IO_IMPORT_H_
