// Tests of shapes/shape_rules*.cc: each family's rule on graphs built in code,
// with the expected shapes worked out by hand in the comments.
#include "shapes/shape_rules.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"

namespace autopar::shapes {
namespace {

using ir::Attribute;
using ir::DType;
using ir::ValueId;
using ::testing::ElementsAre;
using ::testing::Optional;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// A graph built node by node as the importer would build it (domain, opset),
// whose node outputs start untyped; Run() applies the shape rules in
// topological order, each rule seeing what the previous ones derived.
class RuleGraph {
 public:
  explicit RuleGraph(int64_t opset = 18) : opset_(opset) {}

  // A graph input; -1 is an unknown dim.
  ValueId Input(std::vector<int64_t> dims, DType dtype = DType::kFloat) {
    return AddInput(ir::Shape(std::move(dims)), dtype);
  }
  ValueId Symbolic(std::vector<ir::Dim> dims) {
    return AddInput(ir::Shape::FromDims(std::move(dims)), DType::kFloat);
  }
  ValueId Unranked() { return AddInput(ir::Shape(), DType::kFloat); }
  // An int64 initializer with known contents, 1-D unless `dims` say otherwise.
  ValueId Ints(std::vector<int64_t> data, std::optional<std::vector<int64_t>> dims = std::nullopt) {
    ir::Value v;
    v.kind = ir::ValueKind::kInitializer;
    v.dtype = DType::kInt64;
    v.shape = ir::Shape(dims.value_or(std::vector<int64_t>{static_cast<int64_t>(data.size())}));
    v.int_data = std::move(data);
    ValueId id = Add(std::move(v));
    graph_.AddInitializer(id);
    return id;
  }
  ValueId Scalar(int64_t value) { return Ints({value}, std::vector<int64_t>{}); }

  std::vector<ValueId> Node(std::string op_type, std::vector<ValueId> inputs,
                            std::vector<Attribute> attributes = {}, size_t num_outputs = 1,
                            std::string domain = "") {
    ir::Node node;
    node.name = absl::StrCat(op_type, "_", graph_.num_nodes());
    node.kind = ir::LookupOpKind(domain, op_type);
    node.op_type = std::move(op_type);
    node.domain = std::move(domain);
    node.opset = node.domain.empty() ? opset_ : 1;
    node.inputs = std::move(inputs);
    node.attributes = std::move(attributes);
    for (size_t i = 0; i < num_outputs; ++i) node.outputs.push_back(Add(ir::Value{}));
    std::vector<ValueId> outputs = node.outputs;
    graph_.AddNode(std::move(node));
    return outputs;
  }
  ValueId Op(std::string op_type, std::vector<ValueId> inputs,
             std::vector<Attribute> attributes = {}) {
    return Node(std::move(op_type), std::move(inputs), std::move(attributes))[0];
  }
  ValueId Ms(std::string op_type, std::vector<ValueId> inputs,
             std::vector<Attribute> attributes = {}) {
    return Node(std::move(op_type), std::move(inputs), std::move(attributes), 1,
                "com.microsoft")[0];
  }

  void Run(const RuleOptions& options = {}) {
    ASSERT_TRUE(graph_.Finalize().ok());
    for (const ir::Node& node : graph_.nodes()) {
      std::optional<std::vector<OutputType>> types = InferOutputTypes(graph_, node, options);
      if (!types) continue;
      ASSERT_EQ(types->size(), node.outputs.size()) << node.name;
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        ir::Value& v = graph_.mutable_value(node.outputs[i]);
        v.dtype = (*types)[i].dtype;
        v.shape = (*types)[i].shape;
        v.int_data = (*types)[i].int_data;
      }
    }
  }

  std::string Shape(ValueId id) const { return graph_.value(id).shape.ToString(); }
  DType Type(ValueId id) const { return graph_.value(id).dtype; }
  const std::optional<std::vector<int64_t>>& Contents(ValueId id) const {
    return graph_.value(id).int_data;
  }
  const ir::Graph& graph() const { return graph_; }

 private:
  ValueId AddInput(ir::Shape shape, DType dtype) {
    ir::Value v;
    v.kind = ir::ValueKind::kGraphInput;
    v.dtype = dtype;
    v.shape = std::move(shape);
    ValueId id = Add(std::move(v));
    graph_.AddInput(id);
    return id;
  }
  ValueId Add(ir::Value v) {
    v.name = absl::StrCat("v", graph_.num_values());
    return graph_.AddValue(std::move(v));
  }

  int64_t opset_;
  ir::Graph graph_;
};

Attribute Int(std::string name, int64_t value) { return Attribute::Int(std::move(name), value); }
Attribute Ints(std::string name, std::vector<int64_t> v) {
  return Attribute::Ints(std::move(name), std::move(v));
}
Attribute Str(std::string name, std::string v) {
  return Attribute::String(std::move(name), std::move(v));
}

ir::Dim Sym(std::string name) { return ir::Dim{-1, std::move(name)}; }
ir::Dim Known(int64_t v) { return ir::Dim{v, ""}; }

TEST(ShapeRulesTest, UnaryOpsKeepShapeTypeAndSymbols) {
  RuleGraph g;
  ValueId x = g.Symbolic({Sym("batch"), Known(3)});
  ValueId relu = g.Op("Relu", {x});
  ValueId leaky = g.Op("LeakyRelu", {relu}, {Attribute::Float("alpha", 0.1f)});
  ValueId clip = g.Op("Clip", {leaky, ValueId(), ValueId()});
  ValueId gelu = g.Ms("FastGelu", {clip});
  ValueId quick = g.Ms("QuickGelu", {gelu});
  ValueId not_ = g.Op("Not", {g.Input({4}, DType::kBool)});
  ValueId nan = g.Op("IsNaN", {x});
  g.Run();
  EXPECT_EQ(g.Shape(quick), "[batch,3]");
  EXPECT_EQ(g.Type(quick), DType::kFloat);
  EXPECT_EQ(g.Type(not_), DType::kBool);
  EXPECT_EQ(g.Shape(nan), "[batch,3]");
  EXPECT_EQ(g.Type(nan), DType::kBool);
}

TEST(ShapeRulesTest, DropoutMaskIsBoolFromOpset10) {
  RuleGraph g(13);
  std::vector<ValueId> out = g.Node("Dropout", {g.Input({2, 3})}, {}, 2);
  g.Run();
  EXPECT_EQ(g.Shape(out[0]), "[2,3]");
  EXPECT_EQ(g.Shape(out[1]), "[2,3]");
  EXPECT_EQ(g.Type(out[1]), DType::kBool);

  RuleGraph old(7);
  std::vector<ValueId> out7 = old.Node("Dropout", {old.Input({2, 3})}, {}, 2);
  old.Run();
  EXPECT_EQ(old.Type(out7[1]), DType::kFloat);
}

TEST(ShapeRulesTest, BinaryOpsBroadcastLikeNumpy) {
  RuleGraph g;
  ValueId add = g.Op("Add", {g.Input({2, 1, 4}), g.Input({3, 1})});  // [2,3,4]
  ValueId sym = g.Op("Mul", {g.Symbolic({Sym("batch"), Known(1)}), g.Input({1, 5})});
  ValueId eq = g.Op("Equal", {g.Input({4}, DType::kInt64), g.Input({3, 1}, DType::kInt64)});
  ValueId sum = g.Op("Sum", {g.Input({3, 1}), g.Input({1, 4}), g.Input({4})});
  ValueId prelu = g.Op("PRelu", {g.Input({1, 3, 4, 4}), g.Input({3, 1, 1})});
  ValueId pow = g.Op("Pow", {g.Input({2, 3}), g.Input({}, DType::kInt32)});
  ValueId bad = g.Op("Sub", {g.Input({2, 3}), g.Input({4, 3})});
  g.Run();
  EXPECT_EQ(g.Shape(add), "[2,3,4]");
  EXPECT_EQ(g.Shape(sym), "[batch,5]");
  EXPECT_EQ(g.Shape(eq), "[3,4]");
  EXPECT_EQ(g.Type(eq), DType::kBool);
  EXPECT_EQ(g.Shape(sum), "[3,4]");
  EXPECT_EQ(g.Shape(prelu), "[1,3,4,4]");
  EXPECT_EQ(g.Type(pow), DType::kFloat);
  EXPECT_EQ(g.Shape(bad), "unranked");
  EXPECT_EQ(g.Type(bad), DType::kFloat);
}

TEST(ShapeRulesTest, IntegerArithmeticFoldsWithOnnxSemantics) {
  RuleGraph g;
  ValueId a = g.Ints({-7, 7, 9});
  ValueId b = g.Scalar(2);
  ValueId div = g.Op("Div", {a, b});  // truncates toward zero
  ValueId mod = g.Op("Mod", {a, b});  // sign of the divisor
  ValueId fmod = g.Op("Mod", {a, b}, {Int("fmod", 1)});
  ValueId sub = g.Op("Sub", {a, b});
  ValueId less = g.Op("Less", {a, b});
  ValueId where = g.Op("Where", {less, a, g.Scalar(0)});
  ValueId by_zero = g.Op("Div", {a, g.Scalar(0)});
  ValueId overflow = g.Op("Add", {g.Scalar(kInt64Max), g.Scalar(1)});
  g.Run();
  EXPECT_THAT(g.Contents(div), Optional(ElementsAre(-3, 3, 4)));
  EXPECT_THAT(g.Contents(mod), Optional(ElementsAre(1, 1, 1)));
  EXPECT_THAT(g.Contents(fmod), Optional(ElementsAre(-1, 1, 1)));
  EXPECT_THAT(g.Contents(sub), Optional(ElementsAre(-9, 5, 7)));
  EXPECT_THAT(g.Contents(less), Optional(ElementsAre(1, 0, 0)));
  EXPECT_THAT(g.Contents(where), Optional(ElementsAre(-7, 0, 0)));
  EXPECT_EQ(g.Shape(by_zero), "[3]");
  EXPECT_EQ(g.Contents(by_zero), std::nullopt);
  EXPECT_EQ(g.Shape(overflow), "[]");
  EXPECT_EQ(g.Contents(overflow), std::nullopt);
}

TEST(ShapeRulesTest, WhereBroadcastsThreeWays) {
  RuleGraph g;
  ValueId y = g.Op("Where", {g.Input({2, 1, 1}, DType::kBool), g.Input({1, 3, 1}, DType::kInt32),
                             g.Input({4}, DType::kInt32)});
  g.Run();
  EXPECT_EQ(g.Shape(y), "[2,3,4]");
  EXPECT_EQ(g.Type(y), DType::kInt32);
}

TEST(ShapeRulesTest, MatMulBroadcastsBatchAndHandlesVectors) {
  RuleGraph g;
  ValueId batched = g.Op("MatMul", {g.Input({2, 1, 3, 4}), g.Input({5, 4, 6})});
  ValueId vec_mat = g.Op("MatMul", {g.Input({4}), g.Input({2, 4, 6})});
  ValueId mat_vec = g.Op("MatMul", {g.Input({3, 4}), g.Input({4})});
  ValueId dot = g.Op("MatMul", {g.Input({4}), g.Input({4})});
  ValueId mismatch = g.Op("MatMul", {g.Input({3, 4}), g.Input({5, 6})});
  ValueId integer =
      g.Op("MatMulInteger", {g.Input({3, 4}, DType::kUint8), g.Input({4, 2}, DType::kInt8)});
  ValueId qlinear =
      g.Op("QLinearMatMul", {g.Input({3, 4}, DType::kUint8), g.Input({}),
                             g.Input({}, DType::kUint8), g.Input({4, 2}, DType::kInt8), g.Input({}),
                             g.Input({}, DType::kInt8), g.Input({}), g.Input({}, DType::kInt8)});
  ValueId fused = g.Ms("FusedMatMul", {g.Input({8, 3, 4}), g.Input({8, 6, 4})}, {Int("transB", 1)});
  g.Run();
  EXPECT_EQ(g.Shape(batched), "[2,5,3,6]");
  EXPECT_EQ(g.Shape(vec_mat), "[2,6]");
  EXPECT_EQ(g.Shape(mat_vec), "[3]");
  EXPECT_EQ(g.Shape(dot), "[]");
  EXPECT_EQ(g.Shape(mismatch), "unranked");
  EXPECT_EQ(g.Type(integer), DType::kInt32);
  EXPECT_EQ(g.Shape(qlinear), "[3,2]");
  EXPECT_EQ(g.Type(qlinear), DType::kInt8);
  EXPECT_EQ(g.Shape(fused), "[8,3,6]");
}

TEST(ShapeRulesTest, GemmHonoursTransposes) {
  RuleGraph g;
  // A [4,3]^T = [3,4]; B [5,4]^T = [4,5] -> [3,5]
  ValueId y = g.Op("Gemm", {g.Input({4, 3}), g.Input({5, 4}), g.Input({5})},
                   {Int("transA", 1), Int("transB", 1)});
  ValueId fused = g.Ms("FusedGemm", {g.Input({2, 7}), g.Input({7, 9})});
  g.Run();
  EXPECT_EQ(g.Shape(y), "[3,5]");
  EXPECT_EQ(g.Shape(fused), "[2,9]");
}

TEST(ShapeRulesTest, ConvWithGroupsDilationStrideAndPadding) {
  RuleGraph g;
  // Effective kernel (3-1)*2+1 = 5; floor((32 + 1 + 1 - 5) / 2) + 1 = 15.
  ValueId grouped = g.Op("Conv", {g.Input({1, 8, 32, 32}), g.Input({16, 2, 3, 3})},
                         {Int("group", 4), Ints("dilations", {2, 2}), Ints("strides", {2, 2}),
                          Ints("pads", {1, 1, 1, 1})});
  // SAME_UPPER: ceil(33 / 2) = 17 whatever the kernel.
  ValueId same = g.Op("Conv", {g.Input({2, 3, 33, 33}), g.Input({4, 3, 5, 5})},
                      {Str("auto_pad", "SAME_UPPER"), Ints("strides", {2, 2})});
  // VALID: 10 - 3 + 1 = 8; asymmetric pads: 10 + 0 + 2 - 3 + 1 = 10 and 10 + 1 + 3 - 3 + 1 = 12.
  ValueId valid =
      g.Op("Conv", {g.Input({1, 1, 10}), g.Input({1, 1, 3})}, {Str("auto_pad", "VALID")});
  ValueId asym =
      g.Op("Conv", {g.Input({1, 1, 10, 10}), g.Input({1, 1, 3, 3})}, {Ints("pads", {0, 1, 2, 3})});
  ValueId symbolic =
      g.Op("Conv", {g.Symbolic({Sym("n"), Known(3), Known(8), Known(8)}), g.Input({6, 3, 1, 1})});
  ValueId fused = g.Ms("FusedConv", {g.Input({1, 3, 8, 8}), g.Input({4, 3, 3, 3})},
                       {Ints("pads", {1, 1, 1, 1}), Str("activation", "Relu")});
  ValueId integer = g.Op(
      "ConvInteger", {g.Input({1, 3, 8, 8}, DType::kUint8), g.Input({4, 3, 3, 3}, DType::kUint8)});
  g.Run();
  EXPECT_EQ(g.Shape(grouped), "[1,16,15,15]");
  EXPECT_EQ(g.Shape(same), "[2,4,17,17]");
  EXPECT_EQ(g.Shape(valid), "[1,1,8]");
  EXPECT_EQ(g.Shape(asym), "[1,1,10,12]");
  EXPECT_EQ(g.Shape(symbolic), "[n,6,8,8]");
  EXPECT_EQ(g.Shape(fused), "[1,4,8,8]");
  EXPECT_EQ(g.Shape(integer), "[1,4,6,6]");
  EXPECT_EQ(g.Type(integer), DType::kInt32);
}

TEST(ShapeRulesTest, ConvTransposeFromStridesPaddingOrOutputShape) {
  RuleGraph g;
  ValueId x = g.Input({1, 4, 5, 5});
  ValueId w = g.Input({4, 3, 3, 3});  // [C, M / group, k, k]
  // 2 * (5 - 1) + 1 + 3 - 1 - 1 = 10; channels 3 * group 2 = 6.
  ValueId y = g.Op("ConvTranspose", {x, w},
                   {Int("group", 2), Ints("strides", {2, 2}), Ints("pads", {1, 1, 1, 1}),
                    Ints("output_padding", {1, 1})});
  ValueId shaped = g.Op("ConvTranspose", {x, w}, {Ints("output_shape", {12, 13})});
  ValueId same =
      g.Op("ConvTranspose", {x, w}, {Str("auto_pad", "SAME_UPPER"), Ints("strides", {3, 3})});
  g.Run();
  EXPECT_EQ(g.Shape(y), "[1,6,10,10]");
  EXPECT_EQ(g.Shape(shaped), "[1,3,12,13]");
  EXPECT_EQ(g.Shape(same), "[1,3,15,15]");
}

TEST(ShapeRulesTest, PoolingWindows) {
  RuleGraph g;
  // floor((32 + 2 - 3) / 2) + 1 = 16
  std::vector<ValueId> max = g.Node(
      "MaxPool", {g.Input({1, 3, 32, 32})},
      {Ints("kernel_shape", {3, 3}), Ints("strides", {2, 2}), Ints("pads", {1, 1, 1, 1})}, 2);
  // ceil_mode: ceil((5 + 2 - 2) / 2) + 1 = 4, but the 4th window would start
  // in the end padding ((4 - 1) * 2 >= 5 + 1), so 3.
  ValueId ceil = g.Op("MaxPool", {g.Input({1, 1, 5, 5})},
                      {Ints("kernel_shape", {2, 2}), Ints("strides", {2, 2}),
                       Ints("pads", {1, 1, 1, 1}), Int("ceil_mode", 1)});
  // ceil((6 - 3) / 2) + 1 = 3 (floor mode gives 2).
  ValueId ceil2 =
      g.Op("AveragePool", {g.Input({1, 1, 6, 6})},
           {Ints("kernel_shape", {3, 3}), Ints("strides", {2, 2}), Int("ceil_mode", 1)});
  // Dilation 2: effective kernel 5; 9 - 5 + 1 = 5. SAME_LOWER: ceil(9 / 2) = 5.
  ValueId dilated =
      g.Op("MaxPool", {g.Input({1, 1, 9})}, {Ints("kernel_shape", {3}), Ints("dilations", {2})});
  ValueId same =
      g.Op("AveragePool", {g.Input({1, 1, 9})},
           {Ints("kernel_shape", {3}), Ints("strides", {2}), Str("auto_pad", "SAME_LOWER")});
  ValueId lp = g.Op("LpPool", {g.Input({1, 2, 7, 7})}, {Ints("kernel_shape", {7, 7})});
  ValueId global = g.Op("GlobalAveragePool", {g.Input({2, 3, 7, 7})});
  ValueId global_max = g.Op("GlobalMaxPool", {g.Input({2, 3, 7})});
  g.Run();
  EXPECT_EQ(g.Shape(max[0]), "[1,3,16,16]");
  EXPECT_EQ(g.Shape(max[1]), "[1,3,16,16]");
  EXPECT_EQ(g.Type(max[1]), DType::kInt64);
  EXPECT_EQ(g.Shape(ceil), "[1,1,3,3]");
  EXPECT_EQ(g.Shape(ceil2), "[1,1,3,3]");
  EXPECT_EQ(g.Shape(dilated), "[1,1,5]");
  EXPECT_EQ(g.Shape(same), "[1,1,5]");
  EXPECT_EQ(g.Shape(lp), "[1,2,1,1]");
  EXPECT_EQ(g.Shape(global), "[2,3,1,1]");
  EXPECT_EQ(g.Shape(global_max), "[2,3,1]");
}

TEST(ShapeRulesTest, ReshapeCopiesZerosAndInfersMinusOne) {
  RuleGraph g;
  ValueId x = g.Input({2, 3, 4});
  ValueId flat = g.Op("Reshape", {x, g.Ints({0, -1})});      // [2, 24 / 2]
  ValueId mixed = g.Op("Reshape", {x, g.Ints({-1, 0, 2})});  // [24 / (3 * 2), 3, 2]
  ValueId two = g.Op("Reshape", {x, g.Ints({-1, -1})});
  ValueId bad = g.Op("Reshape", {x, g.Ints({5, -1})});  // 24 is not a multiple of 5
  ValueId zero = g.Op("Reshape", {g.Input({0, 3}), g.Ints({3, 0})}, {Int("allowzero", 1)});
  // [batch, 12, 64] -> [batch, -1]: the symbol cancels out.
  ValueId sym =
      g.Op("Reshape", {g.Symbolic({Sym("batch"), Known(12), Known(64)}), g.Ints({0, -1})});
  ValueId unknown = g.Op("Reshape", {x, g.Input({3}, DType::kInt64)});
  g.Run();
  EXPECT_EQ(g.Shape(flat), "[2,12]");
  EXPECT_EQ(g.Shape(mixed), "[4,3,2]");
  EXPECT_EQ(g.Shape(two), "unranked");
  EXPECT_EQ(g.Shape(bad), "[5,?]");
  EXPECT_EQ(g.Shape(zero), "[3,0]");
  EXPECT_EQ(g.Shape(sym), "[batch,768]");
  EXPECT_EQ(g.Shape(unknown), "[?,?,?]");
}

TEST(ShapeRulesTest, FlattenAndTranspose) {
  RuleGraph g;
  ValueId x = g.Input({2, 3, 4, 5});
  ValueId f2 = g.Op("Flatten", {x}, {Int("axis", 2)});
  ValueId f_neg = g.Op("Flatten", {x}, {Int("axis", -1)});
  ValueId f0 = g.Op("Flatten", {x}, {Int("axis", 0)});
  ValueId t = g.Op("Transpose", {x});
  ValueId p = g.Op("Transpose", {x}, {Ints("perm", {0, 2, 3, 1})});
  ValueId bad = g.Op("Transpose", {x}, {Ints("perm", {0, 0, 1, 2})});
  g.Run();
  EXPECT_EQ(g.Shape(f2), "[6,20]");
  EXPECT_EQ(g.Shape(f_neg), "[24,5]");
  EXPECT_EQ(g.Shape(f0), "[1,120]");
  EXPECT_EQ(g.Shape(t), "[5,4,3,2]");
  EXPECT_EQ(g.Shape(p), "[2,4,5,3]");
  EXPECT_EQ(g.Shape(bad), "unranked");
}

TEST(ShapeRulesTest, SqueezeAndUnsqueezeReadAxesByOpset) {
  RuleGraph g11(11);
  ValueId sq11 = g11.Op("Squeeze", {g11.Input({3, 1, 4})}, {Ints("axes", {1})});
  ValueId all = g11.Op("Squeeze", {g11.Input({1, 3, 1})});
  ValueId wrong = g11.Op("Squeeze", {g11.Input({3, 4})}, {Ints("axes", {0})});
  ValueId un11 = g11.Op("Unsqueeze", {g11.Input({3, 4})}, {Ints("axes", {0, 3})});
  g11.Run();
  EXPECT_EQ(g11.Shape(sq11), "[3,4]");
  EXPECT_EQ(g11.Shape(all), "[3]");
  EXPECT_EQ(g11.Shape(wrong), "unranked");
  EXPECT_EQ(g11.Shape(un11), "[1,3,4,1]");

  RuleGraph g13(13);
  ValueId sq13 = g13.Op("Squeeze", {g13.Input({3, 4, 1}), g13.Ints({-1})});
  ValueId un13 = g13.Op("Unsqueeze", {g13.Input({3, 4}), g13.Ints({-1, 1})});
  ValueId repeated = g13.Op("Unsqueeze", {g13.Input({3}), g13.Ints({0, 0})});
  g13.Run();
  EXPECT_EQ(g13.Shape(sq13), "[3,4]");
  EXPECT_EQ(g13.Shape(un13), "[3,1,4,1]");
  EXPECT_EQ(g13.Shape(repeated), "unranked");
}

TEST(ShapeRulesTest, ConcatSumsTheAxisAndJoinsContents) {
  RuleGraph g;
  ValueId c = g.Op("Concat", {g.Input({2, 3}), g.Input({2, 5})}, {Int("axis", -1)});
  ValueId sym =
      g.Op("Concat", {g.Symbolic({Sym("n"), Known(3)}), g.Input({-1, 3})}, {Int("axis", 1)});
  ValueId ints = g.Op("Concat", {g.Ints({1, 2}), g.Ints({3})}, {Int("axis", 0)});
  // Contents of a 2-D concatenation along axis 1: rows joined.
  ValueId rows = g.Op("Concat",
                      {g.Ints({1, 2, 3, 4}, std::vector<int64_t>{2, 2}),
                       g.Ints({5, 6}, std::vector<int64_t>{2, 1})},
                      {Int("axis", 1)});
  g.Run();
  EXPECT_EQ(g.Shape(c), "[2,8]");
  EXPECT_EQ(g.Shape(sym), "[n,6]");
  EXPECT_THAT(g.Contents(ints), Optional(ElementsAre(1, 2, 3)));
  EXPECT_THAT(g.Contents(rows), Optional(ElementsAre(1, 2, 5, 3, 4, 6)));
}

TEST(ShapeRulesTest, SplitBySizesNumOutputsOrOutputCount) {
  RuleGraph g;
  // num_outputs 3 over 10: ceil(10 / 3) = 4, so 4, 4 and the rest 2.
  std::vector<ValueId> uneven = g.Node("Split", {g.Input({10, 2})}, {Int("num_outputs", 3)}, 3);
  std::vector<ValueId> sized =
      g.Node("Split", {g.Input({2, 8}), g.Ints({3, 5})}, {Int("axis", 1)}, 2);
  std::vector<ValueId> even = g.Node("Split", {g.Input({6})}, {}, 3);
  std::vector<ValueId> shape = g.Node("Split", {g.Ints({1, 2, 3, 4}), g.Ints({1, 3})}, {}, 2);
  g.Run();
  EXPECT_EQ(g.Shape(uneven[0]), "[4,2]");
  EXPECT_EQ(g.Shape(uneven[1]), "[4,2]");
  EXPECT_EQ(g.Shape(uneven[2]), "[2,2]");
  EXPECT_EQ(g.Shape(sized[0]), "[2,3]");
  EXPECT_EQ(g.Shape(sized[1]), "[2,5]");
  EXPECT_EQ(g.Shape(even[2]), "[2]");
  EXPECT_THAT(g.Contents(shape[1]), Optional(ElementsAre(2, 3, 4)));

  RuleGraph g11(11);
  std::vector<ValueId> attr = g11.Node("Split", {g11.Input({7})}, {Ints("split", {2, 5})}, 2);
  std::vector<ValueId> odd = g11.Node("Split", {g11.Input({7})}, {}, 2);  // uneven before 18
  g11.Run();
  EXPECT_EQ(g11.Shape(attr[1]), "[5]");
  EXPECT_EQ(g11.Shape(odd[0]), "[?]");
}

TEST(ShapeRulesTest, SliceClampsAndStepsBackwards) {
  RuleGraph g;
  ValueId x = g.Input({10, 20});
  // 8, 6, 4 (stops before 2)
  ValueId back = g.Op("Slice", {x, g.Ints({8}), g.Ints({2}), g.Ints({0}), g.Ints({-2})});
  // Reversal: start -1 -> 9, end INT64_MIN -> clamped to -1.
  ValueId reversed =
      g.Op("Slice", {x, g.Ints({-1}), g.Ints({kInt64Min}), g.Ints({1}), g.Ints({-1})});
  ValueId clamped = g.Op("Slice", {x, g.Ints({-100, 5}), g.Ints({1000, kInt64Max})});
  ValueId every3 = g.Op("Slice", {x, g.Ints({1}), g.Ints({-1}), g.Ints({-1}), g.Ints({3})});
  ValueId empty = g.Op("Slice", {x, g.Ints({5}), g.Ints({2}), g.Ints({0})});
  ValueId zero_step = g.Op("Slice", {x, g.Ints({0}), g.Ints({2}), g.Ints({0}), g.Ints({0})});
  ValueId min_step = g.Op("Slice", {x, g.Ints({9}), g.Ints({0}), g.Ints({0}), g.Ints({kInt64Min})});
  ValueId sym = g.Op("Slice", {g.Symbolic({Sym("n"), Known(8)}), g.Ints({0, 2}),
                               g.Ints({kInt64Max, 6}), g.Ints({0, 1})});
  g.Run();
  EXPECT_EQ(g.Shape(back), "[3,20]");
  EXPECT_EQ(g.Shape(reversed), "[10,20]");
  EXPECT_EQ(g.Shape(clamped), "[10,15]");
  EXPECT_EQ(g.Shape(every3), "[10,6]");  // 1, 4, 7, 10, 13, 16
  EXPECT_EQ(g.Shape(empty), "[0,20]");
  EXPECT_EQ(g.Shape(zero_step), "unranked");
  EXPECT_EQ(g.Shape(min_step), "[1,20]");
  EXPECT_EQ(g.Shape(sym), "[n,4]");

  RuleGraph g9(9);
  ValueId attr = g9.Op("Slice", {g9.Input({4, 6})},
                       {Ints("starts", {1}), Ints("ends", {-1}), Ints("axes", {1})});
  ValueId contents =
      g9.Op("Slice", {g9.Ints({5, 6, 7, 8})}, {Ints("starts", {1}), Ints("ends", {3})});
  g9.Run();
  EXPECT_EQ(g9.Shape(attr), "[4,4]");
  EXPECT_THAT(g9.Contents(contents), Optional(ElementsAre(6, 7)));
}

TEST(ShapeRulesTest, GatherFamilies) {
  RuleGraph g;
  ValueId data = g.Input({5, 6, 7});
  ValueId axis1 = g.Op("Gather", {data, g.Input({2, 3}, DType::kInt64)}, {Int("axis", 1)});
  ValueId scalar = g.Op("Gather", {data, g.Scalar(-1)});
  ValueId bad_axis = g.Op("Gather", {data, g.Scalar(0)}, {Int("axis", 3)});
  ValueId contents = g.Op("Gather", {g.Ints({10, 20, 30}), g.Ints({2, -3})});
  ValueId out_of_range = g.Op("Gather", {g.Ints({10, 20, 30}), g.Scalar(3)});
  ValueId elements = g.Op("GatherElements", {data, g.Input({5, 2, 7}, DType::kInt64)});
  ValueId nd = g.Op("GatherND", {g.Input({2, 3, 4}), g.Input({2, 2}, DType::kInt64)});
  ValueId nd_batch = g.Op("GatherND", {g.Input({2, 3, 4}), g.Input({2, 1}, DType::kInt64)},
                          {Int("batch_dims", 1)});
  ValueId scatter = g.Op("ScatterND", {data, g.Input({2, 1}, DType::kInt64), g.Input({2, 6, 7})});
  g.Run();
  EXPECT_EQ(g.Shape(axis1), "[5,2,3,7]");
  EXPECT_EQ(g.Shape(scalar), "[6,7]");
  EXPECT_EQ(g.Shape(bad_axis), "unranked");
  EXPECT_THAT(g.Contents(contents), Optional(ElementsAre(30, 10)));
  EXPECT_EQ(g.Shape(out_of_range), "[]");
  EXPECT_EQ(g.Contents(out_of_range), std::nullopt);
  EXPECT_EQ(g.Shape(elements), "[5,2,7]");
  EXPECT_EQ(g.Shape(nd), "[2,4]");        // [2] + data[2:]
  EXPECT_EQ(g.Shape(nd_batch), "[2,4]");  // [2] + data[1 + 1:]
  EXPECT_EQ(g.Shape(scatter), "[5,6,7]");
}

TEST(ShapeRulesTest, ExpandTileAndPad) {
  RuleGraph g;
  ValueId expand = g.Op("Expand", {g.Input({3, 1}), g.Ints({2, 1, 4})});
  ValueId tile = g.Op("Tile", {g.Input({2, 3}), g.Ints({2, 2})});
  // Opset 18 axes input: pads [begin2, begin3, end2, end3].
  ValueId pad18 =
      g.Op("Pad", {g.Input({1, 3, 4, 4}), g.Ints({1, 2, 3, 4}), ValueId(), g.Ints({2, -1})});
  ValueId pad = g.Op("Pad", {g.Input({2, 3}), g.Ints({0, 1, 0, 2})});
  ValueId crop = g.Op("Pad", {g.Input({5}), g.Ints({-1, -2})});
  g.Run();
  EXPECT_EQ(g.Shape(expand), "[2,3,4]");
  EXPECT_EQ(g.Shape(tile), "[4,6]");
  EXPECT_EQ(g.Shape(pad18), "[1,3,8,10]");
  EXPECT_EQ(g.Shape(pad), "[2,6]");
  EXPECT_EQ(g.Shape(crop), "[2]");

  RuleGraph g2(2);
  ValueId pad2 = g2.Op("Pad", {g2.Input({2, 3})}, {Ints("pads", {1, 1, 1, 1})});
  g2.Run();
  EXPECT_EQ(g2.Shape(pad2), "[4,5]");
}

TEST(ShapeRulesTest, ReductionsReadAxesFromInputOrAttribute) {
  RuleGraph g;
  ValueId x = g.Input({2, 3, 4});
  ValueId mean = g.Op("ReduceMean", {x, g.Ints({1})});
  ValueId dropped = g.Op("ReduceMax", {x, g.Ints({-1, 0})}, {Int("keepdims", 0)});
  ValueId all = g.Op("ReduceL2", {x});
  ValueId noop = g.Op("ReduceSum", {x, g.Ints({})}, {Int("noop_with_empty_axes", 1)});
  ValueId unknown_axes = g.Op("ReduceMin", {x, g.Input({2}, DType::kInt64)}, {Int("keepdims", 0)});
  ValueId argmax = g.Op("ArgMax", {x}, {Int("axis", 1), Int("keepdims", 0)});
  ValueId argmin = g.Op("ArgMin", {x}, {Int("axis", -1)});
  ValueId prod = g.Op("ReduceProd", {g.Ints({2, 3, 4})}, {Int("keepdims", 0)});
  g.Run();
  EXPECT_EQ(g.Shape(mean), "[2,1,4]");
  EXPECT_EQ(g.Shape(dropped), "[3]");
  EXPECT_EQ(g.Shape(all), "[1,1,1]");
  EXPECT_EQ(g.Shape(noop), "[2,3,4]");
  EXPECT_EQ(g.Shape(unknown_axes), "[?]");
  EXPECT_EQ(g.Shape(argmax), "[2,4]");
  EXPECT_EQ(g.Type(argmax), DType::kInt64);
  EXPECT_EQ(g.Shape(argmin), "[2,3,1]");
  EXPECT_THAT(g.Contents(prod), Optional(ElementsAre(24)));

  RuleGraph g13(13);
  ValueId attr = g13.Op("ReduceMean", {g13.Input({2, 3, 4})}, {Ints("axes", {0, 2})});
  ValueId sum = g13.Op("ReduceSum", {g13.Input({2, 3, 4}), g13.Ints({1})}, {Int("keepdims", 0)});
  g13.Run();
  EXPECT_EQ(g13.Shape(attr), "[1,3,1]");
  EXPECT_EQ(g13.Shape(sum), "[2,4]");
}

TEST(ShapeRulesTest, Normalizations) {
  RuleGraph g;
  ValueId x = g.Input({2, 5, 8});
  std::vector<ValueId> layer = g.Node("LayerNormalization", {x, g.Input({8}), g.Input({8})}, {}, 3);
  std::vector<ValueId> axis1 =
      g.Node("LayerNormalization", {x, g.Input({5, 8})}, {Int("axis", 1)}, 3);
  std::vector<ValueId> batch =
      g.Node("BatchNormalization",
             {g.Input({4, 3, 6, 6}), g.Input({3}), g.Input({3}), g.Input({3}), g.Input({3})},
             {Int("training_mode", 1)}, 3);
  ValueId instance =
      g.Op("InstanceNormalization", {g.Input({4, 3, 6}), g.Input({3}), g.Input({3})});
  ValueId group = g.Op("GroupNormalization", {g.Input({4, 6, 5}), g.Input({6}), g.Input({6})},
                       {Int("num_groups", 3)});
  ValueId lp = g.Op("LpNormalization", {x});
  ValueId mvn = g.Op("MeanVarianceNormalization", {x});
  g.Run();
  EXPECT_EQ(g.Shape(layer[0]), "[2,5,8]");
  EXPECT_EQ(g.Shape(layer[1]), "[2,5,1]");
  EXPECT_EQ(g.Shape(layer[2]), "[2,5,1]");
  EXPECT_EQ(g.Type(layer[2]), DType::kFloat);
  EXPECT_EQ(g.Shape(axis1[1]), "[2,1,1]");
  EXPECT_EQ(g.Shape(batch[0]), "[4,3,6,6]");
  EXPECT_EQ(g.Shape(batch[2]), "[3]");
  EXPECT_EQ(g.Shape(instance), "[4,3,6]");
  EXPECT_EQ(g.Shape(group), "[4,6,5]");
  EXPECT_EQ(g.Shape(lp), "[2,5,8]");
  EXPECT_EQ(g.Shape(mvn), "[2,5,8]");
}

TEST(ShapeRulesTest, SoftmaxCumSumTriluLrnKeepShape) {
  RuleGraph g;
  ValueId x = g.Input({2, 3, 4, 4});
  ValueId sm = g.Op("Softmax", {x}, {Int("axis", 1)});
  ValueId lsm = g.Op("LogSoftmax", {x});
  ValueId hm = g.Op("Hardmax", {x});
  ValueId cs = g.Op("CumSum", {x, g.Scalar(1)});
  ValueId tr = g.Op("Trilu", {x});
  ValueId lrn = g.Op("LRN", {x}, {Int("size", 3)});
  g.Run();
  for (ValueId v : {sm, lsm, hm, cs, tr, lrn}) EXPECT_EQ(g.Shape(v), "[2,3,4,4]");
}

TEST(ShapeRulesTest, CastAndCastLike) {
  RuleGraph g;
  ValueId cast = g.Op("Cast", {g.Input({2, 3})}, {Int("to", 6)});  // int32
  ValueId like = g.Op("CastLike", {g.Input({2}), g.Input({}, DType::kFloat16)});
  ValueId ints = g.Op("Cast", {g.Ints({3, -1, 300})}, {Int("to", 6)});
  ValueId narrow = g.Op("Cast", {g.Ints({3, 300})}, {Int("to", 3)});  // 300 is no int8
  ValueId to_bool = g.Op("Cast", {g.Ints({0, 2})}, {Int("to", 9)});
  ValueId to_float = g.Op("Cast", {g.Ints({1})}, {Int("to", 1)});
  g.Run();
  EXPECT_EQ(g.Type(cast), DType::kInt32);
  EXPECT_EQ(g.Shape(cast), "[2,3]");
  EXPECT_EQ(g.Type(like), DType::kFloat16);
  EXPECT_THAT(g.Contents(ints), Optional(ElementsAre(3, -1, 300)));
  EXPECT_EQ(g.Contents(narrow), std::nullopt);
  EXPECT_THAT(g.Contents(to_bool), Optional(ElementsAre(0, 1)));
  EXPECT_EQ(g.Contents(to_float), std::nullopt);
}

TEST(ShapeRulesTest, ShapeAndSizeKnowTheirContents) {
  RuleGraph g;
  ValueId x = g.Input({2, 3, 4});
  ValueId shape = g.Op("Shape", {x});
  ValueId middle = g.Op("Shape", {x}, {Int("start", 1), Int("end", -1)});
  ValueId tail = g.Op("Shape", {x}, {Int("start", -2)});
  ValueId sym = g.Op("Shape", {g.Symbolic({Sym("n"), Known(3)})});
  ValueId size = g.Op("Size", {x});
  g.Run();
  EXPECT_EQ(g.Shape(shape), "[3]");
  EXPECT_EQ(g.Type(shape), DType::kInt64);
  EXPECT_THAT(g.Contents(shape), Optional(ElementsAre(2, 3, 4)));
  EXPECT_THAT(g.Contents(middle), Optional(ElementsAre(3)));
  EXPECT_THAT(g.Contents(tail), Optional(ElementsAre(3, 4)));
  EXPECT_EQ(g.Shape(sym), "[2]");
  EXPECT_EQ(g.Contents(sym), std::nullopt);
  EXPECT_EQ(g.Shape(size), "[]");
  EXPECT_THAT(g.Contents(size), Optional(ElementsAre(24)));
}

TEST(ShapeRulesTest, ConstantOfShapeAndRange) {
  RuleGraph g;
  Attribute seven;
  seven.name = "value";
  seven.type = ir::AttributeType::kTensor;
  seven.tensor.dtype = DType::kInt64;
  seven.tensor.dims = {1};
  seven.tensor.int_data = std::vector<int64_t>{7};
  ValueId filled = g.Op("ConstantOfShape", {g.Ints({2, 3})}, {seven});
  ValueId zeros = g.Op("ConstantOfShape", {g.Ints({4})});
  ValueId up = g.Op("Range", {g.Scalar(0), g.Scalar(10), g.Scalar(3)});
  ValueId down = g.Op("Range", {g.Scalar(10), g.Scalar(0), g.Scalar(-3)});
  ValueId none = g.Op("Range", {g.Scalar(5), g.Scalar(0), g.Scalar(1)});
  ValueId floats = g.Op("Range", {g.Input({}), g.Input({}), g.Input({})});
  g.Run();
  EXPECT_EQ(g.Shape(filled), "[2,3]");
  EXPECT_EQ(g.Type(filled), DType::kInt64);
  EXPECT_THAT(g.Contents(filled), Optional(ElementsAre(7, 7, 7, 7, 7, 7)));
  EXPECT_EQ(g.Shape(zeros), "[4]");
  EXPECT_EQ(g.Type(zeros), DType::kFloat);
  EXPECT_THAT(g.Contents(up), Optional(ElementsAre(0, 3, 6, 9)));
  EXPECT_THAT(g.Contents(down), Optional(ElementsAre(10, 7, 4, 1)));
  EXPECT_EQ(g.Shape(none), "[0]");
  EXPECT_EQ(g.Shape(floats), "[?]");
}

TEST(ShapeRulesTest, ResizeResolvesSizesNotScales) {
  RuleGraph g;
  ValueId x = g.Input({1, 3, 20, 40});
  ValueId sized = g.Op("Resize", {x, ValueId(), ValueId(), g.Ints({1, 3, 64, 64})});
  ValueId axes =
      g.Op("Resize", {x, ValueId(), ValueId(), g.Ints({10, 20})}, {Ints("axes", {2, 3})});
  // not_larger: scale min(30 / 20, 30 / 40) = 0.75 -> [15, 30].
  ValueId aspect = g.Op("Resize", {x, ValueId(), ValueId(), g.Ints({30, 30})},
                        {Ints("axes", {2, 3}), Str("keep_aspect_ratio_policy", "not_larger")});
  // Scales are floats, which the IR does not keep.
  ValueId scaled = g.Op("Resize", {x, ValueId(), g.Input({4})});
  g.Run();
  EXPECT_EQ(g.Shape(sized), "[1,3,64,64]");
  EXPECT_EQ(g.Shape(axes), "[1,3,10,20]");
  EXPECT_EQ(g.Shape(aspect), "[1,3,15,30]");
  EXPECT_EQ(g.Shape(scaled), "[?,?,?,?]");

  RuleGraph g7(7);
  ValueId up = g7.Op("Upsample", {g7.Input({1, 3, 5, 5})},
                     {Attribute::Floats("scales", {1.f, 1.f, 2.f, 2.5f})});
  g7.Run();
  EXPECT_EQ(g7.Shape(up), "[1,3,10,12]");
}

TEST(ShapeRulesTest, EinsumParsesExplicitImplicitAndEllipsis) {
  RuleGraph g;
  ValueId bmm =
      g.Op("Einsum", {g.Input({2, 3, 4}), g.Input({2, 4, 5})}, {Str("equation", "bij,bjk->bik")});
  ValueId implicit = g.Op("Einsum", {g.Input({3, 4}), g.Input({4, 5})}, {Str("equation", "ij,jk")});
  ValueId ellipsis = g.Op("Einsum", {g.Input({7, 2, 3}), g.Input({1, 3, 4})},
                          {Str("equation", "...ij, ...jk -> ...ik")});
  ValueId transpose = g.Op("Einsum", {g.Input({3, 4})}, {Str("equation", "ij->ji")});
  ValueId trace = g.Op("Einsum", {g.Input({3, 3})}, {Str("equation", "ii->")});
  ValueId bad = g.Op("Einsum", {g.Input({3, 4})}, {Str("equation", "ijk->i")});
  g.Run();
  EXPECT_EQ(g.Shape(bmm), "[2,3,5]");
  EXPECT_EQ(g.Shape(implicit), "[3,5]");
  EXPECT_EQ(g.Shape(ellipsis), "[7,2,4]");
  EXPECT_EQ(g.Shape(transpose), "[4,3]");
  EXPECT_EQ(g.Shape(trace), "[]");
  EXPECT_EQ(g.Shape(bad), "unranked");
}

TEST(ShapeRulesTest, TopKOneHotAndSpaceDepth) {
  RuleGraph g;
  std::vector<ValueId> topk = g.Node("TopK", {g.Input({3, 10}), g.Ints({4})}, {}, 2);
  ValueId onehot =
      g.Op("OneHot", {g.Input({2, 3}, DType::kInt64), g.Scalar(10), g.Input({2}, DType::kInt32)});
  ValueId onehot0 = g.Op("OneHot", {g.Input({2, 3}, DType::kInt64), g.Scalar(10), g.Input({2})},
                         {Int("axis", 0)});
  ValueId d2s = g.Op("DepthToSpace", {g.Input({1, 8, 2, 3})}, {Int("blocksize", 2)});
  ValueId s2d = g.Op("SpaceToDepth", {g.Input({1, 2, 4, 6})}, {Int("blocksize", 2)});
  ValueId col2im = g.Op("Col2Im", {g.Input({1, 20, 9}), g.Ints({4, 4}), g.Ints({2, 2})});
  g.Run();
  EXPECT_EQ(g.Shape(topk[0]), "[3,4]");
  EXPECT_EQ(g.Type(topk[0]), DType::kFloat);
  EXPECT_EQ(g.Type(topk[1]), DType::kInt64);
  EXPECT_EQ(g.Shape(onehot), "[2,3,10]");
  EXPECT_EQ(g.Type(onehot), DType::kInt32);
  EXPECT_EQ(g.Shape(onehot0), "[10,2,3]");
  EXPECT_EQ(g.Shape(d2s), "[1,2,4,6]");
  EXPECT_EQ(g.Shape(s2d), "[1,8,2,3]");
  EXPECT_EQ(g.Shape(col2im), "[1,5,4,4]");
}

TEST(ShapeRulesTest, Quantization) {
  RuleGraph g;
  ValueId x = g.Input({2, 3});
  ValueId q8 = g.Op("QuantizeLinear", {x, g.Input({}), g.Input({}, DType::kInt8)});
  ValueId qu8 = g.Op("QuantizeLinear", {x, g.Input({})});
  ValueId dq = g.Op("DequantizeLinear", {q8, g.Input({}, DType::kFloat16)});
  std::vector<ValueId> dyn = g.Node("DynamicQuantizeLinear", {x}, {}, 3);
  ValueId qconv = g.Op(
      "QLinearConv", {g.Input({1, 3, 8, 8}, DType::kUint8), g.Input({}), g.Input({}, DType::kUint8),
                      g.Input({4, 3, 3, 3}, DType::kInt8), g.Input({}), g.Input({}, DType::kInt8),
                      g.Input({}), g.Input({}, DType::kUint8)});
  g.Run();
  EXPECT_EQ(g.Type(q8), DType::kInt8);
  EXPECT_EQ(g.Type(qu8), DType::kUint8);
  EXPECT_EQ(g.Shape(dq), "[2,3]");
  EXPECT_EQ(g.Type(dq), DType::kFloat16);
  EXPECT_EQ(g.Shape(dyn[0]), "[2,3]");
  EXPECT_EQ(g.Type(dyn[0]), DType::kUint8);
  EXPECT_EQ(g.Shape(dyn[1]), "[]");
  EXPECT_EQ(g.Shape(qconv), "[1,4,6,6]");
  EXPECT_EQ(g.Type(qconv), DType::kUint8);
}

TEST(ShapeRulesTest, MicrosoftTransformerOps) {
  RuleGraph g;
  ValueId x = g.Input({2, 8, 32});
  ValueId bias_gelu = g.Ms("BiasGelu", {x, g.Input({32})});
  ValueId gelu = g.Ms("Gelu", {x});
  std::vector<ValueId> skip =
      g.Node("SkipLayerNormalization", {x, g.Input({2, 8, 32}), g.Input({32}), g.Input({32})}, {},
             4, "com.microsoft");
  ValueId attention =
      g.Ms("Attention", {x, g.Input({32, 96}), g.Input({96})}, {Int("num_heads", 4)});
  ValueId mha = g.Ms("MultiHeadAttention", {x, g.Input({2, 10, 32}), g.Input({2, 10, 64})},
                     {Int("num_heads", 4)});
  g.Run();
  EXPECT_EQ(g.Shape(bias_gelu), "[2,8,32]");
  EXPECT_EQ(g.Shape(gelu), "[2,8,32]");
  EXPECT_EQ(g.Shape(skip[0]), "[2,8,32]");
  EXPECT_EQ(g.Shape(skip[1]), "[2,8,1]");
  EXPECT_EQ(g.Shape(skip[3]), "[2,8,32]");
  EXPECT_EQ(g.Shape(attention), "[2,8,32]");
  EXPECT_EQ(g.Shape(mha), "[2,8,64]");
}

TEST(ShapeRulesTest, RecurrentLayers) {
  RuleGraph g;
  std::vector<ValueId> lstm =
      g.Node("LSTM", {g.Input({7, 2, 16}), g.Input({2, 128, 16}), g.Input({2, 128, 32})},
             {Int("hidden_size", 32), Str("direction", "bidirectional")}, 3);
  std::vector<ValueId> gru =
      g.Node("GRU", {g.Input({2, 7, 16}), g.Input({1, 96, 16}), g.Input({1, 96, 32})},
             {Int("layout", 1)}, 2);
  g.Run();
  EXPECT_EQ(g.Shape(lstm[0]), "[7,2,2,32]");
  EXPECT_EQ(g.Shape(lstm[1]), "[2,2,32]");
  EXPECT_EQ(g.Shape(lstm[2]), "[2,2,32]");
  EXPECT_EQ(g.Shape(gru[0]), "[2,7,1,32]");  // hidden size from R's last dim
  EXPECT_EQ(g.Shape(gru[1]), "[2,1,32]");
}

TEST(ShapeRulesTest, DataDependentOpsKeepWhatIsCertainWhenNotEstimating) {
  RuleGraph g;
  ValueId nonzero = g.Op("NonZero", {g.Input({2, 3})});
  ValueId compress =
      g.Op("Compress", {g.Input({4, 5}), g.Input({5}, DType::kBool)}, {Int("axis", 1)});
  g.Run({.estimate = false});
  EXPECT_EQ(g.Shape(nonzero), "[2,?]");
  EXPECT_EQ(g.Type(nonzero), DType::kInt64);
  EXPECT_EQ(g.Shape(compress), "[4,?]");
}

TEST(ShapeRulesTest, DataDependentCountsAreEstimatedByTheirUpperBound) {
  RuleGraph g;
  ValueId nonzero = g.Op("NonZero", {g.Input({2, 3})});
  ValueId compress =
      g.Op("Compress", {g.Input({4, 5}), g.Input({5}, DType::kBool)}, {Int("axis", 1)});
  g.Run();
  EXPECT_EQ(g.Shape(nonzero), "[2,6]");   // every element non-zero
  EXPECT_EQ(g.Shape(compress), "[4,5]");  // every column kept
}

TEST(ShapeRulesTest, ShapeGatherUnsqueezeConcatReshapeChainResolves) {
  // y = x.reshape(x.shape[0], -1), as exporters write it: every step's
  // contents come from the rules, none from the model.
  RuleGraph g;
  ValueId x = g.Input({2, 12, 5});
  ValueId shape = g.Op("Shape", {x});
  ValueId batch = g.Op("Gather", {shape, g.Scalar(0)}, {Int("axis", 0)});
  ValueId batch_1d = g.Op("Unsqueeze", {batch, g.Ints({0})});
  ValueId target = g.Op("Concat", {batch_1d, g.Ints({-1})}, {Int("axis", 0)});
  ValueId y = g.Op("Reshape", {x, target});
  g.Run();
  EXPECT_THAT(g.Contents(batch), Optional(ElementsAre(2)));
  EXPECT_EQ(g.Shape(batch), "[]");
  EXPECT_THAT(g.Contents(target), Optional(ElementsAre(2, -1)));
  EXPECT_EQ(g.Shape(y), "[2,60]");
}

TEST(ShapeRulesTest, OverflowingSizesGiveUnknownDimsNotCrashes) {
  RuleGraph g;
  const int64_t big = int64_t{1} << 40;
  ValueId x = g.Input({big, big});
  ValueId size = g.Op("Size", {x});
  ValueId flat = g.Op("Reshape", {x, g.Ints({-1})});
  ValueId flatten = g.Op("Flatten", {x}, {Int("axis", 0)});
  ValueId tile = g.Op("Tile", {x, g.Ints({kInt64Max, 1})});
  ValueId fill = g.Op("ConstantOfShape", {g.Ints({big, big})});
  ValueId range = g.Op("Range", {g.Scalar(kInt64Min), g.Scalar(kInt64Max), g.Scalar(1)});
  ValueId pad = g.Op("Pad", {x, g.Ints({kInt64Max, 0, kInt64Max, 0})});
  ValueId conv =
      g.Op("Conv", {g.Input({1, 1, 8}), g.Input({1, 1, 3})}, {Ints("dilations", {kInt64Max})});
  ValueId mul = g.Op("Mul", {g.Scalar(kInt64Max), g.Scalar(2)});
  ValueId expand = g.Op("Expand", {g.Input({1}), g.Ints({kInt64Max})});
  g.Run();
  EXPECT_EQ(g.Shape(size), "[]");
  EXPECT_EQ(g.Contents(size), std::nullopt);
  EXPECT_EQ(g.Shape(flat), "[?]");
  EXPECT_EQ(g.Shape(flatten), "[1,?]");
  EXPECT_EQ(g.Shape(tile), absl::StrCat("[?,", big, "]"));
  EXPECT_EQ(g.Shape(fill), absl::StrCat("[", big, ",", big, "]"));
  EXPECT_EQ(g.Contents(fill), std::nullopt);
  EXPECT_EQ(g.Shape(range), "[?]");
  EXPECT_EQ(g.Shape(pad), absl::StrCat("[?,", big, "]"));
  EXPECT_EQ(g.Shape(conv), "[1,1,?]");
  EXPECT_EQ(g.Contents(mul), std::nullopt);
  EXPECT_EQ(g.Shape(expand), absl::StrCat("[", kInt64Max, "]"));
  EXPECT_EQ(g.Contents(expand), std::nullopt);
}

TEST(ShapeRulesTest, UnknownOperatorsHaveNoRuleAndOutputsArePadded) {
  RuleGraph g;
  ValueId custom = g.Node("MyCustomOp", {g.Input({2})}, {}, 1, "my.domain")[0];
  // MaxPool without its kernel_shape: known rank, unknown window.
  std::vector<ValueId> pool = g.Node("MaxPool", {g.Input({1, 2, 8, 8})}, {}, 2);
  g.Run();
  ir::NodeId first;
  for (uint32_t i = 0; i < g.graph().num_nodes(); ++i) {
    if (g.graph().node(ir::NodeId(i)).op_type == "MyCustomOp") first = ir::NodeId(i);
  }
  EXPECT_EQ(InferOutputTypes(g.graph(), g.graph().node(first)), std::nullopt);
  EXPECT_EQ(g.Shape(custom), "unranked");
  EXPECT_EQ(g.Shape(pool[0]), "[1,2,?,?]");
}

TEST(ShapeRulesTest, EveryRuleSurvivesHostileInputs) {
  // Every operator kind on inputs of every odd sort (unranked, scalars, empty,
  // huge dims, extreme contents) and nonsense attributes: no crash, no UB
  // (run under the sanitizers), and one type per output.
  const std::vector<Attribute> attributes = {Int("axis", -100),
                                             Ints("axes", {kInt64Min, 3}),
                                             Ints("perm", {5, 0}),
                                             Ints("kernel_shape", {0}),
                                             Ints("pads", {-5, kInt64Max}),
                                             Ints("strides", {0}),
                                             Ints("dilations", {-1}),
                                             Int("num_outputs", 0),
                                             Int("blocksize", kInt64Max),
                                             Str("equation", "...a,.->"),
                                             Int("to", 99),
                                             Int("group", 0),
                                             Ints("output_shape", {-1}),
                                             Int("k", kInt64Min),
                                             Int("batch_dims", 7)};
  using MakeInput = ValueId (*)(RuleGraph&);
  const MakeInput kInputs[] = {
      [](RuleGraph& g) { return g.Unranked(); },
      [](RuleGraph& g) {
        return g.Input({kInt64Max / 2, 3, 0, 1});
      },
      [](RuleGraph& g) {
        return g.Ints({kInt64Min, -1, kInt64Max});
      },
      [](RuleGraph& g) { return g.Scalar(kInt64Min); },
      [](RuleGraph& g) { return g.Scalar(kInt64Max); },
      [](RuleGraph& g) {
        return g.Input({2, 3, 4, 5});
      },
      [](RuleGraph& g) {
        return g.Ints({1, -1});
      },
      [](RuleGraph& g) { return g.Input({}, DType::kInt64); },
  };
  for (uint16_t k = 1; !ir::OpKindName(static_cast<ir::OpKind>(k)).empty(); ++k) {
    const auto kind = static_cast<ir::OpKind>(k);
    for (size_t variant = 0; variant < std::size(kInputs); ++variant) {
      RuleGraph g(variant % 2 == 0 ? 18 : 9);
      std::vector<ValueId> inputs;
      for (size_t i = 0; i < 9; ++i)
        inputs.push_back(kInputs[(i + variant) % std::size(kInputs)](g));
      g.Node(std::string(ir::OpKindName(kind)), inputs,
             variant < 2 ? attributes : std::vector<Attribute>{}, 4,
             std::string(ir::OpKindDomain(kind)));
      g.Run();
    }
  }
}

// --- The op table ---------------------------------------------------------------

std::string OpName(ir::OpKind kind) {
  std::string domain(ir::OpKindDomain(kind));
  std::string name(ir::OpKindName(kind));
  return domain.empty() ? name : domain + "." + name;
}

// ir/op_kinds.def says which kinds have a shape rule; the dispatcher must
// agree, so that an operator listed with kShapeRule but given no rule, or a
// rule registered without its table entry, fails here by name.
TEST(ShapeRuleTableTest, EveryKindHasARuleExactlyWhenTheOpTableSaysSo) {
  int listed = 0;
  for (ir::OpKind kind : ir::AllOpKinds()) {
    const bool in_table = (ir::OpKindRules(kind) & ir::kShapeRule) != 0;
    listed += in_table ? 1 : 0;
    if (in_table && !HasRule(kind)) {
      ADD_FAILURE() << "op '" << OpName(kind)
                    << "': ir/op_kinds.def says shape rule, none is registered "
                       "(shapes/shape_rules.cc, FindRule)";
    }
    if (!in_table && HasRule(kind)) {
      ADD_FAILURE() << "op '" << OpName(kind)
                    << "': a shape rule is registered, ir/op_kinds.def does not list kShapeRule";
    }
  }
  EXPECT_FALSE(HasRule(ir::OpKind::kUnknown));
  EXPECT_GT(listed, 200);  // the table was read, not an empty list
}

// Every listed rule answers for a lone node of its kind, whatever it is
// given: three rank-4 float inputs and no attributes, or no inputs at all.
TEST(ShapeRuleTableTest, EveryListedRuleAnswersOnOddOperands) {
  for (ir::OpKind kind : ir::AllOpKinds()) {
    if ((ir::OpKindRules(kind) & ir::kShapeRule) == 0) continue;
    for (int inputs : {3, 0}) {
      RuleGraph g;
      std::vector<ValueId> ids;
      for (int i = 0; i < inputs; ++i) ids.push_back(g.Input({2, 3, 4, 5}));
      ValueId out = g.Node(std::string(ir::OpKindName(kind)), ids, {}, 2,
                           std::string(ir::OpKindDomain(kind)))[0];
      const ir::Node& node = g.graph().nodes().back();
      std::optional<std::vector<OutputType>> types = InferOutputTypes(g.graph(), node);
      ASSERT_TRUE(types.has_value()) << OpName(kind) << " with " << inputs << " inputs";
      EXPECT_EQ(types->size(), 2u) << OpName(kind);
      (void)out;
    }
  }
}

}  // namespace
}  // namespace autopar::shapes
