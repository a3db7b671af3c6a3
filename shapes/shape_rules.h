// Per-operator shape and type rules: our own propagation for operators that
// the installed ONNX library cannot infer (newer opsets, contrib domains), and
// for values its inference left incomplete. One rule per operator family,
// dispatched on OpKind once, in shape_rules.cc.
#ifndef AUTOPAR_SHAPES_SHAPE_RULES_H_
#define AUTOPAR_SHAPES_SHAPE_RULES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace autopar::shapes {

/// What a rule knows about one output.
struct OutputType {
  /// kSequence for sequence-valued outputs, whose dtype and shape stay
  /// undefined (a sequence's elements are described by the rules that read
  /// it, see shape_rules_control_flow.cc).
  ir::TypeKind type_kind = ir::TypeKind::kTensor;
  ir::DType dtype = ir::DType::kUndefined;
  ir::Shape shape;  // unknown rank when the rule cannot tell
  /// Contents, for small integer results (Shape, Gather of a shape, Concat of
  /// shape pieces...), so that Reshape/Expand targets can be resolved.
  std::optional<std::vector<int64_t>> int_data;
  /// Non-empty when the shape is an estimate (Note [Shape estimates] in
  /// passes/infer_shapes.h): what was assumed, e.g. "the larger branch (then)".
  std::string estimate;
};

struct RuleOptions {
  /// Allow estimated outputs; without it, what would be estimated stays
  /// unknown.
  bool estimate = true;
  /// Trip count assumed for loops whose count is not a constant.
  int64_t loop_trips = 10;
};

/// An estimate PropagateRules made and kept.
struct RuleEstimate {
  ir::ValueId value;
  std::string assumed;
};

/// The types of `node`'s outputs computed from its inputs' types (and known
/// integer contents) and attributes, one entry per output; nullopt when no
/// rule covers the operator. Entries may still be partial when inputs are.
std::optional<std::vector<OutputType>> InferOutputTypes(const ir::Graph& graph,
                                                        const ir::Node& node,
                                                        const RuleOptions& options = {});

/// True when a rule covers `kind` (InferOutputTypes answers for its nodes).
/// ir/op_kinds.def lists the kinds that have one (ir::kShapeRule); a test
/// holds the two to each other.
bool HasRule(ir::OpKind kind);

/// Applies the rules to every node of `graph` in order, filling in the
/// dtypes, dims and int_data of outputs that are not yet static. Returns the
/// estimates it kept, one per value.
std::vector<RuleEstimate> PropagateRules(ir::Graph& graph, const RuleOptions& options);

}  // namespace autopar::shapes

#endif  // AUTOPAR_SHAPES_SHAPE_RULES_H_
