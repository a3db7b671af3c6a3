// Shape rules for control flow. Bodies carry no inferred shapes in the IR, so
// these rules work from the node's own inputs.
#include "passes/shape_rules_internal.h"

namespace autopar::passes::shape_rules {

// Loop(M, cond, v_initial...) → (v_final..., scan_outputs...). A loop-carried
// value is taken to keep the shape of its initial value — what exporters
// produce for counted loops, and what ONNX's own inference cannot prove (it
// leaves such dims symbolic). Scan outputs stay unknown.
Outputs LoopRule(const NodeView& node) {
  Outputs outputs;
  const size_t carried = node.num_inputs() > 2 ? node.num_inputs() - 2 : 0;
  for (size_t i = 0; i < node.num_outputs(); ++i) {
    outputs.push_back(i < carried ? LikeInput(node, 2 + i) : Unranked(ir::DType::kUndefined));
  }
  return outputs;
}

}  // namespace autopar::passes::shape_rules
