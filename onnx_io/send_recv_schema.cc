#include "onnx_io/send_recv_schema.h"

#include <cstdint>
#include <mutex>
#include <vector>

#include "onnx/defs/schema.h"
#include "onnx/defs/shape_inference.h"

namespace autopar::onnx_io {
namespace {

void CheckScalarInput(onnx::InferenceContext& ctx, size_t index, const char* op,
                      const char* input) {
  if (onnx::hasInputShape(ctx, index) && onnx::getInputShape(ctx, index).dim_size() != 0) {
    fail_shape_inference(input, " of ", op, " must be a scalar");
  }
}

// The `element_types` attribute, checked to hold `count` tensor data types.
std::vector<int64_t> ElementTypes(onnx::InferenceContext& ctx, const char* op, size_t count) {
  std::vector<int64_t> types;
  if (!onnx::getRepeatedAttribute(ctx, "element_types", types)) {
    fail_type_inference(op, " needs the attribute element_types");
  }
  if (types.size() != count) {
    fail_type_inference(op, " has ", count, " Data tensors but element_types lists ", types.size(),
                        " types");
  }
  for (int64_t type : types) {
    if (type == onnx::TensorProto::UNDEFINED || type > INT32_MAX ||
        !onnx::TensorProto_DataType_IsValid(static_cast<int>(type))) {
      fail_type_inference(op, ": element_types holds ", type, ", which is not a tensor data type");
    }
  }
  return types;
}

void SetSignalOutput(onnx::InferenceContext& ctx) {
  onnx::updateOutputElemType(ctx, 0, onnx::TensorProto::BOOL);
  onnx::updateOutputShape(ctx, 0, onnx::TensorShapeProto());
}

void InferSend(onnx::InferenceContext& ctx) {
  if (ctx.getNumInputs() < 3) {
    fail_shape_inference("Send needs InputSignal, Remote and at least one Data input");
  }
  CheckScalarInput(ctx, 0, "Send", "InputSignal");
  CheckScalarInput(ctx, 1, "Send", "Remote");
  const std::vector<int64_t> types = ElementTypes(ctx, "Send", ctx.getNumInputs() - 2);
  for (size_t i = 0; i < types.size(); ++i) {
    const onnx::TypeProto* type = ctx.getInputType(i + 2);
    if (type == nullptr || !type->has_tensor_type()) continue;
    const int32_t elem_type = type->tensor_type().elem_type();
    if (elem_type != onnx::TensorProto::UNDEFINED && elem_type != types[i]) {
      fail_type_inference("Send: Data input ", i, " has element type ", elem_type,
                          " but element_types says ", types[i]);
    }
  }
  if (ctx.getNumOutputs() != 1) fail_shape_inference("Send must have one output");
  SetSignalOutput(ctx);
}

void InferRecv(onnx::InferenceContext& ctx) {
  if (ctx.getNumInputs() != 2) fail_shape_inference("Recv must have two inputs");
  CheckScalarInput(ctx, 0, "Recv", "InputSignal");
  CheckScalarInput(ctx, 1, "Recv", "Remote");
  if (ctx.getNumOutputs() < 2) fail_shape_inference("Recv must have at least two outputs");
  const std::vector<int64_t> types = ElementTypes(ctx, "Recv", ctx.getNumOutputs() - 1);
  SetSignalOutput(ctx);
  for (size_t i = 0; i < types.size(); ++i) {
    onnx::updateOutputElemType(ctx, i + 1, static_cast<int32_t>(types[i]));
  }
}

// The parts Send and Recv share: domain, version, signals, Remote, attributes.
onnx::OpSchema CommonSchema(const char* name, int line) {
  onnx::OpSchema schema(name, __FILE__, line);
  schema.SetDomain(kSendRecvDomain)
      .SinceVersion(kSendRecvOpsetVersion)
      .SetSupportLevel(onnx::OpSchema::SupportType::EXPERIMENTAL)
      .Input(0, "InputSignal", "Input control signal. It must be a scalar.", "TBool")
      .Input(1, "Remote", "Rank of the other end. It must be a scalar.", "TInt64")
      .Output(0, "OutputSignal", "Output control signal. It must be a scalar.", "TBool")
      .Attr("tag", "The tag of the message carrying Data.", onnx::AttributeProto::INT)
      .Attr("element_types", "Element types of the Data tensors.", onnx::AttributeProto::INTS)
      .TypeConstraint("TInt64", {"tensor(int64)"}, "64-bit integer Remote.")
      .TypeConstraint("TBool", {"tensor(bool)"}, "Boolean signals.")
      .TypeConstraint("V", onnx::OpSchema::all_tensor_types_with_bfloat(), "Any tensor type.");
  return schema;
}

onnx::OpSchema SendSchema() {
  onnx::OpSchema schema = CommonSchema("Send", __LINE__);
  schema.SetDoc("Sends the Data tensors to rank Remote, under message tag `tag`.")
      .Input(2, "Data", "Tensors to send.", "V", onnx::OpSchema::Variadic,
             /*is_homogeneous=*/false)
      .TypeAndShapeInferenceFunction(InferSend);
  return schema;
}

onnx::OpSchema RecvSchema() {
  onnx::OpSchema schema = CommonSchema("Recv", __LINE__);
  schema.SetDoc("Receives the Data tensors sent from rank Remote under message tag `tag`.")
      .Output(1, "Data", "The received tensors.", "V", onnx::OpSchema::Variadic,
              /*is_homogeneous=*/false)
      .TypeAndShapeInferenceFunction(InferRecv);
  return schema;
}

void RegisterIfAbsent(onnx::OpSchema schema) {
  if (onnx::OpSchemaRegistry::Schema(schema.Name(), kSendRecvOpsetVersion, kSendRecvDomain) !=
      nullptr) {
    return;
  }
  onnx::OpSchemaRegistry::OpSchemaRegisterOnce registration(schema);
}

}  // namespace

void RegisterSendRecvSchemas() {
  static std::once_flag once;  // constant-initialised: no static constructor
  std::call_once(once, [] {
    // Loads ONNX's own schemas first, so that ours are added to a full map.
    onnx::OpSchemaRegistry::Instance();
    auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
    if (ranges.Map().count(kSendRecvDomain) == 0) {
      ranges.AddDomainToVersion(kSendRecvDomain, kSendRecvOpsetVersion, kSendRecvOpsetVersion);
    }
    RegisterIfAbsent(SendSchema());
    RegisterIfAbsent(RecvSchema());
  });
}

}  // namespace autopar::onnx_io
