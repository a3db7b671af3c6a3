#include "ir/graph.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/builder.h"

namespace autopar::ir {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A node reading and writing the named values, for graphs built out of order.
Node MakeNode(Graph& g, const std::string& name, std::vector<std::string> inputs,
              std::vector<std::string> outputs) {
  Node n;
  n.name = name;
  n.op_type = "Relu";
  n.kind = LookupOpKind("", "Relu");
  for (const std::string& in : inputs) n.inputs.push_back(*g.FindValue(in));
  for (const std::string& out : outputs) n.outputs.push_back(*g.FindValue(out));
  return n;
}

ValueId AddTensor(Graph& g, const std::string& name, ValueKind kind) {
  Value v;
  v.name = name;
  v.kind = kind;
  v.dtype = DType::kFloat;
  v.shape = Shape({4});
  return g.AddValue(std::move(v));
}

TEST(GraphTest, FinalizeSortsNodesTopologicallyAndLinksConsumers) {
  // x -> a -> b -> c, listed in the order c, a, b (as some exporters do).
  Graph g;
  g.AddInput(AddTensor(g, "x", ValueKind::kGraphInput));
  for (const char* name : {"a_out", "b_out", "c_out"}) AddTensor(g, name, ValueKind::kNodeOutput);
  g.AddNode(MakeNode(g, "c", {"b_out"}, {"c_out"}));
  g.AddNode(MakeNode(g, "a", {"x"}, {"a_out"}));
  g.AddNode(MakeNode(g, "b", {"a_out"}, {"b_out"}));

  ASSERT_TRUE(g.Finalize().ok());

  std::vector<std::string> order;
  for (const Node& n : g.nodes()) order.push_back(n.name);
  EXPECT_THAT(order, ElementsAre("a", "b", "c"));
  const Value& a_out = g.value(*g.FindValue("a_out"));
  EXPECT_EQ(g.node(a_out.producer).name, "a");
  ASSERT_EQ(a_out.consumers.size(), 1u);
  EXPECT_EQ(g.node(a_out.consumers[0]).name, "b");
}

TEST(GraphTest, SortedInputKeepsItsOrder) {
  // Two independent chains interleaved: a valid order must stay as it is.
  Graph g;
  g.AddInput(AddTensor(g, "x", ValueKind::kGraphInput));
  for (const char* name : {"p", "q", "r", "s"}) AddTensor(g, name, ValueKind::kNodeOutput);
  g.AddNode(MakeNode(g, "n0", {"x"}, {"p"}));
  g.AddNode(MakeNode(g, "n1", {"x"}, {"q"}));
  g.AddNode(MakeNode(g, "n2", {"q"}, {"r"}));
  g.AddNode(MakeNode(g, "n3", {"p"}, {"s"}));
  ASSERT_TRUE(g.Finalize().ok());
  std::vector<std::string> order;
  for (const Node& n : g.nodes()) order.push_back(n.name);
  EXPECT_THAT(order, ElementsAre("n0", "n1", "n2", "n3"));
}

TEST(GraphTest, CycleIsAnErrorNamingANodeOnIt) {
  Graph g;
  g.AddInput(AddTensor(g, "x", ValueKind::kGraphInput));
  for (const char* name : {"a_out", "b_out", "c_out"}) AddTensor(g, name, ValueKind::kNodeOutput);
  g.AddNode(MakeNode(g, "entry", {"x"}, {"c_out"}));
  g.AddNode(MakeNode(g, "loop_a", {"b_out"}, {"a_out"}));
  g.AddNode(MakeNode(g, "loop_b", {"a_out"}, {"b_out"}));

  absl::Status status = g.Finalize();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("cycle"));
  EXPECT_THAT(std::string(status.message()),
              ::testing::AnyOf(HasSubstr("'loop_a'"), HasSubstr("'loop_b'")));
}

TEST(GraphTest, SelfLoopIsACycle) {
  Graph g;
  AddTensor(g, "y", ValueKind::kNodeOutput);
  g.AddNode(MakeNode(g, "self", {"y"}, {"y"}));
  EXPECT_THAT(std::string(g.Finalize().message()), HasSubstr("cycle through node 'self'"));
}

TEST(GraphTest, ValueProducedTwiceIsAnError) {
  Graph g;
  g.AddInput(AddTensor(g, "x", ValueKind::kGraphInput));
  AddTensor(g, "y", ValueKind::kNodeOutput);
  g.AddNode(MakeNode(g, "first", {"x"}, {"y"}));
  g.AddNode(MakeNode(g, "second", {"x"}, {"y"}));
  EXPECT_THAT(std::string(g.Finalize().message()),
              HasSubstr("'y' is produced by both node 'first' and node 'second'"));
}

TEST(GraphTest, DuplicateValueNameIsAnError) {
  Graph g;
  AddTensor(g, "x", ValueKind::kGraphInput);
  AddTensor(g, "x", ValueKind::kInitializer);
  EXPECT_THAT(std::string(g.Finalize().message()), HasSubstr("'x' is defined twice"));
}

TEST(GraphTest, ConsumersListEachReaderOnce) {
  GraphBuilder b;
  ValueId x = b.Input("x", DType::kFloat, {2});
  ValueId y = b.Op("Add", {x, x}, {DType::kFloat, {2}});
  b.Output(y);
  absl::StatusOr<Graph> g = std::move(b).Build();
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->value(x).consumers.size(), 1u);
  EXPECT_TRUE(g->value(y).is_graph_output);
}

TEST(GraphTest, SizeBytesUsesDtypeAndShape) {
  GraphBuilder b;
  ValueId w = b.Initializer("w", DType::kFloat16, {64, 3, 7, 7});
  ValueId x = b.Input("x", DType::kFloat, {1, 3, 224, 224});
  b.Output(b.Op("Identity", {x}, {DType::kFloat, {1, 3, 224, 224}}));
  absl::StatusOr<Graph> g = std::move(b).Build();
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->value(w).SizeBytes(), 64 * 3 * 7 * 7 * 2);
  EXPECT_TRUE(g->value(w).is_parameter);
  EXPECT_EQ(g->value(x).SizeBytes(), 3 * 224 * 224 * 4);
}

TEST(GraphTest, NodeAttributeAccessors) {
  Node n;
  n.attributes = {Attribute::Int("group", 4), Attribute::Ints("strides", {2, 2}),
                  Attribute::Float("alpha", 0.5f), Attribute::String("mode", "linear")};
  EXPECT_EQ(n.GetInt("group", 1), 4);
  EXPECT_EQ(n.GetInt("missing", 7), 7);
  EXPECT_THAT(n.GetInts("strides"), ElementsAre(2, 2));
  EXPECT_TRUE(n.GetInts("pads").empty());
  EXPECT_FLOAT_EQ(n.GetFloat("alpha", 0), 0.5f);
  EXPECT_EQ(n.GetString("mode", ""), "linear");
  EXPECT_EQ(n.GetInt("strides", -1), -1);  // wrong type reads as absent
}

}  // namespace
}  // namespace autopar::ir
