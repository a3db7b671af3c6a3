#include "training/optimizer_update.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "training/graph_emitter.h"

namespace autopar::training {

namespace {

using costmodel::Optimizer;

onnx::ValueInfoProto TensorInfo(const std::string& name, ir::DType dtype,
                                const std::vector<int64_t>& dims) {
  onnx::ValueInfoProto info;
  info.set_name(name);
  onnx::TypeProto_Tensor* t = info.mutable_type()->mutable_tensor_type();
  t->set_elem_type(static_cast<int32_t>(dtype));
  onnx::TensorShapeProto* shape = t->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  return info;
}

// `name` with `suffix`, made unique among `taken` (and then taken).
std::string Unique(absl::flat_hash_set<std::string>& taken, const std::string& name) {
  std::string candidate = name;
  for (int k = 1; taken.contains(candidate); ++k) candidate = absl::StrCat(name, "_", k);
  taken.insert(candidate);
  return candidate;
}

}  // namespace

OptimizerOptions DefaultOptimizerOptions(costmodel::Optimizer kind) {
  OptimizerOptions o;
  o.kind = kind;
  o.learning_rate = kind == Optimizer::kSgd || kind == Optimizer::kMomentum ? 0.01 : 0.001;
  o.weight_decay = kind == Optimizer::kAdamW ? 0.01 : 0;
  return o;
}

std::vector<std::string> StateBufferNames(costmodel::Optimizer kind) {
  switch (kind) {
    case Optimizer::kSgd:
      return {};
    case Optimizer::kMomentum:
      return {"momentum_buffer"};
    case Optimizer::kAdam:
    case Optimizer::kAdamW:
      return {"exp_avg", "exp_avg_sq"};
  }
  return {};
}

absl::StatusOr<UpdateModel> BuildUpdateModel(const std::vector<UpdatedWeight>& weights,
                                             const std::vector<std::string>& gradient_names,
                                             const OptimizerOptions& options, int64_t opset,
                                             const absl::flat_hash_set<std::string>& avoid) {
  UpdateModel out;
  onnx::ModelProto& model = out.proto;
  model.set_ir_version(8);
  model.set_producer_name("onnx-autopar");
  onnx::OperatorSetIdProto* op = model.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("update");

  // Input and output names first, so that the emitter's own names avoid them.
  absl::flat_hash_set<std::string> taken;
  const std::vector<std::string> buffers = StateBufferNames(options.kind);
  const bool adam = options.kind == Optimizer::kAdam || options.kind == Optimizer::kAdamW;
  for (size_t k = 0; k < weights.size(); ++k) {
    UpdateNames names;
    names.weight = Unique(taken, weights[k].name);
    names.gradient = Unique(taken, gradient_names[k]);
    names.weight_out = Unique(taken, absl::StrCat(weights[k].name, ".updated"));
    for (const std::string& b : buffers) {
      names.state.push_back(Unique(taken, absl::StrCat(weights[k].name, ".", b)));
      names.state_out.push_back(Unique(taken, absl::StrCat(weights[k].name, ".", b, ".updated")));
    }
    out.names.push_back(std::move(names));
  }
  if (adam) out.step_input = Unique(taken, "optimizer.step");
  absl::flat_hash_set<std::string> emitter_taken = taken;
  emitter_taken.insert(avoid.begin(), avoid.end());
  GraphEmitter e(graph, std::move(emitter_taken), opset, "update/");
  if (!weights.empty()) e.set_origin(weights[0].origin);

  // Per-step scalars of adam, shared by every weight (float32, then cast).
  std::string bias1, bias2_sqrt;
  if (adam) {
    *graph->add_input() = TensorInfo(out.step_input, ir::DType::kFloat, {});
    const ir::DType f = ir::DType::kFloat;
    auto one_minus_pow = [&](double beta) {
      return e.Op("Sub", {e.Scalar(1, f), e.Op("Pow", {e.Scalar(beta, f), out.step_input})});
    };
    bias1 = one_minus_pow(options.beta1);
    bias2_sqrt = e.Op("Sqrt", {one_minus_pow(options.beta2)});
  }

  for (size_t k = 0; k < weights.size(); ++k) {
    const UpdatedWeight& w = weights[k];
    const UpdateNames& n = out.names[k];
    e.set_origin(w.origin);
    const ir::DType t = w.dtype;
    *graph->add_input() = TensorInfo(n.weight, t, w.dims);
    *graph->add_input() = TensorInfo(n.gradient, t, w.dims);
    for (const std::string& s : n.state) *graph->add_input() = TensorInfo(s, t, w.dims);

    std::string weight = n.weight;
    std::string d = n.gradient;
    if (options.weight_decay != 0) {
      if (options.kind == Optimizer::kAdamW) {
        weight =
            e.Op("Mul", {weight, e.Scalar(1 - options.learning_rate * options.weight_decay, t)});
      } else {
        d = e.Op("Add", {d, e.Op("Mul", {weight, e.Scalar(options.weight_decay, t)})});
      }
    }
    std::vector<std::string> state_values;
    std::string step;  // what is subtracted from the weight
    switch (options.kind) {
      case Optimizer::kSgd:
        step = e.Op("Mul", {d, e.Scalar(options.learning_rate, t)});
        break;
      case Optimizer::kMomentum: {
        std::string b = e.Op("Add", {e.Op("Mul", {n.state[0], e.Scalar(options.momentum, t)}), d});
        state_values.push_back(b);
        step = e.Op("Mul", {b, e.Scalar(options.learning_rate, t)});
        break;
      }
      case Optimizer::kAdam:
      case Optimizer::kAdamW: {
        std::string m = e.Op("Add", {e.Op("Mul", {n.state[0], e.Scalar(options.beta1, t)}),
                                     e.Op("Mul", {d, e.Scalar(1 - options.beta1, t)})});
        std::string v =
            e.Op("Add", {e.Op("Mul", {n.state[1], e.Scalar(options.beta2, t)}),
                         e.Op("Mul", {e.Op("Mul", {d, d}), e.Scalar(1 - options.beta2, t)})});
        state_values = {m, v};
        std::string denom = e.Op("Add", {e.Op("Div", {e.Op("Sqrt", {v}), e.Cast(bias2_sqrt, t)}),
                                         e.Scalar(options.eps, t)});
        std::string step_size = e.Op("Div", {e.Scalar(options.learning_rate, t), e.Cast(bias1, t)});
        step = e.Op("Mul", {e.Op("Div", {m, denom}), step_size});
        break;
      }
    }
    // Outputs under their exact names.
    e.OpTo("Sub", {weight, step}, n.weight_out);
    *graph->add_output() = TensorInfo(n.weight_out, t, w.dims);
    for (size_t s = 0; s < state_values.size(); ++s) {
      e.OpTo("Identity", {state_values[s]}, n.state_out[s]);
      *graph->add_output() = TensorInfo(n.state_out[s], t, w.dims);
    }
  }
  out.node_origin = e.origins();
  return out;
}

}  // namespace autopar::training
