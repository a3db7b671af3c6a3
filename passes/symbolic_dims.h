// Symbolic dims that survive planning: which planned dims are a symbolic
// input dim ("batch"), so that the models a split writes keep its name and
// serve any batch, not only the one the costs were computed for.
//
// Planning needs numbers (`--dim batch=2`): InferShapes binds the symbol on
// the graph inputs and every shape downstream is a number. A dim of another
// value is the symbol only when it is that dim carried through operators
// that copy it, never because its number equals the bound value (a channel
// count of 2 is not the batch). So TrackSymbolicDims infers the shapes twice
// more, each time on a fresh graph of the model:
//  - with the symbols left unbound: a symbol then travels only as the dim
//    itself. ONNX's inference copies a dim_param exactly where its
//    operator's output dim is that input dim (elementwise, MatMul's rows,
//    Conv's N, Transpose), and so do our rules (shapes/shape_rules.h);
//  - with each symbol bound to a sentinel, a prime no layer size is (7919):
//    for the dims the first cannot follow (ONNX 1.12 propagates no symbol
//    through a shape tensor, so a Reshape to Shape → Gather → Concat loses
//    it). A dim that is the sentinel there and the planned value here is the
//    symbol (batch × heads is 4 × 7919 there, never 7919); one that keeps
//    its number is static.
// Then, for every value computed from an input with a bound symbol:
//  - a dim named S by either run, whose planned number is S's value, keeps
//    S in Dim::symbol beside the number;
//  - a dim that is the same number there keeps the number;
//  - any other dim (such as batch × heads, or one neither run sizes) is
//    marked in Value::unnamed_symbolic_dims: a run at another binding may
//    change it, so written models declare it without a value. The mark says
//    why.
// Values computed from weights and static inputs only are left alone.
#ifndef AUTOPAR_PASSES_SYMBOLIC_DIMS_H_
#define AUTOPAR_PASSES_SYMBOLIC_DIMS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "onnx_io/model.h"

namespace autopar::passes {

/// Why a dim derived from a symbolic input dim has no name
/// (Value::unnamed_symbolic_dims holds these, 0 for a dim that is not one).
enum class UnnamedDimReason : uint8_t {
  kNone = 0,
  /// The runs give it neither the symbol nor one number: a function of the
  /// symbol other than itself (batch × heads, a sum).
  kDerived = 1,
  /// Neither run knows the value's rank.
  kNotInferred = 2,
};

/// "derived from NAME (not the dim itself)", "not reached by ONNX's shape
/// inference".
std::string_view UnnamedDimReasonText(UnnamedDimReason reason);

struct SymbolicDimsReport {
  /// The bound symbols that some graph input has, and their planned values.
  std::map<std::string, int64_t> symbols;
  /// Dims (over all values) that keep a symbol, and dims marked unnamed.
  int64_t named_dims = 0;
  int64_t unnamed_dims = 0;
  /// Set when the symbolic inference failed (its message): every dependent
  /// dim is then unnamed.
  std::string inference_error;
};

struct ShapeOptions;

/// Marks the dims of `graph` (its shapes inferred with `options`) as the file
/// comment says. Does nothing when no `options.dim_values` entry names an
/// input dim of `graph`.
SymbolicDimsReport TrackSymbolicDims(const onnx_io::Model& model, const ShapeOptions& options,
                                     ir::Graph& graph);

/// One dim of a tensor that crosses a model boundary of a split (a stage's or
/// device's input or output) whose planned value derives from a symbol but
/// which no symbol names.
struct UnnamedBoundaryDim {
  std::string tensor;
  int32_t dim = 0;
  int64_t planned = 0;
  UnnamedDimReason reason = UnnamedDimReason::kNone;
};

/// The unnamed dims (Value::unnamed_symbolic_dims) of `values`, in order.
std::vector<UnnamedBoundaryDim> UnnamedDimsOf(const ir::Graph& graph,
                                              const std::vector<ir::ValueId>& values);

}  // namespace autopar::passes

#endif  // AUTOPAR_PASSES_SYMBOLIC_DIMS_H_
