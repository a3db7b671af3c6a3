// Per-operator shape and type rules: our own propagation for operators that
// the installed ONNX library cannot infer (newer opsets, contrib domains), and
// for values its inference left incomplete. One rule per operator family,
// dispatched on OpKind (STYLE.md rule 3).
#ifndef AUTOPAR_PASSES_SHAPE_RULES_H_
#define AUTOPAR_PASSES_SHAPE_RULES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace autopar::passes {

/// What a rule knows about one output.
struct OutputType {
  ir::DType dtype = ir::DType::kUndefined;
  ir::Shape shape;  // unknown rank when the rule cannot tell
  /// Contents, for small integer results (Shape, Gather of a shape, Concat of
  /// shape pieces...), so that Reshape/Expand targets can be resolved.
  std::optional<std::vector<int64_t>> int_data;
};

/// The types of `node`'s outputs computed from its inputs' types (and known
/// integer contents) and attributes, one entry per output; nullopt when no
/// rule covers the operator. Entries may still be partial when inputs are.
std::optional<std::vector<OutputType>> InferOutputTypes(const ir::Graph& graph,
                                                        const ir::Node& node);

}  // namespace autopar::passes

#endif  // AUTOPAR_PASSES_SHAPE_RULES_H_
