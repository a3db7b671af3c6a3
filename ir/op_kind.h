// OpKind: the operator of a node as an enum, resolved once at import so that
// passes dispatch on an integer, never on strings (STYLE.md rule 3).
#ifndef AUTOPAR_IR_OP_KIND_H_
#define AUTOPAR_IR_OP_KIND_H_

#include <cstdint>
#include <string_view>

namespace autopar::ir {

enum class OpKind : uint16_t {
  kUnknown = 0,
#define OP(kind, domain, op_type) k##kind,
#include "ir/op_kinds.def"
#undef OP
};

/// Resolves (domain, op_type) to its OpKind. "ai.onnx" is the default domain
/// too. Unknown pairs give kUnknown: the node still loads and is placed, and
/// the cost model says it has no formula for it.
OpKind LookupOpKind(std::string_view domain, std::string_view op_type);

/// The op type string of a kind ("Conv"); "" for kUnknown.
std::string_view OpKindName(OpKind kind);

/// The canonical domain of a kind ("" for the default domain).
std::string_view OpKindDomain(OpKind kind);

}  // namespace autopar::ir

#endif  // AUTOPAR_IR_OP_KIND_H_
