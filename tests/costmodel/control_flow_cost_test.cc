// Control flow: If costs its more expensive (or its constant) branch, Loop
// body × trip count, Scan body × sequence length — with body values that
// carry no shapes, as exporters leave them.
#include <limits>
#include <memory>

#include "costmodel/op_costs.h"
#include "gtest/gtest.h"
#include "tests/costmodel/test_graph.h"

namespace autopar::costmodel {
namespace {

using ir::DType;
using ir::OpKind;
using testing::Built;
using testing::Dims;
using testing::TestGraph;

std::shared_ptr<const ir::Graph> Shared(TestGraph&& g) {
  return std::make_shared<const ir::Graph>(Built(std::move(g)));
}

// Loop body (iter, cond, x) → (cond, x · w) with w read from the outer graph
// and no shape on x or on the MatMul's output.
std::shared_ptr<const ir::Graph> MatMulLoopBody() {
  TestGraph body;
  body.Input("iter", DType::kInt64, testing::Scalar());
  ir::ValueId cond = body.Input("cond_in", DType::kBool, testing::Scalar());
  ir::ValueId x = body.Input("x_in", DType::kFloat, std::nullopt);
  ir::ValueId w = body.Outer("w");
  ir::ValueId y = body.Op(OpKind::kMatMul, {x, w}, std::nullopt);
  ir::ValueId cond_out =
      body.Node(OpKind::kIdentity, {cond}, {testing::Scalar()}, {}, DType::kBool)[0];
  body.Output(cond_out);
  body.Output(y);
  return Shared(std::move(body));
}

// x [1,8] through a Loop whose trip-count input is `trips` (absent: none).
ir::Graph LoopGraph(std::optional<int64_t> trips) {
  TestGraph g;
  ir::ValueId m = trips ? g.Weight("m", DType::kInt64, {}, {*trips}) : ir::ValueId();
  ir::ValueId cond = g.Weight("cond", DType::kBool, {}, {1});
  ir::ValueId x = g.Input("x", DType::kFloat, {{1, 8}});
  ir::ValueId w = g.Weight("w", DType::kFloat, {8, 8});
  ir::ValueId y = g.Node(OpKind::kLoop, {m, cond, x}, {Dims{{1, 8}}}, {}, DType::kFloat,
                         {{"body", MatMulLoopBody()}}, {w})[0];
  g.Output(y);
  return Built(std::move(g));
}

TEST(LoopCostTest, BodyTimesConstantTripCount) {
  ir::Graph graph = LoopGraph(5);
  std::vector<NodeCost> costs = ComputeGraphCosts(graph);
  ASSERT_EQ(costs.size(), 1u);
  const NodeCost& c = costs[0];
  EXPECT_EQ(c.macs, 5 * (1 * 8 * 8));  // trips × the body's MatMul
  EXPECT_EQ(c.flops, 5 * (2 * 64));
  EXPECT_EQ(c.rule, CostRule::kSubgraph);
  EXPECT_EQ(c.op_class, OpClass::kMatMul);      // what the body mostly does
  EXPECT_EQ(c.kernels, 5 * 2 + 1);              // two body nodes per trip + the loop
  EXPECT_EQ(c.param_bytes, 8 + 1 + 8 * 8 * 4);  // m, cond and the captured w
  EXPECT_TRUE(c.has_formula);
  EXPECT_TRUE(c.estimated);  // the body's MatMul output had no shape
  // Per trip the MatMul reads x and w and writes [1,8]; Identity passes cond
  // on as a view (Note [Views]) and moves nothing.
  EXPECT_EQ(c.bytes_read, 5 * ((8 + 64) * 4));
  EXPECT_EQ(c.bytes_written, 5 * (8 * 4));
  EXPECT_EQ(SumCosts(graph, costs).param_bytes, 8 + 1 + 256);
}

TEST(LoopCostTest, UnknownTripCountUsesTheDefaultOrTheOption) {
  EXPECT_EQ(ComputeGraphCosts(LoopGraph(std::nullopt))[0].macs, kDefaultLoopTrips * 64);
  CostOptions options;
  options.default_loop_trips = 3;
  EXPECT_EQ(ComputeGraphCosts(LoopGraph(std::nullopt), options)[0].macs, 3 * 64);
  // Exporters write INT64_MAX for "until cond": not a real count.
  EXPECT_EQ(ComputeGraphCosts(LoopGraph(std::numeric_limits<int64_t>::max()), options)[0].macs,
            3 * 64);
  EXPECT_EQ(ComputeGraphCosts(LoopGraph(0))[0].macs, 0);
}

// `i = start; while (i += step) <compare> limit: x = x·w` as exporters write a
// counted while-loop: M = INT64_MAX (or `max_trips`), the condition computed
// from a loop-carried counter.
ir::Graph WhileGraph(int64_t start, int64_t step, OpKind compare, int64_t limit,
                     int64_t max_trips = std::numeric_limits<int64_t>::max()) {
  TestGraph body;
  body.Input("iter", DType::kInt64, testing::Scalar());
  body.Input("cond_in", DType::kBool, testing::Scalar());
  ir::ValueId x = body.Input("x_in", DType::kFloat, std::nullopt);
  ir::ValueId i = body.Input("i_in", DType::kInt64, testing::Scalar());
  ir::ValueId y = body.Op(OpKind::kMatMul, {x, body.Outer("w")}, std::nullopt);
  ir::ValueId step_value = body.Weight("step", DType::kInt64, {}, {step});
  ir::ValueId limit_value = body.Weight("limit", DType::kInt64, {}, {limit});
  ir::ValueId next =
      body.Node(OpKind::kAdd, {i, step_value}, {testing::Scalar()}, {}, DType::kInt64)[0];
  ir::ValueId cond =
      body.Node(compare, {next, limit_value}, {testing::Scalar()}, {}, DType::kBool)[0];
  body.Output(cond);
  body.Output(y);
  body.Output(next);

  TestGraph g;
  ir::ValueId m = g.Weight("m", DType::kInt64, {}, {max_trips});
  ir::ValueId cond0 = g.Weight("cond", DType::kBool, {}, {1});
  ir::ValueId x0 = g.Input("x", DType::kFloat, {{1, 8}});
  ir::ValueId i0 = g.Weight("i0", DType::kInt64, {}, {start});
  ir::ValueId w = g.Weight("w", DType::kFloat, {8, 8});
  std::vector<ir::ValueId> out =
      g.Node(OpKind::kLoop, {m, cond0, x0, i0}, {Dims{{1, 8}}, testing::Scalar()}, {},
             DType::kFloat, {{"body", Shared(std::move(body))}}, {w});
  g.Output(out[0]);
  return Built(std::move(g));
}

TEST(LoopCostTest, CountedWhileLoopsHaveAClosedFormTripCount) {
  auto trips = [](ir::Graph graph) { return ComputeGraphCosts(graph)[0].macs / 64; };
  EXPECT_EQ(trips(WhileGraph(0, 1, OpKind::kLess, 4)), 4);            // i = 1, 2, 3, 4
  EXPECT_EQ(trips(WhileGraph(0, 1, OpKind::kLessOrEqual, 4)), 5);     // ... 5
  EXPECT_EQ(trips(WhileGraph(10, -2, OpKind::kGreater, 0)), 5);       // 8, 6, 4, 2, 0
  EXPECT_EQ(trips(WhileGraph(0, 3, OpKind::kGreaterOrEqual, 5)), 1);  // 3 >= 5 is false
  EXPECT_EQ(trips(WhileGraph(0, 1, OpKind::kLess, 4, /*max_trips=*/3)), 3);
  // Never false (the counter moves away from the limit): the default.
  EXPECT_EQ(trips(WhileGraph(0, -1, OpKind::kLess, 4)), kDefaultLoopTrips);
  EXPECT_FALSE(ComputeGraphCosts(WhileGraph(0, 1, OpKind::kLess, 4))[0].saturated);
}

// If(cond) with a then branch of one MatMul and an else branch of two.
ir::Graph IfGraph(std::optional<int64_t> constant_condition) {
  TestGraph then_body;
  then_body.Output(
      then_body.Op(OpKind::kMatMul, {then_body.Outer("x"), then_body.Outer("w")}, std::nullopt));
  TestGraph else_body;
  ir::ValueId else_w = else_body.Outer("w");
  ir::ValueId h = else_body.Op(OpKind::kMatMul, {else_body.Outer("x"), else_w}, std::nullopt);
  else_body.Output(else_body.Op(OpKind::kMatMul, {h, else_w}, std::nullopt));

  TestGraph g;
  ir::ValueId cond = constant_condition ? g.Weight("cond", DType::kBool, {}, {*constant_condition})
                                        : g.Input("cond", DType::kBool, testing::Scalar());
  ir::ValueId x = g.Input("x", DType::kFloat, {{1, 8}});
  ir::ValueId w = g.Weight("w", DType::kFloat, {8, 8});
  g.Output(g.Node(OpKind::kIf, {cond}, {Dims{{1, 8}}}, {}, DType::kFloat,
                  {{"then_branch", Shared(std::move(then_body))},
                   {"else_branch", Shared(std::move(else_body))}},
                  {x, w})[0]);
  return Built(std::move(g));
}

TEST(IfCostTest, MoreExpensiveBranchUnlessTheConditionIsConstant) {
  EXPECT_EQ(ComputeGraphCosts(IfGraph(std::nullopt))[0].macs, 2 * 64);
  EXPECT_EQ(ComputeGraphCosts(IfGraph(1))[0].macs, 64);
  EXPECT_EQ(ComputeGraphCosts(IfGraph(0))[0].macs, 2 * 64);
  NodeCost c = ComputeGraphCosts(IfGraph(std::nullopt))[0];
  EXPECT_EQ(c.rule, CostRule::kSubgraph);
  EXPECT_EQ(c.param_bytes, 256);  // the captured weight
}

// Scan(s [1,8], xs) with body (s, x_t) → (s + x_t·w, x_t·w), scanning xs
// along `axes` (none: axis 0); its cost.
NodeCost ScanCost(std::vector<int64_t> xs_dims, std::vector<int64_t> axes = {}) {
  TestGraph body;
  ir::ValueId s = body.Input("s_in", DType::kFloat, std::nullopt);
  ir::ValueId x = body.Input("x_t", DType::kFloat, std::nullopt);
  ir::ValueId y = body.Op(OpKind::kMatMul, {x, body.Outer("w")}, std::nullopt);
  body.Output(body.Op(OpKind::kAdd, {s, y}, std::nullopt));
  body.Output(y);

  TestGraph g;
  ir::ValueId s0 = g.Input("s0", DType::kFloat, {{1, 8}});
  ir::ValueId xs = g.Input("xs", DType::kFloat, xs_dims);
  ir::ValueId w = g.Weight("w", DType::kFloat, {8, 8});
  std::vector<ir::Attribute> attributes = {ir::Attribute::Int("num_scan_inputs", 1)};
  if (!axes.empty()) attributes.push_back(ir::Attribute::Ints("scan_input_axes", axes));
  std::vector<ir::ValueId> out =
      g.Node(OpKind::kScan, {s0, xs}, {Dims{{1, 8}}, xs_dims}, attributes, DType::kFloat,
             {{"body", Shared(std::move(body))}}, {w});
  g.Output(out[0]);
  g.Output(out[1]);
  return ComputeGraphCosts(Built(std::move(g)))[0];
}

TEST(ScanCostTest, BodyTimesScanLength) {
  NodeCost c = ScanCost({6, 1, 8});
  EXPECT_EQ(c.macs, 6 * 64);
  EXPECT_EQ(c.flops, 6 * (2 * 64 + 8));  // + the Add of [1,8]
}

TEST(ScanCostTest, ScanAxesCountFromTheEndLikeTheShapeRule) {
  // xs [1,6,8] scanned along -2 (axis 1): 6 slices of [1,8], as the Scan
  // shape rule reads the same attribute.
  NodeCost c = ScanCost({1, 6, 8}, {-2});
  EXPECT_EQ(c.macs, 6 * 64);
  EXPECT_EQ(c.flops, 6 * (2 * 64 + 8));
}

}  // namespace
}  // namespace autopar::costmodel
