#include "training/loss.h"

#include "absl/strings/str_cat.h"
#include "training/gradient_pass.h"

namespace autopar::training {

namespace {

constexpr std::pair<std::string_view, LossKind> kLossNames[] = {
    {"output", LossKind::kOutput},
    {"cross-entropy", LossKind::kCrossEntropy},
    {"mse", LossKind::kMse},
};

onnx::ValueInfoProto TensorInput(const std::string& name, ir::DType dtype,
                                 const std::vector<int64_t>& dims) {
  onnx::ValueInfoProto info;
  info.set_name(name);
  onnx::TypeProto_Tensor* t = info.mutable_type()->mutable_tensor_type();
  t->set_elem_type(static_cast<int32_t>(dtype));
  onnx::TensorShapeProto* shape = t->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  return info;
}

std::vector<int64_t> AllAxes(size_t rank) {
  std::vector<int64_t> axes;
  for (size_t a = 0; a < rank; ++a) axes.push_back(static_cast<int64_t>(a));
  return axes;
}

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

// Softmax along axis 1 of a tensor of any rank at any opset: Softmax's axis
// means "flatten from here" before opset 13, so the classes are moved last
// for ranks above 2 there.
std::string SoftmaxAxis1(GraphEmitter& e, const std::string& x, size_t rank, bool log) {
  const char* op = log ? "LogSoftmax" : "Softmax";
  if (rank == 2 || e.opset() >= 13) return e.Op(op, {x}, {AttrInt("axis", 1)});
  std::vector<int64_t> to_last = {0};
  for (size_t a = 2; a < rank; ++a) to_last.push_back(static_cast<int64_t>(a));
  to_last.push_back(1);
  std::vector<int64_t> back(rank);
  for (size_t a = 0; a < rank; ++a) back[to_last[a]] = static_cast<int64_t>(a);
  std::string moved = e.Transpose(x, to_last);
  std::string s = e.Op(op, {moved}, {AttrInt("axis", static_cast<int64_t>(rank) - 1)});
  return e.Transpose(s, back);
}

}  // namespace

absl::StatusOr<LossSpec> ParseLossSpec(std::string_view text) {
  size_t colon = text.find(':');
  if (colon != std::string_view::npos && colon + 1 < text.size()) {
    for (const auto& [name, kind] : kLossNames) {
      if (text.substr(0, colon) == name)
        return LossSpec{kind, std::string(text.substr(colon + 1)), ""};
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--loss must be output:NAME, cross-entropy:LOGITS or mse:OUTPUT, not '",
                   std::string(text), "'"));
}

std::string LossSpecText(const LossSpec& spec) {
  for (const auto& [name, kind] : kLossNames) {
    if (kind == spec.kind) return absl::StrCat(std::string(name), ":", spec.value);
  }
  return spec.value;
}

absl::StatusOr<WrittenLoss> WriteLoss(const ir::Graph& graph, const LossSpec& spec,
                                      GraphEmitter& emit) {
  std::optional<ir::ValueId> id = graph.FindValue(spec.value);
  if (!id) {
    return absl::InvalidArgumentError(
        absl::StrCat("--loss: the model has no value '", spec.value, "'"));
  }
  const ir::Value& v = graph.value(*id);
  if (v.type_kind != ir::TypeKind::kTensor || !IsDifferentiableType(v.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("--loss: '", spec.value,
                                                   "' is not a floating-point tensor (it is ",
                                                   std::string(ir::DTypeName(v.dtype)), ")"));
  }
  if (!v.shape.IsStatic()) {
    return absl::InvalidArgumentError(absl::StrCat("--loss: '", spec.value, "' has shape ",
                                                   v.shape.ToString(),
                                                   "; bind its dims with --dim NAME=V"));
  }
  const std::vector<int64_t> dims = v.shape.Values();
  WrittenLoss out;
  GraphEmitter& e = emit;
  if (spec.kind == LossKind::kOutput) {
    if (Product(dims) != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--loss output:", spec.value, ": the loss must be a scalar, not ", v.shape.ToString()));
    }
    out.loss = spec.value;
    out.seeds.push_back({*id, e.Tensor(dims, {1.0}, v.dtype)});
    return out;
  }

  // The labels or target: the model's own input named by --labels, when it
  // has one of the right type and shape, or a new input.
  const bool cross_entropy = spec.kind == LossKind::kCrossEntropy;
  const char* role = cross_entropy ? "labels" : "target";
  std::string input_name = spec.labels_name.empty() ? role : spec.labels_name;
  if (cross_entropy && dims.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("--loss cross-entropy:", spec.value,
                                                   ": logits need a class axis (axis 1), not ",
                                                   v.shape.ToString()));
  }
  std::vector<int64_t> input_dims = dims;
  if (cross_entropy) input_dims.erase(input_dims.begin() + 1);
  const ir::DType input_dtype = cross_entropy ? ir::DType::kInt64 : v.dtype;
  if (std::optional<ir::ValueId> existing = graph.FindValue(input_name)) {
    const ir::Value& in = graph.value(*existing);
    if (in.kind != ir::ValueKind::kGraphInput || spec.labels_name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--loss: the model already has a value named '", input_name, "'; name the ",
                       role, " input with --labels NAME"));
    }
    if (in.dtype != input_dtype || !in.shape.IsStatic() || in.shape.Values() != input_dims) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--labels ", input_name, ": the model's input is ", std::string(ir::DTypeName(in.dtype)),
          " ", in.shape.ToString(), "; ", LossSpecText(spec), " needs ",
          std::string(ir::DTypeName(input_dtype)), " ", ir::Shape(input_dims).ToString()));
    }
  } else if (!e.Reserve(input_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--loss: the name '", input_name, "' is taken; choose another with --labels"));
  } else {
    out.added_input = TensorInput(input_name, input_dtype, input_dims);
  }
  out.input = input_name;
  const ir::DType t = v.dtype;
  if (spec.kind == LossKind::kMse) {
    // L = mean((y − t)²); dL/dy = 2(y − t)/n.
    std::string diff = e.Op("Sub", {spec.value, input_name});
    std::string squared = e.Op("Mul", {diff, diff});
    out.loss = e.ReduceMean(squared, AllAxes(dims.size()), /*keep_dims=*/false);
    std::string scale = e.Scalar(2.0 / static_cast<double>(Product(dims)), t);
    out.seeds.push_back({*id, e.Op("Mul", {diff, scale}, {}, "mse_grad")});
    return out;
  }

  // Cross-entropy: L = −mean(log_softmax(x)[labels]) over every position but
  // the class axis; dL/dx = (softmax(x) − onehot(labels)) / count.
  const int64_t count = Product(input_dims);
  out.classes = dims[1];
  std::string onehot = e.Op("OneHot", {input_name, e.Ints({dims[1]}), e.Tensor({2}, {0.0, 1.0}, t)},
                            {AttrInt("axis", 1)});
  std::string log_probs = SoftmaxAxis1(e, spec.value, dims.size(), /*log=*/true);
  std::string picked = e.ReduceSum(e.Op("Mul", {log_probs, onehot}), AllAxes(dims.size()),
                                   /*keep_dims=*/false);
  out.loss =
      e.Op("Div", {e.Op("Neg", {picked}), e.Scalar(static_cast<double>(count), t)}, {}, "loss");
  std::string probs = e.Op("Exp", {log_probs});
  std::string diff = e.Op("Sub", {probs, onehot});
  out.seeds.push_back({*id, e.Op("Div", {diff, e.Scalar(static_cast<double>(count), t)}, {},
                                 "cross_entropy_grad")});
  return out;
}

}  // namespace autopar::training
