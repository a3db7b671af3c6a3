#include "training/graph_emitter.h"

#include <cstring>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"

namespace autopar::training {

onnx::AttributeProto AttrInt(std::string_view name, int64_t value) {
  onnx::AttributeProto a;
  a.set_name(std::string(name));
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
  return a;
}

onnx::AttributeProto AttrInts(std::string_view name, const std::vector<int64_t>& values) {
  onnx::AttributeProto a;
  a.set_name(std::string(name));
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
  return a;
}

onnx::AttributeProto AttrFloat(std::string_view name, float value) {
  onnx::AttributeProto a;
  a.set_name(std::string(name));
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(value);
  return a;
}

onnx::AttributeProto AttrString(std::string_view name, std::string_view value) {
  onnx::AttributeProto a;
  a.set_name(std::string(name));
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(std::string(value));
  return a;
}

onnx::AttributeProto AttrTensor(std::string_view name, onnx::TensorProto value) {
  onnx::AttributeProto a;
  a.set_name(std::string(name));
  a.set_type(onnx::AttributeProto::TENSOR);
  *a.mutable_t() = std::move(value);
  return a;
}

namespace {

// Appends `value` to `bytes` as `dtype`'s little-endian element.
void AppendElement(double value, ir::DType dtype, std::string& bytes) {
  auto append = [&bytes](const auto& v) {
    bytes.append(reinterpret_cast<const char*>(&v), sizeof(v));
  };
  switch (dtype) {
    case ir::DType::kDouble:
      append(value);
      return;
    case ir::DType::kFloat16: {
      // Round to nearest even through float: exact for the small constants
      // the rules write (0, 1, 0.5, counts), which is all they need.
      float f = static_cast<float>(value);
      uint32_t x;
      std::memcpy(&x, &f, 4);
      uint32_t sign = (x >> 16) & 0x8000;
      int32_t exponent = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
      uint32_t mantissa = x & 0x7fffff;
      uint16_t h;
      if (exponent <= 0) {
        h = static_cast<uint16_t>(sign);  // underflow to signed zero
      } else if (exponent >= 31) {
        h = static_cast<uint16_t>(sign | 0x7c00);  // overflow to infinity
      } else {
        uint32_t rounded = mantissa + 0xfff + ((mantissa >> 13) & 1);
        if (rounded & 0x800000) {
          rounded = 0;
          ++exponent;
        }
        h = static_cast<uint16_t>(sign | (static_cast<uint32_t>(exponent) << 10) | (rounded >> 13));
      }
      append(h);
      return;
    }
    case ir::DType::kInt64:
      append(static_cast<int64_t>(value));
      return;
    case ir::DType::kInt32:
      append(static_cast<int32_t>(value));
      return;
    case ir::DType::kBool:
      append(static_cast<uint8_t>(value != 0));
      return;
    default:
      append(static_cast<float>(value));
      return;
  }
}

}  // namespace

GraphEmitter::GraphEmitter(onnx::GraphProto* graph, absl::flat_hash_set<std::string> taken,
                           int64_t opset, std::string prefix)
    : graph_(graph), taken_(std::move(taken)), opset_(opset), prefix_(std::move(prefix)) {}

std::string GraphEmitter::FreshName(std::string_view hint) {
  std::string base = absl::StrCat(prefix_, std::string(hint));
  std::string name = base;
  for (int k = 1; taken_.contains(name); ++k) name = absl::StrCat(base, "_", k);
  taken_.insert(name);
  return name;
}

bool GraphEmitter::Reserve(const std::string& name) { return taken_.insert(name).second; }

std::vector<std::string> GraphEmitter::OpN(std::string_view op_type,
                                           const std::vector<std::string>& inputs, int num_outputs,
                                           std::vector<onnx::AttributeProto> attributes,
                                           std::string_view hint) {
  onnx::NodeProto* node = graph_->add_node();
  node->set_op_type(std::string(op_type));
  for (const std::string& input : inputs) node->add_input(input);
  std::vector<std::string> outputs;
  std::string stem(hint.empty() ? op_type : hint);
  for (int i = 0; i < num_outputs; ++i) {
    outputs.push_back(FreshName(num_outputs == 1 ? stem : absl::StrCat(stem, "_", i)));
    node->add_output(outputs.back());
  }
  node->set_name(outputs.front());
  if (!origin_.empty()) origins_[outputs.front()] = origin_;
  for (onnx::AttributeProto& a : attributes) *node->add_attribute() = std::move(a);
  return outputs;
}

void GraphEmitter::OpTo(std::string_view op_type, const std::vector<std::string>& inputs,
                        const std::string& output, std::vector<onnx::AttributeProto> attributes) {
  onnx::NodeProto* node = graph_->add_node();
  node->set_op_type(std::string(op_type));
  node->set_name(output);
  if (!origin_.empty()) origins_[output] = origin_;
  for (const std::string& input : inputs) node->add_input(input);
  node->add_output(output);
  for (onnx::AttributeProto& a : attributes) *node->add_attribute() = std::move(a);
}

std::string GraphEmitter::Op(std::string_view op_type, const std::vector<std::string>& inputs,
                             std::vector<onnx::AttributeProto> attributes, std::string_view hint) {
  return OpN(op_type, inputs, 1, std::move(attributes), hint).front();
}

std::string GraphEmitter::Tensor(const std::vector<int64_t>& dims,
                                 const std::vector<double>& values, ir::DType dtype) {
  onnx::TensorProto t;
  t.set_data_type(static_cast<int32_t>(dtype));
  for (int64_t d : dims) t.add_dims(d);
  std::string bytes;
  for (double v : values) AppendElement(v, dtype, bytes);
  t.set_raw_data(std::move(bytes));
  return Op("Constant", {}, {AttrTensor("value", std::move(t))}, "const");
}

std::string GraphEmitter::Scalar(double value, ir::DType dtype) {
  return Tensor({}, {value}, dtype);
}

std::string GraphEmitter::Ints(const std::vector<int64_t>& values) {
  return Tensor({static_cast<int64_t>(values.size())},
                std::vector<double>(values.begin(), values.end()), ir::DType::kInt64);
}

std::string GraphEmitter::Zeros(const std::vector<int64_t>& dims, ir::DType dtype) {
  onnx::TensorProto value;
  value.set_data_type(static_cast<int32_t>(dtype));
  value.add_dims(1);
  std::string zero;
  AppendElement(0, dtype, zero);
  value.set_raw_data(std::move(zero));
  return Op("ConstantOfShape", {Ints(dims)}, {AttrTensor("value", std::move(value))}, "zeros");
}

std::string GraphEmitter::ReduceSum(const std::string& x, const std::vector<int64_t>& axes,
                                    bool keep_dims) {
  if (axes.empty()) return x;
  if (opset_ >= 13) {
    return Op("ReduceSum", {x, Ints(axes)}, {AttrInt("keepdims", keep_dims ? 1 : 0)});
  }
  return Op("ReduceSum", {x}, {AttrInts("axes", axes), AttrInt("keepdims", keep_dims ? 1 : 0)});
}

std::string GraphEmitter::ReduceMean(const std::string& x, const std::vector<int64_t>& axes,
                                     bool keep_dims) {
  if (axes.empty()) return x;
  if (opset_ >= 18) {
    return Op("ReduceMean", {x, Ints(axes)}, {AttrInt("keepdims", keep_dims ? 1 : 0)});
  }
  return Op("ReduceMean", {x}, {AttrInts("axes", axes), AttrInt("keepdims", keep_dims ? 1 : 0)});
}

std::string GraphEmitter::Unsqueeze(const std::string& x, const std::vector<int64_t>& axes) {
  if (axes.empty()) return x;
  if (opset_ >= 13) return Op("Unsqueeze", {x, Ints(axes)});
  return Op("Unsqueeze", {x}, {AttrInts("axes", axes)});
}

std::string GraphEmitter::Squeeze(const std::string& x, const std::vector<int64_t>& axes) {
  if (axes.empty()) return x;
  if (opset_ >= 13) return Op("Squeeze", {x, Ints(axes)});
  return Op("Squeeze", {x}, {AttrInts("axes", axes)});
}

std::vector<std::string> GraphEmitter::Split(const std::string& x, int64_t axis,
                                             const std::vector<int64_t>& sizes) {
  const int n = static_cast<int>(sizes.size());
  if (n == 1) return {Op("Identity", {x})};
  if (opset_ >= 13) return OpN("Split", {x, Ints(sizes)}, n, {AttrInt("axis", axis)});
  return OpN("Split", {x}, n, {AttrInt("axis", axis), AttrInts("split", sizes)});
}

std::string GraphEmitter::PadConstant(const std::string& x, const std::vector<int64_t>& pads,
                                      double value, ir::DType dtype) {
  if (opset_ >= 11) return Op("Pad", {x, Ints(pads), Scalar(value, dtype)});
  return Op("Pad", {x}, {AttrInts("pads", pads), AttrFloat("value", static_cast<float>(value))});
}

std::string GraphEmitter::PadZeros(const std::string& x, const std::vector<int64_t>& pads) {
  if (opset_ >= 11) return Op("Pad", {x, Ints(pads)});
  return Op("Pad", {x}, {AttrInts("pads", pads)});
}

std::string GraphEmitter::Slice(const std::string& x, const std::vector<int64_t>& starts,
                                const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                                const std::vector<int64_t>& steps) {
  if (opset_ >= 10) {
    std::vector<std::string> inputs = {x, Ints(starts), Ints(ends), Ints(axes)};
    if (!steps.empty()) inputs.push_back(Ints(steps));
    return Op("Slice", inputs);
  }
  return Op("Slice", {x},
            {AttrInts("starts", starts), AttrInts("ends", ends), AttrInts("axes", axes)});
}

std::string GraphEmitter::Reshape(const std::string& x, const std::vector<int64_t>& dims) {
  return Op("Reshape", {x, Ints(dims)});
}

std::string GraphEmitter::Transpose(const std::string& x, const std::vector<int64_t>& perm) {
  return Op("Transpose", {x}, {AttrInts("perm", perm)});
}

std::string GraphEmitter::Expand(const std::string& x, const std::vector<int64_t>& dims) {
  return Op("Expand", {x, Ints(dims)});
}

std::string GraphEmitter::SumToShape(const std::string& x, const std::vector<int64_t>& from,
                                     const std::vector<int64_t>& to) {
  if (from == to) return x;
  // Leading axes that `to` lacks are summed away; axes where `to` has 1 and
  // `from` more are summed and kept.
  const int64_t lead = static_cast<int64_t>(from.size()) - static_cast<int64_t>(to.size());
  std::vector<int64_t> axes;
  for (int64_t a = 0; a < static_cast<int64_t>(from.size()); ++a) {
    if (a < lead || (to[a - lead] == 1 && from[a] != 1)) axes.push_back(a);
  }
  std::string summed = ReduceSum(x, axes, /*keep_dims=*/true);
  return Reshape(summed, to);
}

std::string GraphEmitter::Sum(const std::vector<std::string>& terms) {
  if (terms.size() == 1) return terms.front();
  return Op("Sum", terms, {}, "accumulate");
}

std::string GraphEmitter::Cast(const std::string& x, ir::DType dtype) {
  return Op("Cast", {x}, {AttrInt("to", static_cast<int64_t>(dtype))});
}

}  // namespace autopar::training
