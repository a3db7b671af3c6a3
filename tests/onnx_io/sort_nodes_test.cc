// SortNodes: unsorted node lists (top level and in bodies) are put in
// topological order, sorted ones are left alone, and a cycle names its nodes.
#include "onnx_io/sort_nodes.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx_io/checker.h"
#include "onnx_io/model.h"
#include "onnx_io/text_format.h"
#include "tests/testing/temp_dir.h"

namespace autopar::onnx_io {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

onnx::ModelProto Parse(const char* text) {
  absl::StatusOr<onnx::ModelProto> model = ParseModelText(text);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : onnx::ModelProto();
}

std::vector<std::string> FirstOutputs(const onnx::GraphProto& graph) {
  std::vector<std::string> names;
  for (const onnx::NodeProto& n : graph.node()) names.push_back(n.output(0));
  return names;
}

const onnx::GraphProto& Body(const onnx::GraphProto& graph, int node, const char* attribute) {
  for (const onnx::AttributeProto& a : graph.node(node).attribute()) {
    if (a.name() == attribute) return a.g();
  }
  ADD_FAILURE() << "no attribute " << attribute;
  return graph;
}

TEST(SortNodesTest, SortedListIsLeftExactlyAsItIs) {
  onnx::ModelProto model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y) {
      b = Relu(x)
      a = Neg(x)
      y = Add(a, b)
    }
  )");
  const std::string before = model.SerializeAsString();
  ASSERT_TRUE(SortNodes(*model.mutable_graph()).ok());
  EXPECT_EQ(model.SerializeAsString(), before);
}

TEST(SortNodesTest, UnsortedListIsSortedKeepingSourceOrderAmongReadyNodes) {
  onnx::ModelProto model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y) {
      y = Add(c, d)
      c = Relu(a)
      a = Neg(x)
      d = Abs(x)
    }
  )");
  EXPECT_FALSE(CheckModel(model, {}).ok());
  ASSERT_TRUE(SortNodes(*model.mutable_graph()).ok());
  // a and d are ready from the start; a came first in the source.
  EXPECT_THAT(FirstOutputs(model.graph()), ElementsAre("a", "c", "d", "y"));
  EXPECT_TRUE(CheckModel(model, {}).ok());
}

TEST(SortNodesTest, BodiesAreSortedAndTheirOuterReadsOrderTheOwningNode) {
  // The If reads `t` only inside its then-branch, whose own nodes are out of
  // order too.
  onnx::ModelProto model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (bool c, float[2] x) => (float[2] y) {
      y = If(c) <
        then_branch = then_g () => (float[2] o1) {
          o1 = Neg(u)
          u = Relu(t)
        },
        else_branch = else_g () => (float[2] o2) { o2 = Abs(x) }
      >
      t = Sigmoid(x)
    }
  )");
  ASSERT_TRUE(SortNodes(*model.mutable_graph()).ok());
  EXPECT_THAT(FirstOutputs(model.graph()), ElementsAre("t", "y"));
  EXPECT_THAT(FirstOutputs(Body(model.graph(), 1, "then_branch")), ElementsAre("u", "o1"));
  EXPECT_TRUE(CheckModel(model, {}).ok());
}

TEST(SortNodesTest, CycleIsAnErrorNamingItsNodesInDataFlowOrder) {
  onnx::ModelProto model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y) {
      y = Neg(b)
      a = Add(x, b)
      b = Relu(a)
    }
  )");
  model.mutable_graph()->mutable_node(2)->set_name("relu_b");
  const std::string before = model.SerializeAsString();
  absl::Status s = SortNodes(*model.mutable_graph());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("cycle through nodes Add (output 'a') -> 'relu_b' (Relu) -> Add"));
  EXPECT_EQ(model.SerializeAsString(), before);
}

TEST(SortNodesTest, NodeReadingItsOwnOutputIsACycleOfOne) {
  onnx::ModelProto model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y) { y = Add(x, y) }
  )");
  absl::Status s = SortNodes(*model.mutable_graph());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("Add (output 'y') -> Add (output 'y')"));
}

TEST(SortNodesTest, LoadModelSortsSoThatTheCheckerAccepts) {
  onnx::ModelProto model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] z) {
      z = Relu(y)
      y = Neg(x)
    }
  )");
  testing::TempDir dir;
  const std::filesystem::path path = dir.Write("unsorted.onnx", model.SerializeAsString());
  absl::StatusOr<Model> loaded = LoadModel(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(FirstOutputs(loaded->proto.graph()), ElementsAre("y", "z"));
  EXPECT_TRUE(CheckModel(loaded->proto, dir.path()).ok());
}

}  // namespace
}  // namespace autopar::onnx_io
