// Tests of shapes/dims.cc: broadcasting, MatMul, windows and Einsum on
// shapes written out by hand, including the estimate mode (kLarger) the cost
// model uses and the malformed attributes a rule must survive.
#include "shapes/dims.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace autopar::shapes {
namespace {

using ::testing::ElementsAre;
using ::testing::Optional;

ir::Dim Sym(const char* name) { return ir::Dim{-1, name}; }

ir::Node WindowNode(std::vector<ir::Attribute> attributes) {
  ir::Node node;
  node.op_type = "Conv";
  node.kind = ir::OpKind::kConv;
  node.attributes = std::move(attributes);
  return node;
}

TEST(BroadcastTest, StretchesOnesAndRightAligns) {
  EXPECT_EQ(Broadcast({ir::Shape({2, 1, 4}), ir::Shape({3, 1})}), ir::Shape({2, 3, 4}));
  EXPECT_EQ(Broadcast({ir::Shape({5}), ir::Shape(std::vector<int64_t>{})}), ir::Shape({5}));
  // 1 against 0 is 0, as numpy says.
  EXPECT_EQ(Broadcast({ir::Shape({1}), ir::Shape({0})}), ir::Shape({0}));
}

TEST(BroadcastTest, KeepsEqualSymbolsAndLetsKnownDimsWin) {
  ir::Shape batch = ir::Shape::FromDims({Sym("batch"), ir::Dim{1, ""}});
  ir::Shape other = ir::Shape::FromDims({Sym("batch"), ir::Dim{8, ""}});
  EXPECT_EQ(Broadcast({batch, other}), other);
  ir::Shape mixed = Broadcast({ir::Shape::FromDims({Sym("a")}), ir::Shape::FromDims({Sym("b")})});
  ASSERT_TRUE(mixed.has_rank());
  EXPECT_FALSE(mixed.dim(0).known());
  EXPECT_EQ(mixed.dim(0).symbol, "");
  EXPECT_EQ(Broadcast({ir::Shape::FromDims({Sym("a")}), ir::Shape({6})}), ir::Shape({6}));
}

TEST(BroadcastTest, ConflictIsUnrankedOrTheLargerDim) {
  EXPECT_FALSE(Broadcast({ir::Shape({2, 3}), ir::Shape({4, 3})}).has_rank());
  EXPECT_EQ(Broadcast({ir::Shape({2, 3}), ir::Shape({4, 3})}, DimConflict::kLarger),
            ir::Shape({4, 3}));
  EXPECT_FALSE(Broadcast({ir::Shape({2}), ir::Shape()}, DimConflict::kLarger).has_rank());
}

TEST(BroadcastTest, StaticDims) {
  std::vector<int64_t> a = {3, 1};
  std::vector<int64_t> b = {2, 1, 5};
  EXPECT_THAT(BroadcastDims({a, b}), Optional(ElementsAre(2, 3, 5)));
  std::vector<int64_t> c = {4, 5};
  EXPECT_EQ(BroadcastDims({a, c}), std::nullopt);
  EXPECT_THAT(BroadcastDims({a, c}, DimConflict::kLarger), Optional(ElementsAre(4, 5)));
}

TEST(MatMulShapeTest, BatchesBroadcastAndVectorsLoseTheirDim) {
  EXPECT_EQ(MatMulShape(ir::Shape({2, 1, 3, 4}), ir::Shape({5, 4, 6})), ir::Shape({2, 5, 3, 6}));
  EXPECT_EQ(MatMulShape(ir::Shape({4}), ir::Shape({2, 4, 6})), ir::Shape({2, 6}));
  EXPECT_EQ(MatMulShape(ir::Shape({3, 4}), ir::Shape({4})), ir::Shape({3}));
  EXPECT_EQ(MatMulShape(ir::Shape({4}), ir::Shape({4})), ir::Shape(std::vector<int64_t>{}));
  EXPECT_FALSE(MatMulShape(ir::Shape(std::vector<int64_t>{}), ir::Shape({4})).has_rank());
}

TEST(MatMulShapeTest, TransposesSwapTheLastTwoDims) {
  EXPECT_EQ(MatMulShape(ir::Shape({4, 3}), ir::Shape({6, 4}), {.trans_a = true, .trans_b = true}),
            ir::Shape({3, 6}));
}

TEST(MatMulShapeTest, ContractedDimsThatDifferAreRefusedUnlessEstimating) {
  EXPECT_FALSE(MatMulShape(ir::Shape({3, 4}), ir::Shape({5, 6})).has_rank());
  EXPECT_EQ(MatMulShape(ir::Shape({3, 4}), ir::Shape({5, 6}), {.conflict = DimConflict::kLarger}),
            ir::Shape({3, 6}));
  EXPECT_EQ(
      MatMulShape(ir::Shape({2, 3, 4}), ir::Shape({7, 4, 6}), {.conflict = DimConflict::kLarger}),
      ir::Shape({7, 3, 6}));
}

TEST(WindowTest, StridesDilationsAndPads) {
  // 224 + 3 + 3 - ((7 - 1) * 1 + 1) = 223; 223 / 2 + 1 = 112.
  ir::Node conv = WindowNode(
      {ir::Attribute::Ints("strides", {2, 2}), ir::Attribute::Ints("pads", {3, 3, 3, 3})});
  EXPECT_EQ(WindowedShape(conv, ir::Shape({1, 3, 224, 224}), ir::Dim{64, ""},
                          WeightKernel(ir::Shape({64, 3, 7, 7}), 2)),
            ir::Shape({1, 64, 112, 112}));
  // Dilation 2 makes a 3-wide kernel span 5: 10 - 5 + 1 = 6.
  ir::Node dilated = WindowNode({ir::Attribute::Ints("dilations", {2})});
  EXPECT_EQ(WindowedShape(dilated, ir::Shape({1, 1, 10}), ir::Dim{1, ""}, std::vector<int64_t>{3}),
            ir::Shape({1, 1, 6}));
}

TEST(WindowTest, AutoPadAndCeilMode) {
  ir::Node same = WindowNode(
      {ir::Attribute::String("auto_pad", "SAME_UPPER"), ir::Attribute::Ints("strides", {2})});
  EXPECT_EQ(WindowedShape(same, ir::Shape({1, 1, 7}), ir::Dim{1, ""}, std::vector<int64_t>{3}),
            ir::Shape({1, 1, 4}));
  ir::Node valid =
      WindowNode({ir::Attribute::String("auto_pad", "VALID"), ir::Attribute::Ints("pads", {5, 5})});
  EXPECT_EQ(WindowedShape(valid, ir::Shape({1, 1, 7}), ir::Dim{1, ""}, std::vector<int64_t>{3}),
            ir::Shape({1, 1, 5}));
  // 6 with kernel 2, stride 2, pads 1 + 1, ceil_mode: ceil((8 - 2) / 2) + 1
  // = 4 windows; the last starts at 6, inside the input (6 < 6 + 1): kept.
  ir::Node ceil =
      WindowNode({ir::Attribute::Ints("kernel_shape", {2}), ir::Attribute::Ints("strides", {2}),
                  ir::Attribute::Ints("pads", {1, 1}), ir::Attribute::Int("ceil_mode", 1)});
  EXPECT_EQ(WindowedShape(ceil, ir::Shape({1, 1, 6}), ir::Dim{1, ""}, std::nullopt),
            ir::Shape({1, 1, 4}));
  // 5 with pads 0 + 2: ceil((7 - 2) / 2) + 1 = 4, but the 4th window would
  // start at 6, in the end padding (6 >= 5): dropped.
  ir::Node ceil_end =
      WindowNode({ir::Attribute::Ints("kernel_shape", {2}), ir::Attribute::Ints("strides", {2}),
                  ir::Attribute::Ints("pads", {0, 2}), ir::Attribute::Int("ceil_mode", 1)});
  EXPECT_EQ(WindowedShape(ceil_end, ir::Shape({1, 1, 5}), ir::Dim{1, ""}, std::nullopt),
            ir::Shape({1, 1, 3}));
}

TEST(WindowTest, MalformedAttributesGiveUnknownDims) {
  ir::Node wrong_length = WindowNode({ir::Attribute::Ints("strides", {1, 1, 1})});
  EXPECT_EQ(ReadWindow(wrong_length, 2, std::vector<int64_t>{3, 3}), std::nullopt);
  ir::Node zero_stride = WindowNode({ir::Attribute::Ints("strides", {0})});
  EXPECT_EQ(ReadWindow(zero_stride, 1, std::vector<int64_t>{3}), std::nullopt);
  ir::Shape out =
      WindowedShape(zero_stride, ir::Shape({1, 1, 9}), ir::Dim{1, ""}, std::vector<int64_t>{3});
  ASSERT_EQ(out.rank(), 3u);
  EXPECT_FALSE(out.dim(2).known());
  // A kernel wider than the padded input fits nowhere.
  ir::Node plain = WindowNode({});
  std::optional<Window> w = ReadWindow(plain, 1, std::vector<int64_t>{9});
  ASSERT_TRUE(w);
  EXPECT_FALSE(WindowOutput(ir::Dim{4, ""}, *w, 0).known());
  EXPECT_FALSE(WindowOutput(ir::Dim{std::numeric_limits<int64_t>::max(), ""},
                            *ReadWindow(WindowNode({ir::Attribute::Ints("pads", {1, 1})}), 1,
                                        std::vector<int64_t>{1}),
                            0)
                   .known());
}

TEST(EinsumTest, ParsesExplicitImplicitAndEllipsis) {
  std::optional<EinsumEquation> e = ParseEinsum(" ...ij, ...jk -> ...ik ");
  ASSERT_TRUE(e);
  ASSERT_EQ(e->inputs.size(), 2u);
  EXPECT_EQ(e->inputs[0].letters, "ij");
  EXPECT_EQ(e->inputs[0].ellipsis_at, 0);
  ASSERT_TRUE(e->output);
  EXPECT_EQ(e->output->letters, "ik");
  std::optional<EinsumEquation> implicit = ParseEinsum("ij,jk");
  ASSERT_TRUE(implicit);
  EXPECT_FALSE(implicit->output);
  EXPECT_EQ(ParseEinsum("i1,1j->ij"), std::nullopt);
  EXPECT_EQ(ParseEinsum("i..j->ij"), std::nullopt);
  EXPECT_EQ(ParseEinsum("...i...->i"), std::nullopt);
}

TEST(EinsumTest, OutputShapes) {
  auto shape = [](const char* equation, std::vector<ir::Shape> operands) {
    return EinsumShape(*ParseEinsum(equation), operands);
  };
  EXPECT_EQ(shape("ij,jk->ik", {ir::Shape({2, 3}), ir::Shape({3, 5})}), ir::Shape({2, 5}));
  // Implicit: letters used once, in character order: i, k.
  EXPECT_EQ(shape("kj,ji", {ir::Shape({4, 3}), ir::Shape({3, 2})}), ir::Shape({2, 4}));
  EXPECT_EQ(shape("...ij,...jk->...ik", {ir::Shape({7, 1, 2, 3}), ir::Shape({6, 3, 4})}),
            ir::Shape({7, 6, 2, 4}));
  EXPECT_FALSE(shape("ij,jk->ik", {ir::Shape({2, 3}), ir::Shape({4, 5})}).has_rank());
  EXPECT_FALSE(shape("ij->iz", {ir::Shape({2, 3})}).has_rank());
  EXPECT_FALSE(shape("ijk->i", {ir::Shape({2, 3})}).has_rank());
}

TEST(EinsumTest, IndicesOfEstimatesTakeTheLargerDim) {
  std::optional<EinsumEquation> e = ParseEinsum("bij,bjk->bik");
  ASSERT_TRUE(e);
  std::vector<ir::Shape> operands = {ir::Shape({2, 3, 4}), ir::Shape({2, 5, 6})};
  EXPECT_EQ(BindEinsumIndices(*e, operands), std::nullopt);
  std::optional<EinsumIndices> indices = BindEinsumIndices(*e, operands, DimConflict::kLarger);
  ASSERT_TRUE(indices);
  EXPECT_EQ(indices->letters.at('j'), (ir::Dim{5, ""}));
  EXPECT_EQ(indices->uses.at('b'), 2);
  EXPECT_FALSE(indices->any_ellipsis);
}

TEST(ArithmeticTest, AxesDivisionAndOverflow) {
  EXPECT_THAT(NormalizeAxis(-1, 4), Optional(3));
  EXPECT_EQ(NormalizeAxis(4, 4), std::nullopt);
  EXPECT_EQ(NormalizeAxis(0, 0), std::nullopt);
  EXPECT_THAT(CeilDiv(-3, 2), Optional(-1));
  EXPECT_THAT(FloorDiv(-3, 2), Optional(-2));
  EXPECT_EQ(CeilDiv(3, 0), std::nullopt);
  EXPECT_EQ(CheckedAdd(std::numeric_limits<int64_t>::max(), 1), std::nullopt);
  EXPECT_EQ(CheckedSub(std::numeric_limits<int64_t>::min(), 1), std::nullopt);
}

}  // namespace
}  // namespace autopar::shapes
