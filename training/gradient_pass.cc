#include "training/gradient_pass.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "training/gradient_rules.h"

namespace autopar::training {

bool IsDifferentiableType(ir::DType dtype) {
  return dtype == ir::DType::kFloat || dtype == ir::DType::kDouble ||
         dtype == ir::DType::kFloat16 || dtype == ir::DType::kBFloat16;
}

namespace {

bool IsDifferentiable(const ir::Value& v) {
  return v.type_kind == ir::TypeKind::kTensor && IsDifferentiableType(v.dtype);
}

// The inputs of `node` through which a gradient may flow: present,
// differentiable, in a slot that takes one.
template <typename Fn>
void ForEachGradientInput(const ir::Graph& graph, const ir::Node& node, Fn&& fn) {
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    ir::ValueId in = node.inputs[i];
    if (!in.valid() || !IsDifferentiable(graph.value(in))) continue;
    if (!SlotTakesGradient(node.kind, static_cast<int>(i))) continue;
    fn(static_cast<int>(i), in);
  }
}

// Values computed from `wrt` through differentiable slots (requires_grad).
std::vector<bool> ValuesDependingOn(const ir::Graph& graph, const std::vector<ir::ValueId>& wrt) {
  std::vector<bool> depends(graph.num_values(), false);
  for (ir::ValueId v : wrt) depends[v.index()] = true;
  for (const ir::Node& node : graph.nodes()) {
    bool any = false;
    ForEachGradientInput(graph, node,
                         [&](int, ir::ValueId in) { any = any || depends[in.index()]; });
    for (ir::ValueId cap : node.captured) any = any || depends[cap.index()];
    if (!any) continue;
    for (ir::ValueId out : node.outputs) {
      if (out.valid() && IsDifferentiable(graph.value(out))) depends[out.index()] = true;
    }
  }
  return depends;
}

}  // namespace

std::vector<bool> ValuesTheSeedsDependOn(const ir::Graph& graph,
                                         const std::vector<ir::ValueId>& seeds) {
  std::vector<bool> reached(graph.num_values(), false);
  for (ir::ValueId v : seeds) reached[v.index()] = true;
  for (size_t k = graph.num_nodes(); k-- > 0;) {
    const ir::Node& node = graph.nodes()[k];
    bool any = false;
    for (ir::ValueId out : node.outputs) any = any || (out.valid() && reached[out.index()]);
    if (!any) continue;
    ForEachGradientInput(graph, node, [&](int, ir::ValueId in) { reached[in.index()] = true; });
    // Values a subgraph captures are read too: reaching them makes the
    // control-flow node part of the path, which BuildBackward then refuses.
    for (ir::ValueId cap : node.captured) {
      if (IsDifferentiable(graph.value(cap))) reached[cap.index()] = true;
    }
  }
  return reached;
}

std::string FirstReaderName(const ir::Graph& graph, ir::ValueId value) {
  const std::vector<ir::NodeId>& readers = graph.value(value).consumers;
  if (readers.empty()) return "";
  return graph.node(*std::min_element(readers.begin(), readers.end())).name;
}

absl::StatusOr<GradientResult> BuildBackward(const ir::Graph& graph, const GradientRequest& request,
                                             GraphEmitter& emit) {
  std::vector<ir::ValueId> seed_values;
  for (const auto& [value, gradient] : request.seeds) seed_values.push_back(value);
  const std::vector<bool> depends = ValuesDependingOn(graph, request.wrt);
  const std::vector<bool> reached = ValuesTheSeedsDependOn(graph, seed_values);
  auto on_path = [&](ir::ValueId v) {
    return v.valid() && depends[v.index()] && reached[v.index()];
  };

  // The gradient terms each value has received so far.
  std::vector<std::vector<std::string>> terms(graph.num_values());
  for (const auto& [value, gradient] : request.seeds) terms[value.index()].push_back(gradient);
  // Sums a value's terms into one gradient (and remembers the sum).
  auto gradient_of = [&](ir::ValueId v) -> std::string {
    std::vector<std::string>& t = terms[v.index()];
    if (t.empty()) return "";
    if (t.size() > 1) t = {emit.Sum(t)};
    return t.front();
  };

  GradientResult result;
  for (size_t k = graph.num_nodes(); k-- > 0;) {
    const ir::Node& node = graph.nodes()[k];
    // The sums of its outputs' gradient terms and its rule's nodes work for
    // this node (GraphEmitter::set_origin).
    emit.set_origin(node.name);
    std::vector<std::string> output_gradients;
    bool any_output = false;
    for (ir::ValueId out : node.outputs) {
      output_gradients.push_back(on_path(out) ? gradient_of(out) : "");
      any_output = any_output || !output_gradients.back().empty();
    }
    std::vector<bool> needs(node.inputs.size(), false);
    bool any_input = false;
    ForEachGradientInput(graph, node, [&](int i, ir::ValueId in) {
      needs[i] = on_path(in);
      any_input = any_input || needs[i];
    });
    bool captures = false;
    for (ir::ValueId cap : node.captured) captures = captures || on_path(cap);
    if (!any_output || (!any_input && !captures)) continue;

    if (!node.subgraphs.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name, "' (", node.op_type,
                       ") is on the gradient path, and control flow has no gradient rule"));
    }
    const GradientRule* rule = FindGradientRule(node.kind);
    if (rule == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("node '", node.name, "' (", node.op_type,
                                                     ") is on the gradient path and its "
                                                     "operator has no gradient rule"));
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (!needs[i]) continue;
      const ir::Value& v = graph.value(node.inputs[i]);
      if (!v.shape.IsStatic()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "value '", v.name, "' (read by node '", node.name, "') has no static shape ",
            v.shape.ToString(), "; a training step needs every dim bound (--dim NAME=V)"));
      }
    }
    NodeGradient context(graph, node, emit, std::move(output_gradients), needs);
    if (absl::Status s = rule->rule(context); !s.ok()) return s;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (!needs[i]) continue;
      const std::string& g = context.input_gradients()[i];
      if (g.empty()) {
        return absl::InternalError(absl::StrCat("gradient rule of ", node.op_type,
                                                " set no gradient for input ", i, " of node '",
                                                node.name, "'"));
      }
      terms[node.inputs[i].index()].push_back(g);
    }
    ++result.differentiated_nodes;
  }
  for (ir::ValueId v : request.wrt) {
    emit.set_origin(FirstReaderName(graph, v));
    result.gradients.push_back(gradient_of(v));
  }
  emit.set_origin("");
  return result;
}

}  // namespace autopar::training
