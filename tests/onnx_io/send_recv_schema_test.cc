// ONNX Runtime's com.microsoft Send/Recv schemas, registered with ONNX 1.12:
// models using them pass the checker and shape inference.
#include "onnx_io/send_recv_schema.h"

#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx_io/checker.h"
#include "onnx_io/text_format.h"

namespace autopar::onnx_io {
namespace {

using ::testing::HasSubstr;

// A device model in the rewriter's shape: signals and Remote are initializers,
// every OutputSignal is a graph output.
constexpr char kDeviceModel[] = R"(
  <ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
  g (float[2,3] x) => (bool sent, bool received, float[2,3] z)
  <bool signal = {1}, int64 remote = {1}> {
    y = Relu(x)
    sent = com.microsoft.Send <tag = 7, element_types = [1]> (signal, remote, y)
    received, r = com.microsoft.Recv <tag = 8, element_types = [1]> (signal, remote)
    z = Add(y, r)
  }
)";

onnx::ModelProto Parse(const std::string& text) {
  absl::StatusOr<onnx::ModelProto> model = ParseModelText(text);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : onnx::ModelProto();
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

// Runs ONNX's shape inference in strict mode; returns the error, or "".
std::string InferStrictly(onnx::ModelProto& model) {
  try {
    onnx::ShapeInferenceOptions options(/*check_type_val=*/true, /*strict_mode_val=*/1,
                                        /*data_prop_val=*/false);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

const onnx::ValueInfoProto* FindValueInfo(const onnx::GraphProto& g, const std::string& name) {
  for (const onnx::ValueInfoProto& v : g.value_info()) {
    if (v.name() == name) return &v;
  }
  for (const onnx::ValueInfoProto& v : g.output()) {
    if (v.name() == name) return &v;
  }
  return nullptr;
}

TEST(SendRecvSchemaTest, RegistrationIsIdempotentAcrossThreads) {
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) threads.emplace_back(RegisterSendRecvSchemas);
  for (std::thread& t : threads) t.join();
  RegisterSendRecvSchemas();

  const onnx::OpSchema* send = onnx::OpSchemaRegistry::Schema("Send", 1, kSendRecvDomain);
  const onnx::OpSchema* recv = onnx::OpSchemaRegistry::Schema("Recv", 1, kSendRecvDomain);
  ASSERT_NE(send, nullptr);
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(send->inputs().size(), 3u);
  EXPECT_EQ(send->inputs()[2].GetOption(), onnx::OpSchema::Variadic);
  EXPECT_FALSE(send->inputs()[2].GetIsHomogeneous());
  EXPECT_EQ(send->outputs().size(), 1u);
  EXPECT_EQ(recv->inputs().size(), 2u);
  EXPECT_EQ(recv->outputs().size(), 2u);
  EXPECT_EQ(recv->outputs()[1].GetOption(), onnx::OpSchema::Variadic);
  for (const onnx::OpSchema* schema : {send, recv}) {
    ASSERT_TRUE(schema->attributes().count("tag"));
    ASSERT_TRUE(schema->attributes().count("element_types"));
    EXPECT_TRUE(schema->attributes().at("tag").required);
    EXPECT_TRUE(schema->attributes().at("element_types").required);
  }
}

TEST(SendRecvSchemaTest, DeviceModelPassesTheChecker) {
  RegisterSendRecvSchemas();
  EXPECT_TRUE(OnnxLibraryKnowsModel(Parse(kDeviceModel)));
  absl::Status status = CheckModel(Parse(kDeviceModel), {});
  EXPECT_TRUE(status.ok()) << status;
}

TEST(SendRecvSchemaTest, ShapeInferenceTypesRecvDataFromElementTypes) {
  RegisterSendRecvSchemas();
  onnx::ModelProto model = Parse(kDeviceModel);
  ASSERT_EQ(InferStrictly(model), "");
  const onnx::ValueInfoProto* r = FindValueInfo(model.graph(), "r");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  const onnx::ValueInfoProto* received = FindValueInfo(model.graph(), "received");
  ASSERT_NE(received, nullptr);
  EXPECT_EQ(received->type().tensor_type().elem_type(), onnx::TensorProto::BOOL);
  EXPECT_EQ(received->type().tensor_type().shape().dim_size(), 0);
}

TEST(SendRecvSchemaTest, SeveralHeterogeneousTensorsInOneMessage) {
  RegisterSendRecvSchemas();
  onnx::ModelProto model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
    g (float[2] x, int64[3] i) => (bool sent, bool received, int64[3] b)
    <bool signal = {1}, int64 remote = {0}> {
      sent = com.microsoft.Send <tag = 0, element_types = [1, 7]> (signal, remote, x, i)
      received, a, b = com.microsoft.Recv <tag = 1, element_types = [1, 7]> (signal, remote)
    }
  )");
  ASSERT_TRUE(CheckModel(model, {}).ok());
  ASSERT_EQ(InferStrictly(model), "");
  EXPECT_EQ(FindValueInfo(model.graph(), "a")->type().tensor_type().elem_type(),
            onnx::TensorProto::FLOAT);
  EXPECT_EQ(FindValueInfo(model.graph(), "b")->type().tensor_type().elem_type(),
            onnx::TensorProto::INT64);
}

TEST(SendRecvSchemaTest, MissingTagFailsTheChecker) {
  RegisterSendRecvSchemas();
  absl::Status status = CheckModel(
      Parse(Replace(kDeviceModel, "<tag = 7, element_types = [1]>", "<element_types = [1]>")), {});
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("tag"));
}

TEST(SendRecvSchemaTest, WrongElementTypesFailShapeInference) {
  RegisterSendRecvSchemas();
  // Send says int64 for a float tensor.
  onnx::ModelProto wrong_type =
      Parse(Replace(kDeviceModel, "tag = 7, element_types = [1]", "tag = 7, element_types = [7]"));
  EXPECT_THAT(InferStrictly(wrong_type), HasSubstr("element_types"));
  // Recv lists two types for one tensor.
  onnx::ModelProto wrong_count = Parse(
      Replace(kDeviceModel, "tag = 8, element_types = [1]", "tag = 8, element_types = [1, 1]"));
  EXPECT_THAT(InferStrictly(wrong_count), HasSubstr("element_types"));
  // Not a data type at all.
  onnx::ModelProto not_a_type = Parse(
      Replace(kDeviceModel, "tag = 8, element_types = [1]", "tag = 8, element_types = [999]"));
  EXPECT_THAT(InferStrictly(not_a_type), HasSubstr("not a tensor data type"));
}

TEST(SendRecvSchemaTest, NonScalarRemoteFailsShapeInference) {
  RegisterSendRecvSchemas();
  onnx::ModelProto model =
      Parse(Replace(kDeviceModel, "int64 remote = {1}", "int64[1] remote = {1}"));
  EXPECT_THAT(InferStrictly(model), HasSubstr("scalar"));
}

}  // namespace
}  // namespace autopar::onnx_io
