// Hand-computed costs, one test per formula family: every expected number is
// written out as the arithmetic it comes from.
#include "costmodel/op_costs.h"

#include <string>

#include "costmodel/device.h"
#include "gtest/gtest.h"
#include "tests/costmodel/test_graph.h"

namespace autopar::costmodel {
namespace {

using ir::Attribute;
using ir::DType;
using ir::OpKind;
using testing::Built;
using testing::TestGraph;

// The cost of the only (or first) node of `kind` in `graph`.
NodeCost CostOfKind(const ir::Graph& graph, OpKind kind, const CostOptions& options = {}) {
  std::vector<NodeCost> costs = ComputeGraphCosts(graph, options);
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    if (graph.nodes()[i].kind == kind) return costs[i];
  }
  ADD_FAILURE() << "no node of kind " << ir::OpKindName(kind);
  return {};
}

// --- Convolutions ----------------------------------------------------------------

TEST(ConvCostTest, GroupsDilationsStridesAndBias) {
  // X [2,8,32,32], W [16, 8/2, 3, 3], group 2, stride 2, dilation 2, pads 2:
  // out = (32 + 2 + 2 - (2·(3-1)+1)) / 2 + 1 = 16 → Y [2,16,16,16].
  for (bool output_shape_known : {true, false}) {
    TestGraph g;
    ir::ValueId x = g.Input("x", DType::kFloat, {{2, 8, 32, 32}});
    ir::ValueId w = g.Weight("w", DType::kFloat, {16, 4, 3, 3});
    ir::ValueId b = g.Weight("b", DType::kFloat, {16});
    ir::ValueId y =
        g.Op(OpKind::kConv, {x, w, b}, {{2, 16, 16, 16}},
             {Attribute::Int("group", 2), Attribute::Ints("strides", {2, 2}),
              Attribute::Ints("dilations", {2, 2}), Attribute::Ints("pads", {2, 2, 2, 2}),
              Attribute::Ints("kernel_shape", {3, 3})});
    if (!output_shape_known) g.value(y).shape = ir::Shape();  // from the attributes
    g.Output(y);
    NodeCost c = CostOfKind(Built(std::move(g)), OpKind::kConv);
    SCOPED_TRACE(output_shape_known ? "output shape known" : "output shape from attributes");
    const int64_t macs = 2 * 16 * (16 * 16) * 4 * (3 * 3);  // N·Cout·HW·(Cin/g)·k²
    EXPECT_EQ(c.macs, macs);
    EXPECT_EQ(c.flops, 2 * macs + 2 * 16 * 16 * 16);  // + one bias add per output
    EXPECT_EQ(c.op_class, OpClass::kConv);
    EXPECT_EQ(c.rule, CostRule::kFormula);
    EXPECT_TRUE(c.has_formula);
    EXPECT_EQ(c.param_bytes, (16 * 4 * 9 + 16) * 4);
    EXPECT_EQ(c.bytes_read, (2 * 8 * 32 * 32 + 16 * 4 * 9 + 16) * 4);
    if (output_shape_known) {
      EXPECT_EQ(c.bytes_written, 2 * 16 * 16 * 16 * 4);
      EXPECT_FALSE(c.estimated);
    }
    // im2col: (Cin/g · k²) × out positions of one image, fp32.
    EXPECT_EQ(c.workspace_bytes, 4 * 9 * 16 * 16 * 4);
  }
}

TEST(ConvCostTest, DepthwiseAndPointwise) {
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{1, 32, 14, 14}});
  ir::ValueId dw = g.Weight("dw", DType::kFloat, {32, 1, 3, 3});
  ir::ValueId pw = g.Weight("pw", DType::kFloat, {64, 32, 1, 1});
  ir::ValueId h = g.Op(OpKind::kConv, {x, dw}, {{1, 32, 14, 14}},
                       {Attribute::Int("group", 32), Attribute::Ints("pads", {1, 1, 1, 1})});
  ir::ValueId y = g.Op(OpKind::kConv, {h, pw}, {{1, 64, 14, 14}});
  g.Output(y);
  ir::Graph graph = Built(std::move(g));
  std::vector<NodeCost> costs = ComputeGraphCosts(graph);
  EXPECT_EQ(costs[0].macs, 32 * 14 * 14 * 1 * 9);
  EXPECT_EQ(costs[1].macs, 64 * 14 * 14 * 32 * 1);
  EXPECT_EQ(costs[1].flops, 2 * costs[1].macs);  // no bias
  EXPECT_EQ(costs[1].workspace_bytes, 0);        // pointwise: no im2col
}

TEST(ConvCostTest, ConvTransposeCountsEveryInputTimesKernel) {
  // X [1,16,8,8], W [16, 8, 4, 4] (C_in, C_out/g, k): 16·64 inputs × 8 × 16.
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{1, 16, 8, 8}});
  ir::ValueId w = g.Weight("w", DType::kFloat, {16, 8, 4, 4});
  g.Output(
      g.Op(OpKind::kConvTranspose, {x, w}, {{1, 8, 18, 18}}, {Attribute::Ints("strides", {2, 2})}));
  NodeCost c = CostOfKind(Built(std::move(g)), OpKind::kConvTranspose);
  EXPECT_EQ(c.macs, (16 * 8 * 8) * 8 * (4 * 4));
  EXPECT_EQ(c.flops, 2 * c.macs);
}

TEST(ConvCostTest, QuantizedConvCountsIntegerOps) {
  // QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp).
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kUint8, {{1, 3, 8, 8}});
  ir::ValueId scale = g.Weight("s", DType::kFloat, {});
  ir::ValueId zp = g.Weight("zp", DType::kUint8, {});
  ir::ValueId w = g.Weight("w", DType::kInt8, {4, 3, 3, 3});
  ir::ValueId wzp = g.Weight("wzp", DType::kInt8, {});
  ir::ValueId y = g.Node(OpKind::kQLinearConv, {x, scale, zp, w, scale, wzp, scale, zp},
                         {{{1, 4, 6, 6}}}, {}, DType::kUint8)[0];
  g.Output(y);
  NodeCost c = CostOfKind(Built(std::move(g)), OpKind::kQLinearConv);
  const int64_t macs = 4 * 36 * 3 * 9;
  EXPECT_EQ(c.macs, macs);
  EXPECT_EQ(c.flops, 2 * macs + 4 * 36 * 4);  // + requantization per output
  EXPECT_EQ(c.dtype_class, DTypeClass::kInt8);
}

// --- MatMul / Gemm / Einsum ------------------------------------------------------

TEST(MatMulCostTest, BatchedAndBroadcast) {
  // [4,1,8,16] × [3,16,32] → [4,3,8,32]: 4·3 batches of 8×32 outputs, K 16.
  for (bool output_shape_known : {true, false}) {
    TestGraph g;
    ir::ValueId a = g.Input("a", DType::kFloat, {{4, 1, 8, 16}});
    ir::ValueId b = g.Input("b", DType::kFloat, {{3, 16, 32}});
    ir::ValueId y = g.Op(OpKind::kMatMul, {a, b}, {{4, 3, 8, 32}});
    if (!output_shape_known) g.value(y).shape = ir::Shape();
    g.Output(y);
    NodeCost c = CostOfKind(Built(std::move(g)), OpKind::kMatMul);
    EXPECT_EQ(c.macs, 4 * 3 * 8 * 32 * 16);
    EXPECT_EQ(c.flops, 2 * c.macs);
    EXPECT_EQ(c.op_class, OpClass::kMatMul);
    EXPECT_EQ(c.param_bytes, 0);
    // Estimated only when the output had to be inferred.
    EXPECT_EQ(c.estimated, !output_shape_known);
    EXPECT_EQ(c.bytes_written, 4 * 3 * 8 * 32 * 4);
  }
}

TEST(MatMulCostTest, VectorOperands) {
  TestGraph g;
  ir::ValueId v = g.Input("v", DType::kFloat, {{16}});
  ir::ValueId m = g.Weight("m", DType::kFloat, {16, 32});
  g.Output(g.Op(OpKind::kMatMul, {v, m}, {{32}}));
  NodeCost c = CostOfKind(Built(std::move(g)), OpKind::kMatMul);
  EXPECT_EQ(c.macs, 32 * 16);
  EXPECT_EQ(c.param_bytes, 16 * 32 * 4);
}

TEST(GemmCostTest, TransposedOperandsAlphaBetaAndBias) {
  // A [64,32] with transA → M 32, K 64; B [16,64] with transB → N 16.
  auto gemm = [](float alpha, float beta) {
    TestGraph g;
    ir::ValueId a = g.Input("a", DType::kFloat, {{64, 32}});
    ir::ValueId b = g.Weight("b", DType::kFloat, {16, 64});
    ir::ValueId c = g.Weight("c", DType::kFloat, {16});
    g.Output(g.Op(OpKind::kGemm, {a, b, c}, {{32, 16}},
                  {Attribute::Int("transA", 1), Attribute::Int("transB", 1),
                   Attribute::Float("alpha", alpha), Attribute::Float("beta", beta)}));
    return CostOfKind(Built(std::move(g)), OpKind::kGemm);
  };
  const int64_t macs = 32 * 16 * 64;
  NodeCost plain = gemm(1.0f, 1.0f);
  EXPECT_EQ(plain.macs, macs);
  EXPECT_EQ(plain.flops, 2 * macs + 32 * 16);  // + C
  NodeCost scaled = gemm(0.5f, 2.0f);
  EXPECT_EQ(scaled.macs, macs);
  EXPECT_EQ(scaled.flops, 2 * macs + 32 * 16 * (1 + 2));  // alpha·, beta·C, + C
}

TEST(EinsumCostTest, ContractionsReductionsAndTranspositions) {
  auto einsum = [](const char* equation, std::vector<std::vector<int64_t>> inputs,
                   std::vector<int64_t> output) {
    TestGraph g;
    std::vector<ir::ValueId> ids;
    for (size_t i = 0; i < inputs.size(); ++i) {
      ids.push_back(g.Input(absl::StrCat("x", i), DType::kFloat, inputs[i]));
    }
    g.Output(g.Op(OpKind::kEinsum, ids, output, {Attribute::String("equation", equation)}));
    return CostOfKind(Built(std::move(g)), OpKind::kEinsum);
  };
  EXPECT_EQ(einsum("bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, {2, 3, 5}).macs, 2 * 3 * 4 * 5);
  EXPECT_EQ(einsum("...ij, jk -> ...ik", {{6, 2, 3, 4}, {4, 5}}, {6, 2, 3, 5}).macs,
            6 * 2 * 3 * 4 * 5);
  EXPECT_EQ(einsum("i,i,i->", {{7}, {7}, {7}}, {}).macs, 2 * 7);  // two multiplies per point
  NodeCost sum = einsum("ij->", {{3, 4}}, {});
  EXPECT_EQ(sum.macs, 0);
  EXPECT_EQ(sum.flops, 12);
  NodeCost transpose = einsum("ij->ji", {{3, 4}}, {4, 3});
  EXPECT_EQ(transpose.flops, 0);
  EXPECT_EQ(transpose.op_class, OpClass::kDataMovement);
}

// --- Recurrent networks ----------------------------------------------------------

TEST(RecurrentCostTest, BidirectionalLstmCountsEveryStepAndDirection) {
  // X [seq 10, batch 3, input 20], hidden 16, 2 directions, with biases.
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{10, 3, 20}});
  ir::ValueId w = g.Weight("w", DType::kFloat, {2, 4 * 16, 20});
  ir::ValueId r = g.Weight("r", DType::kFloat, {2, 4 * 16, 16});
  ir::ValueId b = g.Weight("b", DType::kFloat, {2, 8 * 16});
  std::vector<ir::ValueId> out =
      g.Node(OpKind::kLSTM, {x, w, r, b}, {{{10, 2, 3, 16}}, {{2, 3, 16}}, {{2, 3, 16}}},
             {Attribute::Int("hidden_size", 16), Attribute::String("direction", "bidirectional")});
  g.Output(out[0]);
  NodeCost c = CostOfKind(Built(std::move(g)), OpKind::kLSTM);
  const int64_t steps = 10 * 2;  // seq × directions
  const int64_t macs = steps * 3 * 4 * 16 * (20 + 16);
  EXPECT_EQ(c.macs, macs);
  // Per hidden unit and step: 3 sigmoids (10) + 2 tanh (10) + cell update (4)
  // + the two biases of 4 gates (8).
  EXPECT_EQ(c.flops, 2 * macs + steps * 3 * 16 * (3 * 10 + 2 * 10 + 4 + 8));
  EXPECT_EQ(c.op_class, OpClass::kRecurrent);
  EXPECT_EQ(c.param_bytes, (2 * 64 * 20 + 2 * 64 * 16 + 2 * 128) * 4);
}

TEST(RecurrentCostTest, GruAndRnnBatchFirst) {
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{2, 5, 8}});  // layout 1: [batch, seq, input]
  ir::ValueId gw = g.Weight("gw", DType::kFloat, {1, 3 * 4, 8});
  ir::ValueId gr = g.Weight("gr", DType::kFloat, {1, 3 * 4, 4});
  ir::ValueId rw = g.Weight("rw", DType::kFloat, {1, 4, 8});
  ir::ValueId rr = g.Weight("rr", DType::kFloat, {1, 4, 4});
  g.Output(g.Node(OpKind::kGRU, {x, gw, gr}, {{{2, 5, 1, 4}}},
                  {Attribute::Int("hidden_size", 4), Attribute::Int("layout", 1)})[0]);
  g.Output(g.Node(OpKind::kRNN, {x, rw, rr}, {{{2, 5, 1, 4}}},
                  {Attribute::Int("hidden_size", 4), Attribute::Int("layout", 1)})[0]);
  ir::Graph graph = Built(std::move(g));
  NodeCost gru = CostOfKind(graph, OpKind::kGRU);
  NodeCost rnn = CostOfKind(graph, OpKind::kRNN);
  EXPECT_EQ(gru.macs, 5 * 2 * 3 * 4 * (8 + 4));
  EXPECT_EQ(gru.flops, 2 * gru.macs + 5 * 2 * 4 * (2 * 10 + 10 + 5));
  EXPECT_EQ(rnn.macs, 5 * 2 * 1 * 4 * (8 + 4));
  EXPECT_EQ(rnn.flops, 2 * rnn.macs + 5 * 2 * 4 * 10);
}

// --- Attention -------------------------------------------------------------------

TEST(AttentionCostTest, ContribAttentionProjectsThenAttends) {
  // input [2,16,64], weights [64, 3·64], 4 heads: projection 2·16·64·192,
  // Q·Kᵀ 2·16·64·16 and scores·V 2·16·64·16 (S = L = 16).
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{2, 16, 64}});
  ir::ValueId w = g.Weight("w", DType::kFloat, {64, 192});
  ir::ValueId b = g.Weight("b", DType::kFloat, {192});
  g.Output(g.Op(OpKind::kMsAttention, {x, w, b}, {{2, 16, 64}}, {Attribute::Int("num_heads", 4)}));
  NodeCost c = CostOfKind(Built(std::move(g)), OpKind::kMsAttention);
  const int64_t projection = 2 * 16 * 64 * 192;
  const int64_t core = 2 * (2 * 16 * 64 * 16);
  EXPECT_EQ(c.macs, projection + core);
  const int64_t scores = 2 * 4 * 16 * 16;  // batch · heads · S · L
  EXPECT_EQ(c.flops, 2 * (projection + core) + 2 * 16 * 192 + scores * (8 + 4 + 1));
}

TEST(AttentionCostTest, MultiHeadAttentionWithSeparateKeys) {
  // query [1,10,32], key/value [1,20,32]: 10·20·32 MACs for each product.
  TestGraph g;
  ir::ValueId q = g.Input("q", DType::kFloat, {{1, 10, 32}});
  ir::ValueId k = g.Input("k", DType::kFloat, {{1, 20, 32}});
  ir::ValueId v = g.Input("v", DType::kFloat, {{1, 20, 32}});
  g.Output(g.Op(OpKind::kMsMultiHeadAttention, {q, k, v}, {{1, 10, 32}},
                {Attribute::Int("num_heads", 2)}));
  NodeCost c = CostOfKind(Built(std::move(g)), OpKind::kMsMultiHeadAttention);
  EXPECT_EQ(c.macs, 2 * 10 * 20 * 32);
}

// --- Normalization, pooling, reductions, element-wise -------------------------------

TEST(ReductionCostTest, PerInputAndPerOutputWork) {
  auto reduce = [](OpKind kind) {
    TestGraph g;
    ir::ValueId x = g.Input("x", DType::kFloat, {{4, 8, 16}});
    g.Output(g.Op(kind, {x}, {{4, 1, 16}}, {Attribute::Ints("axes", {1})}));
    return CostOfKind(Built(std::move(g)), kind);
  };
  const int64_t in = 4 * 8 * 16;
  const int64_t out = 4 * 16;
  EXPECT_EQ(reduce(OpKind::kReduceSum).flops, in);
  EXPECT_EQ(reduce(OpKind::kReduceMean).flops, in + out);        // + one divide each
  EXPECT_EQ(reduce(OpKind::kReduceL2).flops, 2 * in + 4 * out);  // square+add, sqrt
  EXPECT_EQ(reduce(OpKind::kReduceLogSumExp).flops, (8 + 3) * in + 8 * out);
  EXPECT_EQ(reduce(OpKind::kArgMax).flops, in);
  EXPECT_EQ(reduce(OpKind::kReduceSum).macs, 0);
  EXPECT_EQ(reduce(OpKind::kReduceSum).op_class, OpClass::kReduction);
}

TEST(PoolCostTest, WindowsAndGlobalPools) {
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{1, 4, 8, 8}});
  std::vector<Attribute> attrs = {Attribute::Ints("kernel_shape", {2, 2}),
                                  Attribute::Ints("strides", {2, 2})};
  g.Output(g.Op(OpKind::kMaxPool, {x}, {{1, 4, 4, 4}}, attrs));
  g.Output(g.Op(OpKind::kAveragePool, {x}, {{1, 4, 4, 4}}, attrs));
  g.Output(g.Op(OpKind::kGlobalAveragePool, {x}, {{1, 4, 1, 1}}));
  ir::Graph graph = Built(std::move(g));
  EXPECT_EQ(CostOfKind(graph, OpKind::kMaxPool).flops, 64 * 4);
  EXPECT_EQ(CostOfKind(graph, OpKind::kAveragePool).flops, 64 * (4 + 1));
  EXPECT_EQ(CostOfKind(graph, OpKind::kGlobalAveragePool).flops, 256 + 4);
  EXPECT_EQ(CostOfKind(graph, OpKind::kMaxPool).macs, 0);
}

TEST(NormalizationCostTest, NoMacsAndDocumentedWeights) {
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{2, 8, 16}});
  ir::ValueId scale = g.Weight("s", DType::kFloat, {16});
  ir::ValueId bias = g.Weight("b", DType::kFloat, {16});
  g.Output(g.Op(OpKind::kLayerNormalization, {x, scale, bias}, {{2, 8, 16}}));
  g.Output(g.Op(OpKind::kSoftmax, {x}, {{2, 8, 16}}));
  ir::Graph graph = Built(std::move(g));
  NodeCost ln = CostOfKind(graph, OpKind::kLayerNormalization);
  EXPECT_EQ(ln.macs, 0);
  EXPECT_EQ(ln.flops, 256 * 7);
  EXPECT_EQ(ln.op_class, OpClass::kNormalization);
  EXPECT_EQ(CostOfKind(graph, OpKind::kSoftmax).flops, 256 * (8 + 4));
}

TEST(ElementwiseCostTest, TranscendentalWeightsAndBroadcast) {
  TestGraph g;
  ir::ValueId a = g.Input("a", DType::kFloat, {{4, 1}});
  ir::ValueId b = g.Input("b", DType::kFloat, {{1, 5}});
  ir::ValueId sum = g.Op(OpKind::kAdd, {a, b}, {{4, 5}});
  ir::ValueId e = g.Op(OpKind::kExp, {sum}, {{4, 5}});
  ir::ValueId t = g.Op(OpKind::kTanh, {e}, {{4, 5}});
  ir::ValueId p = g.Op(OpKind::kPow, {t, a}, {{4, 5}});
  ir::ValueId m = g.Op(OpKind::kMax, {p, a, b}, {{4, 5}});
  g.Output(m);
  ir::Graph graph = Built(std::move(g));
  EXPECT_EQ(CostOfKind(graph, OpKind::kAdd).flops, 20);
  EXPECT_EQ(CostOfKind(graph, OpKind::kExp).flops, 20 * 8);
  EXPECT_EQ(CostOfKind(graph, OpKind::kTanh).flops, 20 * 10);
  EXPECT_EQ(CostOfKind(graph, OpKind::kPow).flops, 20 * 16);
  EXPECT_EQ(CostOfKind(graph, OpKind::kMax).flops, 20 * 2);  // 3 operands: 2 ops each
  EXPECT_EQ(CostOfKind(graph, OpKind::kAdd).op_class, OpClass::kElementwise);
}

// --- Data movement and metadata ------------------------------------------------------

TEST(DataMovementCostTest, BytesOnly) {
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{2, 3, 4}});
  ir::ValueId t = g.Op(OpKind::kTranspose, {x}, {{4, 3, 2}}, {Attribute::Ints("perm", {2, 1, 0})});
  g.Output(t);
  NodeCost c = CostOfKind(Built(std::move(g)), OpKind::kTranspose);
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.macs, 0);
  EXPECT_EQ(c.rule, CostRule::kDataMovement);
  EXPECT_EQ(c.op_class, OpClass::kDataMovement);
  EXPECT_EQ(c.bytes_read, 24 * 4);
  EXPECT_EQ(c.bytes_written, 24 * 4);
}

TEST(DataMovementCostTest, GatherReadsOnlyTheSelectedRows) {
  TestGraph g;
  ir::ValueId table = g.Weight("table", DType::kFloat, {1000, 64});
  ir::ValueId ids = g.Input("ids", DType::kInt64, {{1, 10}});
  g.Output(g.Op(OpKind::kGather, {table, ids}, {{1, 10, 64}}));
  NodeCost c = CostOfKind(Built(std::move(g)), OpKind::kGather);
  EXPECT_EQ(c.bytes_read, 10 * 64 * 4 + 10 * 8);  // the rows it selects + the indices
  EXPECT_EQ(c.param_bytes, 1000 * 64 * 4);        // but the whole table lives on the device
}

TEST(MetadataCostTest, ShapeAndConstantTouchNoData) {
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{2, 3, 4}});
  ir::ValueId s = g.Node(OpKind::kShape, {x}, {{{3}}}, {}, DType::kInt64)[0];
  ir::ValueId k = g.Op(OpKind::kConstant, {}, {{16}});
  g.value(k).is_parameter = true;
  g.Output(s);
  g.Output(k);
  ir::Graph graph = Built(std::move(g));
  NodeCost shape = CostOfKind(graph, OpKind::kShape);
  EXPECT_EQ(shape.rule, CostRule::kMetadata);
  EXPECT_EQ(shape.flops, 0);
  EXPECT_EQ(shape.bytes_read, 0);
  NodeCost constant = CostOfKind(graph, OpKind::kConstant);
  EXPECT_EQ(constant.kernels, 0);  // folded into the weights by runtimes
  EXPECT_EQ(constant.bytes_written, 0);
  EXPECT_EQ(constant.output_bytes, 64);
}

// ONNX Runtime aliases these outputs to their input (Note [Views]): a kernel
// launch, no bytes moved, but the output keeps its size for the memory model
// and for transfers.
TEST(ViewCostTest, ReshapeFlattenSqueezeUnsqueezeIdentityMoveNothing) {
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{2, 1, 3, 4}});
  ir::ValueId shape = g.Weight("shape", DType::kInt64, {2}, {2, 12});
  ir::ValueId axes = g.Weight("axes", DType::kInt64, {1}, {1});
  ir::ValueId r = g.Op(OpKind::kReshape, {x, shape}, {{2, 12}});
  ir::ValueId f = g.Op(OpKind::kFlatten, {x}, {{2, 12}});
  ir::ValueId s = g.Op(OpKind::kSqueeze, {x, axes}, {{2, 3, 4}});
  ir::ValueId u = g.Op(OpKind::kUnsqueeze, {s, axes}, {{2, 1, 3, 4}});
  ir::ValueId i = g.Op(OpKind::kIdentity, {u}, {{2, 1, 3, 4}});
  for (ir::ValueId out : {r, f, i}) g.Output(out);
  ir::Graph graph = Built(std::move(g));
  for (OpKind kind : {OpKind::kReshape, OpKind::kFlatten, OpKind::kSqueeze, OpKind::kUnsqueeze,
                      OpKind::kIdentity}) {
    SCOPED_TRACE(std::string(ir::OpKindName(kind)));
    NodeCost c = CostOfKind(graph, kind);
    EXPECT_EQ(c.rule, CostRule::kMetadata);
    EXPECT_EQ(c.op_class, OpClass::kMetadata);
    EXPECT_EQ(c.bytes_read, 0);
    EXPECT_EQ(c.bytes_written, 0);
    EXPECT_EQ(c.flops, 0);
    EXPECT_EQ(c.kernels, 1);
    EXPECT_EQ(c.output_bytes, 24 * 4);
  }
  // The shape / axes operand is still a (tiny) parameter of the node.
  EXPECT_EQ(CostOfKind(graph, OpKind::kReshape).param_bytes, 16);
  // The roofline leaves the kernel overhead alone.
  DeviceSpec cpu = CpuPreset(1);
  EXPECT_DOUBLE_EQ(PredictTimeUs(CostOfKind(graph, OpKind::kReshape), cpu), cpu.kernel_overhead_us);
}

TEST(ViewCostTest, ExpandAndTransposeStillCopy) {
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{1, 3}});
  ir::ValueId shape = g.Weight("shape", DType::kInt64, {2}, {4, 3});
  g.Output(g.Op(OpKind::kExpand, {x, shape}, {{4, 3}}));
  g.Output(g.Op(OpKind::kTranspose, {x}, {{3, 1}}));
  ir::Graph graph = Built(std::move(g));
  NodeCost expand = CostOfKind(graph, OpKind::kExpand);
  EXPECT_EQ(expand.rule, CostRule::kDataMovement);
  EXPECT_EQ(expand.bytes_written, 12 * 4);
  EXPECT_EQ(CostOfKind(graph, OpKind::kTranspose).bytes_written, 3 * 4);
}

TEST(UnknownOpCostTest, HasNoFormulaButStillCountsBytes) {
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{8}});
  g.Output(g.Op(OpKind::kUnknown, {x}, {{8}}));
  NodeCost c = CostOfKind(Built(std::move(g)), OpKind::kUnknown);
  EXPECT_FALSE(c.has_formula);
  EXPECT_EQ(c.rule, CostRule::kNone);
  EXPECT_EQ(c.bytes_read, 32);
}

// --- Counts never overflow --------------------------------------------------------------

TEST(SaturationTest, HugeDimsSaturateAndAreFlagged) {
  TestGraph g;
  ir::ValueId a = g.Input("a", DType::kFloat, {{int64_t{1} << 40, int64_t{1} << 20}});
  ir::ValueId b = g.Input("b", DType::kFloat, {{int64_t{1} << 20, int64_t{1} << 20}});
  g.Output(g.Op(OpKind::kMatMul, {a, b}, {{int64_t{1} << 40, int64_t{1} << 20}}));
  ir::Graph graph = Built(std::move(g));
  NodeCost c = CostOfKind(graph, OpKind::kMatMul);
  EXPECT_EQ(c.macs, kSaturatedCount);
  EXPECT_EQ(c.flops, kSaturatedCount);
  EXPECT_TRUE(c.saturated);
  CostTotals totals = SumCosts(graph, ComputeGraphCosts(graph));
  EXPECT_TRUE(totals.saturated);
  EXPECT_EQ(totals.macs, kSaturatedCount);
}

TEST(CountTest, SaturatingArithmetic) {
  EXPECT_EQ((Count(3) * 4 + 5).value(), 17);
  EXPECT_EQ((Count(kSaturatedCount) + 1).value(), kSaturatedCount);
  EXPECT_EQ((Count(int64_t{1} << 62) * 4).value(), kSaturatedCount);
  EXPECT_EQ(Count(-5).value(), 0);  // unknown dims (-1) count as 0
  EXPECT_EQ((Count(kSaturatedCount) / 3).value(), kSaturatedCount);
}

// --- Totals -------------------------------------------------------------------------------

TEST(SumCostsTest, SharedWeightsCountOnce) {
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{1, 8}});
  ir::ValueId w = g.Weight("w", DType::kFloat, {8, 8});
  ir::ValueId h = g.Op(OpKind::kMatMul, {x, w}, {{1, 8}});
  ir::ValueId y = g.Op(OpKind::kMatMul, {h, w}, {{1, 8}});
  g.Output(y);
  ir::Graph graph = Built(std::move(g));
  std::vector<NodeCost> costs = ComputeGraphCosts(graph);
  CostTotals totals = SumCosts(graph, costs);
  EXPECT_EQ(totals.macs, 2 * 64);
  EXPECT_EQ(totals.flops, 2 * 2 * 64);
  EXPECT_EQ(costs[0].param_bytes + costs[1].param_bytes, 2 * 256);
  EXPECT_EQ(totals.param_bytes, 256);
  EXPECT_EQ(totals.activation_bytes, 2 * 32);
  EXPECT_EQ(totals.nodes, 2);
  EXPECT_EQ(totals.nodes_without_formula, 0);
  EXPECT_EQ(totals.nodes_estimated, 0);
}

}  // namespace
}  // namespace autopar::costmodel
