#include "passes/shape_rules.h"

namespace autopar::passes {

std::optional<std::vector<OutputType>> InferOutputTypes(const ir::Graph& graph,
                                                        const ir::Node& node) {
  (void)graph;
  (void)node;
  return std::nullopt;
}

}  // namespace autopar::passes
