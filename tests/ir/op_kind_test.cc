#include "ir/op_kind.h"

#include "gtest/gtest.h"

namespace autopar::ir {
namespace {

TEST(OpKindTest, DefaultDomainOps) {
  EXPECT_EQ(LookupOpKind("", "Conv"), OpKind::kConv);
  EXPECT_EQ(LookupOpKind("ai.onnx", "MatMul"), OpKind::kMatMul);
  EXPECT_EQ(OpKindName(OpKind::kConv), "Conv");
  EXPECT_EQ(OpKindDomain(OpKind::kConv), "");
}

TEST(OpKindTest, SameOpTypeInOtherDomainsIsADifferentKind) {
  EXPECT_EQ(LookupOpKind("com.microsoft", "Gelu"), OpKind::kMsGelu);
  EXPECT_EQ(LookupOpKind("", "Gelu"), OpKind::kGelu);
  EXPECT_EQ(LookupOpKind("ai.onnx.ml", "Normalizer"), OpKind::kMlNormalizer);
}

TEST(OpKindTest, UnknownOpsAreUnknown) {
  EXPECT_EQ(LookupOpKind("", "NoSuchOp"), OpKind::kUnknown);
  EXPECT_EQ(LookupOpKind("my.domain", "Conv"), OpKind::kUnknown);
  EXPECT_EQ(OpKindName(OpKind::kUnknown), "");
}

TEST(OpKindTest, EveryKindRoundTripsThroughItsName) {
  for (uint16_t i = 1; i < 300; ++i) {
    auto kind = static_cast<OpKind>(i);
    if (OpKindName(kind).empty()) break;
    EXPECT_EQ(LookupOpKind(OpKindDomain(kind), OpKindName(kind)), kind) << OpKindName(kind);
  }
}

}  // namespace
}  // namespace autopar::ir
