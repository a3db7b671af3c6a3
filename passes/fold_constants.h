// FoldConstants: evaluates the nodes whose inputs are all known small
// tensors, so that shapes computed from constants and input shapes become
// known.
//
// Exporters compute many shapes at run time from constants: torch's
// key-padding masks build `ConstantOfShape → Mul → Equal → Where → Expand`,
// position ids come from `Range`, and attention reshapes from
// `Shape → Gather → Concat`. The pass runs those computations here, on
// tensors of at most kMaxFoldedElements elements, and writes what it learns
// into the IR for shape inference (passes/infer_shapes.h) to use: each folded
// output gets its static shape and dtype, and integer and bool outputs their
// contents (Value::int_data). Float results are kept only while the pass
// runs, as inputs of further folds (a float mask compared to a constant).
//
// What is known at the start: initializers and Constant nodes of at most
// kMaxFoldedElements elements, values whose int_data the IR already holds,
// graph inputs the caller binds to values (FoldOptions::input_values), and
// the static shapes of any tensor (for Shape and Size).
//
// The pass informs shapes only: it never rewrites the graph, so the models
// written from it are the input's nodes, bit for bit. Nodes inside control
// flow bodies are not folded (their values carry no shapes in the IR).
//
// Operators evaluated, for int32/int64/bool and float types (float16 and
// bfloat16 are evaluated in float precision; other integer types as int64
// wrapped to their width):
//   element-wise (fold_constants_elementwise.cc): Identity, Cast, Neg, Abs,
//     Add, Sub, Mul, Div, Mod, Min, Max, Equal, Less, Greater, LessOrEqual,
//     GreaterOrEqual, Not, And, Or, Xor, Where;
//   shapes and data movement (fold_constants_shape_ops.cc): Shape, Size,
//     Gather, Slice, Concat, Squeeze, Unsqueeze, Reshape, Flatten,
//     ConstantOfShape, Range, Expand, Tile, Transpose, NonZero;
//   reductions (fold_constants_reduce.cc): ReduceSum, ReduceProd, ReduceMin,
//     ReduceMax, ArgMax, ArgMin.
#ifndef AUTOPAR_PASSES_FOLD_CONSTANTS_H_
#define AUTOPAR_PASSES_FOLD_CONSTANTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "onnx_io/model.h"

namespace autopar::passes {

/// Tensors up to this many elements are read, evaluated and kept.
inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 16;

struct FoldOptions {
  /// Graph input → its contents, in row-major order (`--input-value`). The
  /// input's shape must already be static with as many elements.
  std::map<std::string, std::vector<double>> input_values;
};

struct FoldResult {
  /// Nodes evaluated.
  int64_t folded_nodes = 0;
  /// Of their outputs, those whose shape or contents the IR did not know yet.
  int64_t values_learned = 0;
};

/// True when the folder can evaluate nodes of `kind`. ir/op_kinds.def lists
/// the kinds it can (ir::kFoldRule); a test holds the two to each other.
bool CanFold(ir::OpKind kind);

/// Evaluates what can be evaluated in the main graph and records it in
/// `graph` (shapes, dtypes, int_data of folded outputs). Fails only when the
/// model's own bytes cannot be read (a truncated external file).
absl::StatusOr<FoldResult> FoldConstants(const onnx_io::Model& model, const FoldOptions& options,
                                         ir::Graph& graph);

}  // namespace autopar::passes

#endif  // AUTOPAR_PASSES_FOLD_CONSTANTS_H_
