// Tests of passes/symbolic_dims.cc through InferShapes: which planned dims
// keep a bound symbol, which are static, and which derive from it unnamed.
#include "passes/symbolic_dims.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/infer_shapes.h"
#include "tests/passes/text_models.h"

namespace autopar::passes {
namespace {

using testing::ImportText;

const ir::Value& ValueNamed(const ir::Graph& g, const std::string& name) {
  return g.value(*g.FindValue(name));
}

// x [batch, 2, 4]: a MatMul keeps the batch; the channel count 2 equals the
// bound value but is no batch; a Reshape to a shape computed from Shape
// (batch, then 2 × 4 = 8) keeps batch in dim 0 however ONNX propagates; a
// Reshape to batch × 2 derives from it but is not it.
constexpr char kModel[] = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[batch,2,4] x) => (float[batch,2,3] y, float[batch,8] flat, float[?,4] merged) {
      w = Constant <value = float[4,3] {1,2,3,4,5,6,7,8,9,10,11,12}> ()
      y = MatMul(x, w)
      s = Shape(x)
      zero = Constant <value = int64[1] {0}> ()
      b = Gather <axis = 0> (s, zero)
      eight = Constant <value = int64[1] {8}> ()
      target = Concat <axis = 0> (b, eight)
      flat = Reshape(x, target)
      minus = Constant <value = int64[2] {-1, 4}> ()
      merged = Reshape(x, minus)
    }
  )";

TEST(SymbolicDimsTest, OnlyTheDimItselfKeepsTheSymbol) {
  absl::StatusOr<testing::ImportedText> m = ImportText(kModel);
  ASSERT_TRUE(m.ok()) << m.status();
  ShapeOptions options;
  options.dim_values["batch"] = 2;
  absl::StatusOr<ShapeReport> report = InferShapesWithReport(m->model, options, m->graph);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->symbolic.symbols.at("batch"), 2);

  const ir::Value& y = ValueNamed(m->graph, "y");
  EXPECT_EQ(y.shape.Values(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(y.shape.dim(0).symbol, "batch");
  EXPECT_EQ(y.shape.dim(1).symbol, "");  // 2 channels, not the batch
  EXPECT_TRUE(y.unnamed_symbolic_dims.empty());

  const ir::Value& flat = ValueNamed(m->graph, "flat");
  EXPECT_EQ(flat.shape.Values(), (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(flat.shape.dim(0).symbol, "batch");
  EXPECT_EQ(flat.shape.dim(1).symbol, "");

  const ir::Value& merged = ValueNamed(m->graph, "merged");
  EXPECT_EQ(merged.shape.Values(), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(merged.shape.dim(0).symbol, "");
  ASSERT_EQ(merged.unnamed_symbolic_dims.size(), 2u);
  EXPECT_EQ(merged.unnamed_symbolic_dims[0], static_cast<uint8_t>(UnnamedDimReason::kDerived));
  EXPECT_EQ(merged.unnamed_symbolic_dims[1], 0);

  const std::vector<UnnamedBoundaryDim> unnamed =
      UnnamedDimsOf(m->graph, {*m->graph.FindValue("y"), *m->graph.FindValue("merged")});
  ASSERT_EQ(unnamed.size(), 1u);
  EXPECT_EQ(unnamed[0].tensor, "merged");
  EXPECT_EQ(unnamed[0].dim, 0);
  EXPECT_EQ(unnamed[0].planned, 4);
}

TEST(SymbolicDimsTest, NothingIsMarkedWithoutABoundSymbol) {
  absl::StatusOr<testing::ImportedText> m = ImportText(kModel);
  ASSERT_TRUE(m.ok()) << m.status();
  ShapeOptions options;
  options.input_shapes["x"] = {2, 2, 4};
  absl::StatusOr<ShapeReport> report = InferShapesWithReport(m->model, options, m->graph);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->symbolic.symbols.empty());
  const ir::Value& y = ValueNamed(m->graph, "y");
  EXPECT_EQ(y.shape.dim(0).symbol, "");
  EXPECT_TRUE(ValueNamed(m->graph, "merged").unnamed_symbolic_dims.empty());
}

}  // namespace
}  // namespace autopar::passes
