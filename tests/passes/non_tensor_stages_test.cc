// Values a stage cannot be fed (sequences here) never cross a stage boundary:
// ColocateNonTensorValues also pulls in the nodes on a path between a
// sequence's producer and its readers, stage levels keep such a group in one
// stage, and a placement that still splits one is refused naming the value.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/partition.h"
#include "passes/validate_deployment.h"
#include "tests/passes/partition_test_util.h"

namespace autopar::passes {
namespace {

using testing::FromText;
using ::testing::HasSubstr;
using testing::Loaded;
using testing::ProducerIndex;

// b is computed from an element of s and inserted back into it: the path
// s → p → b → t runs through whatever device b is on.
constexpr char kDetour[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  g (float[2] x) => (float[2] z) {
    a = Relu(x)
    s = SequenceConstruct(a, x)
    j = Constant <value = int64 {0}> ()
    p = SequenceAt(s, j)
    b = Tanh(p)
    t = SequenceInsert(s, b)
    i = Constant <value = int64 {2}> ()
    e = SequenceAt(t, i)
    z = Add(e, b)
  }
)";

// The stage each node's model holds, by the name of its first output.
int StageOf(const Deployment& d, const std::string& value) {
  for (const Stage& s : d.stages) {
    for (const onnx::NodeProto& n : s.proto.graph().node()) {
      if (n.op_type() != "Constant" && n.output_size() > 0 && n.output(0) == value) return s.id;
    }
  }
  return -1;
}

TEST(NonTensorStagesTest, NodesOnAPathBetweenSequenceNodesJoinTheirDevice) {
  absl::StatusOr<Loaded> m = FromText(/*require_static=*/false, kDetour);
  ASSERT_TRUE(m.ok()) << m.status();
  // The sequence's nodes on device 0, the detour's Tanh on device 1.
  std::vector<int32_t> placement(m->graph.num_nodes(), 0);
  placement[ProducerIndex(m->graph, "b")] = 1;
  placement[ProducerIndex(m->graph, "z")] = 1;
  placement = ColocateNonTensorValues(m->graph, placement);
  for (const char* v : {"s", "p", "b", "t", "e"}) {
    EXPECT_EQ(placement[ProducerIndex(m->graph, v)], 0) << v;
  }
  EXPECT_EQ(placement[ProducerIndex(m->graph, "z")], 1);  // reads only tensors
  absl::StatusOr<Deployment> d = Partition(m->model, m->graph, placement, 2);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE(ValidateDeployment(m->model, m->graph, placement, *d).ok());
  const int stage = StageOf(*d, "s");
  ASSERT_GE(stage, 0);
  for (const char* v : {"t", "e"}) EXPECT_EQ(StageOf(*d, v), stage) << v;
  for (const Stage& s : d->stages) {
    for (const std::string& name : s.inputs) EXPECT_TRUE(name != "s" && name != "t") << name;
  }
}

TEST(NonTensorStagesTest, ASequenceReaderLaterInItsDeviceSharesTheProducersStage) {
  // The reader also reads a tensor from another device, which alone would
  // put it one stage later than the sequence's producer.
  absl::StatusOr<Loaded> m = FromText(/*require_static=*/false, R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] z) {
      s = SequenceConstruct(x, x)
      c = Tanh(x)
      i = Constant <value = int64 {0}> ()
      e = SequenceAt(s, i)
      z = Add(e, c)
    }
  )");
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<int32_t> placement(m->graph.num_nodes(), 0);
  placement[ProducerIndex(m->graph, "c")] = 1;
  placement = ColocateNonTensorValues(m->graph, placement);
  absl::StatusOr<Deployment> d = Partition(m->model, m->graph, placement, 2);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(StageOf(*d, "s"), StageOf(*d, "e"));
  ASSERT_TRUE(ValidateDeployment(m->model, m->graph, placement, *d).ok());
}

TEST(NonTensorStagesTest, APlacementThatSplitsASequenceAcrossStagesIsRefusedNamingIt) {
  absl::StatusOr<Loaded> m = FromText(/*require_static=*/false, kDetour);
  ASSERT_TRUE(m.ok()) << m.status();
  // Not passed through ColocateNonTensorValues: the detour stays on device 1,
  // so s's producer and its reader t would sit in different stages of
  // device 0.
  std::vector<int32_t> placement(m->graph.num_nodes(), 0);
  placement[ProducerIndex(m->graph, "b")] = 1;
  absl::StatusOr<Deployment> d = Partition(m->model, m->graph, placement, 2);
  ASSERT_FALSE(d.ok());
  const std::string message(d.status().message());
  EXPECT_THAT(message, HasSubstr("'s' is not a tensor"));
  EXPECT_THAT(message, HasSubstr("cannot share a stage"));
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace autopar::passes
