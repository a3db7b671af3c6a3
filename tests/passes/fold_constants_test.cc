// FoldConstants on models written as ONNX text: what each operator family
// computes, what it refuses to compute, and that results reach the IR as
// shapes and integer contents.
#include "passes/fold_constants.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/passes/text_models.h"

namespace autopar::passes {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

struct Folded {
  ir::Graph graph;
  FoldResult result;

  std::vector<int64_t> Ints(const std::string& name) const {
    const ir::Value& v = graph.value(*graph.FindValue(name));
    return v.int_data ? *v.int_data : std::vector<int64_t>{-999};
  }
  std::string Shape(const std::string& name) const {
    return graph.value(*graph.FindValue(name)).shape.ToString();
  }
};

Folded Fold(const std::string& text, const FoldOptions& options = {}) {
  absl::StatusOr<testing::ImportedText> imported = testing::ImportText(text);
  EXPECT_TRUE(imported.ok()) << imported.status();
  if (!imported.ok()) return {};
  Folded folded{std::move(imported->graph), {}};
  absl::StatusOr<FoldResult> result = FoldConstants(imported->model, options, folded.graph);
  EXPECT_TRUE(result.ok()) << result.status();
  if (result.ok()) folded.result = *result;
  return folded;
}

// torch's key-padding-mask pattern (text_models.h): the Expand target is
// computed from ConstantOfShape, Mul, Equal and Where over a shape.
TEST(FoldConstantsTest, MaskChainResolvesTheExpandTarget) {
  Folded f = Fold(testing::kMaskChainModel);
  EXPECT_THAT(f.Ints("ones"), ElementsAre(1, 1, 1, 1));
  EXPECT_THAT(f.Ints("neg"), ElementsAre(-1, -1, -1, -1));
  EXPECT_THAT(f.Ints("same"), ElementsAre(0, 0, 0, 0));
  EXPECT_THAT(f.Ints("shape"), ElementsAre(2, 4, 5, 5));
  // The mask is data: Expand is not evaluated (the shape rules size it from
  // the folded target, see infer_shapes_test).
  EXPECT_EQ(f.result.folded_nodes, 4);
}

TEST(FoldConstantsTest, ShapeGatherConcatReshapeNeedOnlyStaticShapes) {
  Folded f = Fold(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[3,8,16] x) => (int64[?] target)
    <int64[1] axes = {0}, int64[1] minus_one = {-1}> {
      s = Shape(x)
      tail = Shape <start = -2> (x)
      i = Constant <value = int64 {0}> ()
      b = Gather(s, i)
      b1 = Unsqueeze(b, axes)
      target = Concat <axis = 0> (b1, tail, minus_one)
      n = Size(x)
    }
  )");
  EXPECT_THAT(f.Ints("s"), ElementsAre(3, 8, 16));
  EXPECT_THAT(f.Ints("tail"), ElementsAre(8, 16));
  EXPECT_THAT(f.Ints("b"), ElementsAre(3));
  EXPECT_EQ(f.Shape("b"), "[]");
  EXPECT_THAT(f.Ints("target"), ElementsAre(3, 8, 16, -1));
  EXPECT_THAT(f.Ints("n"), ElementsAre(384));
}

TEST(FoldConstantsTest, IntegerArithmeticTruncatesAndWrapsToItsWidth) {
  Folded f = Fold(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1] x) => (int32[4] q) {
      a = Constant <value = int32[4] {7, -7, 2147483647, 9}> ()
      b = Constant <value = int32[4] {2, 2, 1, -4}> ()
      q = Div(a, b)
      s = Add(a, b)
      m = Mod(a, b)
      fm = Mod <fmod = 1> (a, b)
      lo = Min(a, b)
      hi = Max(a, b)
      ab = Abs(b)
      ng = Neg(b)
      d = Sub(a, b)
    }
  )");
  EXPECT_THAT(f.Ints("q"), ElementsAre(3, -3, 2147483647, -2));
  EXPECT_THAT(f.Ints("s"), ElementsAre(9, -5, -2147483648, 5));  // wraps as int32
  EXPECT_THAT(f.Ints("m"), ElementsAre(1, 1, 0, -3));            // the divisor's sign
  EXPECT_THAT(f.Ints("fm"), ElementsAre(1, -1, 0, 1));           // the dividend's sign
  EXPECT_THAT(f.Ints("lo"), ElementsAre(2, -7, 1, -4));
  EXPECT_THAT(f.Ints("hi"), ElementsAre(7, 2, 2147483647, 9));
  EXPECT_THAT(f.Ints("ab"), ElementsAre(2, 2, 1, 4));
  EXPECT_THAT(f.Ints("ng"), ElementsAre(-2, -2, -1, 4));
  EXPECT_THAT(f.Ints("d"), ElementsAre(5, -9, 2147483646, 13));
}

TEST(FoldConstantsTest, IntegerDivisionByZeroIsNotFolded) {
  Folded f = Fold(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1] x) => (int64[2] q) {
      a = Constant <value = int64[2] {4, 5}> ()
      b = Constant <value = int64[2] {2, 0}> ()
      q = Div(a, b)
    }
  )");
  EXPECT_THAT(f.Ints("q"), ElementsAre(-999));
  EXPECT_EQ(f.result.folded_nodes, 0);
}

TEST(FoldConstantsTest, FloatsAreComputedAndCastToIntegersTowardZero) {
  Folded f = Fold(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1] x) => (int64[3] i) {
      a = Constant <value = float[3] {7.5, -7.5, 1.0}> ()
      b = Constant <value = float[3] {2.0, 2.0, 3.0}> ()
      q = Div(a, b)
      i = Cast <to = 7> (q)
      lt = Less(q, b)
      ge = GreaterOrEqual(q, b)
      z = Cast <to = 9> (a)
      h = Cast <to = 10> (a)
      hi = Cast <to = 6> (h)
    }
  )");
  EXPECT_THAT(f.Ints("i"), ElementsAre(3, -3, 0));
  EXPECT_THAT(f.Ints("lt"), ElementsAre(0, 1, 1));
  EXPECT_THAT(f.Ints("ge"), ElementsAre(1, 0, 0));
  EXPECT_THAT(f.Ints("z"), ElementsAre(1, 1, 1));
  EXPECT_THAT(f.Ints("hi"), ElementsAre(7, -7, 1));
  EXPECT_EQ(f.Shape("q"), "[3]");  // float results get their shape, not int_data
}

TEST(FoldConstantsTest, LogicAndWhereOnBools) {
  Folded f = Fold(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1] x) => (bool[4] o) {
      a = Constant <value = bool[4] {1, 1, 0, 0}> ()
      b = Constant <value = bool[4] {1, 0, 1, 0}> ()
      n = Not(a)
      an = And(a, b)
      o = Or(a, b)
      xo = Xor(a, b)
      yes = Constant <value = int64[1] {10}> ()
      no = Constant <value = int64[4] {1, 2, 3, 4}> ()
      w = Where(xo, yes, no)
      eq = Equal(a, b)
      id = Identity(w)
    }
  )");
  EXPECT_THAT(f.Ints("n"), ElementsAre(0, 0, 1, 1));
  EXPECT_THAT(f.Ints("an"), ElementsAre(1, 0, 0, 0));
  EXPECT_THAT(f.Ints("o"), ElementsAre(1, 1, 1, 0));
  EXPECT_THAT(f.Ints("xo"), ElementsAre(0, 1, 1, 0));
  EXPECT_THAT(f.Ints("w"), ElementsAre(1, 10, 10, 4));
  EXPECT_THAT(f.Ints("eq"), ElementsAre(1, 0, 0, 1));
  EXPECT_THAT(f.Ints("id"), ElementsAre(1, 10, 10, 4));
}

TEST(FoldConstantsTest, DataMovementOps) {
  Folded f = Fold(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1] x) => (int64[?] r) {
      start = Constant <value = int64 {2}> ()
      limit = Constant <value = int64 {-5}> ()
      delta = Constant <value = int64 {-3}> ()
      r = Range(start, limit, delta)
      m = Constant <value = int64[2,3] {1, 2, 3, 4, 5, 6}> ()
      t = Transpose(m)
      reps = Constant <value = int64[2] {1, 2}> ()
      tile = Tile(m, reps)
      starts = Constant <value = int64[1] {-1}> ()
      ends = Constant <value = int64[1] {-1000}> ()
      axes = Constant <value = int64[1] {1}> ()
      steps = Constant <value = int64[1] {-2}> ()
      sl = Slice(m, starts, ends, axes, steps)
      shp = Constant <value = int64[2] {3, -1}> ()
      rs = Reshape(m, shp)
      sq_axes = Constant <value = int64[1] {0}> ()
      one = Unsqueeze(m, sq_axes)
      back = Squeeze(one, sq_axes)
      fl = Flatten <axis = 0> (m)
      mask = Constant <value = int64[2,3] {0, 7, 0, 0, 0, 9}> ()
      nz = NonZero(mask)
      ex_shape = Constant <value = int64[3] {2, 1, 3}> ()
      row = Constant <value = int64[3] {7, 8, 9}> ()
      ex = Expand(row, ex_shape)
    }
  )");
  EXPECT_THAT(f.Ints("r"), ElementsAre(2, -1, -4));
  EXPECT_THAT(f.Ints("t"), ElementsAre(1, 4, 2, 5, 3, 6));
  EXPECT_EQ(f.Shape("t"), "[3,2]");
  EXPECT_THAT(f.Ints("tile"), ElementsAre(1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6));
  EXPECT_THAT(f.Ints("sl"), ElementsAre(3, 1, 6, 4));
  EXPECT_EQ(f.Shape("sl"), "[2,2]");
  EXPECT_EQ(f.Shape("rs"), "[3,2]");
  EXPECT_EQ(f.Shape("one"), "[1,2,3]");
  EXPECT_EQ(f.Shape("back"), "[2,3]");
  EXPECT_EQ(f.Shape("fl"), "[1,6]");
  EXPECT_THAT(f.Ints("nz"), ElementsAre(0, 1, 1, 2));
  EXPECT_EQ(f.Shape("nz"), "[2,2]");
  EXPECT_THAT(f.Ints("ex"), ElementsAre(7, 8, 9, 7, 8, 9));
  EXPECT_EQ(f.Shape("ex"), "[2,1,3]");
}

TEST(FoldConstantsTest, ReductionsAndArgReductions) {
  Folded f = Fold(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1] x) => (int64[?] s) {
      m = Constant <value = int64[2,3] {1, 5, 3, 4, 2, 6}> ()
      axes = Constant <value = int64[1] {1}> ()
      s = ReduceSum <keepdims = 0> (m, axes)
      all = ReduceSum <keepdims = 0> (m)
      p = ReduceProd <axes = [0], keepdims = 1> (m)
      lo = ReduceMin <axes = [1]> (m)
      hi = ReduceMax <axes = [0], keepdims = 0> (m)
      am = ArgMax <axis = 1, keepdims = 0> (m)
      an = ArgMin <axis = 0> (m)
    }
  )");
  EXPECT_THAT(f.Ints("s"), ElementsAre(9, 12));
  EXPECT_THAT(f.Ints("all"), ElementsAre(21));
  EXPECT_EQ(f.Shape("all"), "[]");
  EXPECT_THAT(f.Ints("p"), ElementsAre(4, 10, 18));
  EXPECT_EQ(f.Shape("p"), "[1,3]");
  EXPECT_THAT(f.Ints("lo"), ElementsAre(1, 2));
  EXPECT_EQ(f.Shape("lo"), "[2,1]");
  EXPECT_THAT(f.Ints("hi"), ElementsAre(4, 5, 6));
  EXPECT_THAT(f.Ints("am"), ElementsAre(1, 2));
  EXPECT_THAT(f.Ints("an"), ElementsAre(0, 1, 0));
}

TEST(FoldConstantsTest, BoundInputValuesFoldIncludingFloats) {
  FoldOptions options;
  options.input_values["rate"] = {16000.0};
  options.input_values["len"] = {3};
  Folded f = Fold(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float rate, int64 len) => (bool high) {
      threshold = Constant <value = float {8000.0}> ()
      high = Greater(rate, threshold)
      zero = Constant <value = int64 {0}> ()
      one = Constant <value = int64 {1}> ()
      pos = Range(zero, len, one)
    }
  )",
                  options);
  EXPECT_THAT(f.Ints("high"), ElementsAre(1));
  EXPECT_THAT(f.Ints("pos"), ElementsAre(0, 1, 2));
}

TEST(FoldConstantsTest, WeightsAndResultsOverTheLimitAreNotFolded) {
  // 70000 elements: over kMaxFoldedElements, so ConstantOfShape is left alone
  // (its shape still comes from the shape rules, not from here).
  Folded f = Fold(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1] x) => (float[?] big) {
      n = Constant <value = int64[1] {70000}> ()
      big = ConstantOfShape(n)
    }
  )");
  EXPECT_EQ(f.result.folded_nodes, 0);
  EXPECT_EQ(f.Shape("big"), "[?]");
}

TEST(FoldConstantsTest, InitializersOfEveryIntegerWidthAreRead) {
  Folded f = Fold(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1] x) => (int64[2] c)
    <int8[2] w8 = {-3, 4}, uint16[2] w16 = {65535, 1}, double[2] wd = {-2.9, 2.9}> {
      c = Cast <to = 7> (w8)
      d = Cast <to = 7> (w16)
      e = Cast <to = 7> (wd)
    }
  )");
  EXPECT_THAT(f.Ints("c"), ElementsAre(-3, 4));
  EXPECT_THAT(f.Ints("d"), ElementsAre(65535, 1));
  EXPECT_THAT(f.Ints("e"), ElementsAre(-2, 2));
}

// ir/op_kinds.def says which kinds the folder evaluates; the folder must
// agree, so that an operator listed with kFoldRule but given no evaluator, or
// an evaluator added without its table entry, fails here by name.
TEST(FoldConstantsTest, EveryKindFoldsExactlyWhenTheOpTableSaysSo) {
  int listed = 0;
  for (ir::OpKind kind : ir::AllOpKinds()) {
    const bool in_table = (ir::OpKindRules(kind) & ir::kFoldRule) != 0;
    listed += in_table ? 1 : 0;
    const std::string name(ir::OpKindName(kind));
    if (in_table && !CanFold(kind)) {
      ADD_FAILURE() << "op '" << name
                    << "': ir/op_kinds.def says constant-folding rule, none is registered "
                       "(passes/fold_constants.cc, FindEvaluator)";
    }
    if (!in_table && CanFold(kind)) {
      ADD_FAILURE() << "op '" << name
                    << "': an evaluator is registered, ir/op_kinds.def does not list kFoldRule";
    }
  }
  EXPECT_FALSE(CanFold(ir::OpKind::kUnknown));
  EXPECT_GT(listed, 40);  // the table was read, not an empty list
}

}  // namespace
}  // namespace autopar::passes
