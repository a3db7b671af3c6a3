// Shape rules for control flow. Bodies carry no inferred shapes in the IR, so
// each rule infers a copy of the body it needs: the outer values it reads and
// its inputs are bound from the node's graph, then the rules run over it
// (PropagateRules). Nested bodies recurse the same way.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "passes/shape_rules_internal.h"

namespace autopar::passes::shape_rules {
namespace {

// Trip counts above this are "loop until cond" markers (exporters write
// INT64_MAX), not counts.
constexpr int64_t kMaxStaticTrips = int64_t{1} << 31;

const ir::Graph* FindBody(const ir::Node& node, std::string_view attribute) {
  for (const ir::Subgraph& s : node.subgraphs) {
    if (s.attribute == attribute) return s.body.get();
  }
  return nullptr;
}

// A body with the shapes the rules find for it.
struct InferredBody {
  ir::Graph graph;
  /// Estimates made inside it (nested control flow).
  std::vector<RuleEstimate> estimates;

  const ir::Value* output(size_t i) const {
    if (i >= graph.outputs().size()) return nullptr;
    return &graph.value(graph.outputs()[i]);
  }
};

// Infers a copy of `body`: outer values take what `node`'s graph knows of
// them, body input i the type `inputs[i]` (when its own is not static).
InferredBody InferBody(const NodeView& node, const ir::Graph& body,
                       const std::vector<OutputType>& inputs) {
  InferredBody result{body, {}};
  ir::Graph& g = result.graph;
  for (uint32_t i = 0; i < g.num_values(); ++i) {
    ir::Value& v = g.mutable_value(ir::ValueId(i));
    if (v.kind != ir::ValueKind::kOuterScope) continue;
    std::optional<ir::ValueId> outer = node.graph().FindValue(v.name);
    if (!outer) continue;
    const ir::Value& from = node.graph().value(*outer);
    if (v.type_kind == ir::TypeKind::kUnknown) v.type_kind = from.type_kind;
    if (v.dtype == ir::DType::kUndefined) v.dtype = from.dtype;
    if (!v.shape.IsStatic() && from.shape.has_rank()) v.shape = from.shape;
    if (!v.int_data) v.int_data = from.int_data;
  }
  for (size_t i = 0; i < inputs.size() && i < g.inputs().size(); ++i) {
    ir::Value& v = g.mutable_value(g.inputs()[i]);
    if (v.dtype == ir::DType::kUndefined) v.dtype = inputs[i].dtype;
    if (!v.shape.IsStatic() && inputs[i].shape.has_rank()) v.shape = inputs[i].shape;
    if (!v.int_data) v.int_data = inputs[i].int_data;
  }
  result.estimates = PropagateRules(g, node.options());
  return result;
}

OutputType FromBodyValue(const ir::Value* v) {
  if (v == nullptr || v->type_kind != ir::TypeKind::kTensor) return Unranked(ir::DType::kUndefined);
  return WithShape(v->dtype, v->shape);
}

// What the body's estimates mean for its outputs: any estimate inside makes
// every output an estimate too (its shapes may rest on it).
std::string NestedEstimate(const InferredBody& body) {
  if (body.estimates.empty()) return "";
  return absl::StrCat("from ", body.estimates.size(), " estimate(s) inside its body");
}

// True when body output `output` is body input `input`, directly or
// through Identity nodes.
bool PassesThroughInput(const ir::Graph& body, size_t output, size_t input) {
  if (output >= body.outputs().size() || input >= body.inputs().size()) return false;
  ir::ValueId id = body.outputs()[output];
  for (size_t hops = 0; hops <= body.num_nodes(); ++hops) {
    if (id == body.inputs()[input]) return true;
    const ir::Value& v = body.value(id);
    if (v.kind != ir::ValueKind::kNodeOutput) return false;
    const ir::Node& producer = body.node(v.producer);
    if (producer.kind != ir::OpKind::kIdentity || producer.inputs.empty()) return false;
    id = producer.inputs[0];
  }
  return false;
}

}  // namespace

// If(cond): the taken branch's outputs when cond is known; else the shape
// both branches agree on, and where they disagree the larger branch's shape
// (by elements), as an estimate.
Outputs IfRule(const NodeView& node) {
  const ir::Graph* then_body = FindBody(node.node(), "then_branch");
  const ir::Graph* else_body = FindBody(node.node(), "else_branch");
  if (then_body == nullptr || else_body == nullptr) return {};
  std::optional<int64_t> cond = node.scalar(0);
  Outputs outputs;
  if (cond) {
    InferredBody taken = InferBody(node, *cond != 0 ? *then_body : *else_body, {});
    for (size_t i = 0; i < node.num_outputs(); ++i) {
      outputs.push_back(FromBodyValue(taken.output(i)));
      outputs.back().estimate = NestedEstimate(taken);
    }
    return outputs;
  }
  InferredBody then_inferred = InferBody(node, *then_body, {});
  InferredBody else_inferred = InferBody(node, *else_body, {});
  for (size_t i = 0; i < node.num_outputs(); ++i) {
    OutputType a = FromBodyValue(then_inferred.output(i));
    OutputType b = FromBodyValue(else_inferred.output(i));
    const ir::DType dtype = a.dtype != ir::DType::kUndefined ? a.dtype : b.dtype;
    std::string nested = NestedEstimate(then_inferred);
    if (nested.empty()) nested = NestedEstimate(else_inferred);
    if (a.shape.IsStatic() && a.shape == b.shape) {
      OutputType t = WithShape(dtype, a.shape);
      t.estimate = nested;
      outputs.push_back(std::move(t));
      continue;
    }
    // The branches disagree or one is not known: the larger known one.
    std::optional<int64_t> na = a.shape.IsStatic() ? a.shape.NumElements() : std::nullopt;
    std::optional<int64_t> nb = b.shape.IsStatic() ? b.shape.NumElements() : std::nullopt;
    if (!na && !nb) {
      outputs.push_back(Unranked(dtype));
      continue;
    }
    const bool take_then = na && (!nb || *na >= *nb);
    OutputType t = WithShape(dtype, take_then ? a.shape : b.shape);
    t.estimate = absl::StrCat(take_then ? "then" : "else", "-branch shape ", t.shape.ToString(),
                              " (other branch ", (take_then ? b : a).shape.ToString(), ")");
    outputs.push_back(std::move(t));
  }
  return outputs;
}

// Loop(M, cond, v_initial...) → (v_final..., scan_outputs...). A loop-carried
// value is taken to keep the shape of its initial value — what exporters
// produce for counted loops, and what ONNX's own inference cannot prove (it
// leaves such dims symbolic); where the initial value's shape is not known,
// the body's. A scan output stacks the body's per-trip value along a new
// first axis of the trip count: M when it is a constant, else (as an
// estimate) RuleOptions::loop_trips. A loop whose body can end it early
// (a condition that is not a pass-through of its input) runs at most M
// trips: also an estimate.
Outputs LoopRule(const NodeView& node) {
  const size_t carried = node.num_inputs() > 2 ? node.num_inputs() - 2 : 0;
  const ir::Graph* body = FindBody(node.node(), "body");
  std::vector<OutputType> body_inputs = {WithShape(ir::DType::kInt64, ir::Shape({})),
                                         WithShape(ir::DType::kBool, ir::Shape({}))};
  for (size_t i = 0; i < carried; ++i) body_inputs.push_back(LikeInput(node, 2 + i));
  std::optional<InferredBody> inferred;
  if (body != nullptr) inferred = InferBody(node, *body, body_inputs);

  Outputs outputs;
  for (size_t i = 0; i < node.num_outputs() && i < carried; ++i) {
    OutputType initial = LikeInput(node, 2 + i);
    if (!initial.shape.IsStatic() && inferred) {
      OutputType from_body = FromBodyValue(inferred->output(1 + i));
      if (from_body.shape.IsStatic()) initial = from_body;
    }
    outputs.push_back(std::move(initial));
  }
  if (!inferred) return outputs;

  // The trip count, and why it may be an estimate.
  std::optional<int64_t> max_trips = node.has_input(0) ? node.scalar(0) : std::nullopt;
  const bool counted = max_trips && *max_trips >= 0 && *max_trips <= kMaxStaticTrips;
  std::string estimate;
  int64_t trips = counted ? *max_trips : node.options().loop_trips;
  if (!counted) {
    estimate =
        absl::StrCat(trips, " trips (the trip count is not a constant; --loop-trips sets it)");
  } else if (const ir::Value* cond_out = inferred->output(0); cond_out != nullptr) {
    const bool passes_input = PassesThroughInput(inferred->graph, 0, 1);
    const bool always_true =
        cond_out->int_data && cond_out->int_data->size() == 1 && (*cond_out->int_data)[0] != 0;
    if (!passes_input && !always_true) {
      estimate = absl::StrCat(
          trips, " trips (the max-trip input; the body's condition may end it sooner)");
    }
  }
  if (estimate.empty()) estimate = NestedEstimate(*inferred);
  for (size_t i = carried; i < node.num_outputs(); ++i) {
    OutputType per_trip = FromBodyValue(inferred->output(1 + i));
    if (!per_trip.shape.has_rank()) {
      outputs.push_back(Unranked(per_trip.dtype));
      continue;
    }
    std::vector<ir::Dim> dims = {KnownDim(trips)};
    dims.insert(dims.end(), per_trip.shape.dims().begin(), per_trip.shape.dims().end());
    OutputType t = WithDims(per_trip.dtype, std::move(dims));
    t.estimate = estimate;
    outputs.push_back(std::move(t));
  }
  return outputs;
}

}  // namespace autopar::passes::shape_rules
