// InlineKnownIfs (passes/inline_if.h): an If whose condition folds from a
// bound input or constants becomes its taken branch, with names kept unique,
// outputs under the If's names, and the condition's dead producers gone; an
// If whose condition is not known stays whole.
#include "passes/inline_if.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx_io/import.h"
#include "onnx_io/text_format.h"
#include "passes/infer_shapes.h"

namespace autopar::passes {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

struct Inlined {
  onnx_io::Model model;
  ir::Graph graph;  // rebuilt from the rewritten proto, shapes inferred
  int count = 0;
};

// Loads `text`, infers shapes with `options`, inlines (`rounds` times, each on
// the IR rebuilt from the last), then analyzes the result again.
Inlined InlineText(const std::string& text, const ShapeOptions& options, int rounds = 1) {
  absl::StatusOr<onnx::ModelProto> proto = onnx_io::ParseModelText(text);
  EXPECT_TRUE(proto.ok()) << proto.status();
  absl::StatusOr<onnx_io::Model> model = onnx_io::ModelFromProto(*std::move(proto));
  EXPECT_TRUE(model.ok()) << model.status();
  Inlined result{*std::move(model), {}, 0};
  for (int round = 0; round < rounds; ++round) {
    absl::StatusOr<ir::Graph> graph = onnx_io::BuildGraph(result.model);
    EXPECT_TRUE(graph.ok()) << graph.status();
    EXPECT_TRUE(InferShapes(result.model, options, *graph).ok());
    absl::StatusOr<int> n = InlineKnownIfs(result.model, *graph);
    EXPECT_TRUE(n.ok()) << n.status();
    result.count += n.value_or(0);
  }
  absl::StatusOr<ir::Graph> graph = onnx_io::BuildGraph(result.model);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (graph.ok()) {
    result.graph = *std::move(graph);
    absl::Status s = InferShapes(result.model, options, result.graph);
    EXPECT_TRUE(s.ok()) << s;
  }
  return result;
}

std::vector<std::string> OpTypes(const onnx::GraphProto& g) {
  std::vector<std::string> ops;
  for (const onnx::NodeProto& n : g.node()) ops.push_back(n.op_type());
  return ops;
}

std::string ShapeOf(const ir::Graph& g, const std::string& name) {
  std::optional<ir::ValueId> v = g.FindValue(name);
  return v ? g.value(*v).shape.ToString() : "missing";
}

// Branches of different shapes, each with a weight and a name of its own
// that the main graph also uses (a): the clash is renamed, not merged.
constexpr char kIfOnRate[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  g (int64 sr, float[4] x) => (float[?] y, float[4] after) {
    rate = Constant <value = int64 {16000}> ()
    is16k = Equal(sr, rate)
    y = If(is16k) <
      then_branch = then_g () => (float[?] t) <float[4] w16 = {1, 2, 3, 4}> {
        a = Mul(x, w16)
        t = Concat <axis = 0> (a, x)
      },
      else_branch = else_g () => (float[?] e) <float[4] w8 = {4, 3, 2, 1}> {
        e = Add(x, w8)
      }
    >
    a = Relu(x)
    after = Neg(a)
  }
)";

TEST(InlineIfTest, ABoundConditionLeavesTheTakenBranchUnderTheIfsNames) {
  ShapeOptions options;
  options.input_values["sr"] = {16000};
  Inlined r = InlineText(kIfOnRate, options);
  EXPECT_EQ(r.count, 1);
  const onnx::GraphProto& g = r.model.proto.graph();
  // The Equal and its Constant fed only the condition: gone.
  EXPECT_THAT(OpTypes(g), ElementsAre("Mul", "Concat", "Relu", "Neg"));
  EXPECT_EQ(g.node(0).output(0), "a_inl1");  // the branch's a, renamed
  EXPECT_THAT(g.node(1).input(), ElementsAre("a_inl1", "x"));
  EXPECT_EQ(g.node(1).output(0), "y");
  EXPECT_EQ(g.node(2).output(0), "a");  // the main graph's a, untouched
  std::vector<std::string> weights;
  for (const onnx::TensorProto& t : g.initializer()) weights.push_back(t.name());
  EXPECT_THAT(weights, ElementsAre("w16"));
  EXPECT_EQ(ShapeOf(r.graph, "y"), "[8]");

  options.input_values["sr"] = {8000};
  Inlined low = InlineText(kIfOnRate, options);
  EXPECT_EQ(low.count, 1);
  EXPECT_THAT(OpTypes(low.model.proto.graph()), ElementsAre("Add", "Relu", "Neg"));
  EXPECT_EQ(ShapeOf(low.graph, "y"), "[4]");
}

TEST(InlineIfTest, AnUnknownConditionKeepsTheIfWhole) {
  ShapeOptions options;
  options.require_static = false;
  Inlined r = InlineText(kIfOnRate, options);
  EXPECT_EQ(r.count, 0);
  EXPECT_THAT(OpTypes(r.model.proto.graph()),
              ElementsAre("Constant", "Equal", "If", "Relu", "Neg"));
}

TEST(InlineIfTest, OutputsThatNoBranchNodeMakesGoThroughIdentity) {
  // One branch output is an outer value, and the other the same value twice.
  ShapeOptions options;
  Inlined r = InlineText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y, float[2] z, float[2] u) {
      k = Constant <value = bool {1}> ()
      y, z, u = If(k) <
        then_branch = then_g () => (float[2] q, float[2] q, float[2] x) {
          q = Relu(x)
        },
        else_branch = else_g () => (float[2] p, float[2] q, float[2] q2) {
          p = Neg(x)
          q = Neg(x)
          q2 = Neg(x)
        }
      >
    }
  )",
                         options);
  EXPECT_EQ(r.count, 1);
  const onnx::GraphProto& g = r.model.proto.graph();
  std::vector<std::string> produced;
  for (const onnx::NodeProto& n : g.node()) produced.push_back(n.output(0));
  EXPECT_THAT(produced, UnorderedElementsAre("q", "y", "z", "u"));
  EXPECT_THAT(OpTypes(g), UnorderedElementsAre("Relu", "Identity", "Identity", "Identity"));
  EXPECT_EQ(ShapeOf(r.graph, "y"), "[2]");
}

TEST(InlineIfTest, ABranchValueNamedLikeAnotherIfOutputIsRenamed) {
  // The branch's own y is not its first output, which the If calls y.
  ShapeOptions options;
  Inlined r = InlineText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y, float[2] z) {
      k = Constant <value = bool {1}> ()
      y, z = If(k) <
        then_branch = then_g () => (float[2] z, float[2] y) {
          y = Relu(x)
          z = Neg(y)
        },
        else_branch = else_g () => (float[2] p, float[2] q) {
          p = Abs(x)
          q = Abs(x)
        }
      >
    }
  )",
                         options);
  EXPECT_EQ(r.count, 1);
  const onnx::GraphProto& g = r.model.proto.graph();
  ASSERT_EQ(g.node_size(), 2);
  // Relu made the branch's y, now the If's z; Neg the branch's z, now y.
  EXPECT_EQ(g.node(0).op_type(), "Relu");
  EXPECT_EQ(g.node(0).output(0), "z");
  EXPECT_THAT(g.node(1).input(), ElementsAre("z"));
  EXPECT_EQ(g.node(1).output(0), "y");
}

TEST(InlineIfTest, AnIfInsideTheTakenBranchIsInlinedInTheNextRound) {
  ShapeOptions options;
  options.input_values["mode"] = {2};
  Inlined r = InlineText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (int64 mode, float[2] x) => (float[2] y) {
      one = Constant <value = int64 {1}> ()
      big = Greater(mode, one)
      y = If(big) <
        then_branch = outer_then () => (float[2] t) {
          two = Constant <value = int64 {2}> ()
          is2 = Equal(mode, two)
          t = If(is2) <
            then_branch = inner_then () => (float[2] i) { i = Sigmoid(x) },
            else_branch = inner_else () => (float[2] j) { j = Tanh(x) }
          >
        },
        else_branch = outer_else () => (float[2] e) { e = Neg(x) }
      >
    }
  )",
                         options, /*rounds=*/2);
  EXPECT_EQ(r.count, 2);
  EXPECT_THAT(OpTypes(r.model.proto.graph()), ElementsAre("Sigmoid"));
  EXPECT_EQ(r.model.proto.graph().node(0).output(0), "y");
}

}  // namespace
}  // namespace autopar::passes
