// Internal to the shape rules (shape_rules*.cc): the read-only view of one node
// that a rule works from, the helpers the rule files share (dim products,
// axis lists, folding of small integer tensors; broadcasting, windows and
// checked arithmetic are in dims.h), and the rules themselves, one function
// per operator family.
//
// Conventions every rule follows:
//  - A rule returns one OutputType per output it knows about; the dispatcher
//    (shape_rules.cc) pads the rest with unranked outputs.
//  - A rule never trusts its inputs: an axis out of range, a negative or
//    overflowing dim, an index outside its tensor or a malformed attribute
//    gives an unknown dim or an unranked shape, never a crash or UB.
//  - Dims it cannot compute are unknown; symbolic dims ("batch") pass through
//    wherever the output dim is the input dim unchanged.
//  - int_data is only produced for small integer (or bool) outputs with a
//    static shape; the dispatcher drops any that disagrees with its shape.
#ifndef AUTOPAR_SHAPES_SHAPE_RULES_INTERNAL_H_
#define AUTOPAR_SHAPES_SHAPE_RULES_INTERNAL_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "ir/graph.h"
#include "shapes/dims.h"
#include "shapes/shape_rules.h"

namespace autopar::shapes::rules {

using Outputs = std::vector<OutputType>;

/// The opset assumed for nodes that carry none (built in code with opset 0).
inline constexpr int64_t kNewestOpset = 23;

/// What a rule may read of its node: input types, known integer contents,
/// attributes. Absent optional inputs read as unranked and undefined.
class NodeView {
 public:
  NodeView(const ir::Graph& graph, const ir::Node& node, const RuleOptions& options = {})
      : graph_(graph), node_(node), options_(options) {}

  const ir::Node& node() const { return node_; }
  const ir::Graph& graph() const { return graph_; }
  const RuleOptions& options() const { return options_; }
  ir::OpKind kind() const { return node_.kind; }
  int64_t opset() const { return node_.opset > 0 ? node_.opset : kNewestOpset; }
  size_t num_inputs() const { return node_.inputs.size(); }
  size_t num_outputs() const { return node_.outputs.size(); }

  /// True when input `i` exists and is not an omitted optional input.
  bool has_input(size_t i) const;
  bool has_output(size_t i) const;
  ir::DType dtype(size_t i) const;
  /// Unranked when the input is absent or not a tensor.
  const ir::Shape& shape(size_t i) const;
  /// The contents of input `i` when known (int_data, or empty for a static
  /// shape with no elements).
  std::optional<absl::Span<const int64_t>> ints(size_t i) const;
  /// The one value of a known one-element input (a scalar k, depth, start...).
  std::optional<int64_t> scalar(size_t i) const;

  int64_t GetInt(std::string_view name, int64_t default_value) const {
    return node_.GetInt(name, default_value);
  }
  std::vector<int64_t> GetInts(std::string_view name) const { return node_.GetInts(name); }
  std::string GetString(std::string_view name, std::string_view default_value) const {
    return node_.GetString(name, default_value);
  }
  bool HasAttribute(std::string_view name) const { return node_.FindAttribute(name) != nullptr; }

 private:
  const ir::Value* input_value(size_t i) const;

  const ir::Graph& graph_;
  const ir::Node& node_;
  const RuleOptions& options_;
  ir::Shape unranked_;
};

// --- Output types -------------------------------------------------------------

OutputType Unranked(ir::DType dtype);
OutputType WithShape(ir::DType dtype, ir::Shape shape);
OutputType WithDims(ir::DType dtype, std::vector<ir::Dim> dims);
/// The dtype and shape of input `i`.
OutputType LikeInput(const NodeView& node, size_t i);

// --- Dims ----------------------------------------------------------------------

ir::Dim UnknownDim();
/// A known dim, or unknown when `value` is nullopt or negative.
ir::Dim KnownDim(std::optional<int64_t> value);
/// The value of a known dim.
std::optional<int64_t> DimValue(const ir::Dim& dim);
/// Known rank as a signed number.
std::optional<int64_t> Rank(const ir::Shape& shape);
/// The dims of a shape known to be 1-D (a shape tensor): its length.
std::optional<int64_t> Length1D(const ir::Shape& shape);

/// Product of the known dims; nullopt when one is unknown or it overflows.
std::optional<int64_t> Product(absl::Span<const ir::Dim> dims);
std::optional<int64_t> Product(absl::Span<const int64_t> values);
/// a * b as a dim: known when both are (and no overflow), `b` itself when a is 1.
ir::Dim MulDims(const ir::Dim& a, const ir::Dim& b);

// --- Axes ----------------------------------------------------------------------

/// Normalized axes, in the given order; nullopt when one is out of range or
/// repeated.
std::optional<std::vector<int64_t>> NormalizeAxes(absl::Span<const int64_t> axes, int64_t rank);

/// An integer list that opsets moved from an attribute to an input (axes,
/// pads, split, starts...).
struct IntList {
  bool given = false;                          // the node supplies it
  std::optional<std::vector<int64_t>> values;  // its contents, when known
};
/// Reads the list from input `input` when the node's opset is at least
/// `first_input_opset`, else from attribute `attribute`.
IntList ReadIntList(const NodeView& node, size_t input, std::string_view attribute,
                    int64_t first_input_opset);

// --- Integer contents (int_data) ------------------------------------------------

/// `data` of a tensor of static shape `from`, broadcast to static shape `to`;
/// nullopt when the shapes do not broadcast or `to` is too large to keep.
std::optional<std::vector<int64_t>> BroadcastInts(absl::Span<const int64_t> data,
                                                  const ir::Shape& from, const ir::Shape& to);

/// An element-wise operation on known integers; nullopt for an undefined
/// result (division by zero, overflow).
using IntOp = std::function<std::optional<int64_t>(absl::Span<const int64_t>)>;
/// Applies `op` element-wise to the known contents of inputs `inputs`,
/// broadcast to `out`; nullopt when one is unknown or any result undefined.
std::optional<std::vector<int64_t>> FoldInts(const NodeView& node, absl::Span<const size_t> inputs,
                                             const ir::Shape& out, const IntOp& op);

/// True for the dtypes int_data can hold: integers and bool.
bool IsIntegerOrBool(ir::DType dtype);

// --- Rules: element-wise (shape_rules_elementwise.cc) ----------------------------------

Outputs SameAsInput(const NodeView& node);
Outputs UnaryRule(const NodeView& node);
Outputs BoolOfInputRule(const NodeView& node);
Outputs BroadcastRule(const NodeView& node);
Outputs WhereRule(const NodeView& node);
Outputs DropoutRule(const NodeView& node);
Outputs CastRule(const NodeView& node);
Outputs QuantizeLinearRule(const NodeView& node);
Outputs DequantizeLinearRule(const NodeView& node);
Outputs DynamicQuantizeLinearRule(const NodeView& node);
Outputs QLinearBinaryRule(const NodeView& node);
Outputs RandomRule(const NodeView& node);
Outputs ConstantRule(const NodeView& node);
Outputs WindowRule(const NodeView& node);

// --- Rules: linear algebra, conv, pooling (shape_rules_nn.cc) ----------------------

Outputs MatMulRule(const NodeView& node);
Outputs GemmRule(const NodeView& node);
Outputs ConvRule(const NodeView& node);
Outputs ConvTransposeRule(const NodeView& node);
Outputs PoolRule(const NodeView& node);
Outputs GlobalPoolRule(const NodeView& node);
Outputs RoiPoolRule(const NodeView& node);
Outputs MaxUnpoolRule(const NodeView& node);
Outputs EinsumRule(const NodeView& node);
Outputs DetRule(const NodeView& node);

// --- Rules: normalization, recurrent, attention, losses (shape_rules_models.cc) ------

Outputs BatchNormalizationRule(const NodeView& node);
Outputs LayerNormalizationRule(const NodeView& node);
Outputs SkipLayerNormalizationRule(const NodeView& node);
Outputs EmbedLayerNormalizationRule(const NodeView& node);
Outputs RecurrentRule(const NodeView& node);
Outputs AttentionRule(const NodeView& node);
Outputs LossRule(const NodeView& node);
Outputs GridSampleRule(const NodeView& node);
Outputs AffineGridRule(const NodeView& node);

// --- Rules: reshaping and data movement (shape_rules_layout.cc) -------------------

Outputs ReshapeRule(const NodeView& node);
Outputs FlattenRule(const NodeView& node);
Outputs TransposeRule(const NodeView& node);
Outputs SqueezeRule(const NodeView& node);
Outputs UnsqueezeRule(const NodeView& node);
Outputs ConcatRule(const NodeView& node);
Outputs SplitRule(const NodeView& node);
Outputs SliceRule(const NodeView& node);
Outputs ExpandRule(const NodeView& node);
Outputs TileRule(const NodeView& node);
Outputs PadRule(const NodeView& node);
Outputs CenterCropPadRule(const NodeView& node);
Outputs DepthToSpaceRule(const NodeView& node);
Outputs SpaceToDepthRule(const NodeView& node);

// --- Rules: indexing, reductions, shape and generator ops (shape_rules_index.cc) -----

Outputs GatherRule(const NodeView& node);
Outputs GatherElementsRule(const NodeView& node);
Outputs GatherNDRule(const NodeView& node);
Outputs ReduceRule(const NodeView& node);
Outputs ArgReduceRule(const NodeView& node);
Outputs TopKRule(const NodeView& node);
Outputs ShapeRule(const NodeView& node);
Outputs SizeRule(const NodeView& node);
Outputs ConstantOfShapeRule(const NodeView& node);
Outputs RangeRule(const NodeView& node);
Outputs OneHotRule(const NodeView& node);
Outputs ResizeRule(const NodeView& node);
Outputs Col2ImRule(const NodeView& node);
Outputs DataDependentRule(const NodeView& node);

// --- Rules: control flow (shape_rules_control_flow.cc) -------------------------
Outputs IfRule(const NodeView& node);
Outputs LoopRule(const NodeView& node);
Outputs ScanRule(const NodeView& node);
Outputs SequenceRule(const NodeView& node);
Outputs ConcatFromSequenceRule(const NodeView& node);
Outputs SequenceAtRule(const NodeView& node);
Outputs SequenceLengthRule(const NodeView& node);

}  // namespace autopar::shapes::rules

#endif  // AUTOPAR_SHAPES_SHAPE_RULES_INTERNAL_H_
