// InferShapes: gives every tensor of the graph a static shape, or says which
// values cannot have one and what to bind to fix it.
//
// Order of sources, most trusted first: the model's declared types, ONNX's
// shape inference with data propagation (onnx_io), then our own per-operator
// rules (shape_rules.h) for operators the installed library has no schema for,
// such as those of opset 18 and newer.
#ifndef AUTOPAR_PASSES_INFER_SHAPES_H_
#define AUTOPAR_PASSES_INFER_SHAPES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/graph.h"
#include "onnx_io/model.h"

namespace autopar::passes {

struct ShapeOptions {
  /// Symbolic dim name → value (`--dim batch=1`).
  std::map<std::string, int64_t> dim_values;
  /// Graph input → its whole shape (`--input-shape x=1,3,224,224`), for dims
  /// the model left without a name.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  /// Fail unless every tensor ends with a static shape. `info` turns this off
  /// to report what is unresolved instead.
  bool require_static = true;
};

/// Binds the graph inputs' dims as `options` say, infers every other shape,
/// and (with require_static) fails naming the values left without a static
/// shape and the flag that would fix it.
absl::Status InferShapes(const onnx_io::Model& model, const ShapeOptions& options,
                         ir::Graph& graph);

/// "x: batch, seq" style list of the inputs' dims that are not known numbers.
std::vector<std::string> UnresolvedInputDims(const ir::Graph& graph);

/// Tensor values (node outputs) whose shapes are not static.
std::vector<ir::ValueId> ValuesWithoutStaticShape(const ir::Graph& graph);

}  // namespace autopar::passes

#endif  // AUTOPAR_PASSES_INFER_SHAPES_H_
