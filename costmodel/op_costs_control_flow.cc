// Control flow: If, Loop, Scan and SequenceMap cost what their bodies cost
// (the node is one unit for placement; its cost is estimated from the
// body).
#include <array>
#include <limits>

#include "costmodel/op_costs_internal.h"

namespace autopar::costmodel::internal {
namespace {

// Trip counts above this are not real counts but "loop until cond" markers
// (exporters write INT64_MAX): they count as unknown.
constexpr int64_t kMaxStaticTrips = int64_t{1} << 31;

struct BodyCost {
  Count macs;
  Count flops;
  Count bytes_read;
  Count bytes_written;
  Count kernels;
  Count activation_bytes;
  Count max_workspace;
  std::array<Count, kNumOpClasses> class_flops{};
  std::array<Count, kNumOpClasses> class_bytes{};
  std::array<Count, kNumDTypeClasses> dtype_flops{};
  bool estimated = false;

  // The class doing most of the work (by FLOPs, else by bytes), so that the
  // device model uses the efficiency of what the body mostly runs.
  OpClass DominantClass() const {
    size_t best = static_cast<size_t>(OpClass::kOther);
    bool any_flops = flops > 0;
    const std::array<Count, kNumOpClasses>& by = any_flops ? class_flops : class_bytes;
    for (size_t i = 0; i < kNumOpClasses; ++i) {
      if (by[i] > by[best]) best = i;
    }
    return static_cast<OpClass>(best);
  }
  DTypeClass DominantDType() const {
    size_t best = 0;
    for (size_t i = 1; i < kNumDTypeClasses; ++i) {
      if (dtype_flops[i] > dtype_flops[best]) best = i;
    }
    return static_cast<DTypeClass>(best);
  }
};

// A body input and what it is bound to.
struct Binding {
  size_t body_input;
  TensorInfo info;
};

const ir::Graph* FindBody(const ir::Node& node, std::string_view attribute) {
  for (const ir::Subgraph& s : node.subgraphs) {
    if (s.attribute == attribute) return s.body.get();
  }
  return nullptr;
}

// `info` without `axis` (a scan slice), or as is when the axis is unknown.
TensorInfo WithoutAxis(TensorInfo info, int64_t axis) {
  info.is_parameter = false;
  info.int_data = nullptr;
  if (!info.known()) return info;
  if (axis < 0) axis += info.rank();
  if (axis < 0 || axis >= info.rank()) return info;
  info.dims->erase(info.dims->begin() + axis);
  info.elements = 1;
  for (int64_t d : *info.dims) info.elements *= d;
  return info;
}

BodyCost CostBody(const ir::Graph& body, const ValueTable& outer,
                  const std::vector<Binding>& bindings, const CostOptions& options) {
  ValueTable table(body, &outer);
  for (const Binding& b : bindings) {
    if (b.body_input >= body.inputs().size() || !b.info.present) continue;
    ir::ValueId id = body.inputs()[b.body_input];
    if (table.Info(id).known()) continue;  // the body declares its own shape
    TensorInfo info = b.info;
    info.is_parameter = false;  // it changes per iteration
    info.int_data = nullptr;
    table.Bind(id, std::move(info));
  }
  BodyCost cost;
  std::vector<NodeCost> nodes = CostAllNodes(table, options);
  for (const NodeCost& n : nodes) {
    cost.macs += n.macs;
    cost.flops += n.flops;
    cost.bytes_read += n.bytes_read;
    cost.bytes_written += n.bytes_written;
    cost.kernels += n.kernels;
    cost.activation_bytes += n.output_bytes;
    cost.max_workspace = std::max(cost.max_workspace, Count(n.workspace_bytes));
    cost.class_flops[static_cast<size_t>(n.op_class)] += n.flops;
    cost.class_bytes[static_cast<size_t>(n.op_class)] += Count(n.bytes_read) + n.bytes_written;
    cost.dtype_flops[static_cast<size_t>(n.dtype_class)] += n.flops;
    cost.estimated = cost.estimated || n.estimated || !n.has_formula;
  }
  return cost;
}

// The node's work: the body `trips` times, plus one launch for the node.
Work FromBody(const BodyCost& body, Count trips, bool trips_estimated) {
  Work work;
  work.rule = CostRule::kSubgraph;
  work.macs = body.macs * trips;
  work.flops = body.flops * trips;
  work.bytes_read = body.bytes_read * trips;
  work.bytes_written = body.bytes_written * trips;
  work.kernels = body.kernels * trips + 1;
  // One iteration's intermediates live at a time (an upper bound: all of
  // them at once), plus the largest kernel workspace.
  work.workspace_bytes = body.activation_bytes + body.max_workspace;
  work.op_class = body.DominantClass();
  work.dtype_class = body.DominantDType();
  work.estimated = body.estimated || trips_estimated;
  return work;
}

// Note [Counted while-loops]: exporters turn `i = 0; while i < 4: ...; i += 1`
// into a Loop with M = INT64_MAX whose body computes its condition from a
// loop-carried counter. When the condition is a comparison of affine
// functions of the iteration (the iteration number, carried values that
// start at a constant and grow by a constant each trip, constants), the trip
// count follows in closed form.

// v_k = start + k · step at (0-based) iteration k.
struct Affine {
  int64_t start = 0;
  int64_t step = 0;
};

std::optional<Affine> Combine(Affine a, Affine b, int sign) {
  Affine r;
  int64_t bs = 0;
  int64_t bt = 0;
  if (__builtin_mul_overflow(b.start, sign, &bs) || __builtin_mul_overflow(b.step, sign, &bt) ||
      __builtin_add_overflow(a.start, bs, &r.start) ||
      __builtin_add_overflow(a.step, bt, &r.step)) {
    return std::nullopt;
  }
  return r;
}

class LoopCounter {
 public:
  LoopCounter(const ir::Graph& body, const ValueTable& table) : body_(body), table_(table) {
    inductions_.resize(body.inputs().size());
    if (!inductions_.empty()) inductions_[0] = Affine{0, 1};  // the iteration number
  }

  // Carried value j (body input 2 + j) starts at `initial` and is updated by
  // body output 1 + j: an induction variable when that is it ± a constant.
  void AddCarried(size_t j, std::optional<int64_t> initial) {
    size_t input = 2 + j;
    size_t output = 1 + j;
    if (!initial || input >= body_.inputs().size() || output >= body_.outputs().size()) return;
    const ir::Value& next = body_.value(body_.outputs()[output]);
    if (!next.producer.valid()) return;
    const ir::Node& update = body_.node(next.producer);
    if ((update.kind != ir::OpKind::kAdd && update.kind != ir::OpKind::kSub) ||
        update.inputs.size() != 2) {
      return;
    }
    ir::ValueId self = body_.inputs()[input];
    for (int side = 0; side < 2; ++side) {
      if (update.inputs[side] != self) continue;
      std::optional<int64_t> step = table_.Info(update.inputs[1 - side]).ScalarInt();
      if (!step || (update.kind == ir::OpKind::kSub && side == 1)) return;
      int64_t signed_step = update.kind == ir::OpKind::kSub ? -*step : *step;
      inductions_[input] = Affine{*initial, signed_step};
      return;
    }
  }

  // Trips until the body's condition output turns false; nullopt when it is
  // not such a comparison or never turns false.
  std::optional<int64_t> Trips() const {
    if (body_.outputs().empty()) return std::nullopt;
    const ir::Node* compare = Producer(body_.outputs()[0]);
    while (compare != nullptr &&
           (compare->kind == ir::OpKind::kIdentity || compare->kind == ir::OpKind::kCast) &&
           !compare->inputs.empty()) {
      compare = Producer(compare->inputs[0]);
    }
    if (compare == nullptr || compare->inputs.size() != 2) return std::nullopt;
    std::optional<Affine> lhs = Of(compare->inputs[0], 0);
    std::optional<Affine> rhs = Of(compare->inputs[1], 0);
    if (!lhs || !rhs) return std::nullopt;
    std::optional<Affine> diff = Combine(*lhs, *rhs, -1);
    if (!diff) return std::nullopt;
    // Normalize to "continue while d_k < 0".
    Affine d = *diff;
    switch (compare->kind) {
      case ir::OpKind::kLess:
        break;
      case ir::OpKind::kLessOrEqual:  // d ≤ 0 ⟺ d − 1 < 0
        if (__builtin_sub_overflow(d.start, 1, &d.start)) return std::nullopt;
        break;
      case ir::OpKind::kGreater:  // d > 0 ⟺ −d < 0
        d = Affine{-d.start, -d.step};
        break;
      case ir::OpKind::kGreaterOrEqual:  // d ≥ 0 ⟺ −d − 1 < 0
        d = Affine{-d.start - 1, -d.step};
        break;
      default:
        return std::nullopt;
    }
    if (d.start >= 0) return 1;            // false after the first trip
    if (d.step <= 0) return std::nullopt;  // never false
    // First k with start + k·step ≥ 0, then that trip itself.
    int64_t k = (-d.start + d.step - 1) / d.step;
    return k + 1;
  }

 private:
  const ir::Node* Producer(ir::ValueId id) const {
    if (!id.valid()) return nullptr;
    const ir::Value& v = body_.value(id);
    return v.kind == ir::ValueKind::kNodeOutput && v.producer.valid() ? &body_.node(v.producer)
                                                                      : nullptr;
  }

  std::optional<Affine> Of(ir::ValueId id, int depth) const {
    if (!id.valid() || depth > 8) return std::nullopt;
    const std::vector<ir::ValueId>& inputs = body_.inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] == id) return inductions_[i];
    }
    if (std::optional<int64_t> constant = table_.Info(id).ScalarInt()) return Affine{*constant, 0};
    const ir::Node* node = Producer(id);
    if (node == nullptr || node->inputs.empty()) return std::nullopt;
    switch (node->kind) {
      case ir::OpKind::kIdentity:
      case ir::OpKind::kCast:
        return Of(node->inputs[0], depth + 1);
      case ir::OpKind::kAdd:
      case ir::OpKind::kSub: {
        if (node->inputs.size() != 2) return std::nullopt;
        std::optional<Affine> a = Of(node->inputs[0], depth + 1);
        std::optional<Affine> b = Of(node->inputs[1], depth + 1);
        if (!a || !b) return std::nullopt;
        return Combine(*a, *b, node->kind == ir::OpKind::kAdd ? 1 : -1);
      }
      default:
        return std::nullopt;
    }
  }

  const ir::Graph& body_;
  const ValueTable& table_;
  std::vector<std::optional<Affine>> inductions_;  // by body input
};

bool MoreExpensive(const BodyCost& a, const BodyCost& b) {
  if (a.flops != b.flops) return a.flops > b.flops;
  return a.bytes_read + a.bytes_written > b.bytes_read + b.bytes_written;
}

}  // namespace

// If: the branch taken when the condition is a constant, else the more
// expensive branch (by FLOPs, then bytes) — the step time a placement must
// plan for.
Work If(const OpContext& c) {
  const ir::Graph* then_branch = FindBody(c.node, "then_branch");
  const ir::Graph* else_branch = FindBody(c.node, "else_branch");
  std::optional<int64_t> condition = c.in(0).ScalarInt();
  BodyCost chosen;
  if (condition && then_branch != nullptr && else_branch != nullptr) {
    chosen = CostBody(*condition != 0 ? *then_branch : *else_branch, c.table, {}, c.options);
  } else {
    for (const ir::Graph* branch : {then_branch, else_branch}) {
      if (branch == nullptr) continue;
      BodyCost cost = CostBody(*branch, c.table, {}, c.options);
      if (MoreExpensive(cost, chosen)) chosen = cost;
    }
  }
  Work work = FromBody(chosen, 1, false);
  work.bytes_read = *work.bytes_read + c.in(0).bytes();
  return work;
}

// Loop(M, cond, v_initial...): body inputs are (iteration, cond, v...). The
// trip count is M when it is a constant, the closed form of a counted
// while-loop (Note [Counted while-loops]) when that is smaller or M is not a
// constant, 0 for a constant false condition, else options.default_loop_trips.
// (A data-dependent condition may end the loop earlier: M is the bound to
// plan for.)
Work Loop(const OpContext& c) {
  const ir::Graph* body = FindBody(c.node, "body");
  if (body == nullptr) return Estimate(c, 1, OpClass::kOther);
  std::optional<int64_t> max_trips = c.in(0).ScalarInt();
  bool known = max_trips && *max_trips >= 0 && *max_trips <= kMaxStaticTrips;
  Count trips = known ? *max_trips : c.options.default_loop_trips;
  if (c.in(1).ScalarInt() == 0) {  // a constant false condition: no trip
    trips = 0;
    known = true;
  } else {
    ValueTable lookup(*body, &c.table);
    LoopCounter counter(*body, lookup);
    for (size_t j = 2; j < c.inputs.size(); ++j) counter.AddCarried(j - 2, c.in(j).ScalarInt());
    if (std::optional<int64_t> counted = counter.Trips()) {
      trips = known ? std::min(*max_trips, *counted) : *counted;
      known = true;
    }
  }
  std::vector<Binding> bindings;
  for (size_t i = 2; i < c.inputs.size(); ++i) bindings.push_back({i, c.in(i)});
  return FromBody(CostBody(*body, c.table, bindings, c.options), trips, !known);
}

// Scan: the body once per element of the scan axis. Opset 8 has a leading
// sequence_lens input and a batch axis (the body runs per batch row and
// step); opset 9+ has per-input scan axes.
Work Scan(const OpContext& c) {
  const ir::Graph* body = FindBody(c.node, "body");
  if (body == nullptr) return Estimate(c, 1, OpClass::kOther);
  int64_t scan_inputs = c.node.GetInt("num_scan_inputs", 0);
  bool batched = c.node.opset > 0 && c.node.opset < 9;
  size_t first = batched ? 1 : 0;
  int64_t states = static_cast<int64_t>(c.inputs.size() - first) - scan_inputs;
  if (scan_inputs <= 0 || states < 0) return Estimate(c, 1, OpClass::kOther);
  std::vector<int64_t> axes = c.node.GetInts("scan_input_axes");

  std::vector<Binding> bindings;
  for (int64_t i = 0; i < states; ++i) {
    TensorInfo state = c.in(first + static_cast<size_t>(i));
    bindings.push_back({static_cast<size_t>(i), batched ? WithoutAxis(state, 0) : state});
  }
  for (int64_t j = 0; j < scan_inputs; ++j) {
    const TensorInfo& input = c.in(first + static_cast<size_t>(states + j));
    int64_t axis = static_cast<size_t>(j) < axes.size() ? axes[static_cast<size_t>(j)] : 0;
    TensorInfo slice = batched ? WithoutAxis(WithoutAxis(input, 0), 0) : WithoutAxis(input, axis);
    bindings.push_back({static_cast<size_t>(states + j), slice});
  }
  const TensorInfo& scanned = c.in(first + static_cast<size_t>(states));
  int64_t axis = axes.empty() ? 0 : axes[0];
  Count trips = batched ? Count(scanned.Dim(0)) * scanned.Dim(1) : Count(scanned.Dim(axis));
  bool known = batched ? scanned.Dim(0) >= 0 && scanned.Dim(1) >= 0 : scanned.Dim(axis) >= 0;
  if (!known) trips = c.options.default_loop_trips;
  return FromBody(CostBody(*body, c.table, bindings, c.options), trips, !known);
}

// SequenceMap: the body once per sequence element; sequence lengths are
// never static, so options.default_loop_trips.
Work SequenceMap(const OpContext& c) {
  const ir::Graph* body = FindBody(c.node, "body");
  if (body == nullptr) return Estimate(c, 1, OpClass::kOther);
  return FromBody(CostBody(*body, c.table, {}, c.options), c.options.default_loop_trips, true);
}

}  // namespace autopar::costmodel::internal
