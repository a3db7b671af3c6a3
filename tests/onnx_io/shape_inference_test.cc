// InferShapesOfCopy: ONNX's inference on a weight-free copy of a model proto,
// strict or best effort, and what the copy keeps of large tensors.
#include "onnx_io/shape_inference.h"

#include <string>

#include "gtest/gtest.h"
#include "onnx_io/text_format.h"

namespace autopar::onnx_io {
namespace {

onnx::ModelProto Parse(const std::string& text) {
  absl::StatusOr<onnx::ModelProto> proto = ParseModelText(text);
  EXPECT_TRUE(proto.ok()) << proto.status();
  return proto.ok() ? *std::move(proto) : onnx::ModelProto();
}

const onnx::ValueInfoProto* FindInfo(const onnx::GraphProto& g, const std::string& name) {
  for (const onnx::ValueInfoProto& info : g.value_info()) {
    if (info.name() == name) return &info;
  }
  return nullptr;
}

// x [2, 256] · W [256, 128] with W's 128 KiB in raw_data, and a Constant
// node whose tensor is as large.
onnx::ModelProto ModelWithLargeWeights() {
  onnx::ModelProto model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2, 256] x) => (float[2, 128] y) {
      h = MatMul(x, W)
      y = Add(h, c)
    }
  )");
  onnx::TensorProto* w = model.mutable_graph()->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(256);
  w->add_dims(128);
  w->set_raw_data(std::string(256 * 128 * 4, '\0'));
  onnx::NodeProto* constant = model.mutable_graph()->add_node();
  constant->set_op_type("Constant");
  constant->add_output("c");
  onnx::AttributeProto* value = constant->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  *value->mutable_t() = *w;
  value->mutable_t()->clear_name();
  // The Constant must come before the Add that reads it.
  model.mutable_graph()->mutable_node()->SwapElements(1, 2);
  return model;
}

TEST(InferShapesOfCopyTest, InfersWithoutCopyingLargeTensorBytes) {
  const onnx::ModelProto model = ModelWithLargeWeights();
  absl::StatusOr<onnx::ModelProto> copy = InferShapesOfCopy(model);
  ASSERT_TRUE(copy.ok()) << copy.status();
  const onnx::ValueInfoProto* h = FindInfo(copy->graph(), "h");
  ASSERT_NE(h, nullptr);
  const onnx::TensorShapeProto& shape = h->type().tensor_type().shape();
  ASSERT_EQ(shape.dim_size(), 2);
  EXPECT_EQ(shape.dim(0).dim_value(), 2);
  EXPECT_EQ(shape.dim(1).dim_value(), 128);
  // The copy keeps the weight's name, type and dims, not its bytes; the
  // model itself is untouched.
  const onnx::TensorProto& w = copy->graph().initializer(0);
  EXPECT_EQ(w.name(), "W");
  EXPECT_EQ(w.dims_size(), 2);
  EXPECT_TRUE(w.raw_data().empty());
  EXPECT_TRUE(copy->graph().node(1).attribute(0).t().raw_data().empty());
  EXPECT_EQ(model.graph().initializer(0).raw_data().size(), 256u * 128u * 4u);
  EXPECT_EQ(model.graph().node(1).attribute(0).t().raw_data().size(), 256u * 128u * 4u);
}

TEST(InferShapesOfCopyTest, StrictModeReportsWhatBestEffortSkips) {
  // Add of float and int64: ONNX's schema wants one type.
  const onnx::ModelProto model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[3] a, int64[3] b) => (float[3] y) {
      y = Add(a, b)
    }
  )");
  EXPECT_TRUE(InferShapesOfCopy(model).ok());
  absl::StatusOr<onnx::ModelProto> strict = InferShapesOfCopy(model, {.strict = true});
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(strict.status().message().empty());
  EXPECT_EQ(strict.status().message().find('\n'), std::string::npos);  // one line
}

}  // namespace
}  // namespace autopar::onnx_io
