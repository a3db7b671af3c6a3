// The dim arithmetic that several operators share, written once: numpy
// broadcasting, the output of a MatMul, the output size of a convolution or
// pooling window (strides, dilations, pads, auto_pad, ceil_mode), Einsum
// equations and the sizes of their indices, and axis normalization.
//
// The shape rules (shape_rules_*.cc) build output shapes from these, the
// constant folder (passes/fold_constants*) broadcasts with them, and the cost
// model (costmodel/op_costs*) sizes MatMuls, convolutions and Einsums and
// estimates unknown outputs with them, so that an operator's geometry has one
// definition.
//
// Functions take ir::Shape, whose dims may be unknown or symbolic; an unknown
// dim stays unknown, and nothing here trusts its inputs: a malformed attribute
// or an overflow gives an unknown dim or an unranked shape, never a crash.
#ifndef AUTOPAR_SHAPES_DIMS_H_
#define AUTOPAR_SHAPES_DIMS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "ir/graph.h"

namespace autopar::shapes {

/// What broadcasting does with two known dims that differ where neither is 1.
enum class DimConflict : uint8_t {
  /// ONNX's rule: the shapes do not broadcast, the result is unranked.
  kUnranked,
  /// The larger dim wins. For sizes estimated from other estimates (the cost
  /// model's guesses for values without a shape), where a rough size is more
  /// useful than none.
  kLarger,
};

// --- Broadcasting ------------------------------------------------------------

/// Numpy (multidirectional) broadcasting of all `shapes`: right-aligned, a 1
/// stretches to the other dim, equal symbols stay. Unranked when one shape is
/// unranked, or when two known dims conflict and `conflict` is kUnranked.
ir::Shape Broadcast(absl::Span<const ir::Shape> shapes,
                    DimConflict conflict = DimConflict::kUnranked);

/// Broadcast() of fully known dims; nullopt when they do not broadcast.
std::optional<std::vector<int64_t>> BroadcastDims(absl::Span<const absl::Span<const int64_t>> dims,
                                                  DimConflict conflict = DimConflict::kUnranked);

// --- MatMul ------------------------------------------------------------------

struct MatMulOptions {
  /// Swap the last two dims of A (B) first, as Gemm and FusedMatMul's
  /// transA (transB) do; ignored for a 1-D operand.
  bool trans_a = false;
  bool trans_b = false;
  /// kLarger also accepts a contracted dim that differs between A and B.
  DimConflict conflict = DimConflict::kUnranked;
};

/// The output of A × B with numpy matmul semantics: a 1-D A gets a 1
/// prepended, a 1-D B a 1 appended, both removed again; batch dims broadcast.
/// Unranked when either rank is unknown or 0, or (kUnranked) the contracted
/// dims or batch dims disagree.
ir::Shape MatMulShape(const ir::Shape& a, const ir::Shape& b, const MatMulOptions& options = {});

// --- Convolution and pooling windows --------------------------------------------

/// The geometry of a convolution or pooling window over `spatial` dims.
struct Window {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  // begins, then ends
  std::string auto_pad;       // NOTSET, VALID, SAME_UPPER, SAME_LOWER
  bool ceil_mode = false;
};

/// Reads `node`'s window attributes for `spatial` dims. The kernel comes from
/// kernel_shape or, when that is absent, from `weight_kernel` (a convolution's
/// weight dims after the first two). Absent strides, dilations and pads take
/// their defaults (1, 1, 0); nullopt when a list has the wrong length or a
/// kernel, stride or dilation is not positive.
std::optional<Window> ReadWindow(const ir::Node& node, size_t spatial,
                                 const std::optional<std::vector<int64_t>>& weight_kernel);

/// (kernel - 1) * dilation + 1 of spatial dim `i`; nullopt on overflow.
std::optional<int64_t> EffectiveKernel(const Window& window, size_t i);

/// Output size of spatial dim `i` for an input of size `in`:
///   SAME_UPPER/SAME_LOWER: ceil(in / stride)
///   NOTSET/VALID (VALID = no padding):
///     floor or ceil((in + pad_begin + pad_end - effective_kernel) / stride) + 1
///   with effective_kernel = (kernel - 1) * dilation + 1.
/// With ceil_mode, a last window that would start in the end padding is
/// dropped, as PyTorch, ONNX Runtime and the ONNX reference (opset 19+) do.
/// Unknown when `in` is, or the window does not fit the padded input.
ir::Dim WindowOutput(const ir::Dim& in, const Window& window, size_t i);

/// The spatial kernel dims of a convolution weight [M, C/group, k1..kn] with
/// `spatial` spatial dims, when all are known.
std::optional<std::vector<int64_t>> WeightKernel(const ir::Shape& weight, size_t spatial);

/// The output of a windowed operator on x [N, C, D1..Dn]: [N, channels,
/// O1..On], each O from WindowOutput (unknown when the attributes are
/// malformed). Unranked when x's rank is unknown or below 3.
ir::Shape WindowedShape(const ir::Node& node, const ir::Shape& x, const ir::Dim& channels,
                        const std::optional<std::vector<int64_t>>& weight_kernel);

// --- Einsum ------------------------------------------------------------------

/// One operand (or the output) of an Einsum equation: its index letters, and
/// where among them its "..." stands (-1: none).
struct EinsumTerm {
  std::string letters;
  int ellipsis_at = -1;
};

struct EinsumEquation {
  std::vector<EinsumTerm> inputs;
  /// Absent without "->": the output is then the ellipsis dims followed by
  /// the letters used exactly once, in character order.
  std::optional<EinsumTerm> output;
};

/// Parses an Einsum equation ("ij,jk->ik", "...ij,...jk", spaces ignored);
/// nullopt when a term holds anything but letters and one "...".
std::optional<EinsumEquation> ParseEinsum(std::string_view equation);

/// The size of every index of an equation over given operand shapes.
struct EinsumIndices {
  std::map<char, ir::Dim> letters;
  /// How many operand terms use each letter.
  std::map<char, int> uses;
  /// The broadcast of the operands' "..." dims (rank 0 when none has one).
  ir::Shape ellipsis = ir::Shape::FromDims({});
  bool any_ellipsis = false;
};

/// Binds the letters and "..." of `equation`'s inputs to the dims of
/// `operands` (one shape per input term, each of known rank). A letter on
/// dims 1 and n is n (a broadcast); on two other different known dims it is
/// a conflict: nullopt (kUnranked) or the larger dim (kLarger). nullopt too
/// when the term count or an operand's rank does not fit the equation.
std::optional<EinsumIndices> BindEinsumIndices(const EinsumEquation& equation,
                                               absl::Span<const ir::Shape> operands,
                                               DimConflict conflict = DimConflict::kUnranked);

/// The output shape of `equation` over `operands`; unranked when the
/// operands do not fit it or the output names a letter no input has.
ir::Shape EinsumShape(const EinsumEquation& equation, absl::Span<const ir::Shape> operands);

// --- Axes and overflow-checked arithmetic ---------------------------------------

/// `axis` in [0, rank), from ONNX's [-rank, rank); nullopt when out of range.
std::optional<int64_t> NormalizeAxis(int64_t axis, int64_t rank);

/// a + b and a - b; nullopt on int64 overflow (ir::CheckedMul multiplies).
std::optional<int64_t> CheckedAdd(int64_t a, int64_t b);
std::optional<int64_t> CheckedSub(int64_t a, int64_t b);
/// ceil(a / b) and floor(a / b) for b > 0 and any a; nullopt for b <= 0.
std::optional<int64_t> CeilDiv(int64_t a, int64_t b);
std::optional<int64_t> FloorDiv(int64_t a, int64_t b);

}  // namespace autopar::shapes

#endif  // AUTOPAR_SHAPES_DIMS_H_
