// Tests of the control-flow rules (shapes/shape_rules_control_flow.cc) on
// graphs built in code: Scan in its opset-8 batched form and its opset-9+
// form with scan axes and directions, bodies whose shapes rest on folded
// outer values (a Reshape target computed from an outer Shape -> Gather),
// and bodies nested in bodies. Bodies are built the way the importer leaves
// them: inputs and outer values without types, node outputs untyped.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "shapes/shape_rules.h"

namespace autopar::shapes {
namespace {

using ir::Attribute;
using ir::DType;
using ir::ValueId;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A graph or body, built node by node; Run() applies PropagateRules as
// shape inference does, so bodies are inferred by the control-flow rules.
class FlowGraph {
 public:
  explicit FlowGraph(std::string prefix, int64_t opset = 17)
      : prefix_(std::move(prefix)), opset_(opset) {}

  // An input; nullopt dims leave it untyped, as body inputs usually are.
  ValueId Input(std::string name, std::optional<std::vector<int64_t>> dims,
                DType dtype = DType::kFloat) {
    ir::Value v;
    v.name = std::move(name);
    v.kind = ir::ValueKind::kGraphInput;
    if (dims) {
      v.dtype = dtype;
      v.shape = ir::Shape(*dims);
    }
    ValueId id = Add(std::move(v));
    graph_.AddInput(id);
    return id;
  }
  ValueId SymbolicInput(std::string name, std::vector<ir::Dim> dims) {
    ir::Value v;
    v.name = std::move(name);
    v.kind = ir::ValueKind::kGraphInput;
    v.dtype = DType::kFloat;
    v.shape = ir::Shape::FromDims(std::move(dims));
    ValueId id = Add(std::move(v));
    graph_.AddInput(id);
    return id;
  }
  // An int64 (or bool) initializer with known contents, 1-D unless `dims`
  // say otherwise.
  ValueId Ints(std::vector<int64_t> data, std::optional<std::vector<int64_t>> dims = std::nullopt,
               DType dtype = DType::kInt64) {
    ir::Value v;
    v.name = absl::StrCat(prefix_, "_c", graph_.num_values());
    v.kind = ir::ValueKind::kInitializer;
    v.dtype = dtype;
    v.shape = ir::Shape(dims.value_or(std::vector<int64_t>{static_cast<int64_t>(data.size())}));
    v.int_data = std::move(data);
    v.is_parameter = true;
    ValueId id = Add(std::move(v));
    graph_.AddInitializer(id);
    return id;
  }
  ValueId Scalar(int64_t value) { return Ints({value}, std::vector<int64_t>{}); }
  ValueId True() { return Ints({1}, std::vector<int64_t>{}, DType::kBool); }
  // A value of an enclosing graph, read by name.
  ValueId Outer(const std::string& name) {
    ir::Value v;
    v.name = name;
    v.kind = ir::ValueKind::kOuterScope;
    v.type_kind = ir::TypeKind::kUnknown;
    return Add(std::move(v));
  }

  std::vector<ValueId> Node(std::string op_type, std::vector<ValueId> inputs,
                            std::vector<Attribute> attributes = {}, size_t num_outputs = 1,
                            std::vector<ir::Subgraph> subgraphs = {},
                            std::string output_name = "") {
    ir::Node node;
    node.name = absl::StrCat(prefix_, "_", op_type, graph_.num_nodes());
    node.kind = ir::LookupOpKind("", op_type);
    node.op_type = std::move(op_type);
    node.opset = opset_;
    node.inputs = std::move(inputs);
    node.attributes = std::move(attributes);
    // The outer values a body reads are the node's captured inputs.
    for (const ir::Subgraph& s : subgraphs) {
      for (const ir::Value& v : s.body->values()) {
        auto it = by_name_.find(v.name);
        if (v.kind == ir::ValueKind::kOuterScope && it != by_name_.end()) {
          node.captured.push_back(it->second);
        }
      }
    }
    node.subgraphs = std::move(subgraphs);
    for (size_t i = 0; i < num_outputs; ++i) {
      ir::Value v;
      v.name = i == 0 && !output_name.empty() ? output_name : absl::StrCat(node.name, "_out", i);
      node.outputs.push_back(Add(std::move(v)));
    }
    std::vector<ValueId> outputs = node.outputs;
    graph_.AddNode(std::move(node));
    return outputs;
  }
  ValueId Op(std::string op_type, std::vector<ValueId> inputs,
             std::vector<Attribute> attributes = {}) {
    return Node(std::move(op_type), std::move(inputs), std::move(attributes))[0];
  }
  // A node whose output has the name a body reads it by.
  ValueId NamedOp(std::string output_name, std::string op_type, std::vector<ValueId> inputs,
                  std::vector<Attribute> attributes = {}) {
    return Node(std::move(op_type), std::move(inputs), std::move(attributes), 1, {},
                std::move(output_name))[0];
  }
  void Output(ValueId id) {
    graph_.mutable_value(id).is_graph_output = true;
    graph_.AddOutput(id);
  }

  // The finished body, for a node's subgraph.
  ir::Subgraph Body(std::string attribute) && {
    EXPECT_TRUE(graph_.Finalize().ok());
    return {std::move(attribute), std::make_shared<const ir::Graph>(std::move(graph_))};
  }

  std::vector<RuleEstimate> Run(const RuleOptions& options = {}) {
    EXPECT_TRUE(graph_.Finalize().ok());
    return PropagateRules(graph_, options);
  }

  std::string Shape(ValueId id) const { return graph_.value(id).shape.ToString(); }
  DType Type(ValueId id) const { return graph_.value(id).dtype; }

 private:
  ValueId Add(ir::Value v) {
    std::string name = v.name;
    ValueId id = graph_.AddValue(std::move(v));
    by_name_[name] = id;
    return id;
  }

  std::string prefix_;
  int64_t opset_;
  ir::Graph graph_;
  std::map<std::string, ValueId> by_name_;
};

Attribute Int(std::string name, int64_t value) { return Attribute::Int(std::move(name), value); }
Attribute Ints(std::string name, std::vector<int64_t> v) {
  return Attribute::Ints(std::move(name), std::move(v));
}

// Scan body (s, x) → (s + x, x, Relu(x)): a state of the slice's shape and
// two scan outputs of it.
ir::Subgraph AccumulateBody(int64_t opset = 17) {
  FlowGraph b("acc", opset);
  ValueId s = b.Input("s_in", std::nullopt);
  ValueId x = b.Input("x_in", std::nullopt);
  b.Output(b.Op("Add", {s, x}));
  b.Output(b.Op("Identity", {x}));
  b.Output(b.Op("Relu", {x}));
  return std::move(b).Body("body");
}

TEST(ScanRuleTest, ScanOutputsInsertTheLengthAtTheirAxes) {
  // x [4,6,3] scanned along axis 1 (6 iterations of a [4,3] slice); the
  // outputs stack at the last axis (-1 of rank 3: [4,3,6]) and at axis 1.
  FlowGraph g("g");
  ValueId s0 = g.Input("s0", std::vector<int64_t>{4, 3});
  ValueId x = g.Input("x", std::vector<int64_t>{4, 6, 3});
  std::vector<ValueId> out = g.Node(
      "Scan", {s0, x},
      {Int("num_scan_inputs", 1), Ints("scan_input_axes", {1}), Ints("scan_input_directions", {1}),
       Ints("scan_output_axes", {-1, 1}), Ints("scan_output_directions", {1, 0})},
      3, {AccumulateBody()});
  EXPECT_THAT(g.Run(), IsEmpty());
  EXPECT_EQ(g.Shape(out[0]), "[4,3]");  // the body's state output
  EXPECT_EQ(g.Type(out[0]), DType::kFloat);
  EXPECT_EQ(g.Shape(out[1]), "[4,3,6]");
  EXPECT_EQ(g.Shape(out[2]), "[4,6,3]");
}

TEST(ScanRuleTest, DefaultAndNegativeInputAxes) {
  // No axes: axis 0 in and out. A negative input axis counts from the end:
  // -3 of rank 3 is axis 0 again.
  for (const std::vector<Attribute>& axes :
       {std::vector<Attribute>{}, std::vector<Attribute>{Ints("scan_input_axes", {-3})}}) {
    FlowGraph g("g");
    ValueId s0 = g.Input("s0", std::vector<int64_t>{6, 3});
    ValueId x = g.Input("x", std::vector<int64_t>{4, 6, 3});
    std::vector<Attribute> attributes = axes;
    attributes.push_back(Int("num_scan_inputs", 1));
    std::vector<ValueId> out = g.Node("Scan", {s0, x}, attributes, 3, {AccumulateBody()});
    g.Run();
    EXPECT_EQ(g.Shape(out[0]), "[6,3]");
    EXPECT_EQ(g.Shape(out[1]), "[4,6,3]");
    EXPECT_EQ(g.Shape(out[2]), "[4,6,3]");
  }
}

TEST(ScanRuleTest, Opset8HasABatchAxisAndSequenceLengths) {
  // Opset 8: (sequence_lens, states..., scan inputs...), every one with a
  // leading batch axis; x [2,5,3] is batch 2 of 5 steps of [3].
  FlowGraph g("g", 8);
  ValueId s0 = g.Input("s0", std::vector<int64_t>{2, 3});
  ValueId x = g.Input("x", std::vector<int64_t>{2, 5, 3});
  std::vector<ValueId> out =
      g.Node("Scan", {ValueId(), s0, x}, {Int("num_scan_inputs", 1), Ints("directions", {1})}, 3,
             {AccumulateBody(8)});
  EXPECT_THAT(g.Run(), IsEmpty());
  EXPECT_EQ(g.Shape(out[0]), "[2,3]");
  EXPECT_EQ(g.Shape(out[1]), "[2,5,3]");
  EXPECT_EQ(g.Shape(out[2]), "[2,5,3]");
}

TEST(ScanRuleTest, SymbolicOrUnknownLengthPassesThroughWithoutAnEstimate) {
  FlowGraph g("g");
  ValueId s0 = g.Input("s0", std::vector<int64_t>{3});
  ValueId x = g.SymbolicInput("x", {ir::Dim{-1, "seq"}, ir::Dim{3, ""}});
  ValueId y = g.SymbolicInput("y", {ir::Dim{}, ir::Dim{3, ""}});
  std::vector<ValueId> sym =
      g.Node("Scan", {s0, x}, {Int("num_scan_inputs", 1)}, 3, {AccumulateBody()});
  std::vector<ValueId> unknown =
      g.Node("Scan", {s0, y}, {Int("num_scan_inputs", 1)}, 3, {AccumulateBody()});
  EXPECT_THAT(g.Run(), IsEmpty());
  EXPECT_EQ(g.Shape(sym[0]), "[3]");
  EXPECT_EQ(g.Shape(sym[1]), "[seq,3]");
  EXPECT_EQ(g.Shape(unknown[0]), "[3]");
  EXPECT_EQ(g.Shape(unknown[1]), "[?,3]");
}

// The outer graphs below compute k = Shape(a)[0] = 2 from an input a [2,7]
// (what --dim binds): k's value is known only from folding in the outer
// graph. Their bodies capture k and reshape with a target built from it.
ValueId AddK(FlowGraph& g) {
  ValueId a = g.Input("a", std::vector<int64_t>{2, 7});
  ValueId shape = g.Op("Shape", {a});
  return g.NamedOp("k", "Gather", {shape, g.Scalar(0)}, {Int("axis", 0)});
}

// [k, -1] built inside body `b` from the outer scalar "k".
ValueId TargetFromOuterK(FlowGraph& b) {
  ValueId k1 = b.Op("Unsqueeze", {b.Outer("k"), b.Ints({0})});
  return b.Op("Concat", {k1, b.Ints({-1})}, {Int("axis", 0)});
}

TEST(ControlFlowBodyTest, LoopBodyReshapesWithAnOuterFoldedValue) {
  FlowGraph g("g");
  AddK(g);
  ValueId x = g.Input("x", std::vector<int64_t>{6, 4});
  // Body (i, cond, v) → (cond, v, Reshape(v, [k, -1])).
  FlowGraph b("loop");
  b.Input("i", std::nullopt);
  ValueId cond = b.Input("cond_in", std::nullopt);
  ValueId v = b.Input("v_in", std::nullopt);
  b.Output(b.Op("Identity", {cond}));
  b.Output(b.Op("Identity", {v}));
  b.Output(b.Op("Reshape", {v, TargetFromOuterK(b)}));
  std::vector<ValueId> out =
      g.Node("Loop", {g.Scalar(3), g.True(), x}, {}, 2, {std::move(b).Body("body")});
  EXPECT_THAT(g.Run(), IsEmpty());
  EXPECT_EQ(g.Shape(out[0]), "[6,4]");
  EXPECT_EQ(g.Shape(out[1]), "[3,2,12]");  // 3 trips of [2, 24 / 2]
}

// Scan body (s, x) → (s + Reshape(x, [k, -1]), Reshape(x, [k, -1])).
ir::Subgraph ReshapeByKBody() {
  FlowGraph b("scan");
  ValueId s = b.Input("s_in", std::nullopt);
  ValueId x = b.Input("x_in", std::nullopt);
  ValueId r = b.Op("Reshape", {x, TargetFromOuterK(b)});
  b.Output(b.Op("Add", {s, r}));
  b.Output(b.Op("Identity", {r}));
  return std::move(b).Body("body");
}

TEST(ControlFlowBodyTest, ScanBodyReshapesWithAnOuterFoldedValue) {
  FlowGraph g("g");
  AddK(g);
  ValueId s0 = g.Input("s0", std::vector<int64_t>{2, 4});
  ValueId x = g.Input("x", std::vector<int64_t>{5, 8});
  std::vector<ValueId> out =
      g.Node("Scan", {s0, x}, {Int("num_scan_inputs", 1), Ints("scan_output_axes", {2})}, 2,
             {ReshapeByKBody()});
  EXPECT_THAT(g.Run(), IsEmpty());
  EXPECT_EQ(g.Shape(out[0]), "[2,4]");
  EXPECT_EQ(g.Shape(out[1]), "[2,4,5]");  // [8] → [2,4], 5 of them on axis 2
}

TEST(ControlFlowBodyTest, IfBranchesReshapeWithAnOuterFoldedValue) {
  // The condition is data: both branches are inferred, and agree.
  FlowGraph g("g");
  AddK(g);
  g.Input("x", std::vector<int64_t>{8});
  ValueId cond = g.Input("c", std::vector<int64_t>{}, DType::kBool);
  std::vector<ir::Subgraph> branches;
  for (const char* name : {"then_branch", "else_branch"}) {
    FlowGraph b(name);
    ValueId r = b.Op("Reshape", {b.Outer("x"), TargetFromOuterK(b)});
    b.Output(b.Op(std::string(name) == "then_branch" ? "Relu" : "Neg", {r}));
    branches.push_back(std::move(b).Body(name));
  }
  std::vector<ValueId> out = g.Node("If", {cond}, {}, 1, std::move(branches));
  EXPECT_THAT(g.Run(), IsEmpty());
  EXPECT_EQ(g.Shape(out[0]), "[2,4]");
}

TEST(ControlFlowBodyTest, ScanInsideALoopSeesBothEnclosingGraphs) {
  // Loop (3 trips) over v [5,8]; its body scans v with ReshapeByKBody, whose
  // "k" lives two graphs up and whose state starts from the Loop body's own
  // zeros [2,4].
  FlowGraph g("g");
  AddK(g);
  ValueId x = g.Input("x", std::vector<int64_t>{5, 8});
  FlowGraph b("loop");
  b.Input("i", std::nullopt);
  ValueId cond = b.Input("cond_in", std::nullopt);
  ValueId v = b.Input("v_in", std::nullopt);
  b.Outer("k");  // the importer declares what a nested body reads
  ValueId zeros = b.Op("ConstantOfShape", {b.Ints({2, 4})});
  std::vector<ValueId> scan =
      b.Node("Scan", {zeros, v}, {Int("num_scan_inputs", 1)}, 2, {ReshapeByKBody()});
  b.Output(b.Op("Identity", {cond}));
  b.Output(b.Op("Identity", {v}));
  b.Output(scan[1]);
  std::vector<ValueId> out =
      g.Node("Loop", {g.Scalar(3), g.True(), x}, {}, 2, {std::move(b).Body("body")});
  EXPECT_THAT(g.Run(), IsEmpty());
  EXPECT_EQ(g.Shape(out[0]), "[5,8]");
  EXPECT_EQ(g.Shape(out[1]), "[3,5,2,4]");
}

TEST(ControlFlowBodyTest, IfInsideAScanReadsTheScanSlice) {
  // The branches read the Scan body's input x_in as their outer value: the
  // If rule binds it from the Scan body as inferred, slice shape included.
  FlowGraph g("g");
  g.Input("c", std::vector<int64_t>{}, DType::kBool);
  ValueId x = g.Input("x", std::vector<int64_t>{5, 3, 2});
  FlowGraph b("scan");
  b.Input("x_in", std::nullopt);
  std::vector<ir::Subgraph> branches;
  for (const char* name : {"then_branch", "else_branch"}) {
    FlowGraph branch(name);
    branch.Output(branch.Op("Transpose", {branch.Outer("x_in")}, {Ints("perm", {1, 0})}));
    branches.push_back(std::move(branch).Body(name));
  }
  b.Output(b.Node("If", {b.Outer("c")}, {}, 1, std::move(branches))[0]);
  std::vector<ValueId> out =
      g.Node("Scan", {x}, {Int("num_scan_inputs", 1)}, 1, {std::move(b).Body("body")});
  EXPECT_THAT(g.Run(), IsEmpty());
  EXPECT_EQ(g.Shape(out[0]), "[5,2,3]");
}

// Scan over x [5,3] whose body runs a Loop with no trip count on its slice:
// the Loop's stacked output is an estimate (RuleOptions::loop_trips), and so
// is what the Scan stacks of it. Returns the Scan output's shape and the
// estimates kept.
std::pair<std::string, std::vector<RuleEstimate>> ScanOfUncountedLoop(const RuleOptions& options) {
  FlowGraph g("g");
  ValueId x = g.Input("x", std::vector<int64_t>{5, 3});
  FlowGraph b("scan");
  b.Input("x_in", std::nullopt);
  FlowGraph inner("inner");
  inner.Input("i", std::nullopt);
  ValueId cond = inner.Input("cond_in", std::nullopt);
  inner.Output(inner.Op("Identity", {cond}));
  inner.Output(inner.Op("Relu", {inner.Outer("x_in")}));
  b.Output(b.Node("Loop", {ValueId(), b.True()}, {}, 1, {std::move(inner).Body("body")})[0]);
  ValueId out = g.Node("Scan", {x}, {Int("num_scan_inputs", 1)}, 1, {std::move(b).Body("body")})[0];
  std::vector<RuleEstimate> estimates = g.Run(options);
  return {g.Shape(out), estimates};
}

TEST(ControlFlowBodyTest, EstimatesInsideAScanBodyMarkItsOutputs) {
  RuleOptions options;
  options.loop_trips = 4;
  auto [shape, estimates] = ScanOfUncountedLoop(options);
  EXPECT_EQ(shape, "[5,4,3]");
  ASSERT_EQ(estimates.size(), 1u);
  EXPECT_THAT(estimates[0].assumed, HasSubstr("estimate(s) inside its body"));
  // Without estimates the Scan's output stays unknown.
  options.estimate = false;
  auto [strict_shape, strict_estimates] = ScanOfUncountedLoop(options);
  EXPECT_EQ(strict_shape, "unranked");
  EXPECT_THAT(strict_estimates, IsEmpty());
}

}  // namespace
}  // namespace autopar::shapes
