// The training step (costmodel/training.h) on graphs small enough to follow
// by hand: which values need a gradient, what the backward costs and keeps,
// and what parameters hold with each optimizer.
#include "costmodel/training.h"

#include <string>

#include "costmodel/op_costs.h"
#include "gtest/gtest.h"
#include "tests/costmodel/test_graph.h"

namespace autopar::costmodel {
namespace {

using ir::DType;
using ir::OpKind;
using testing::Built;
using testing::TestGraph;

size_t NodeOfKind(const ir::Graph& graph, OpKind kind) {
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    if (graph.nodes()[i].kind == kind) return i;
  }
  ADD_FAILURE() << "no node of kind " << ir::OpKindName(kind);
  return 0;
}

// x [2,4] → MatMul(w1 [4,8]) → h → Relu → r → MatMul(w2 [8,3]) → y [2,3].
struct MatMulChain {
  ir::ValueId x, w1, w2, h, r, y;
  ir::Graph graph;

  MatMulChain() {
    TestGraph g;
    x = g.Input("x", DType::kFloat, {{2, 4}});
    w1 = g.Weight("w1", DType::kFloat, {4, 8});
    w2 = g.Weight("w2", DType::kFloat, {8, 3});
    h = g.Op(OpKind::kMatMul, {x, w1}, {{2, 8}});
    r = g.Op(OpKind::kRelu, {h}, {{2, 8}});
    y = g.Op(OpKind::kMatMul, {r, w2}, {{2, 3}});
    g.Output(y);
    graph = Built(std::move(g));
  }
};

TEST(TrainingTest, MatMulChainBackwardIsOneProductPerOperandThatNeedsAGradient) {
  MatMulChain chain;
  const ir::Graph& graph = chain.graph;
  std::vector<NodeCost> forward = ComputeGraphCosts(graph);
  TrainingCosts t = ComputeTrainingCosts(graph, forward, Optimizer::kAdam);

  // Gradients flow from the weights down the chain, never into the data.
  for (ir::ValueId v : {chain.w1, chain.w2, chain.h, chain.r, chain.y}) {
    EXPECT_TRUE(t.needs_gradient[v.index()]) << graph.value(v).name;
  }
  EXPECT_FALSE(t.needs_gradient[chain.x.index()]);
  EXPECT_TRUE(t.trainable[chain.w1.index()]);
  EXPECT_FALSE(t.trainable[chain.h.index()]);

  // First MatMul: only dW1 = xᵀ·dh (x needs none): 1 × its 2·2·4·8 FLOPs.
  const size_t mm1 = 0;
  const size_t relu = 1;
  const size_t mm2 = 2;
  ASSERT_EQ(graph.nodes()[mm2].kind, OpKind::kMatMul);
  EXPECT_EQ(forward[mm1].flops, 2 * 2 * 4 * 8);
  EXPECT_EQ(t.nodes[mm1].backward.flops, 2 * 2 * 4 * 8);
  EXPECT_EQ(t.nodes[mm1].backward.kernels, 1);
  // Second MatMul: dr = dy·w2ᵀ and dW2 = rᵀ·dy: 2 × 2·2·8·3.
  EXPECT_EQ(t.nodes[mm2].backward.flops, 2 * (2 * 2 * 8 * 3));
  EXPECT_EQ(t.nodes[mm2].backward.macs, 2 * (2 * 8 * 3));
  EXPECT_EQ(t.nodes[mm2].backward.kernels, 2);
  // Relu: 1 × FLOPs, 1.5 × bytes (reads dr and r, writes dh).
  EXPECT_EQ(t.nodes[relu].backward.flops, 16);
  EXPECT_EQ(t.nodes[relu].backward.bytes_read, 64 * 3 / 2);
  EXPECT_EQ(t.nodes[relu].backward.bytes_written, 64 * 3 / 2);
  EXPECT_EQ(t.nodes[relu].backward.op_class, OpClass::kElementwise);
  EXPECT_EQ(t.backward_flops, 2 * 2 * 4 * 8 + 16 + 2 * (2 * 2 * 8 * 3));

  // Saved: x for dW1 (a graph input: not counted), r for dW2 and for Relu's
  // own gradient; h (Relu saves its output) and y are not needed.
  EXPECT_TRUE(t.saved[chain.x.index()]);
  EXPECT_TRUE(t.saved[chain.r.index()]);
  EXPECT_FALSE(t.saved[chain.h.index()]);
  EXPECT_FALSE(t.saved[chain.y.index()]);
  EXPECT_EQ(t.saved_activation_bytes, 2 * 8 * 4);

  // Activation gradients alive during each backward: dy + dr for the second
  // MatMul, dh alone for the first (x gets none).
  EXPECT_EQ(t.nodes[mm2].gradient_workspace_bytes, 2 * 3 * 4 + 2 * 8 * 4);
  EXPECT_EQ(t.nodes[mm1].gradient_workspace_bytes, 2 * 8 * 4);

  // Adam: each weight updated once, by its reader, 18 FLOPs per element.
  EXPECT_EQ(t.nodes[mm1].update.flops, 32 * 18);
  EXPECT_EQ(t.nodes[mm2].update.flops, 24 * 18);
  EXPECT_EQ(t.nodes[relu].update.flops, 0);
  EXPECT_EQ(t.nodes[mm1].update.bytes_read, 128 + 128 + 32 * 8);  // w, dw, two moments
  EXPECT_EQ(t.nodes[mm1].update.bytes_written, 128 + 32 * 8);     // w, two moments
  EXPECT_EQ(t.update_flops, (32 + 24) * 18);
  // Memory: weights + gradients + two fp32 moments = 4 × the weights.
  EXPECT_EQ(t.trainable_param_bytes, 128 + 96);
  EXPECT_EQ(t.gradient_bytes, 128 + 96);
  EXPECT_EQ(t.optimizer_state_bytes, 2 * (128 + 96));
}

TEST(TrainingTest, ParameterBytesPerOptimizerAndPrecision) {
  ir::Value fp32;
  fp32.dtype = DType::kFloat;
  fp32.shape = ir::Shape(std::vector<int64_t>{10, 10});
  const int64_t p = 400;
  EXPECT_EQ(TrainingParameterBytes(fp32, /*trainable=*/false, Optimizer::kAdam), p);
  EXPECT_EQ(TrainingParameterBytes(fp32, true, Optimizer::kSgd), 2 * p);
  EXPECT_EQ(TrainingParameterBytes(fp32, true, Optimizer::kMomentum), 3 * p);
  EXPECT_EQ(TrainingParameterBytes(fp32, true, Optimizer::kAdam), 4 * p);
  // fp16 weights (mixed precision) also keep an fp32 master copy: ZeRO's
  // 2 + 2 + 12 bytes per parameter with Adam.
  ir::Value fp16 = fp32;
  fp16.dtype = DType::kFloat16;
  EXPECT_EQ(TrainingParameterBytes(fp16, true, Optimizer::kAdam), 100 * (2 + 2 + 12));
  EXPECT_EQ(TrainingParameterBytes(fp16, true, Optimizer::kSgd), 100 * (2 + 2 + 4));
}

TEST(TrainingTest, NoBackwardWhereNoGradientFlows) {
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{4, 5}});
  ir::ValueId relu = g.Op(OpKind::kRelu, {x}, {{4, 5}});  // data only
  ir::ValueId shape = g.Node(OpKind::kShape, {relu}, {{{2}}}, {}, DType::kInt64)[0];
  ir::ValueId w = g.Weight("w", DType::kFloat, {4, 5});
  ir::ValueId mask = g.Node(OpKind::kGreater, {relu, w}, {{{4, 5}}}, {}, DType::kBool)[0];
  g.Output(shape);
  g.Output(mask);
  ir::Graph graph = Built(std::move(g));
  TrainingCosts t = ComputeTrainingCosts(graph, ComputeGraphCosts(graph), Optimizer::kAdam);
  for (const NodeTrainingCost& node : t.nodes) {
    EXPECT_EQ(node.backward.flops, 0);
    EXPECT_EQ(node.backward.kernels, 0);
    EXPECT_EQ(node.backward.bytes_read, 0);
  }
  // A weight only compared against gets no gradient and no optimizer state.
  EXPECT_FALSE(t.trainable[w.index()]);
  EXPECT_EQ(t.optimizer_state_bytes, 0);
  EXPECT_EQ(t.saved_activation_bytes, 0);
  EXPECT_DOUBLE_EQ(TrainingTimeUs({.kernels = 0}, t.nodes[0], CpuPreset(1)), 0);
}

TEST(TrainingTest, BatchNormRunningStatisticsAreNotTrained) {
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{1, 4, 2, 2}});
  std::vector<ir::ValueId> bn_inputs = {x};
  for (const char* name : {"scale", "bias", "mean", "var"}) {
    bn_inputs.push_back(g.Weight(name, DType::kFloat, {4}));
  }
  g.Output(g.Op(OpKind::kBatchNormalization, bn_inputs, {{1, 4, 2, 2}}));
  ir::Graph graph = Built(std::move(g));
  TrainingCosts t = ComputeTrainingCosts(graph, ComputeGraphCosts(graph), Optimizer::kSgd);
  EXPECT_TRUE(t.trainable[bn_inputs[1].index()]);
  EXPECT_TRUE(t.trainable[bn_inputs[2].index()]);
  EXPECT_FALSE(t.trainable[bn_inputs[3].index()]);
  EXPECT_FALSE(t.trainable[bn_inputs[4].index()]);
  EXPECT_EQ(t.gradient_bytes, 2 * 16);
  EXPECT_EQ(t.optimizer_state_bytes, 0);  // plain SGD keeps none
  // Normalizations: 2 × forward FLOPs; the input is saved (a graph input here).
  EXPECT_EQ(t.nodes[0].backward.flops, 2 * ComputeGraphCosts(graph)[0].flops);
  EXPECT_TRUE(t.saved[x.index()]);
}

TEST(TrainingTest, WhatEachOpKindSaves) {
  TestGraph g;
  ir::ValueId x = g.Input("x", DType::kFloat, {{4, 8}});
  ir::ValueId w = g.Weight("w", DType::kFloat, {8, 8});
  ir::ValueId a = g.Op(OpKind::kMatMul, {x, w}, {{4, 8}});
  ir::ValueId sum = g.Op(OpKind::kAdd, {a, a}, {{4, 8}});           // saves nothing
  ir::ValueId soft = g.Op(OpKind::kSoftmax, {sum}, {{4, 8}});       // saves its output
  ir::ValueId prod = g.Op(OpKind::kMul, {soft, a}, {{4, 8}});       // saves its inputs
  ir::ValueId shaped = g.Op(OpKind::kTranspose, {prod}, {{8, 4}});  // saves nothing
  ir::ValueId table = g.Weight("table", DType::kFloat, {100, 4});
  ir::ValueId ids = g.Input("ids", DType::kInt64, {{3}});
  ir::ValueId rows = g.Op(OpKind::kGather, {table, ids}, {{3, 4}});  // saves the indices
  g.Output(shaped);
  g.Output(rows);
  ir::Graph graph = Built(std::move(g));
  std::vector<NodeCost> forward = ComputeGraphCosts(graph);
  TrainingCosts t = ComputeTrainingCosts(graph, forward, Optimizer::kAdam);
  EXPECT_TRUE(t.saved[a.index()]);  // by Mul
  EXPECT_FALSE(t.saved[sum.index()]);
  EXPECT_TRUE(t.saved[soft.index()]);
  EXPECT_FALSE(t.saved[prod.index()]);
  EXPECT_FALSE(t.saved[shaped.index()]);
  EXPECT_TRUE(t.saved[ids.index()]);
  EXPECT_FALSE(t.saved[rows.index()]);
  EXPECT_EQ(t.saved_activation_bytes, 2 * 4 * 8 * 4);  // a and soft
  // Softmax's backward has no exponentials: half its forward FLOPs.
  const size_t softmax = NodeOfKind(graph, OpKind::kSoftmax);
  EXPECT_EQ(t.nodes[softmax].backward.flops, forward[softmax].flops / 2);
  // Data movement moves the gradient back: bytes, no FLOPs.
  const size_t transpose = NodeOfKind(graph, OpKind::kTranspose);
  EXPECT_EQ(t.nodes[transpose].backward.flops, 0);
  EXPECT_EQ(t.nodes[transpose].backward.bytes_written, forward[transpose].bytes_written);
  // The embedding table is trainable through Gather.
  EXPECT_TRUE(t.trainable[table.index()]);
}

TEST(TrainingTest, StepTimeIsForwardPlusBackwardPlusUpdate) {
  MatMulChain chain;
  std::vector<NodeCost> forward = ComputeGraphCosts(chain.graph);
  TrainingCosts t = ComputeTrainingCosts(chain.graph, forward, Optimizer::kAdam);
  DeviceSpec cpu = CpuPreset(1);
  for (size_t i = 0; i < forward.size(); ++i) {
    EXPECT_DOUBLE_EQ(TrainingTimeUs(forward[i], t.nodes[i], cpu),
                     PredictTimeUs(forward[i], cpu) + PredictTimeUs(t.nodes[i].backward, cpu) +
                         PredictTimeUs(t.nodes[i].update, cpu));
  }
  // The second MatMul's backward launches two kernels on top of its forward.
  EXPECT_GT(TrainingTimeUs(forward[2], t.nodes[2], cpu),
            PredictTimeUs(forward[2], cpu) + 2 * cpu.kernel_overhead_us);
}

TEST(TrainingTest, NamesRoundTrip) {
  for (StepMode mode : {StepMode::kInference, StepMode::kTraining}) {
    EXPECT_EQ(StepModeFromName(StepModeName(mode)), mode);
  }
  for (Optimizer optimizer : {Optimizer::kSgd, Optimizer::kMomentum, Optimizer::kAdam}) {
    EXPECT_EQ(OptimizerFromName(OptimizerName(optimizer)), optimizer);
  }
  EXPECT_EQ(StepModeFromName("train"), std::nullopt);
  EXPECT_EQ(OptimizerFromName("Adam"), std::nullopt);
}

}  // namespace
}  // namespace autopar::costmodel
