// InferShapes: gives every tensor of the graph a static shape, or says which
// values cannot have one and what to bind to fix it.
//
// Order of sources, most trusted first: the model's declared types, ONNX's
// shape inference with data propagation (onnx_io), constant folding of shape
// computations (fold_constants.h), then our own per-operator rules
// (shapes/shape_rules.h) for operators the installed library has no schema for, such
// as those of opset 18 and newer.
//
// Note [Shape estimates]: a placement must not be refused because one shape
// depends on data when every other value is known. Unless options.estimate is
// off (`--strict-shapes`), what cannot be known is estimated, and each
// estimate is reported (ShapeReport::estimates):
//  - a dim of a graph input with neither a name nor a value is 1;
//  - an If whose condition is not known, with branches of different shapes,
//    outputs the larger branch's shape (by elements);
//  - a Loop whose trip count is not a constant runs options.loop_trips times,
//    which sizes its scan outputs;
//  - how many elements NonZero, Compress, Unique and NonMaxSuppression keep
//    is its upper bound (all of them), the size memory must be planned for.
// Symbolic input dims ("batch") are never guessed: they name what to bind.
#ifndef AUTOPAR_PASSES_INFER_SHAPES_H_
#define AUTOPAR_PASSES_INFER_SHAPES_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/op_costs.h"
#include "ir/graph.h"
#include "onnx_io/model.h"
#include "passes/fold_constants.h"
#include "passes/symbolic_dims.h"

namespace autopar::passes {

struct ShapeOptions {
  /// Symbolic dim name → value (`--dim batch=1`).
  std::map<std::string, int64_t> dim_values;
  /// Graph input → its whole shape (`--input-shape x=1,3,224,224`), for dims
  /// the model left without a name.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  /// Graph input → its contents (`--input-value sr=16000`): a scalar or a
  /// small tensor that steers shapes or control flow.
  std::map<std::string, std::vector<double>> input_values;
  /// Fail unless every tensor ends with a static shape. `info` turns this off
  /// to report what is unresolved instead.
  bool require_static = true;
  /// Estimate what cannot be known (Note [Shape estimates]); false
  /// (`--strict-shapes`) fails instead.
  bool estimate = true;
  /// Trip count of loops whose count is not a constant (`--loop-trips`).
  int64_t loop_trips = costmodel::kDefaultLoopTrips;
  /// Run the constant folder (fold_constants.h). Off only to measure what it
  /// costs (tools/bench/fold_bench.cc); no flag turns it off.
  bool fold_constants = true;
};

/// The kinds of Note [Shape estimates].
enum class EstimateKind : uint8_t {
  kUnnamedInputDim,
  kIfBranch,
  kLoopTrips,
  kDataDependentSize,
};

/// One estimate: the value (or input) it concerns and what was assumed.
struct ShapeEstimate {
  EstimateKind kind;
  std::string value;
  std::string assumed;
};

/// "unnamed input dim", "If branch shape", "loop trip count", "data-dependent
/// size".
std::string_view EstimateKindName(EstimateKind kind);

/// What InferShapesWithReport learned besides the shapes.
struct ShapeReport {
  /// In the order they were made; each value at most once per kind.
  std::vector<ShapeEstimate> estimates;
  /// Nodes the constant folder evaluated (in the last round).
  int64_t folded_nodes = 0;
  /// Which planned dims are bound symbols (passes/symbolic_dims.h), once
  /// every shape is known.
  SymbolicDimsReport symbolic;
};

/// Binds the graph inputs' dims as `options` say, infers every other shape,
/// marks the dims that are bound symbols (TrackSymbolicDims) and (with
/// require_static) fails naming the values left without a static
/// shape and the flag that would fix it.
absl::Status InferShapes(const onnx_io::Model& model, const ShapeOptions& options,
                         ir::Graph& graph);

/// InferShapes, also returning the estimates it made.
absl::StatusOr<ShapeReport> InferShapesWithReport(const onnx_io::Model& model,
                                                  const ShapeOptions& options, ir::Graph& graph);

/// "x: batch, seq" style list of the inputs' dims that are not known numbers.
std::vector<std::string> UnresolvedInputDims(const ir::Graph& graph);

/// Tensor values (node outputs) whose shapes are not static.
std::vector<ir::ValueId> ValuesWithoutStaticShape(const ir::Graph& graph);

}  // namespace autopar::passes

#endif  // AUTOPAR_PASSES_INFER_SHAPES_H_
