#include "passes/constant_nodes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "costmodel/cluster.h"
#include "passes/annotate_costs.h"
#include "tests/passes/partition_test_util.h"

namespace autopar::passes {
namespace {

using ::testing::ElementsAre;
using testing::FromText;
using testing::Loaded;

int32_t NodeIndex(const ir::Graph& graph, const std::string& output) {
  return static_cast<int32_t>(graph.value(*graph.FindValue(output)).producer.index());
}

// Shared biases as torch exports them: Identity of an initializer, and a
// Constant → Mul chain, both read by one convolution-like node.
constexpr char kSharedBias[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  g (float[4] x) => (float[4] y, float[4] z) <float[4] w = {1, 2, 3, 4}> {
    b1 = Identity(w)
    k = Constant <value = float[4] {1, 1, 1, 1}> ()
    b2 = Mul(k, w)
    h = Relu(x)
    y = Add(h, b1)
    s = Add(h, b2)
    z = Neg(s)
  }
)";

TEST(ConstantNodesTest, FindsNodesComputedFromWeightsOnly) {
  absl::StatusOr<Loaded> m = FromText(kSharedBias);
  ASSERT_TRUE(m.ok()) << m.status();
  // b1, k, b2, h, y, s, z
  EXPECT_THAT(ConstantNodes(m->graph), ElementsAre(1, 1, 1, 0, 0, 0, 0));
}

TEST(ConstantNodesTest, RandomOperatorsAreNotConstant) {
  absl::StatusOr<Loaded> m = FromText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y) {
      r = RandomUniform <shape = [2]> ()
      y = Add(x, r)
    }
  )");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(ConstantNodes(m->graph), ElementsAre(0, 0));
}

TEST(ConstantNodesTest, InInferenceAConstantNodeTakesNoTime) {
  absl::StatusOr<Loaded> m = FromText(kSharedBias);
  ASSERT_TRUE(m.ok()) << m.status();
  const costmodel::Cluster cluster = *costmodel::LookupClusterPreset("4xV100-nvlink");
  absl::StatusOr<AnnotatedGraph> inference = AnnotateCosts(m->graph, cluster);
  ASSERT_TRUE(inference.ok()) << inference.status();
  EXPECT_EQ(inference->graph.compute_us(NodeIndex(m->graph, "b1"), 0), 0);
  EXPECT_EQ(inference->graph.compute_us(NodeIndex(m->graph, "b2"), 0), 0);
  EXPECT_GT(inference->graph.compute_us(NodeIndex(m->graph, "y"), 0), 0);
  // In training the weight changes every step: Identity(w) runs each time.
  absl::StatusOr<AnnotatedGraph> training =
      AnnotateCosts(m->graph, cluster, {}, {.mode = costmodel::StepMode::kTraining});
  ASSERT_TRUE(training.ok()) << training.status();
  EXPECT_GT(training->graph.compute_us(NodeIndex(m->graph, "b1"), 0), 0);
}

TEST(ConstantNodesTest, ConstantNodesAndTheirChainsJoinTheirReader) {
  absl::StatusOr<Loaded> m = FromText(kSharedBias);
  ASSERT_TRUE(m.ok()) << m.status();
  const ir::Graph& g = m->graph;
  // A list schedule's choice: the constant nodes on idle devices 2 and 3.
  std::vector<int32_t> device(g.num_nodes(), 0);
  device[NodeIndex(g, "b1")] = 2;
  device[NodeIndex(g, "k")] = 3;
  device[NodeIndex(g, "b2")] = 2;
  device[NodeIndex(g, "y")] = 1;
  EXPECT_EQ(MoveConstantNodesToReaders(g, device), 3);
  EXPECT_EQ(device[NodeIndex(g, "b1")], 1);  // follows y
  EXPECT_EQ(device[NodeIndex(g, "b2")], 0);  // follows s
  EXPECT_EQ(device[NodeIndex(g, "k")], 0);   // follows b2, which moved first
  EXPECT_EQ(MoveConstantNodesToReaders(g, device), 0);
}

TEST(ConstantNodesTest, ReadersOnTwoDevicesOrAGraphOutputKeepTheNodeWhereItIs) {
  absl::StatusOr<Loaded> m = FromText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y, float[2] z, float[2] c) <float[2] w = {1, 2}> {
      b = Identity(w)
      y = Add(x, b)
      z = Mul(x, b)
      c = Neg(w)
    }
  )");
  ASSERT_TRUE(m.ok()) << m.status();
  const ir::Graph& g = m->graph;
  std::vector<int32_t> device(g.num_nodes(), 0);
  device[NodeIndex(g, "y")] = 1;
  device[NodeIndex(g, "z")] = 2;
  device[NodeIndex(g, "c")] = 3;
  const std::vector<int32_t> before = device;
  EXPECT_EQ(MoveConstantNodesToReaders(g, device), 0);
  EXPECT_EQ(device, before);
}

}  // namespace
}  // namespace autopar::passes
