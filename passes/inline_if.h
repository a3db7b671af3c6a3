// InlineKnownIfs: replaces each If of the main graph whose condition is known
// (folded from constants or `--input-value`) by the nodes of its taken branch,
// in the model proto itself, so that they are placed and split like any other
// nodes instead of riding along as one opaque unit.
//
// Note [If inlining]: the branch's nodes go where the If was. Names the branch
// defines (its nodes' outputs, its initializers, and names defined in bodies
// nested inside it) are renamed when they clash with a name used elsewhere in
// the model; names it reads from the enclosing scope stay as they are (they
// are still bound there). The branch's outputs take the If's output names: an
// output a branch node produces is renamed to it, any other (an outer value,
// an initializer, an output listed twice) goes through an Identity. Nodes
// that only fed the condition are removed when nothing else reads them. An If
// is kept whole (and estimated as before) when its branch holds sparse or
// external initializers.
#ifndef AUTOPAR_PASSES_INLINE_IF_H_
#define AUTOPAR_PASSES_INLINE_IF_H_

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "onnx_io/model.h"

namespace autopar::passes {

/// Inlines the Ifs of `graph` (the IR of `model`, shapes inferred) whose
/// condition has known contents, rewriting `model.proto`; returns how many.
/// The caller rebuilds the IR from the rewritten proto: `graph` no longer
/// matches it once this returns a positive count.
absl::StatusOr<int> InlineKnownIfs(onnx_io::Model& model, const ir::Graph& graph);

}  // namespace autopar::passes

#endif  // AUTOPAR_PASSES_INLINE_IF_H_
