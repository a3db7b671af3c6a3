#include "training/recurrent_lowering.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "onnx_io/import.h"
#include "training/gradient_pass.h"
#include "training/gradient_rules.h"
#include "training/graph_emitter.h"

namespace autopar::training {

namespace {

using Dims = std::vector<int64_t>;

// A written value and its static dims.
struct T {
  std::string name;
  Dims dims;
};

// The type of a value the lowering made.
struct Made {
  ir::DType dtype;
  Dims dims;
};

// Writes the unrolled operators through a GraphEmitter and records the dims
// of every value it makes (the IR of the lowered model gets them from here:
// there is no shape inference in this layer, and none is needed).
class Writer {
 public:
  Writer(GraphEmitter& emit, ir::DType dtype, absl::flat_hash_map<std::string, Made>& made)
      : emit_(emit), dtype_(dtype), made_(made) {}

  T Record(std::string name, Dims dims) {
    made_[name] = Made{dtype_, dims};
    return T{std::move(name), std::move(dims)};
  }

  T Unary(std::string_view op, const T& x, std::string_view hint) {
    return Record(emit_.Op(op, {x.name}, {}, hint), x.dims);
  }
  T Binary(std::string_view op, const T& a, const T& b, std::string_view hint) {
    return Record(emit_.Op(op, {a.name, b.name}, {}, hint), Broadcast(a.dims, b.dims));
  }
  T MatMul(const T& a, const T& b, std::string_view hint) {
    // Both operands have rank >= 2 here: batch dims broadcast, then [m,k]·[k,n].
    Dims batch =
        Broadcast(Dims(a.dims.begin(), a.dims.end() - 2), Dims(b.dims.begin(), b.dims.end() - 2));
    batch.push_back(a.dims[a.dims.size() - 2]);
    batch.push_back(b.dims.back());
    return Record(emit_.Op("MatMul", {a.name, b.name}, {}, hint), batch);
  }
  T Transpose(const T& x, const Dims& perm) {
    Dims dims;
    for (int64_t p : perm) dims.push_back(x.dims[p]);
    return Record(emit_.Transpose(x.name, perm), dims);
  }
  T Reshape(const T& x, const Dims& dims) {
    if (dims == x.dims) return x;
    return Record(emit_.Reshape(x.name, dims), dims);
  }
  std::vector<T> Split(const T& x, int64_t axis, const Dims& sizes) {
    if (sizes.size() == 1) return {x};
    std::vector<std::string> names = emit_.Split(x.name, axis, sizes);
    std::vector<T> out;
    for (size_t k = 0; k < names.size(); ++k) {
      Dims dims = x.dims;
      dims[axis] = sizes[k];
      out.push_back(Record(names[k], dims));
    }
    return out;
  }
  T Concat(const std::vector<T>& xs, int64_t axis) {
    if (xs.size() == 1) return xs.front();
    std::vector<std::string> names;
    Dims dims = xs.front().dims;
    dims[axis] = 0;
    for (const T& x : xs) {
      names.push_back(x.name);
      dims[axis] += x.dims[axis];
    }
    return Record(emit_.Op("Concat", names, {AttrInt("axis", axis)}), dims);
  }
  T Zeros(const Dims& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return Record(emit_.Tensor(dims, std::vector<double>(n, 0.0), dtype_), dims);
  }
  // `x` under the name `name` (a forward output the lowering replaces).
  void Name(const T& x, const std::string& name) { emit_.OpTo("Identity", {x.name}, name); }

 private:
  static Dims Broadcast(const Dims& a, const Dims& b) {
    Dims out(std::max(a.size(), b.size()), 1);
    for (size_t k = 0; k < out.size(); ++k) {
      const int64_t da = k < out.size() - a.size() ? 1 : a[k - (out.size() - a.size())];
      const int64_t db = k < out.size() - b.size() ? 1 : b[k - (out.size() - b.size())];
      out[k] = da == 1 ? db : da;
    }
    return out;
  }

  GraphEmitter& emit_;
  ir::DType dtype_;
  absl::flat_hash_map<std::string, Made>& made_;
};

// What differs between the three operators.
struct Cell {
  int gates;        // blocks of W's rows: LSTM i,o,f,c; GRU z,r,h; RNN one
  int activations;  // per direction: LSTM f,g,h; GRU f,g; RNN f
  std::vector<std::string> defaults;
};

Cell CellOf(ir::OpKind kind) {
  switch (kind) {
    case ir::OpKind::kLSTM:
      return {4, 3, {"Sigmoid", "Tanh", "Tanh"}};
    case ir::OpKind::kGRU:
      return {3, 2, {"Sigmoid", "Tanh"}};
    default:
      return {1, 1, {"Tanh"}};
  }
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Unrolls one node. Inputs by slot: X W R B sequence_lens initial_h
// (initial_c P for LSTM); outputs Y Y_h (Y_c).
class Unroller {
 public:
  Unroller(const ir::Graph& graph, const ir::Node& node, GraphEmitter& emit,
           absl::flat_hash_map<std::string, Made>& made)
      : graph_(graph),
        node_(node),
        cell_(CellOf(node.kind)),
        w_(emit, graph.value(node.inputs[0]).dtype, made) {}

  absl::Status Run() {
    if (absl::Status s = ReadAttributes(); !s.ok()) return s;
    T x = In(0);
    if (layout_ == 1) x = w_.Transpose(x, {1, 0, 2});  // [seq, batch, input]
    const int64_t input = x.dims[2];
    const int64_t gh = cell_.gates * hidden_;

    // The input projections of every step and direction in one MatMul:
    // [1, seq·batch, input] · [dirs, input, gates·hidden].
    T xw = w_.MatMul(w_.Reshape(x, {1, seq_ * batch_, input}), w_.Transpose(In(1), {0, 2, 1}),
                     "input_projection");
    std::vector<T> recurrent_bias(dirs_);  // GRU with linear_before_reset only
    if (Has(3)) {
      std::vector<T> wb_rb = w_.Split(In(3), 1, {gh, gh});  // [dirs, gh] each
      T bias = wb_rb[0];
      if (node_.kind == ir::OpKind::kGRU && linear_before_reset_) {
        // Rb_h is multiplied by r: it stays with the recurrent product.
        recurrent_bias = PerDirection(wb_rb[1], {1, gh});
      } else {
        bias = w_.Binary("Add", wb_rb[0], wb_rb[1], "bias");
      }
      xw = w_.Binary("Add", xw, w_.Reshape(bias, {dirs_, 1, gh}), "input_projection_biased");
    }
    // One [1, batch, gates·hidden] piece per (direction, step).
    std::vector<T> steps =
        w_.Split(w_.Reshape(xw, {dirs_ * seq_, batch_, gh}), 0, Dims(dirs_ * seq_, 1));
    std::vector<T> rt = PerDirection(w_.Transpose(In(2), {0, 2, 1}), {hidden_, gh});

    std::vector<T> h0 = InitialState(5);
    std::vector<T> c0;
    std::vector<std::vector<T>> peephole(dirs_);
    if (node_.kind == ir::OpKind::kLSTM) {
      c0 = InitialState(6);
      if (Has(7)) {
        std::vector<T> p = PerDirection(In(7), {1, 3 * hidden_});
        for (int d = 0; d < dirs_; ++d) peephole[d] = w_.Split(p[d], 1, Dims(3, hidden_));
      }
    }

    // hs[d][t]: direction d's hidden state at (original) step t.
    std::vector<std::vector<T>> hs(dirs_, std::vector<T>(seq_));
    std::vector<T> h_last(dirs_), c_last(dirs_);
    for (int d = 0; d < dirs_; ++d) {
      const bool backwards = direction_ == "reverse" || d == 1;
      T h = h0[d];
      T c = c0.empty() ? T{} : c0[d];
      std::vector<T> rt_split;  // GRU without linear_before_reset: R_zr, R_h
      if (node_.kind == ir::OpKind::kGRU && !linear_before_reset_) {
        rt_split = w_.Split(rt[d], 1, {2 * hidden_, hidden_});
      }
      for (int64_t k = 0; k < seq_; ++k) {
        const int64_t t = backwards ? seq_ - 1 - k : k;
        const T& g = steps[d * seq_ + t];
        switch (node_.kind) {
          case ir::OpKind::kLSTM:
            LstmStep(g, rt[d], peephole[d], d, h, c);
            break;
          case ir::OpKind::kGRU:
            h = linear_before_reset_ ? GruStepLinearBeforeReset(g, rt[d], recurrent_bias[d], d, h)
                                     : GruStep(g, rt_split, d, h);
            break;
          default:
            h = Activation(d, 0, w_.Binary("Add", g, w_.MatMul(h, rt[d], "recurrence"), "gates"));
            break;
        }
        hs[d][t] = h;
      }
      h_last[d] = h;
      c_last[d] = c;
    }

    // Y: [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]).
    if (HasOutput(0)) {
      std::vector<T> ordered;
      for (int64_t t = 0; t < seq_; ++t) {
        for (int d = 0; d < dirs_; ++d) ordered.push_back(hs[d][t]);
      }
      T y = w_.Reshape(w_.Concat(ordered, 0), {seq_, dirs_, batch_, hidden_});
      if (layout_ == 1) y = w_.Transpose(y, {2, 0, 1, 3});
      w_.Name(y, Out(0));
    }
    // Y_h, Y_c: [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]).
    for (int o : {1, 2}) {
      if (!HasOutput(o)) continue;
      T last = w_.Concat(o == 1 ? h_last : c_last, 0);
      if (layout_ == 1) last = w_.Transpose(last, {1, 0, 2});
      w_.Name(last, Out(o));
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", node_.name, "' (", node_.op_type,
                     ") cannot be unrolled for training: ", std::string(what)));
  }

  bool Has(int i) const {
    return i < static_cast<int>(node_.inputs.size()) && node_.inputs[i].valid();
  }
  bool HasOutput(int o) const {
    return o < static_cast<int>(node_.outputs.size()) && node_.outputs[o].valid();
  }
  T In(int i) const {
    const ir::Value& v = graph_.value(node_.inputs[i]);
    return T{v.name, v.shape.Values()};
  }
  const std::string& Out(int o) const { return graph_.value(node_.outputs[o]).name; }

  absl::Status ReadAttributes() {
    for (int i : {0, 1, 2, 3, 5, 6, 7}) {
      if (Has(i) && !graph_.value(node_.inputs[i]).shape.IsStatic()) {
        return Error(absl::StrCat("input '", graph_.value(node_.inputs[i]).name,
                                  "' has no static shape ",
                                  graph_.value(node_.inputs[i]).shape.ToString()));
      }
    }
    if (node_.FindAttribute("clip") != nullptr) return Error("the clip attribute is not supported");
    if (node_.GetInt("input_forget", 0) != 0) return Error("input_forget=1 is not supported");
    direction_ = node_.GetString("direction", "forward");
    if (direction_ != "forward" && direction_ != "reverse" && direction_ != "bidirectional") {
      return Error(absl::StrCat("unknown direction '", direction_, "'"));
    }
    dirs_ = direction_ == "bidirectional" ? 2 : 1;
    layout_ = node_.GetInt("layout", 0);
    linear_before_reset_ = node_.GetInt("linear_before_reset", 0) != 0;
    const Dims x = In(0).dims, wd = In(1).dims, rd = In(2).dims;
    if (x.size() != 3 || wd.size() != 3 || rd.size() != 3 || wd[0] != dirs_ || rd[0] != dirs_) {
      return Error("X, W and R must have rank 3 and W, R one slice per direction");
    }
    seq_ = layout_ == 0 ? x[0] : x[1];
    batch_ = layout_ == 0 ? x[1] : x[0];
    hidden_ = rd[2];
    if (Has(4)) {
      const ir::Value& lens = graph_.value(node_.inputs[4]);
      if (!lens.int_data) {
        return Error(absl::StrCat("sequence_lens '", lens.name,
                                  "' is not a constant (only lengths all equal to the sequence "
                                  "length are supported)"));
      }
      for (int64_t len : *lens.int_data) {
        if (len != seq_) {
          return Error(absl::StrCat("varying sequence lengths (sequence_lens holds ", len,
                                    ", the sequence length is ", seq_, ") are not supported"));
        }
      }
    }
    // Activations: one list for all directions (forward's, then reverse's).
    std::vector<std::string> names = cell_.defaults;
    if (const ir::Attribute* a = node_.FindAttribute("activations"); a != nullptr) {
      names = a->strings;
    }
    if (static_cast<int>(names.size()) == cell_.activations && dirs_ == 2) {
      const std::vector<std::string> one = names;  // both directions use the same
      names.insert(names.end(), one.begin(), one.end());
    }
    if (static_cast<int>(names.size()) != cell_.activations * dirs_) {
      return Error(absl::StrCat("activations lists ", names.size(), " functions, the node needs ",
                                cell_.activations * dirs_));
    }
    for (const std::string& name : names) {
      const std::string lower = Lower(name);
      if (lower == "sigmoid") {
        activations_.push_back("Sigmoid");
      } else if (lower == "tanh") {
        activations_.push_back("Tanh");
      } else if (lower == "relu") {
        activations_.push_back("Relu");
      } else {
        return Error(
            absl::StrCat("activation '", name, "' has no lowering (Sigmoid, Tanh and Relu have)"));
      }
    }
    return absl::OkStatus();
  }

  // `x` ([dirs, ...]) as one value per direction, reshaped to `dims`.
  std::vector<T> PerDirection(const T& x, const Dims& dims) {
    std::vector<T> out;
    for (const T& part : w_.Split(x, 0, Dims(dirs_, 1))) out.push_back(w_.Reshape(part, dims));
    return out;
  }

  // initial_h / initial_c per direction as [1, batch, hidden]; zeros when absent.
  std::vector<T> InitialState(int slot) {
    if (!Has(slot)) {
      T zeros = w_.Zeros({1, batch_, hidden_});
      return std::vector<T>(dirs_, zeros);
    }
    T s = In(slot);
    if (layout_ == 1) s = w_.Transpose(s, {1, 0, 2});  // [dirs, batch, hidden]
    return PerDirection(s, {1, batch_, hidden_});
  }

  // Direction d's activation function k applied to x.
  T Activation(int d, int k, const T& x) {
    return w_.Unary(activations_[d * cell_.activations + k], x,
                    Lower(activations_[d * cell_.activations + k]));
  }

  // it = f(Xi + Hi (+ Pi⊙C)), ft likewise, ct~ = g(Xc + Hc), C = ft⊙C + it⊙ct~,
  // ot = f(Xo + Ho (+ Po⊙C)), H = ot⊙h(C). Gate order i, o, f, c; P's i, o, f.
  void LstmStep(const T& g, const T& rt, const std::vector<T>& p, int d, T& h, T& c) {
    T gates = w_.Binary("Add", g, w_.MatMul(h, rt, "recurrence"), "gates");
    std::vector<T> iofc = w_.Split(gates, 2, Dims(4, hidden_));
    T i = iofc[0], o = iofc[1], f = iofc[2];
    if (!p.empty()) {
      i = w_.Binary("Add", i, w_.Binary("Mul", p[0], c, "peephole_i"), "gate_i");
      f = w_.Binary("Add", f, w_.Binary("Mul", p[2], c, "peephole_f"), "gate_f");
    }
    i = Activation(d, 0, i);
    f = Activation(d, 0, f);
    T candidate = Activation(d, 1, iofc[3]);
    c = w_.Binary("Add", w_.Binary("Mul", f, c, "kept"), w_.Binary("Mul", i, candidate, "added"),
                  "cell");
    if (!p.empty()) o = w_.Binary("Add", o, w_.Binary("Mul", p[1], c, "peephole_o"), "gate_o");
    o = Activation(d, 0, o);
    h = w_.Binary("Mul", o, Activation(d, 2, c), "hidden");
  }

  // zt = f(Xz + Hz), rt = f(Xr + Hr), ht~ = g(Xh + (rt⊙H)·Rhᵀ), H' = ht~ + zt⊙(H − ht~)
  // (= (1 − zt)⊙ht~ + zt⊙H). Every bias is already in g.
  T GruStep(const T& g, const std::vector<T>& rt_split, int d, const T& h) {
    std::vector<T> x = w_.Split(g, 2, Dims(3, hidden_));
    std::vector<T> hzr = w_.Split(w_.MatMul(h, rt_split[0], "recurrence"), 2, Dims(2, hidden_));
    T z = Activation(d, 0, w_.Binary("Add", x[0], hzr[0], "gate_z"));
    T r = Activation(d, 0, w_.Binary("Add", x[1], hzr[1], "gate_r"));
    T reset = w_.Binary("Mul", r, h, "reset");
    T candidate = Activation(
        d, 1, w_.Binary("Add", x[2], w_.MatMul(reset, rt_split[1], "recurrence_h"), "gate_h"));
    return Update(z, candidate, h);
  }

  // linear_before_reset: ht~ = g(Xh + rt⊙(H·Rhᵀ + Rbh)); g holds Wb only.
  T GruStepLinearBeforeReset(const T& g, const T& rt, const T& rb, int d, const T& h) {
    T hr = w_.MatMul(h, rt, "recurrence");
    if (!rb.name.empty()) hr = w_.Binary("Add", hr, rb, "recurrence_biased");
    std::vector<T> x = w_.Split(g, 2, Dims(3, hidden_));
    std::vector<T> hh = w_.Split(hr, 2, Dims(3, hidden_));
    T z = Activation(d, 0, w_.Binary("Add", x[0], hh[0], "gate_z"));
    T r = Activation(d, 0, w_.Binary("Add", x[1], hh[1], "gate_r"));
    T candidate =
        Activation(d, 1, w_.Binary("Add", x[2], w_.Binary("Mul", r, hh[2], "reset"), "gate_h"));
    return Update(z, candidate, h);
  }

  T Update(const T& z, const T& candidate, const T& h) {
    T kept = w_.Binary("Mul", z, w_.Binary("Sub", h, candidate, "change"), "kept");
    return w_.Binary("Add", candidate, kept, "hidden");
  }

  const ir::Graph& graph_;
  const ir::Node& node_;
  Cell cell_;
  Writer w_;
  std::string direction_;
  int dirs_ = 1;
  int64_t layout_ = 0;
  bool linear_before_reset_ = false;
  int64_t seq_ = 0, batch_ = 0, hidden_ = 0;
  std::vector<std::string> activations_;  // ONNX op types, dirs × per-direction
};

}  // namespace

bool IsRecurrent(ir::OpKind kind) {
  return kind == ir::OpKind::kLSTM || kind == ir::OpKind::kGRU || kind == ir::OpKind::kRNN;
}

std::vector<ir::NodeId> RecurrentNodesOnGradientPath(const ir::Graph& graph,
                                                     const std::vector<bool>& reached,
                                                     const std::vector<ir::ValueId>& trained) {
  // Values computed from a trained weight through slots that take a gradient
  // (the gradient pass's own notion; recurrent kinds have no rule, so every
  // slot of theirs counts).
  std::vector<bool> depends(graph.num_values(), false);
  for (ir::ValueId v : trained) depends[v.index()] = true;
  std::vector<ir::NodeId> found;
  for (size_t k = 0; k < graph.num_nodes(); ++k) {
    const ir::Node& node = graph.nodes()[k];
    bool any = false;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ir::ValueId in = node.inputs[i];
      if (!in.valid() || !depends[in.index()]) continue;
      if (SlotTakesGradient(node.kind, static_cast<int>(i))) any = true;
    }
    for (ir::ValueId cap : node.captured) any = any || depends[cap.index()];
    if (!any) continue;
    bool reaches = false;
    for (ir::ValueId out : node.outputs) {
      if (!out.valid()) continue;
      const ir::Value& v = graph.value(out);
      if (v.type_kind == ir::TypeKind::kTensor && IsDifferentiableType(v.dtype)) {
        depends[out.index()] = true;
      }
      reaches = reaches || reached[out.index()];
    }
    if (reaches && IsRecurrent(node.kind)) found.push_back(ir::NodeId(static_cast<uint32_t>(k)));
  }
  return found;
}

absl::StatusOr<LoweredModel> LowerRecurrentNodes(const onnx_io::Model& model,
                                                 const ir::Graph& graph,
                                                 const std::vector<ir::NodeId>& nodes) {
  const onnx::GraphProto& source = model.proto.graph();
  absl::flat_hash_set<std::string> taken;
  for (const ir::Value& v : graph.values()) taken.insert(v.name);
  for (const onnx::NodeProto& n : source.node()) {
    taken.insert(n.name());
    for (const std::string& o : n.output()) taken.insert(o);
  }
  const int64_t opset = onnx_io::DefaultDomainOpset(model.proto);

  // The unrolled nodes, written into one scratch graph; each source node's
  // replacement is a range of it.
  onnx::GraphProto scratch;
  GraphEmitter emit(&scratch, std::move(taken), opset, "");
  absl::flat_hash_map<std::string, Made> made;
  absl::flat_hash_map<int32_t, std::pair<int, int>> replacement;  // proto index → [begin, end)
  for (ir::NodeId id : nodes) {
    const ir::Node& node = graph.node(id);
    if (!IsRecurrent(node.kind) || node.proto_index < 0) {
      return absl::InternalError(
          absl::StrCat("node '", node.name, "' is not a recurrent node of the source model"));
    }
    const int begin = scratch.node_size();
    emit.set_origin(node.name);
    Unroller unroller(graph, node, emit, made);
    if (absl::Status s = unroller.Run(); !s.ok()) return s;
    replacement[node.proto_index] = {begin, scratch.node_size()};
  }

  LoweredModel lowered;
  lowered.origins = emit.origins();
  onnx::ModelProto proto = model.proto;
  onnx::GraphProto* g = proto.mutable_graph();
  g->clear_node();
  for (int i = 0; i < source.node_size(); ++i) {
    auto it = replacement.find(i);
    if (it == replacement.end()) {
      *g->add_node() = source.node(i);
      continue;
    }
    for (int k = it->second.first; k < it->second.second; ++k) *g->add_node() = scratch.node(k);
    ++lowered.lowered_nodes;
    lowered.written_nodes += it->second.second - it->second.first;
  }
  absl::StatusOr<onnx_io::Model> m = onnx_io::ModelFromProto(std::move(proto), model.directory());
  if (!m.ok()) return m.status();
  lowered.model = *std::move(m);
  lowered.model.path = model.path;
  absl::StatusOr<ir::Graph> built = onnx_io::BuildGraph(lowered.model);
  if (!built.ok()) {
    return absl::InternalError(
        absl::StrCat("the unrolled recurrent nodes do not import: ", built.status().message()));
  }
  lowered.graph = *std::move(built);

  // Types: the source IR's (bound dims, inferred shapes, known contents) for
  // the values it has, the lowering's for the new ones; Constant outputs
  // were typed by the importer.
  ir::Graph& out = lowered.graph;
  for (size_t k = 0; k < out.num_values(); ++k) {
    ir::Value& v = out.mutable_value(ir::ValueId(static_cast<uint32_t>(k)));
    if (std::optional<ir::ValueId> old = graph.FindValue(v.name)) {
      const ir::Value& o = graph.value(*old);
      v.type_kind = o.type_kind;
      v.dtype = o.dtype;
      v.shape = o.shape;
      v.int_data = o.int_data;
      v.shape_estimated = o.shape_estimated;
    } else if (auto it = made.find(v.name); it != made.end()) {
      v.type_kind = ir::TypeKind::kTensor;
      v.dtype = it->second.dtype;
      v.shape = ir::Shape(it->second.dims);
    } else if (v.kind != ir::ValueKind::kNodeOutput ||
               out.node(v.producer).kind != ir::OpKind::kConstant) {
      return absl::InternalError(
          absl::StrCat("the recurrent lowering left value '", v.name, "' untyped"));
    }
  }
  return lowered;
}

}  // namespace autopar::training
