// Internal to the constant folder (fold_constants*.cc): the tensor it computes
// with, the view of one node an evaluator reads, and the evaluators, one
// function per operator family.
//
// Conventions every evaluator follows:
//  - It returns one tensor per output, or nullopt when it cannot or must not
//    evaluate: an unsupported type or attribute, an index out of range, an
//    integer division by zero, or a result over kMaxFoldedElements.
//  - It never trusts its inputs: malformed models give nullopt, never a
//    crash or undefined behaviour.
//  - Results are normalized (Normalize): integers wrapped to their type's
//    width, floats rounded to float precision.
#ifndef AUTOPAR_PASSES_FOLD_CONSTANTS_INTERNAL_H_
#define AUTOPAR_PASSES_FOLD_CONSTANTS_INTERNAL_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "ir/graph.h"
#include "shapes/dims.h"

namespace autopar::passes::fold {

/// A known tensor: integer and bool types hold `ints`, float types `reals`.
struct Tensor {
  ir::DType dtype = ir::DType::kUndefined;
  std::vector<int64_t> dims;
  std::vector<int64_t> ints;
  std::vector<double> reals;

  bool is_real() const;
  int64_t size() const;
  /// Element `i` as a double / as an integer (reals truncated toward zero).
  double real(int64_t i) const;
  int64_t integer(int64_t i) const;
};

/// True for the dtypes the folder evaluates: integers, bool, float types.
bool IsFoldable(ir::DType dtype);
bool IsRealType(ir::DType dtype);

/// An empty tensor of `dtype` with `dims` and room for its elements; nullopt
/// when the element count is negative, overflows or is over the limit.
std::optional<Tensor> MakeTensor(ir::DType dtype, std::vector<int64_t> dims);
/// Appends one element (converted to the tensor's kind).
void PushReal(Tensor& t, double value);
void PushInt(Tensor& t, int64_t value);
/// Wraps integers to the dtype's width, bools to 0/1, floats to float
/// precision (double stays double).
void Normalize(Tensor& t);

/// Number of elements of `dims`; nullopt when negative or overflowing.
std::optional<int64_t> NumElements(absl::Span<const int64_t> dims);
/// Row-major strides of `dims`.
std::vector<int64_t> Strides(absl::Span<const int64_t> dims);
/// For each element of a tensor of shape `out`, the index of the element of
/// a tensor of shape `in` (which broadcasts to `out`) it reads.
std::vector<int64_t> BroadcastIndices(absl::Span<const int64_t> in, absl::Span<const int64_t> out);

/// For each element of a row-major tensor of `out_dims` (at most `count`
/// elements, its size), the flat source offset `source_of(index)` returns for
/// its multi-index: the walk that Tile, Transpose and broadcasting share.
template <typename SourceOf>
std::vector<int64_t> SourceOffsets(absl::Span<const int64_t> out_dims, int64_t count,
                                   SourceOf source_of) {
  std::vector<int64_t> from;
  from.reserve(static_cast<size_t>(count));
  std::vector<int64_t> index(out_dims.size(), 0);
  for (int64_t flat = 0; flat < count; ++flat) {
    from.push_back(source_of(index));
    for (size_t d = out_dims.size(); d-- > 0;) {
      if (++index[d] < out_dims[d]) break;
      index[d] = 0;
    }
  }
  return from;
}
// Broadcasting and axes follow the shape rules' definitions.
using shapes::BroadcastDims;
using shapes::NormalizeAxis;

/// What an evaluator reads: the node, its inputs (nullptr when absent or not
/// known) and the decoded `value` attribute of Constant/ConstantOfShape.
struct EvalContext {
  const ir::Node& node;
  std::vector<const Tensor*> inputs;
  /// The static shapes of the inputs, for Shape and Size (nullptr: unknown).
  std::vector<const ir::Shape*> input_shapes;
  const Tensor* value_attribute = nullptr;

  int64_t opset() const;
  const Tensor* in(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  /// True when input `i` is named by the node (not an omitted optional).
  bool has_input(size_t i) const { return i < node.inputs.size() && node.inputs[i].valid(); }
  /// Input `i` as an integer list (axes, starts, pads); nullopt when unknown.
  std::optional<std::vector<int64_t>> ints(size_t i) const;
  /// An integer list that opsets moved from an attribute to input `input`.
  std::optional<std::vector<int64_t>> IntList(size_t input, std::string_view attribute,
                                              int64_t first_input_opset) const;
};

using Outputs = std::vector<Tensor>;

// --- fold_constants_elementwise.cc ------------------------------------------------
std::optional<Outputs> EvalUnary(const EvalContext& c);
std::optional<Outputs> EvalCast(const EvalContext& c);
std::optional<Outputs> EvalArithmetic(const EvalContext& c);
std::optional<Outputs> EvalComparison(const EvalContext& c);
std::optional<Outputs> EvalLogical(const EvalContext& c);
std::optional<Outputs> EvalWhere(const EvalContext& c);

// --- fold_constants_shape_ops.cc --------------------------------------------------
std::optional<Outputs> EvalShape(const EvalContext& c);
std::optional<Outputs> EvalSize(const EvalContext& c);
std::optional<Outputs> EvalGather(const EvalContext& c);
std::optional<Outputs> EvalSlice(const EvalContext& c);
std::optional<Outputs> EvalConcat(const EvalContext& c);
std::optional<Outputs> EvalSqueeze(const EvalContext& c);
std::optional<Outputs> EvalUnsqueeze(const EvalContext& c);
std::optional<Outputs> EvalReshape(const EvalContext& c);
std::optional<Outputs> EvalFlatten(const EvalContext& c);
std::optional<Outputs> EvalConstantOfShape(const EvalContext& c);
std::optional<Outputs> EvalRange(const EvalContext& c);
std::optional<Outputs> EvalExpand(const EvalContext& c);
std::optional<Outputs> EvalTile(const EvalContext& c);
std::optional<Outputs> EvalTranspose(const EvalContext& c);
std::optional<Outputs> EvalNonZero(const EvalContext& c);

// --- fold_constants_reduce.cc -----------------------------------------------------
std::optional<Outputs> EvalReduce(const EvalContext& c);
std::optional<Outputs> EvalArgReduce(const EvalContext& c);

}  // namespace autopar::passes::fold

#endif  // AUTOPAR_PASSES_FOLD_CONSTANTS_INTERNAL_H_
