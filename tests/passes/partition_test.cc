// The rewriter: per-device models with Send/Recv, and stage models.
#include "passes/partition.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx_io/deployment_writer.h"
#include "onnx_io/export.h"
#include "passes/validate_deployment.h"
#include "tests/passes/partition_test_util.h"
#include "tests/testing/temp_dir.h"

namespace autopar::passes {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using testing::FromText;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Loaded;
using testing::PlaceByOutput;
using ::testing::UnorderedElementsAre;

// Op types of a graph's nodes, in order.
std::vector<std::string> OpTypes(const onnx::ModelProto& model) {
  std::vector<std::string> ops;
  for (const onnx::NodeProto& node : model.graph().node()) ops.push_back(node.op_type());
  return ops;
}

std::vector<std::string> Names(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& v) {
  std::vector<std::string> names;
  for (const onnx::ValueInfoProto& info : v) names.push_back(info.name());
  return names;
}

std::vector<std::string> InitializerNames(const onnx::ModelProto& model) {
  std::vector<std::string> names;
  for (const onnx::TensorProto& t : model.graph().initializer()) names.push_back(t.name());
  return names;
}

const onnx::NodeProto* FindOp(const onnx::ModelProto& model, const std::string& op_type) {
  for (const onnx::NodeProto& node : model.graph().node()) {
    if (node.op_type() == op_type) return &node;
  }
  return nullptr;
}

// Partitions and validates (checker and strict shape inference included).
Deployment PartitionAndValidate(const Loaded& m, const std::vector<int32_t>& placement,
                                int num_devices) {
  absl::StatusOr<Deployment> d = Partition(m.model, m.graph, placement, num_devices);
  EXPECT_TRUE(d.ok()) << d.status();
  if (!d.ok()) return {};
  absl::Status valid = ValidateDeployment(m.model, m.graph, placement, *d,
                                          {.check_models = true, .infer_shapes = true});
  EXPECT_TRUE(valid.ok()) << valid;
  return *std::move(d);
}

constexpr char kChain[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  g (float[2,3] x) => (float[2,3] c) {
    a = Relu(x)
    b = Neg(a)
    c = Sigmoid(b)
  }
)";

TEST(PartitionTest, ChainAcrossTwoDevicesAndBack) {
  absl::StatusOr<Loaded> m = FromText(kChain);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::vector<int32_t> placement = PlaceByOutput(m->graph, {{"b", 1}});
  const Deployment d = PartitionAndValidate(*m, placement, 2);
  ASSERT_EQ(d.devices.size(), 2u);

  ASSERT_EQ(d.transfers.size(), 2u);
  EXPECT_EQ(d.transfers[0].tensor, "a");
  EXPECT_EQ(d.transfers[0].tag, 0);
  EXPECT_EQ(d.transfers[0].src, 0);
  EXPECT_EQ(d.transfers[0].dst, 1);
  EXPECT_EQ(d.transfers[0].bytes, 24);
  EXPECT_EQ(d.transfers[0].dtype, ir::DType::kFloat);
  EXPECT_THAT(d.transfers[0].shape, ElementsAre(2, 3));
  EXPECT_EQ(d.transfers[1].tensor, "b");
  EXPECT_EQ(d.transfers[1].src, 1);
  EXPECT_EQ(d.transfers[1].dst, 0);

  const onnx::ModelProto& d0 = d.devices[0].proto;
  const onnx::ModelProto& d1 = d.devices[1].proto;
  EXPECT_THAT(OpTypes(d0), ElementsAre("Relu", "Send", "Recv", "Sigmoid"));
  EXPECT_THAT(OpTypes(d1), ElementsAre("Recv", "Neg", "Send"));
  EXPECT_EQ(d.devices[0].num_nodes, 2);
  EXPECT_EQ(d.devices[0].num_sends, 1);
  EXPECT_EQ(d.devices[1].num_recvs, 1);
  EXPECT_EQ(d.devices[1].file, "device_1.onnx");

  // The received tensor keeps its name; Send/Recv are in com.microsoft.
  const onnx::NodeProto* recv = FindOp(d1, "Recv");
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(recv->domain(), "com.microsoft");
  EXPECT_EQ(recv->output(1), "a");
  EXPECT_EQ(FindOp(d1, "Neg")->input(0), "a");
  // Signals are graph outputs; the graph input only goes where it is read.
  EXPECT_THAT(Names(d0.graph().output()),
              ElementsAre("c", "autopar_send_0_signal", "autopar_recv_1_signal"));
  EXPECT_THAT(Names(d0.graph().input()), ElementsAre("x"));
  EXPECT_THAT(Names(d1.graph().input()), IsEmpty());
  EXPECT_THAT(InitializerNames(d1), ElementsAre("autopar_signal", "autopar_remote_0"));
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_THAT(d.inputs[0].devices, ElementsAre(0));
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_EQ(d.outputs[0].device, 0);

  // Stages: levels 0, 1, 2 alternate between the devices.
  ASSERT_EQ(d.stages.size(), 3u);
  EXPECT_EQ(d.stages[0].device, 0);
  EXPECT_THAT(d.stages[0].inputs, ElementsAre("x"));
  EXPECT_THAT(d.stages[0].outputs, ElementsAre("a"));
  EXPECT_THAT(d.stages[0].after, IsEmpty());
  EXPECT_EQ(d.stages[1].device, 1);
  EXPECT_THAT(d.stages[1].inputs, ElementsAre("a"));
  EXPECT_THAT(d.stages[1].outputs, ElementsAre("b"));
  EXPECT_THAT(d.stages[1].after, ElementsAre(0));
  EXPECT_EQ(d.stages[2].device, 0);
  EXPECT_THAT(d.stages[2].outputs, ElementsAre("c"));
  EXPECT_THAT(d.stages[2].after, ElementsAre(1));
  EXPECT_EQ(d.stages[2].file, "stages/s2.onnx");
  EXPECT_THAT(OpTypes(d.stages[1].proto), ElementsAre("Neg"));
}

TEST(PartitionTest, ADeviceHoldingNothingIsUnusedAndNotWritten) {
  absl::StatusOr<Loaded> m = FromText(kChain);
  ASSERT_TRUE(m.ok()) << m.status();
  // Devices 1 and 3 of 4 take nodes; 0 and 2 hold nothing.
  const std::vector<int32_t> placement = PlaceByOutput(m->graph, {{"a", 1}, {"b", 3}, {"c", 3}});
  const Deployment d = PartitionAndValidate(*m, placement, 4);
  ASSERT_EQ(d.devices.size(), 4u);
  EXPECT_TRUE(d.devices[0].unused);
  EXPECT_FALSE(d.devices[1].unused);
  EXPECT_TRUE(d.devices[2].unused);
  EXPECT_FALSE(d.devices[3].unused);
  EXPECT_EQ(CountUsedDevices(d), 2);
  std::vector<std::string> written;
  for (const auto& file : DeploymentFilesOf(d).models) written.push_back(file.path);
  EXPECT_THAT(written,
              ElementsAre("device_1.onnx", "device_3.onnx", "stages/s0.onnx", "stages/s1.onnx"));
}

TEST(PartitionTest, ATensorCrossesOncePerDestinationDevice) {
  absl::StatusOr<Loaded> m = FromText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4] x) => (float[4] b, float[4] c, float[4] e) {
      a = Relu(x)
      b = Neg(a)
      c = Abs(a)
      e = Exp(a)
    }
  )");
  ASSERT_TRUE(m.ok()) << m.status();
  const Deployment d =
      PartitionAndValidate(*m, PlaceByOutput(m->graph, {{"b", 1}, {"c", 1}, {"e", 2}}), 3);
  ASSERT_EQ(d.transfers.size(), 2u);
  EXPECT_EQ(d.transfers[0].dst, 1);
  EXPECT_EQ(d.transfers[1].dst, 2);
  EXPECT_EQ(d.devices[1].num_recvs, 1);
  EXPECT_EQ(d.devices[0].num_sends, 2);
  EXPECT_EQ(d.outputs[2].device, 2);
}

TEST(PartitionTest, AConstantReadOnTwoDevicesIsCopiedToEach) {
  absl::StatusOr<Loaded> m = FromText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[3] x) => (float[3] y, float[3] z) {
      k = Constant <value = float[3] {1, 2, 3}> ()
      y = Add(x, k)
      z = Mul(x, k)
    }
  )");
  ASSERT_TRUE(m.ok()) << m.status();
  // The Constant sits on device 2, which reads nothing.
  const Deployment d =
      PartitionAndValidate(*m, PlaceByOutput(m->graph, {{"k", 2}, {"y", 0}, {"z", 1}}), 3);
  EXPECT_THAT(d.transfers, IsEmpty());
  EXPECT_THAT(OpTypes(d.devices[0].proto), ElementsAre("Constant", "Add"));
  EXPECT_THAT(OpTypes(d.devices[1].proto), ElementsAre("Constant", "Mul"));
  EXPECT_THAT(OpTypes(d.devices[2].proto), IsEmpty());
  EXPECT_EQ(d.devices[0].num_nodes, 2);
  EXPECT_THAT(d.inputs[0].devices, ElementsAre(0, 1));
  ASSERT_EQ(d.stages.size(), 2u);
  EXPECT_THAT(OpTypes(d.stages[0].proto), ElementsAre("Constant", "Add"));
  EXPECT_THAT(OpTypes(d.stages[1].proto), ElementsAre("Constant", "Mul"));
}

// Torch writes an Identity of a weight where two layers hold equal weights,
// mixed-precision exports a Cast of a low-precision weight: each stage or device
// reading one gets its own copy (and the weight), so no weight crosses and
// every stage tensor keeps the batch (Triton batching). A training step
// (node phases) keeps them ordinary nodes. So does a chain of them (an
// Identity of a cast weight, as torch's shared weights behind a Cast are).
TEST(PartitionTest, AnIdentityOrCastOfAWeightIsCopiedLikeAConstant) {
  absl::StatusOr<Loaded> m = FromText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[3] x) => (float[3] y, float[3] z) <float[3] w = {1, 2, 3}, double[3] h = {1, 1, 1}> {
      k = Identity(w)
      c = Cast <to = 1> (h)
      a = Add(x, k)
      y = Relu(a)
      e = Identity(c)
      b = Mul(a, k)
      z = Mul(b, e)
    }
  )");
  ASSERT_TRUE(m.ok()) << m.status();
  const std::vector<int32_t> placement = PlaceByOutput(m->graph, {{"b", 1}, {"z", 1}});
  const Deployment d = PartitionAndValidate(*m, placement, 2);
  ASSERT_EQ(d.transfers.size(), 1u);
  EXPECT_EQ(d.transfers[0].tensor, "a");
  EXPECT_THAT(OpTypes(d.devices[1].proto),
              ElementsAre("Identity", "Cast", "Recv", "Identity", "Mul", "Mul"));
  EXPECT_THAT(InitializerNames(d.devices[1].proto), ::testing::IsSupersetOf({"w", "h"}));
  ASSERT_EQ(d.stages.size(), 2u);
  EXPECT_THAT(InitializerNames(d.stages[0].proto), ElementsAre("w"));
  EXPECT_THAT(InitializerNames(d.stages[1].proto), ElementsAre("w", "h"));
  EXPECT_THAT(d.stages[1].inputs, ElementsAre("a"));

  absl::StatusOr<Deployment> training =
      Partition(m->model, m->graph, placement, 2,
                {.stages = true, .node_phase = std::vector<uint8_t>(m->graph.num_nodes(), 0)});
  ASSERT_TRUE(training.ok()) << training.status();
  std::vector<std::string> sent;
  for (const Transfer& t : training->transfers) sent.push_back(t.tensor);
  EXPECT_THAT(sent, ::testing::Contains("k"));
}

// Note [Recomputed shapes]: a stage that holds the tensor a shape value is
// taken from computes the value itself (Shape → Gather → Concat, and a
// ConstantOfShape fill of it) instead of receiving it, so only batch-led
// tensors cross between stages; the device models still send it. A stage
// that does not hold the tensor receives the shape (and fills from it), and
// a training step never copies.
constexpr char kShapeChain[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  g (float[2,6] x) => (float[2,3,2] y, float[2,6] z) <int64[1] k3 = {3}, int64[1] k2 = {2}> {
    a = Relu(x)
    u = Sigmoid(x)
    s = Shape(a)
    i = Constant <value = int64[1] {0}> ()
    b = Gather(s, i)
    t = Concat <axis = 0> (b, k3, k2)
    c = ConstantOfShape <value = float[1] {1}> (t)
    r = Reshape(SOURCE, t)
    y = Add(r, c)
    z = Neg(a)
  }
)";

std::string ShapeChainModel(const std::string& reshaped) {
  std::string text = kShapeChain;
  text.replace(text.find("SOURCE"), 6, reshaped);
  return text;
}

std::vector<std::string> SentTensors(const Deployment& d) {
  std::vector<std::string> sent;
  for (const Transfer& t : d.transfers) sent.push_back(t.tensor);
  return sent;
}

// The stage that runs the Reshape.
const Stage& ReshapeStage(const Deployment& d) {
  for (const Stage& stage : d.stages) {
    for (const onnx::NodeProto& node : stage.proto.graph().node()) {
      if (node.op_type() == "Reshape") return stage;
    }
  }
  ADD_FAILURE() << "no stage runs the Reshape";
  return d.stages.front();
}

TEST(PartitionTest, AStageHoldingTheTensorRecomputesItsShapeChain) {
  absl::StatusOr<Loaded> m = FromText(ShapeChainModel("a"));
  ASSERT_TRUE(m.ok()) << m.status();
  const std::vector<int32_t> placement = PlaceByOutput(m->graph, {{"r", 1}, {"y", 1}});
  const Deployment d = PartitionAndValidate(*m, placement, 2);
  ASSERT_EQ(d.stages.size(), 2u);
  const Stage& reader = ReshapeStage(d);
  EXPECT_THAT(reader.inputs, ElementsAre("a"));
  EXPECT_THAT(OpTypes(reader.proto),
              ::testing::IsSupersetOf({"Shape", "Gather", "Concat", "ConstantOfShape", "Reshape"}));
  EXPECT_EQ(reader.recomputed.size(), 4u);
  EXPECT_THAT(d.stages[0].outputs, UnorderedElementsAre("a", "z"));
  // The device models are unchanged: the shape and the fill still cross.
  EXPECT_THAT(SentTensors(d), ::testing::IsSupersetOf({"a", "t", "c"}));

  absl::StatusOr<Deployment> training =
      Partition(m->model, m->graph, placement, 2,
                {.stages = true, .node_phase = std::vector<uint8_t>(m->graph.num_nodes(), 0)});
  ASSERT_TRUE(training.ok()) << training.status();
  for (const Stage& stage : training->stages) EXPECT_THAT(stage.recomputed, IsEmpty());
}

TEST(PartitionTest, AStageWithoutTheTensorReceivesTheShape) {
  absl::StatusOr<Loaded> m = FromText(ShapeChainModel("u"));
  ASSERT_TRUE(m.ok()) << m.status();
  const Deployment d =
      PartitionAndValidate(*m, PlaceByOutput(m->graph, {{"r", 1}, {"y", 1}, {"u", 1}}), 2);
  const Stage& reader = ReshapeStage(d);
  // It fills the ConstantOfShape from the received shape itself.
  EXPECT_THAT(reader.inputs, ::testing::Contains("t"));
  EXPECT_THAT(reader.inputs, ::testing::Not(::testing::Contains("c")));
  EXPECT_EQ(reader.recomputed.size(), 1u);
}

// A graph output whose dim the exporter named itself ("Gemm_dim_0", as torch
// does when only the inputs get dynamic axes) but which is the bound batch
// is written as "batch", so every stage output leads with the same symbol.
TEST(PartitionTest, AGraphOutputDimThatIsTheBatchIsNamedBatch) {
  absl::StatusOr<onnx::ModelProto> proto = onnx_io::ParseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[batch,3] x) => (float[Gemm_dim_0,3] y, float[4] c) <float[3,3] w = {1,0,0,0,1,0,0,0,1}> {
      a = MatMul(x, w)
      y = Relu(a)
      c = Constant <value = float[4] {1, 2, 3, 4}> ()
    }
  )");
  ASSERT_TRUE(proto.ok()) << proto.status();
  absl::StatusOr<onnx_io::Model> model = onnx_io::ModelFromProto(*std::move(proto));
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<ir::Graph> graph = onnx_io::BuildGraph(*model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ShapeOptions options;
  options.dim_values["batch"] = 2;
  ASSERT_TRUE(InferShapes(*model, options, *graph).ok());
  absl::StatusOr<Deployment> d =
      Partition(*model, *graph, PlaceByOutput(*graph, {{"y", 1}}), 2, {.stages = true});
  ASSERT_TRUE(d.ok()) << d.status();
  auto output_dims = [](const onnx::ModelProto& stage, const std::string& name) {
    std::vector<std::string> dims;
    for (const onnx::ValueInfoProto& o : stage.graph().output()) {
      if (o.name() != name) continue;
      for (const auto& dim : o.type().tensor_type().shape().dim()) {
        dims.push_back(dim.has_dim_param() ? dim.dim_param() : std::to_string(dim.dim_value()));
      }
    }
    return dims;
  };
  bool found = false;
  for (const Stage& stage : d->stages) {
    const std::vector<std::string> dims = output_dims(stage.proto, "y");
    if (dims.empty()) continue;
    found = true;
    EXPECT_THAT(dims, ElementsAre("batch", "3"));
  }
  EXPECT_TRUE(found);
  for (const DeviceModel& device : d->devices) {
    const std::vector<std::string> dims = output_dims(device.proto, "y");
    if (!dims.empty()) {
      EXPECT_THAT(dims, ElementsAre("batch", "3"));
    }
  }
  // A dim the source fixes keeps its number.
  for (const Stage& stage : d->stages) {
    const std::vector<std::string> dims = output_dims(stage.proto, "c");
    if (!dims.empty()) {
      EXPECT_THAT(dims, ElementsAre("4"));
    }
  }
}

TEST(PartitionTest, InitializersGoToEveryDeviceThatReadsThem) {
  absl::StatusOr<Loaded> m = FromText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x, float[2] unused) => (float[2] y, float[2] z)
    <float[2] w = {1, 2}, float[2] v = {3, 4}> {
      y = Add(x, w)
      z = Mul(y, w)
    }
  )");
  ASSERT_TRUE(m.ok()) << m.status();
  const Deployment d = PartitionAndValidate(*m, PlaceByOutput(m->graph, {{"z", 1}}), 2);
  EXPECT_THAT(InitializerNames(d.devices[0].proto),
              ElementsAre("w", "autopar_signal", "autopar_remote_1"));
  EXPECT_THAT(InitializerNames(d.devices[1].proto),
              ElementsAre("w", "autopar_signal", "autopar_remote_0"));
  ASSERT_EQ(d.inputs.size(), 2u);
  EXPECT_THAT(d.inputs[1].devices, IsEmpty());  // read by nobody
}

TEST(PartitionTest, IfCapturingAValueFromAnotherDeviceReceivesIt) {
  absl::StatusOr<Loaded> m = FromText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (bool cond, float[2] x) => (float[2] z)
    <float[2] w = {1, 2}> {
      a = Relu(x)
      z = If (cond) <
        then_branch = then_g () => (float[2] t) { t = Add(a, w) },
        else_branch = else_g () => (float[2] e) { e = Abs(a) }
      >
    }
  )");
  ASSERT_TRUE(m.ok()) << m.status();
  const Deployment d = PartitionAndValidate(*m, PlaceByOutput(m->graph, {{"z", 1}}), 2);
  ASSERT_EQ(d.transfers.size(), 1u);
  EXPECT_EQ(d.transfers[0].tensor, "a");
  EXPECT_EQ(d.transfers[0].dst, 1);
  // The weight the body reads and the condition come along with the If.
  EXPECT_THAT(InitializerNames(d.devices[1].proto), ::testing::Contains("w"));
  EXPECT_THAT(Names(d.devices[1].proto.graph().input()), ElementsAre("cond"));
  EXPECT_THAT(InitializerNames(d.devices[0].proto), ::testing::Not(::testing::Contains("w")));
  ASSERT_EQ(d.stages.size(), 2u);
  EXPECT_THAT(d.stages[1].inputs, ElementsAre("cond", "a"));
  EXPECT_THAT(d.stages[1].after, ElementsAre(0));
}

TEST(PartitionTest, GeneratedNamesAvoidAdversarialModelNames) {
  // Every name the rewriter would pick first is already taken, some only in
  // a subgraph body.
  absl::StatusOr<Loaded> m = FromText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (bool cond, float[2] autopar_signal) => (float[2] autopar_recv_0, float[2] z)
    <float[2] autopar_remote_0 = {1, 2}> {
      autopar_send_0 = Relu(autopar_signal)
      autopar_recv_0 = Add(autopar_send_0, autopar_remote_0)
      z = If (cond) <
        then_branch = then_g () => (float[2] autopar_remote_1) {
          autopar_remote_1 = Neg(autopar_recv_0)
        },
        else_branch = else_g () => (float[2] autopar_send_0_signal) {
          autopar_send_0_signal = Abs(autopar_send_0)
        }
      >
    }
  )");
  ASSERT_TRUE(m.ok()) << m.status();
  const Deployment d =
      PartitionAndValidate(*m, PlaceByOutput(m->graph, {{"autopar_recv_0", 1}, {"z", 0}}), 2);
  ASSERT_EQ(d.transfers.size(), 2u);
  const onnx::NodeProto* send = FindOp(d.devices[0].proto, "Send");
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(send->input(0), "autopar_signal_1");
  EXPECT_EQ(send->input(1), "autopar_remote_1_1");
  EXPECT_EQ(send->input(2), "autopar_send_0");  // the tensor keeps its name
  EXPECT_EQ(send->name(), "autopar_send_0_1");
  EXPECT_EQ(send->output(0), "autopar_send_0_signal_1");
}

TEST(PartitionTest, OutputsThatNoNodeComputesStillComeOut) {
  absl::StatusOr<Loaded> m = FromText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] x, float[2] w, float[2] k, float[2] y)
    <float[2] w = {1, 2}> {
      k = Constant <value = float[2] {5, 6}> ()
      y = Relu(x)
    }
  )");
  ASSERT_TRUE(m.ok()) << m.status();
  const Deployment d = PartitionAndValidate(*m, PlaceByOutput(m->graph, {{"k", 1}, {"y", 1}}), 2);
  // The input goes out where it is read; the weight, read by nobody, from
  // device 0; the Constant from its own device.
  EXPECT_THAT(Names(d.devices[1].proto.graph().output()), ElementsAre("x", "k", "y"));
  EXPECT_THAT(OpTypes(d.devices[1].proto), ElementsAre("Constant", "Relu"));
  EXPECT_THAT(Names(d.devices[0].proto.graph().output()), ElementsAre("w"));
  EXPECT_THAT(InitializerNames(d.devices[0].proto), ElementsAre("w"));
  EXPECT_THAT(OpTypes(d.devices[0].proto), IsEmpty());
  ASSERT_EQ(d.stages.size(), 2u);
  EXPECT_THAT(d.stages[0].outputs, ElementsAre("w"));
  EXPECT_THAT(d.stages[1].outputs, ElementsAre("y", "x", "k"));
}

TEST(PartitionTest, ValuesSendRecvCannotCarryMustStayTogether) {
  absl::StatusOr<Loaded> m = FromText(/*require_static=*/false, R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x, float[2] y) => (float[2] z) {
      s = SequenceConstruct(x, y)
      i = Constant <value = int64 {1}> ()
      z = SequenceAt(s, i)
    }
  )");
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<int32_t> placement = PlaceByOutput(m->graph, {{"z", 1}});
  absl::StatusOr<Deployment> d = Partition(m->model, m->graph, placement, 2);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("Send/Recv carry only tensors of known element type"));

  placement = ColocateNonTensorValues(m->graph, placement);
  EXPECT_EQ(placement[testing::ProducerIndex(m->graph, "z")], 0);
  PartitionAndValidate(*m, placement, 2);
}

TEST(PartitionTest, RejectsPlacementsThatDoNotFit) {
  absl::StatusOr<Loaded> m = FromText(kChain);
  ASSERT_TRUE(m.ok());
  EXPECT_THAT(
      std::string(Partition(m->model, m->graph, std::vector<int32_t>{0, 0}, 2).status().message()),
      HasSubstr("2 entries for 3 nodes"));
  EXPECT_THAT(
      std::string(
          Partition(m->model, m->graph, std::vector<int32_t>{0, 2, 0}, 2).status().message()),
      HasSubstr("placed on device 2 of 2"));
  EXPECT_FALSE(Partition(m->model, m->graph, std::vector<int32_t>{0, 0, 0}, 0).ok());
}

TEST(PartitionTest, ExternalWeightsAreNeverReadAndStreamToTheOutput) {
  ::autopar::testing::TempDir dir;
  absl::StatusOr<Loaded> text = FromText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4] x) => (float[4] z)
    <float[4] w = {1, 2, 3, 4}, float[4] v = {5, 6, 7, 8}> {
      y = Add(x, w)
      z = Mul(y, v)
    }
  )");
  ASSERT_TRUE(text.ok());
  ASSERT_TRUE(onnx_io::SaveModel(text->model.proto, text->model, dir / "in.onnx",
                                 {.external_threshold_bytes = 8})
                  .ok());
  absl::StatusOr<Loaded> m = testing::FromFile(dir / "in.onnx");
  ASSERT_TRUE(m.ok()) << m.status();
  const std::vector<int32_t> placement = PlaceByOutput(m->graph, {{"z", 1}});
  const Deployment d = PartitionAndValidate(*m, placement, 2);
  for (const DeviceModel& device : d.devices) {
    for (const onnx::TensorProto& t : device.proto.graph().initializer()) {
      if (t.name() == "w" || t.name() == "v") {
        EXPECT_TRUE(onnx_io::IsExternal(t)) << t.name();
      }
    }
  }
  onnx_io::DeploymentFiles files = DeploymentFilesOf(d);
  EXPECT_EQ(files.models.size(), d.devices.size() + d.stages.size());
  ASSERT_TRUE(onnx_io::WriteDeployment(dir / "out", m->model, files).ok());
  absl::StatusOr<onnx_io::Model> device1 = onnx_io::LoadModel(dir / "out" / "device_1.onnx");
  ASSERT_TRUE(device1.ok()) << device1.status();
  EXPECT_TRUE(fs::exists(dir / "out" / "device_1.onnx.data"));
  for (const onnx::TensorProto& t : device1->proto.graph().initializer()) {
    if (t.name() != "v") continue;
    EXPECT_EQ(*onnx_io::ReadTensorBytes(*device1, t),
              *onnx_io::ReadTensorBytes(m->model, m->model.proto.graph().initializer(1)));
  }
  EXPECT_TRUE(fs::exists(dir / "out" / "stages" / "s1.onnx"));
}

TEST(PartitionTest, SameInputSameOutput) {
  absl::StatusOr<Loaded> m = FromText(kChain);
  ASSERT_TRUE(m.ok());
  const std::vector<int32_t> placement = PlaceByOutput(m->graph, {{"b", 1}});
  absl::StatusOr<Deployment> a = Partition(m->model, m->graph, placement, 2);
  absl::StatusOr<Deployment> b = Partition(m->model, m->graph, placement, 2);
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t k = 0; k < a->devices.size(); ++k) {
    EXPECT_EQ(a->devices[k].proto.SerializeAsString(), b->devices[k].proto.SerializeAsString());
  }
  for (size_t s = 0; s < a->stages.size(); ++s) {
    EXPECT_EQ(a->stages[s].proto.SerializeAsString(), b->stages[s].proto.SerializeAsString());
  }
}

}  // namespace
}  // namespace autopar::passes
