// Shape rules for control flow. Bodies carry no inferred shapes in the IR, so
// each rule infers a copy of the body it needs: the outer values it reads and
// its inputs are bound from the node's graph, then the rules run over it
// (PropagateRules). Nested bodies recurse the same way.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "shapes/shape_rules_internal.h"

namespace autopar::shapes::rules {
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

bool PassesThroughInput(const ir::Graph& body, size_t output, size_t input);
bool ConstantTrue(const ir::Graph& body, size_t output);
std::pair<int64_t, std::string> TripCount(const NodeView& node, const InferredBody& inferred);

// Note [Sequence facts]: the IR gives a sequence value no element type, so
// the rules that read one (ConcatFromSequence, SequenceAt, SequenceLength)
// trace how it was built: SequenceEmpty, SequenceConstruct, SequenceInsert,
// SequenceErase, SplitToSequence, and the sequences a Loop carries (its
// initial value plus what one trip of the body inserts, times the trip
// count).
struct SequenceFacts {
  ir::DType dtype = ir::DType::kUndefined;
  /// The shape every element has (dims that differ are unknown); unranked
  /// while the sequence is empty.
  ir::Shape element;
  bool any_element = false;
  std::optional<int64_t> length;
  std::string estimate;  // non-empty when the length is an estimate
};

// Deep enough for real exports; a deeper chain is left unknown.
constexpr int kMaxSequenceTrace = 64;

// `facts` with one more element of type `t`.
void AddElement(SequenceFacts& facts, ir::DType dtype, const ir::Shape& shape) {
  if (facts.dtype == ir::DType::kUndefined) facts.dtype = dtype;
  if (!facts.any_element) {
    facts.element = shape;
    facts.any_element = true;
    return;
  }
  if (!facts.element.has_rank() || !shape.has_rank() || facts.element.rank() != shape.rank()) {
    facts.element = ir::Shape();
    return;
  }
  for (size_t d = 0; d < shape.rank(); ++d) {
    if (!(facts.element.dim(d) == shape.dim(d))) facts.element.mutable_dims()[d] = UnknownDim();
  }
}

std::optional<SequenceFacts> TraceSequence(const ir::Graph& graph, ir::ValueId id,
                                           const RuleOptions& options, int depth);

// A Loop's carried sequence `k`: its initial value plus, per trip, what the
// body inserts into it (a chain of SequenceInsert/Identity from body input
// 2+k to body output 1+k).
std::optional<SequenceFacts> LoopSequence(const ir::Graph& graph, const ir::Node& loop, size_t k,
                                          const RuleOptions& options, int depth) {
  if (2 + k >= loop.inputs.size() || !loop.inputs[2 + k].valid()) return std::nullopt;
  std::optional<SequenceFacts> facts = TraceSequence(graph, loop.inputs[2 + k], options, depth + 1);
  const ir::Graph* body = FindBody(loop, "body");
  if (!facts || !facts->length || body == nullptr) return std::nullopt;
  const NodeView view(graph, loop, options);
  std::vector<OutputType> body_inputs = {WithShape(ir::DType::kInt64, ir::Shape({})),
                                         WithShape(ir::DType::kBool, ir::Shape({}))};
  for (size_t i = 2; i < loop.inputs.size(); ++i) body_inputs.push_back(LikeInput(view, i));
  InferredBody inferred = InferBody(view, *body, body_inputs);
  const ir::Graph& g = inferred.graph;
  if (2 + k >= g.inputs().size() || 1 + k >= g.outputs().size()) return std::nullopt;
  int64_t inserts = 0;
  ir::ValueId at = g.outputs()[1 + k];
  for (int hops = 0; at != g.inputs()[2 + k]; ++hops) {
    const ir::Value& v = g.value(at);
    if (hops > kMaxSequenceTrace || v.kind != ir::ValueKind::kNodeOutput) return std::nullopt;
    const ir::Node& producer = g.node(v.producer);
    if (producer.inputs.empty() || !producer.inputs[0].valid()) return std::nullopt;
    if (producer.kind == ir::OpKind::kSequenceInsert && producer.inputs.size() >= 2 &&
        producer.inputs[1].valid()) {
      const ir::Value& element = g.value(producer.inputs[1]);
      AddElement(*facts, element.dtype, element.shape);
      ++inserts;
    } else if (producer.kind != ir::OpKind::kIdentity) {
      return std::nullopt;
    }
    at = producer.inputs[0];
  }
  const auto [trips, estimate] = TripCount(view, inferred);
  facts->length = *facts->length + inserts * trips;
  if (inserts > 0 && !estimate.empty()) facts->estimate = estimate;
  return facts;
}

std::optional<SequenceFacts> TraceSequence(const ir::Graph& graph, ir::ValueId id,
                                           const RuleOptions& options, int depth) {
  if (depth > kMaxSequenceTrace || !id.valid()) return std::nullopt;
  const ir::Value& v = graph.value(id);
  if (v.kind != ir::ValueKind::kNodeOutput) return std::nullopt;
  const ir::Node& node = graph.node(v.producer);
  auto input = [&](size_t i) -> const ir::Value* {
    return i < node.inputs.size() && node.inputs[i].valid() ? &graph.value(node.inputs[i])
                                                            : nullptr;
  };
  switch (node.kind) {
    case ir::OpKind::kSequenceEmpty: {
      SequenceFacts facts;
      facts.dtype =
          static_cast<ir::DType>(node.GetInt("dtype", static_cast<int64_t>(ir::DType::kFloat)));
      facts.length = 0;
      return facts;
    }
    case ir::OpKind::kSequenceConstruct: {
      SequenceFacts facts;
      facts.length = static_cast<int64_t>(node.inputs.size());
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (input(i) == nullptr) return std::nullopt;
        AddElement(facts, input(i)->dtype, input(i)->shape);
      }
      return facts;
    }
    case ir::OpKind::kSequenceInsert:
    case ir::OpKind::kSequenceErase: {
      std::optional<SequenceFacts> facts = TraceSequence(graph, node.inputs[0], options, depth + 1);
      if (!facts) return std::nullopt;
      if (node.kind == ir::OpKind::kSequenceErase) {
        if (facts->length && *facts->length > 0) facts->length = *facts->length - 1;
        return facts;
      }
      if (input(1) == nullptr) return std::nullopt;
      AddElement(*facts, input(1)->dtype, input(1)->shape);
      if (facts->length) facts->length = *facts->length + 1;
      return facts;
    }
    case ir::OpKind::kSplitToSequence: {
      // Without `split`: one element per index along the axis.
      const ir::Value* x = input(0);
      if (x == nullptr || input(1) != nullptr || !x->shape.has_rank()) return std::nullopt;
      std::optional<int64_t> axis =
          NormalizeAxis(node.GetInt("axis", 0), static_cast<int64_t>(x->shape.rank()));
      if (!axis) return std::nullopt;
      std::optional<int64_t> along = DimValue(x->shape.dim(*axis));
      if (!along) return std::nullopt;
      std::vector<ir::Dim> dims = x->shape.dims();
      if (node.GetInt("keepdims", 1) != 0) {
        dims[*axis] = KnownDim(1);
      } else {
        dims.erase(dims.begin() + *axis);
      }
      SequenceFacts facts;
      facts.dtype = x->dtype;
      facts.element = ir::Shape::FromDims(std::move(dims));
      facts.any_element = true;
      facts.length = along;
      return facts;
    }
    case ir::OpKind::kLoop: {
      size_t k = 0;
      while (k < node.outputs.size() && node.outputs[k] != id) ++k;
      return LoopSequence(graph, node, k, options, depth);
    }
    case ir::OpKind::kIdentity:
      return TraceSequence(graph, node.inputs.empty() ? ir::ValueId() : node.inputs[0], options,
                           depth + 1);
    default:
      return std::nullopt;
  }
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

// The trip count of a Loop whose body is `inferred`, and why it is an
// estimate (empty when it is exact): M when it is a constant and the body
// passes its condition through; M as an upper bound when the body computes
// its condition; RuleOptions::loop_trips when M is not a constant.
std::pair<int64_t, std::string> TripCount(const NodeView& node, const InferredBody& inferred) {
  std::optional<int64_t> max_trips = node.has_input(0) ? node.scalar(0) : std::nullopt;
  const bool counted = max_trips && *max_trips >= 0 && *max_trips <= kMaxStaticTrips;
  if (!counted) {
    const int64_t trips = node.options().loop_trips;
    return {trips,
            absl::StrCat(trips, " trips (the trip count is not a constant; --loop-trips sets it)")};
  }
  const bool always_true = ConstantTrue(inferred.graph, 0);
  if (PassesThroughInput(inferred.graph, 0, 1) || always_true) return {*max_trips, ""};
  return {*max_trips,
          absl::StrCat(*max_trips,
                       " trips (the max-trip input; the body's condition may end it sooner)")};
}

// True when body output `output` is a known true value, directly or
// through Identity nodes (exporters write `cond_out = Identity(true)`).
bool ConstantTrue(const ir::Graph& body, size_t output) {
  if (output >= body.outputs().size()) return false;
  ir::ValueId id = body.outputs()[output];
  for (size_t hops = 0; hops <= body.num_nodes() && id.valid(); ++hops) {
    const ir::Value& v = body.value(id);
    if (v.int_data) return v.int_data->size() == 1 && (*v.int_data)[0] != 0;
    if (v.kind != ir::ValueKind::kNodeOutput) return false;
    const ir::Node& producer = body.node(v.producer);
    if (producer.kind != ir::OpKind::kIdentity || producer.inputs.empty()) return false;
    id = producer.inputs[0];
  }
  return false;
}

// `shape` without dim `axis` (already normalized); unranked when it has no
// rank.
ir::Shape WithoutDim(const ir::Shape& shape, int64_t axis) {
  if (!shape.has_rank() || axis < 0 || axis >= static_cast<int64_t>(shape.rank())) {
    return ir::Shape();
  }
  std::vector<ir::Dim> dims = shape.dims();
  dims.erase(dims.begin() + axis);
  return ir::Shape::FromDims(std::move(dims));
}

// `shape` with `dims` in front; unranked when it has no rank.
ir::Shape Prepend(std::vector<ir::Dim> dims, const ir::Shape& shape) {
  if (!shape.has_rank()) return ir::Shape();
  dims.insert(dims.end(), shape.dims().begin(), shape.dims().end());
  return ir::Shape::FromDims(std::move(dims));
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
    const ir::Value* in =
        node.has_input(2 + i) ? &node.graph().value(node.node().inputs[2 + i]) : nullptr;
    if (in != nullptr && in->type_kind == ir::TypeKind::kSequence) {
      OutputType sequence;
      sequence.type_kind = ir::TypeKind::kSequence;
      outputs.push_back(std::move(sequence));
      continue;
    }
    OutputType initial = LikeInput(node, 2 + i);
    if (!initial.shape.IsStatic() && inferred) {
      OutputType from_body = FromBodyValue(inferred->output(1 + i));
      if (from_body.shape.IsStatic()) initial = from_body;
    }
    outputs.push_back(std::move(initial));
  }
  if (!inferred) return outputs;

  const auto [trips, trip_estimate] = TripCount(node, *inferred);
  std::string estimate = trip_estimate;
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

// Scan(states..., scan_inputs...) → (final_states..., scan_outputs...); at
// opset 8 a leading sequence_lens input and a batch axis on every input and
// output. The body sees input j with its scan axis removed (opset 9+:
// scan_input_axes[j], default 0, negative from the end; opset 8: axis 1, the
// batch axis 0 removed too) and a state as is (opset 8: without its batch
// axis). A final state has the body's state output type (the initial
// state's when the body's is not static); scan output k is the body's
// per-iteration value with the scanned length inserted at
// scan_output_axes[k] (default 0, negative counts in the output's rank;
// opset 8: [batch, length, ...]). The length is the scanned inputs' dim as
// it is — known, or symbolic and left to the bindings, never estimated.
// Directions reverse the order of iterations, not shapes.
Outputs ScanRule(const NodeView& node) {
  const ir::Graph* body = FindBody(node.node(), "body");
  const int64_t scan_inputs = node.GetInt("num_scan_inputs", 0);
  const bool batched = node.opset() < 9;
  const size_t first = batched ? 1 : 0;
  if (body == nullptr || scan_inputs <= 0 ||
      node.num_inputs() < first + static_cast<size_t>(scan_inputs)) {
    return {};
  }
  const size_t states = node.num_inputs() - first - static_cast<size_t>(scan_inputs);
  const std::vector<int64_t> input_axes = node.GetInts("scan_input_axes");
  const std::vector<int64_t> output_axes = node.GetInts("scan_output_axes");

  // The batch (opset 8) and the scanned length: the first known dim among
  // the inputs that have one, else the first symbolic one.
  std::optional<ir::Dim> batch;
  std::optional<ir::Dim> length;
  auto take = [](std::optional<ir::Dim>& into, const ir::Dim& dim) {
    if (!into || (!into->known() && (dim.known() || into->symbol.empty()))) into = dim;
  };
  std::vector<OutputType> body_inputs;
  for (size_t i = 0; i < states; ++i) {
    OutputType state = LikeInput(node, first + i);
    if (batched) {
      if (state.shape.has_rank() && state.shape.rank() > 0) take(batch, state.shape.dim(0));
      state.shape = WithoutDim(state.shape, 0);
    }
    body_inputs.push_back(std::move(state));
  }
  for (size_t j = 0; j < static_cast<size_t>(scan_inputs); ++j) {
    OutputType slice = LikeInput(node, first + states + j);
    const std::optional<int64_t> rank = Rank(slice.shape);
    const std::optional<int64_t> axis =
        !rank ? std::nullopt
              : NormalizeAxis(batched ? 1 : (j < input_axes.size() ? input_axes[j] : 0), *rank);
    if (axis) {
      take(length, slice.shape.dim(*axis));
      slice.shape = WithoutDim(slice.shape, *axis);
      if (batched) {
        take(batch, slice.shape.dim(0));
        slice.shape = WithoutDim(slice.shape, 0);
      }
    } else {
      slice.shape = ir::Shape();
    }
    body_inputs.push_back(std::move(slice));
  }
  InferredBody inferred = InferBody(node, *body, body_inputs);
  const std::string nested = NestedEstimate(inferred);
  const std::vector<ir::Dim> batch_dims = {batch.value_or(UnknownDim())};

  Outputs outputs;
  for (size_t i = 0; i < node.num_outputs() && i < states; ++i) {
    OutputType state = FromBodyValue(inferred.output(i));
    if (batched) state.shape = Prepend(batch_dims, state.shape);
    state.estimate = nested;
    OutputType initial = LikeInput(node, first + i);
    if (!state.shape.IsStatic() && initial.shape.has_rank()) {
      if (initial.dtype == ir::DType::kUndefined) initial.dtype = state.dtype;
      state = std::move(initial);
    }
    outputs.push_back(std::move(state));
  }
  for (size_t k = 0; states + k < node.num_outputs(); ++k) {
    OutputType per_iteration = FromBodyValue(inferred.output(states + k));
    const std::optional<int64_t> rank = Rank(per_iteration.shape);
    const std::optional<int64_t> axis =
        !rank || batched ? std::optional<int64_t>(0)
                         : NormalizeAxis(k < output_axes.size() ? output_axes[k] : 0, *rank + 1);
    if (!rank || !axis) {
      outputs.push_back(Unranked(per_iteration.dtype));
      continue;
    }
    std::vector<ir::Dim> dims = per_iteration.shape.dims();
    dims.insert(dims.begin() + *axis, length.value_or(UnknownDim()));
    if (batched) dims.insert(dims.begin(), batch_dims[0]);
    OutputType t = WithDims(per_iteration.dtype, std::move(dims));
    t.estimate = nested;
    outputs.push_back(std::move(t));
  }
  return outputs;
}

}  // namespace autopar::shapes::rules

namespace autopar::shapes::rules {

// SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceErase,
// SplitToSequence: a sequence (Note [Sequence facts]).
Outputs SequenceRule(const NodeView& /*node*/) {
  OutputType sequence;
  sequence.type_kind = ir::TypeKind::kSequence;
  return {sequence};
}

// ConcatFromSequence(seq, axis, new_axis): the elements' shape with the
// length inserted as a new axis, or multiplying the axis they are joined on.
Outputs ConcatFromSequenceRule(const NodeView& node) {
  std::optional<SequenceFacts> facts =
      node.has_input(0) ? TraceSequence(node.graph(), node.node().inputs[0], node.options(), 0)
                        : std::nullopt;
  if (!facts || !facts->any_element || !facts->element.has_rank() || !facts->length) {
    return {Unranked(facts ? facts->dtype : ir::DType::kUndefined)};
  }
  std::vector<ir::Dim> dims = facts->element.dims();
  const int64_t rank = static_cast<int64_t>(dims.size());
  const bool new_axis = node.GetInt("new_axis", 0) != 0;
  std::optional<int64_t> axis = NormalizeAxis(node.GetInt("axis", 0), new_axis ? rank + 1 : rank);
  if (!axis) return {Unranked(facts->dtype)};
  if (new_axis) {
    dims.insert(dims.begin() + *axis, KnownDim(facts->length));
  } else {
    dims[*axis] = MulDims(KnownDim(facts->length), dims[*axis]);
  }
  OutputType t = WithDims(facts->dtype, std::move(dims));
  t.estimate = facts->estimate;
  return {t};
}

// SequenceAt(seq, i): one element.
Outputs SequenceAtRule(const NodeView& node) {
  std::optional<SequenceFacts> facts =
      node.has_input(0) ? TraceSequence(node.graph(), node.node().inputs[0], node.options(), 0)
                        : std::nullopt;
  if (!facts || !facts->any_element)
    return {Unranked(facts ? facts->dtype : ir::DType::kUndefined)};
  return {WithShape(facts->dtype, facts->element)};
}

// SequenceLength(seq): an int64 scalar, known when the length is exact.
Outputs SequenceLengthRule(const NodeView& node) {
  OutputType t = WithShape(ir::DType::kInt64, ir::Shape(std::vector<int64_t>{}));
  std::optional<SequenceFacts> facts =
      node.has_input(0) ? TraceSequence(node.graph(), node.node().inputs[0], node.options(), 0)
                        : std::nullopt;
  if (facts && facts->length && facts->estimate.empty())
    t.int_data = std::vector<int64_t>{*facts->length};
  return {t};
}

}  // namespace autopar::shapes::rules
