#include "ir/shape.h"

#include <limits>

#include "gtest/gtest.h"

namespace autopar::ir {
namespace {

TEST(ShapeTest, StaticShapeCountsElements) {
  Shape s({1, 3, 224, 224});
  EXPECT_TRUE(s.IsStatic());
  EXPECT_EQ(s.NumElements(), 150528);
  EXPECT_EQ(s.ToString(), "[1,3,224,224]");
}

TEST(ShapeTest, ScalarHasOneElement) {
  Shape s(std::vector<int64_t>{});
  EXPECT_TRUE(s.IsStatic());
  EXPECT_EQ(s.NumElements(), 1);
  EXPECT_EQ(s.ToString(), "[]");
}

TEST(ShapeTest, UnknownRankIsNotStatic) {
  Shape s;
  EXPECT_FALSE(s.has_rank());
  EXPECT_FALSE(s.IsStatic());
  EXPECT_EQ(s.NumElements(), std::nullopt);
  EXPECT_EQ(s.ToString(), "unranked");
}

TEST(ShapeTest, SymbolicAndUnnamedDimsPrint) {
  Shape s = Shape::FromDims({Dim{-1, "batch"}, Dim{128, ""}, Dim{-1, ""}});
  EXPECT_FALSE(s.IsStatic());
  EXPECT_EQ(s.ToString(), "[batch,128,?]");
}

TEST(ShapeTest, OverflowingElementCountIsUnknown) {
  constexpr int64_t kHuge = int64_t{1} << 40;
  Shape s({kHuge, kHuge});
  EXPECT_TRUE(s.IsStatic());
  EXPECT_EQ(s.NumElements(), std::nullopt);
}

TEST(ShapeTest, CheckedMul) {
  EXPECT_EQ(CheckedMul(6, 7), 42);
  EXPECT_EQ(CheckedMul(std::numeric_limits<int64_t>::max(), 2), std::nullopt);
  EXPECT_EQ(CheckedMul(-1, 2), std::nullopt);
}

}  // namespace
}  // namespace autopar::ir
