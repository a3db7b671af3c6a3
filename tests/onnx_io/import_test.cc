// ONNX → IR on models written in ONNX's text syntax.
#include "onnx_io/import.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx_io/text_format.h"

namespace autopar::onnx_io {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<ir::Graph> Import(const std::string& text) {
  absl::StatusOr<onnx::ModelProto> proto = ParseModelText(text);
  if (!proto.ok()) return proto.status();
  absl::StatusOr<Model> model = ModelFromProto(*std::move(proto));
  if (!model.ok()) return model.status();
  return BuildGraph(*model);
}

std::vector<std::string> NodeNames(const ir::Graph& g) {
  std::vector<std::string> names;
  for (const ir::Node& n : g.nodes()) names.push_back(n.name);
  return names;
}

TEST(ImportTest, UnsortedNodesAreSortedAndKeepTheirProtoIndex) {
  absl::StatusOr<ir::Graph> g = Import(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float[2,3] z) {
      z = Relu (y)
      y = Neg (x)
    }
  )");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->num_nodes(), 2u);
  EXPECT_EQ(g->nodes()[0].op_type, "Neg");
  EXPECT_EQ(g->nodes()[0].proto_index, 1);
  EXPECT_EQ(g->nodes()[1].op_type, "Relu");
  EXPECT_EQ(g->nodes()[1].kind, ir::OpKind::kRelu);
  // Unnamed nodes get unique generated names.
  EXPECT_THAT(NodeNames(*g), ElementsAre("Neg_1", "Relu_0"));
  const ir::Value& x = g->value(*g->FindValue("x"));
  EXPECT_EQ(x.kind, ir::ValueKind::kGraphInput);
  EXPECT_EQ(x.shape, ir::Shape({2, 3}));
  EXPECT_EQ(x.dtype, ir::DType::kFloat);
}

TEST(ImportTest, InitializersAndConstantsAreParameters) {
  absl::StatusOr<ir::Graph> g = Import(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float[6] y) {
      w = Constant <value = float[2,3] {1, 2, 3, 4, 5, 6}> ()
      s = Constant <value = int64[1] {6}> ()
      a = Add(x, w)
      b = Mul(a, k)
      y = Reshape(b, s)
    }
  )"
                                       // k is an initializer given in the text's graph
  );
  ASSERT_FALSE(g.ok());  // k is not defined: reading it is an error
  EXPECT_THAT(std::string(g.status().message()),
              HasSubstr("node 'Mul_3' (Mul) reads 'k', which no node, graph input or "
                        "initializer defines"));

  g = Import(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float[6] y)
    <float[2,3] k = {1, 1, 1, 1, 1, 1}> {
      w = Constant <value = float[2,3] {1, 2, 3, 4, 5, 6}> ()
      s = Constant <value = int64[1] {6}> ()
      a = Add(x, w)
      b = Mul(a, k)
      y = Reshape(b, s)
    }
  )");
  ASSERT_TRUE(g.ok()) << g.status();
  const ir::Value& w = g->value(*g->FindValue("w"));
  EXPECT_TRUE(w.is_parameter);
  EXPECT_EQ(w.shape, ir::Shape({2, 3}));
  const ir::Value& s = g->value(*g->FindValue("s"));
  ASSERT_TRUE(s.int_data.has_value());
  EXPECT_THAT(*s.int_data, ElementsAre(6));
  const ir::Value& k = g->value(*g->FindValue("k"));
  EXPECT_EQ(k.kind, ir::ValueKind::kInitializer);
  EXPECT_TRUE(k.is_parameter);
  EXPECT_THAT(g->initializers(), ElementsAre(*g->FindValue("k")));
}

TEST(ImportTest, IfCapturesOuterValuesAsInputs) {
  // The If is listed before the node producing what its branches read.
  absl::StatusOr<ir::Graph> g = Import(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (bool cond, float[2] x) => (float[2] y) {
      y = If (cond) <
        then_branch = then_g () => (float[2] t) { t = Neg(z) },
        else_branch = else_g () => (float[2] e) { e = Abs(z) }
      >
      z = Relu(x)
    }
  )");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->num_nodes(), 2u);
  const ir::Node& if_node = g->nodes()[1];
  ASSERT_EQ(if_node.op_type, "If");
  EXPECT_THAT(if_node.captured, ElementsAre(*g->FindValue("z")));
  ASSERT_EQ(if_node.subgraphs.size(), 2u);
  EXPECT_EQ(if_node.subgraphs[0].attribute, "then_branch");
  EXPECT_EQ(if_node.subgraphs[0].body->num_nodes(), 1u);
  EXPECT_EQ(g->NumSubgraphNodes(), 2);
  const ir::Value& z = g->value(*g->FindValue("z"));
  EXPECT_THAT(z.consumers, ElementsAre(ir::NodeId(1)));
}

TEST(ImportTest, LoopBodyCapturesThroughNestedScopes) {
  absl::StatusOr<ir::Graph> g = Import(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (int64 n, bool c, float[2] x) => (float[2] out) {
      w = Relu(x)
      out = Loop (n, c, x) <body = body (int64 i, bool cond_in, float[2] acc) => (bool cond_out, float[2] next) {
        cond_out = Identity(cond_in)
        next = Add(acc, w)
      }>
    }
  )");
  ASSERT_TRUE(g.ok()) << g.status();
  const ir::Node& loop = g->nodes()[1];
  EXPECT_EQ(loop.kind, ir::OpKind::kLoop);
  EXPECT_THAT(loop.captured, ElementsAre(*g->FindValue("w")));
  const ir::Graph& body = *loop.subgraphs[0].body;
  EXPECT_EQ(body.value(*body.FindValue("w")).kind, ir::ValueKind::kOuterScope);
}

TEST(ImportTest, ValueWrittenTwiceIsAnError) {
  absl::StatusOr<ir::Graph> g = Import(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y) {
      y = Relu(x)
      y = Neg(x)
    }
  )");
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("writes 'y', which is already defined"));
}

TEST(ImportTest, MissingGraphOutputIsAnError) {
  absl::StatusOr<ir::Graph> g = Import(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y, float[2] ghost) { y = Relu(x) }
  )");
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("graph output 'ghost'"));
}

TEST(ImportTest, CycleIsAnError) {
  absl::StatusOr<ir::Graph> g = Import(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y) {
      a = Add(x, b)
      b = Relu(a)
      y = Neg(b)
    }
  )");
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("cycle through node"));
}

TEST(ImportTest, DuplicateNodeNamesAreMadeUnique) {
  absl::StatusOr<onnx::ModelProto> proto = ParseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] z) { y = Relu(x)  z = Neg(y) }
  )");
  ASSERT_TRUE(proto.ok());
  proto->mutable_graph()->mutable_node(0)->set_name("same");
  proto->mutable_graph()->mutable_node(1)->set_name("same");
  absl::StatusOr<Model> model = ModelFromProto(*proto);
  ASSERT_TRUE(model.ok());
  absl::StatusOr<ir::Graph> g = BuildGraph(*model);
  ASSERT_TRUE(g.ok());
  EXPECT_THAT(NodeNames(*g), ElementsAre("same", "Neg_1"));
}

TEST(ImportTest, SymbolicDimsAreKept) {
  absl::StatusOr<ir::Graph> g = Import(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[batch,3] x) => (float[batch,3] y) { y = Relu(x) }
  )");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->value(*g->FindValue("x")).shape.ToString(), "[batch,3]");
}

}  // namespace
}  // namespace autopar::onnx_io
