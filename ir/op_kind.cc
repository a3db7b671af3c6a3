#include "ir/op_kind.h"

#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace autopar::ir {
namespace {

struct OpKindInfo {
  std::string_view domain;
  std::string_view op_type;
  uint8_t rules;
};

constexpr OpKindInfo kOpKindInfo[] = {
    {"", "", kNoRules},
#define OP(kind, domain, op_type, rules) {domain, op_type, rules},
#include "ir/op_kinds.def"
#undef OP
};

constexpr OpKind kAllOpKinds[] = {
#define OP(kind, domain, op_type, rules) OpKind::k##kind,
#include "ir/op_kinds.def"
#undef OP
};

using OpKindTable = absl::flat_hash_map<std::pair<std::string, std::string>, OpKind>;

// Built on first use (no static constructors); never destroyed.
const OpKindTable& Table() {
  static const OpKindTable* table = [] {
    auto* t = new OpKindTable();
    for (size_t i = 1; i < std::size(kOpKindInfo); ++i) {
      t->emplace(
          std::make_pair(std::string(kOpKindInfo[i].domain), std::string(kOpKindInfo[i].op_type)),
          static_cast<OpKind>(i));
    }
    return t;
  }();
  return *table;
}

}  // namespace

OpKind LookupOpKind(std::string_view domain, std::string_view op_type) {
  if (domain == "ai.onnx") domain = "";
  auto it = Table().find(std::make_pair(std::string(domain), std::string(op_type)));
  return it == Table().end() ? OpKind::kUnknown : it->second;
}

std::string_view OpKindName(OpKind kind) {
  auto index = static_cast<size_t>(kind);
  return index < std::size(kOpKindInfo) ? kOpKindInfo[index].op_type : "";
}

std::string_view OpKindDomain(OpKind kind) {
  auto index = static_cast<size_t>(kind);
  return index < std::size(kOpKindInfo) ? kOpKindInfo[index].domain : "";
}

uint8_t OpKindRules(OpKind kind) {
  auto index = static_cast<size_t>(kind);
  return index < std::size(kOpKindInfo) ? kOpKindInfo[index].rules : uint8_t{kNoRules};
}

absl::Span<const OpKind> AllOpKinds() { return kAllOpKinds; }

}  // namespace autopar::ir
