// OpKind: the operator of a node as an enum, resolved once at import so that
// passes dispatch on an integer, never on strings (unknown ops show at import).
#ifndef AUTOPAR_IR_OP_KIND_H_
#define AUTOPAR_IR_OP_KIND_H_

#include <cstdint>
#include <string_view>

#include "absl/types/span.h"

namespace autopar::ir {

enum class OpKind : uint16_t {
  kUnknown = 0,
#define OP(kind, domain, op_type, rules) k##kind,
#include "ir/op_kinds.def"
#undef OP
};

/// The per-operator rules a kind has besides its cost formula, as
/// ir/op_kinds.def lists them (every kind has a cost formula: the cost
/// dispatch is a switch without a default, so a kind without one does not
/// compile). Each library's registry answers for its own rules
/// (shapes::HasRule, passes::CanFold), and a test of each checks every kind
/// against this table, naming the operator where they disagree.
enum OpRules : uint8_t {
  kNoRules = 0,
  /// shapes/ has a shape rule for it (shapes/shape_rules.h); without one,
  /// ONNX's inference and the model's declared types are all there is.
  kShapeRule = 1 << 0,
  /// The constant folder evaluates it (passes/fold_constants.h).
  kFoldRule = 1 << 1,
};

/// Resolves (domain, op_type) to its OpKind. "ai.onnx" is the default domain
/// too. Unknown pairs give kUnknown: the node still loads and is placed, and
/// the cost model says it has no formula for it.
OpKind LookupOpKind(std::string_view domain, std::string_view op_type);

/// The op type string of a kind ("Conv"); "" for kUnknown.
std::string_view OpKindName(OpKind kind);

/// The canonical domain of a kind ("" for the default domain).
std::string_view OpKindDomain(OpKind kind);

/// The rules ir/op_kinds.def lists for `kind` (an OpRules bit set);
/// kNoRules for kUnknown.
uint8_t OpKindRules(OpKind kind);

/// Every kind of ir/op_kinds.def, in order (kUnknown excluded).
absl::Span<const OpKind> AllOpKinds();

}  // namespace autopar::ir

#endif  // AUTOPAR_IR_OP_KIND_H_
