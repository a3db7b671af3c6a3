#include "costmodel/node_cost.h"

#include <array>

namespace autopar::costmodel {
namespace {

constexpr std::array<std::string_view, kNumOpClasses> kOpClassNames = {
    "conv",      "matmul",      "recurrent",     "normalization", "pooling",
    "reduction", "elementwise", "data_movement", "metadata",      "other",
};

constexpr std::array<std::string_view, kNumDTypeClasses> kDTypeClassNames = {"fp32", "fp16",
                                                                             "int8"};

}  // namespace

std::string_view OpClassName(OpClass op_class) {
  return kOpClassNames[static_cast<size_t>(op_class)];
}

std::optional<OpClass> OpClassFromName(std::string_view name) {
  for (size_t i = 0; i < kOpClassNames.size(); ++i) {
    if (kOpClassNames[i] == name) return static_cast<OpClass>(i);
  }
  return std::nullopt;
}

std::string_view DTypeClassName(DTypeClass dtype_class) {
  return kDTypeClassNames[static_cast<size_t>(dtype_class)];
}

std::optional<DTypeClass> DTypeClassFromName(std::string_view name) {
  for (size_t i = 0; i < kDTypeClassNames.size(); ++i) {
    if (kDTypeClassNames[i] == name) return static_cast<DTypeClass>(i);
  }
  return std::nullopt;
}

std::string_view CostRuleName(CostRule rule) {
  switch (rule) {
    case CostRule::kNone:
      return "none";
    case CostRule::kFormula:
      return "formula";
    case CostRule::kDataMovement:
      return "data_movement";
    case CostRule::kMetadata:
      return "metadata";
    case CostRule::kSubgraph:
      return "subgraph";
  }
  return "none";
}

}  // namespace autopar::costmodel
