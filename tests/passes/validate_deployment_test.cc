// Validation catches each way a deployment can be wrong: every test breaks one
// rule of a valid deployment and expects the message naming it.
#include "passes/validate_deployment.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/partition.h"
#include "tests/passes/partition_test_util.h"

namespace autopar::passes {
namespace {

using testing::FromText;
using ::testing::HasSubstr;
using testing::Loaded;
using testing::PlaceByOutput;

// x -> a (device 0) -> b (device 1) -> c (device 2) -> d (device 0).
constexpr char kChain[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  g (float[2,3] x) => (float[2,3] d) {
    a = Relu(x)
    b = Neg(a)
    c = Abs(b)
    d = Sigmoid(c)
  }
)";

class ValidateDeploymentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Loaded> m = FromText(kChain);
    ASSERT_TRUE(m.ok()) << m.status();
    loaded_ = *std::move(m);
    placement_ = PlaceByOutput(loaded_.graph, {{"b", 1}, {"c", 2}});
    absl::StatusOr<Deployment> d = Partition(loaded_.model, loaded_.graph, placement_, 3);
    ASSERT_TRUE(d.ok()) << d.status();
    deployment_ = *std::move(d);
    ASSERT_TRUE(Validate().ok()) << Validate();
  }

  absl::Status Validate() {
    return ValidateDeployment(loaded_.model, loaded_.graph, placement_, deployment_);
  }

  onnx::GraphProto& DeviceGraph(int k) { return *deployment_.devices[k].proto.mutable_graph(); }

  onnx::NodeProto* FindOp(int k, const std::string& op_type) {
    for (onnx::NodeProto& node : *DeviceGraph(k).mutable_node()) {
      if (node.op_type() == op_type) return &node;
    }
    return nullptr;
  }

  onnx::AttributeProto* Tag(onnx::NodeProto* node) {
    for (onnx::AttributeProto& attr : *node->mutable_attribute()) {
      if (attr.name() == "tag") return &attr;
    }
    return nullptr;
  }

  Loaded loaded_;
  std::vector<int32_t> placement_;
  Deployment deployment_;
};

TEST_F(ValidateDeploymentTest, ASendWithoutItsRecv) {
  Tag(FindOp(1, "Recv"))->set_i(42);
  absl::Status s = Validate();
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("tag 0: Send 'autopar_send_0' on device 0 has no Recv"));
}

TEST_F(ValidateDeploymentTest, ARecvFromTheWrongDevice) {
  // Device 1 believes tensor 'a' comes from device 2.
  FindOp(1, "Recv")->set_input(1, FindOp(1, "Send")->input(1));
  EXPECT_THAT(std::string(Validate().message()), HasSubstr("is received on device 1 from 2"));
}

TEST_F(ValidateDeploymentTest, WrongElementTypes) {
  for (int k : {0, 1}) {
    for (onnx::AttributeProto& attr :
         *(k == 0 ? FindOp(0, "Send") : FindOp(1, "Recv"))->mutable_attribute()) {
      if (attr.name() == "element_types") attr.set_ints(0, onnx::TensorProto::INT64);
    }
  }
  EXPECT_THAT(std::string(Validate().message()), HasSubstr("element_types says 7 for 'a'"));
}

TEST_F(ValidateDeploymentTest, AMissingCrossing) {
  // Drop the pair carrying 'b' (tag 1) from devices 1 and 2: device 2 then
  // reads a value nothing defines.
  for (int k : {1, 2}) {
    auto* nodes = DeviceGraph(k).mutable_node();
    auto* outputs = DeviceGraph(k).mutable_output();
    for (int i = nodes->size() - 1; i >= 0; --i) {
      const onnx::NodeProto& node = nodes->Get(i);
      if (node.domain() != "com.microsoft" || Tag(nodes->Mutable(i))->i() != 1) continue;
      for (int j = outputs->size() - 1; j >= 0; --j) {
        if (outputs->Get(j).name() == node.output(0)) outputs->DeleteSubrange(j, 1);
      }
      nodes->DeleteSubrange(i, 1);
    }
  }
  EXPECT_THAT(std::string(Validate().message()),
              HasSubstr("reads 'b', which nothing defines before it"));
}

TEST_F(ValidateDeploymentTest, TheTransferListMustMatchTheModels) {
  deployment_.transfers.pop_back();
  EXPECT_THAT(std::string(Validate().message()),
              HasSubstr("lists 2 transfers for 3 Send/Recv pairs"));
}

TEST_F(ValidateDeploymentTest, ASignalThatIsNotAGraphOutputCouldBePruned) {
  auto* outputs = DeviceGraph(0).mutable_output();
  outputs->DeleteSubrange(outputs->size() - 2, 1);  // the Send's signal
  EXPECT_THAT(std::string(Validate().message()),
              HasSubstr("is not a graph output, so a runtime may prune it"));
}

TEST_F(ValidateDeploymentTest, ANodeOnTheWrongDevice) {
  // Validation against another placement: 'c' should be on device 1.
  placement_ = PlaceByOutput(loaded_.graph, {{"b", 1}, {"c", 1}});
  EXPECT_THAT(std::string(Validate().message()), HasSubstr("node 'Abs_2' is placed on device 1"));
}

TEST_F(ValidateDeploymentTest, AGeneratedNameCollidingWithTheModel) {
  onnx::NodeProto* send = FindOp(0, "Send");
  send->set_name("Relu_0");  // the importer's name for a's producer
  // The importer's made-up name is not in the file; the model's own names are.
  send->set_name("x");
  EXPECT_THAT(std::string(Validate().message()), HasSubstr("generated node name 'x' collides"));
}

TEST_F(ValidateDeploymentTest, AValueDefinedTwice) {
  *DeviceGraph(0).add_node() = DeviceGraph(0).node(0);
  EXPECT_THAT(std::string(Validate().message()), HasSubstr("'a' is defined twice"));
}

TEST_F(ValidateDeploymentTest, AStageReadingFromAStageItDoesNotWaitFor) {
  ASSERT_EQ(deployment_.stages.size(), 4u);
  deployment_.stages[2].after.clear();
  EXPECT_THAT(std::string(Validate().message()),
              HasSubstr("input 'b' comes from no stage listed in `after`"));
}

TEST_F(ValidateDeploymentTest, AStageWaitingForALaterOneIsACycle) {
  deployment_.stages[1].after.push_back(3);
  EXPECT_THAT(std::string(Validate().message()), HasSubstr("must list earlier stages"));
}

TEST_F(ValidateDeploymentTest, AStageModelThatDisagreesWithItsLists) {
  deployment_.stages[0].outputs.push_back("x");
  EXPECT_THAT(std::string(Validate().message()), HasSubstr("inputs or outputs differ"));
}

TEST_F(ValidateDeploymentTest, TheCheckerRunsOnEveryModel) {
  // Without the com.microsoft opset import the checker rejects Send/Recv.
  auto* opsets = deployment_.devices[1].proto.mutable_opset_import();
  opsets->RemoveLast();
  absl::Status s = Validate();
  EXPECT_THAT(std::string(s.message()), HasSubstr("device_1.onnx"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("ONNX checker"));
  // The structural rules alone do not look at opsets.
  EXPECT_TRUE(ValidateDeployment(loaded_.model, loaded_.graph, placement_, deployment_,
                                 {.check_models = false})
                  .ok());
}

}  // namespace
}  // namespace autopar::passes
