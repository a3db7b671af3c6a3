// The vector-Jacobian rules: for each operator, how the gradients of its
// inputs follow from the gradients of its outputs, written as standard ONNX
// nodes (Note [Gradient rules]). The table in gradient_rules.cc lists every
// operator that has a rule, which of its inputs take a gradient, and the
// formula in one line; the rules themselves live in gradient_rules_*.cc by
// operator family, the way the cost formulas do.
//
// Note [Gradient rules]: a rule is called once per forward node on the
// gradient path (some input needs a gradient and some output has one), in
// reverse topological order, so the gradient of each output is complete when
// the rule runs. It reads the forward node's inputs and outputs by name (the
// forward values stay alive in the step model: the stash), their static
// shapes and dtypes, and dY(i), the gradient of output i, empty when output i
// has none (it is zero: the rule leaves its term out or writes zeros). It
// sets a gradient for each input with Needs(i); a rule that cannot handle an
// attribute or operand form returns an error naming what it cannot do — a
// gradient is never silently zero. Gradients have their value's shape and
// dtype exactly (broadcast operands are summed back with SumToShape).
#ifndef AUTOPAR_TRAINING_GRADIENT_RULES_H_
#define AUTOPAR_TRAINING_GRADIENT_RULES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "ir/graph.h"
#include "training/graph_emitter.h"

namespace autopar::training {

/// What a rule sees of one forward node, and where it puts its results.
class NodeGradient {
 public:
  NodeGradient(const ir::Graph& graph, const ir::Node& node, GraphEmitter& emit,
               std::vector<std::string> output_gradients, std::vector<bool> needs_input_gradient);

  const ir::Node& node() const { return node_; }
  GraphEmitter& emit() { return emit_; }
  int num_inputs() const { return static_cast<int>(node_.inputs.size()); }
  int num_outputs() const { return static_cast<int>(node_.outputs.size()); }

  /// Input i is present (not an omitted optional input).
  bool HasInput(int i) const;
  /// The forward input's / output's name, static dims and dtype.
  const std::string& X(int i) const;
  const std::string& Y(int i) const;
  std::vector<int64_t> XDims(int i) const;
  std::vector<int64_t> YDims(int i) const;
  int64_t XRank(int i) const { return static_cast<int64_t>(XDims(i).size()); }
  ir::DType XType(int i) const;
  ir::DType YType(int i) const;
  /// A known integer input's contents (axes, shapes, pads read as tensors).
  const std::optional<std::vector<int64_t>>& XInts(int i) const;

  /// The gradient of output i: its name, or "" when it has none (zero).
  const std::string& dY(int i) const { return output_gradients_[i]; }
  /// dY(i), or zeros of output i's shape when it has none.
  std::string dYOrZeros(int i);
  /// Input i takes a gradient here.
  bool Needs(int i) const { return i < num_inputs() && needs_input_gradient_[i]; }
  /// Sets the gradient of input i (called for each i with Needs(i)).
  void SetGradient(int i, std::string gradient);
  const std::vector<std::string>& input_gradients() const { return input_gradients_; }

  /// An error naming this node: "node 'NAME' (OP): <what>".
  absl::Status Unsupported(std::string_view what) const;

 private:
  const ir::Graph& graph_;
  const ir::Node& node_;
  GraphEmitter& emit_;
  std::vector<std::string> output_gradients_;
  std::vector<bool> needs_input_gradient_;
  std::vector<std::string> input_gradients_;
};

using GradientRuleFn = absl::Status (*)(NodeGradient& node);

/// One line of the table.
struct GradientRule {
  ir::OpKind kind;
  GradientRuleFn rule;
  /// Input slots that take a gradient; kAllInputs for every input.
  uint32_t differentiable_inputs;
  /// The formula, one line (docs and the coverage table print it).
  std::string_view formula;
};

/// Every input slot.
inline constexpr uint32_t kAllInputs = 0xffffffffu;
/// The slots {i, j, ...} as a mask.
constexpr uint32_t Slots(std::initializer_list<int> slots) {
  uint32_t mask = 0;
  for (int s : slots) mask |= 1u << s;
  return mask;
}

/// The rule for `kind`, or nullptr when it has none.
const GradientRule* FindGradientRule(ir::OpKind kind);
/// The whole table, in its order.
absl::Span<const GradientRule> AllGradientRules();

/// Input slot `slot` of a node of `kind` carries a gradient: the kind has a
/// rule listing the slot. Kinds without a rule: every slot (so that a missing
/// rule on the gradient path is found and reported, never skipped).
bool SlotTakesGradient(ir::OpKind kind, int slot);

}  // namespace autopar::training

#endif  // AUTOPAR_TRAINING_GRADIENT_RULES_H_
