// Stage models: each device's nodes grouped by level (see passes/partition.h).
#include <algorithm>
#include <numeric>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "passes/partition.h"
#include "passes/partition_internal.h"

namespace autopar::passes::partition_internal {
namespace {

// What goes into one stage before its model is assembled.
struct StageContents {
  int32_t level = 0;
  int32_t phase = 0;
  int32_t device = 0;
  std::vector<uint32_t> nodes;         // ordinary nodes, ascending
  std::vector<size_t> passed_outputs;  // graph outputs no ordinary node produces
};

// Note [Stage levels]: level(n) = max over the values n reads of level(p) +
// (device(p) != device(n)), p their producer (Constants excluded: they are
// copied into each stage that reads them). Every edge between two stages goes
// from a lower level to a higher one, so (level, device) order is a
// topological order of the stages.
//
// Nodes joined by a value a stage cannot be fed (a sequence, a map...; see
// NonTensorColocations) must share a stage, so each such group takes the
// highest level of its members, and the levels are recomputed until that
// holds. A group that a path through another device splits never settles:
// that is an error naming the value.
absl::StatusOr<std::vector<int32_t>> Levels(const Analysis& a) {
  const ir::Graph& graph = *a.graph;
  const size_t n = graph.num_nodes();
  partition_internal::NodeGroups group(n);
  const std::vector<std::pair<uint32_t, uint32_t>> joined = NonTensorColocations(graph);
  for (const auto& [p, c] : joined) {
    if (!a.replicated[p] && !a.replicated[c]) group.Join(p, c);
  }
  std::vector<int32_t> floor(n, 0);
  std::vector<int32_t> level(n, 0);
  // Each round either settles or raises a group's floor; a group held apart
  // by another device would rise forever.
  for (size_t round = 0; round <= joined.size() + 1; ++round) {
    for (size_t i = 0; i < n; ++i) {
      level[i] = floor[group.Find(static_cast<uint32_t>(i))];
      if (a.replicated[i]) continue;
      for (ir::ValueId v : a.reads[i]) {
        const ir::NodeId p = graph.value(v).producer;
        if (!p.valid() || a.replicated[p.index()]) continue;
        const int32_t hop = a.device[p.index()] != a.device[i] ? 1 : 0;
        level[i] = std::max(level[i], level[p.index()] + hop);
      }
    }
    bool settled = true;
    for (size_t i = 0; i < n; ++i) {
      int32_t& f = floor[group.Find(static_cast<uint32_t>(i))];
      if (level[i] > f) {
        f = level[i];
        settled = false;
      }
    }
    if (settled) return level;
  }
  for (const auto& [p, c] : joined) {
    if (level[p] == level[c]) continue;
    for (ir::ValueId v : graph.nodes()[p].outputs) {
      if (!v.valid() || IsCarriable(graph.value(v))) continue;
      const auto& readers = graph.value(v).consumers;
      if (std::find(readers.begin(), readers.end(), ir::NodeId(c)) == readers.end()) continue;
      return absl::FailedPreconditionError(absl::StrCat(
          "'", graph.value(v).name, "' is not a tensor, and its producer '", graph.nodes()[p].name,
          "' and its reader '", graph.nodes()[c].name,
          "' cannot share a stage under this placement (a path between them runs through "
          "another device); a stage can be fed tensors only"));
    }
  }
  return absl::FailedPreconditionError(
      "values that are not tensors cannot each stay inside one stage under this placement");
}

// Note [Sinking later phases]: a node of a later phase (a backward node)
// that only prepares a value for readers of its own phase on its own device
// (a weight's transpose for dX = dY·Wᵀ, the input's for dW = Xᵀ·dY) has a
// low level of its own, and would make a stage of its phase that runs long
// before the rest of that phase's work. Such a node moves up to the lowest
// level of its readers, into their stage. Edges stay ordered: its readers
// are at that level or above, its inputs were below it already.
void SinkLaterPhases(const Analysis& a, std::vector<int32_t>& level) {
  const ir::Graph& graph = *a.graph;
  // Nodes joined by a non-tensor value keep the levels Levels settled.
  if (a.phase.empty() || !NonTensorColocations(graph).empty()) return;
  for (size_t i = graph.num_nodes(); i-- > 0;) {
    if (a.replicated[i] || a.phase[i] == 0) continue;
    int32_t lowest = -1;
    bool local = true;
    for (ir::ValueId v : graph.nodes()[i].outputs) {
      if (!v.valid()) continue;
      if (a.index.output[v.index()] >= 0) local = false;  // a graph output
      for (ir::NodeId c : graph.value(v).consumers) {
        const size_t k = c.index();
        if (a.replicated[k]) continue;
        if (a.device[k] != a.device[i] || a.phase[k] != a.phase[i]) local = false;
        lowest = lowest < 0 ? level[k] : std::min(lowest, level[k]);
      }
    }
    if (local && lowest > level[i]) level[i] = lowest;
  }
}

// Groups the nodes into stages numbered in (level, phase, device) order
// (Note [Stage phases] in partition.h: a phase only splits stages).
absl::StatusOr<std::vector<StageContents>> GroupStages(const Analysis& a,
                                                       std::vector<int32_t>& stage_of) {
  const ir::Graph& graph = *a.graph;
  absl::StatusOr<std::vector<int32_t>> levels = Levels(a);
  if (!levels.ok()) return levels.status();
  std::vector<int32_t>& level = *levels;
  SinkLaterPhases(a, level);
  using Key = std::tuple<int32_t, int32_t, int32_t>;  // (level, phase, device)
  auto phase_of = [&a](size_t i) { return a.phase.empty() ? 0 : int32_t{a.phase[i]}; };
  std::vector<Key> keys;
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    if (!a.replicated[i]) keys.emplace_back(level[i], phase_of(i), a.device[i]);
  }
  // A graph output that no ordinary node produces (a graph input or weight
  // passed through, or a Constant) comes out of a level-0 stage of its device.
  std::vector<Key> passed_keys(graph.outputs().size(), {-1, 0, 0});
  for (size_t j = 0; j < graph.outputs().size(); ++j) {
    const ir::NodeId p = graph.value(graph.outputs()[j]).producer;
    if (p.valid() && !a.replicated[p.index()]) continue;
    passed_keys[j] = {0, 0, a.output_device[j]};
    keys.push_back(passed_keys[j]);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  auto id_of = [&keys](const Key& key) {
    return static_cast<int32_t>(std::lower_bound(keys.begin(), keys.end(), key) - keys.begin());
  };

  std::vector<StageContents> stages(keys.size());
  for (size_t s = 0; s < keys.size(); ++s) {
    std::tie(stages[s].level, stages[s].phase, stages[s].device) = keys[s];
  }
  stage_of.assign(graph.num_nodes(), -1);
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    if (a.replicated[i]) continue;
    stage_of[i] = id_of({level[i], phase_of(i), a.device[i]});
    stages[stage_of[i]].nodes.push_back(static_cast<uint32_t>(i));
  }
  for (size_t j = 0; j < graph.outputs().size(); ++j) {
    if (std::get<0>(passed_keys[j]) >= 0) stages[id_of(passed_keys[j])].passed_outputs.push_back(j);
  }
  return stages;
}

// Note [Recomputed shapes]: a shape value made from a batch-sized tensor
// (Shape(x) → Gather → Concat → a Reshape target, or a ConstantOfShape of
// such a shape: an RNN's zero initial state) that one stage makes and
// another reads would cross between them as a stage tensor whose dim 0 is
// not the batch, which keeps the Triton repository unbatched. When the
// reading stage holds x itself (its own value, one it receives anyway, or a
// graph input its device is fed), it runs its own copy of the cheap chain instead and
// receives nothing for it. Only inference splits do this (a training step's
// stages are run by train.mjs, which has no use for it), and only through
// the operators below, on int32/int64 values of at most kMaxShapeElements
// elements (or a ConstantOfShape's fill). Device models are unchanged: Send
// and Recv still carry the value between devices.
constexpr int64_t kMaxShapeElements = 64;

// Whether value `v`, made in stage `stage`, is one of its outputs: a graph
// output, or read by another stage that does not compute it itself
// (`recomputes(reader, v)`). A replicated reader (stage -1) is copied next
// to its own readers.
template <typename Recomputes>
bool LeavesStage(const Analysis& a, const std::vector<int32_t>& stage_of, int32_t stage,
                 ir::ValueId v, const Recomputes& recomputes) {
  if (a.index.output[v.index()] >= 0) return true;
  for (ir::NodeId c : a.graph->value(v).consumers) {
    const int32_t reader = stage_of[c.index()];
    if (reader >= 0 && reader != stage && !recomputes(reader, v)) return true;
  }
  return false;
}

// Per stage: the source nodes it runs a copy of (Note [Recomputed shapes]),
// ascending; empty lists for a training step.
class ShapeRecompute {
 public:
  ShapeRecompute(const Analysis& a, const std::vector<StageContents>& stages,
                 const std::vector<int32_t>& stage_of)
      : a_(a), stage_of_(stage_of) {
    copies_.resize(stages.size());
    roots_.resize(stages.size());
    if (!a.phase.empty()) return;
    for (size_t s = 0; s < stages.size(); ++s) Plan(static_cast<int32_t>(s), stages[s]);
    Gather();
    // A stage all of whose results its readers recompute would be left
    // with no output (a stage of shape computations only): its readers
    // receive its values after all. That gives it outputs back and takes
    // none from another stage, so one pass settles.
    bool cancelled = false;
    for (size_t s = 0; s < stages.size(); ++s) {
      if (!HasOutput(static_cast<int32_t>(s), stages[s], /*after_recompute=*/true) &&
          HasOutput(static_cast<int32_t>(s), stages[s], /*after_recompute=*/false)) {
        for (auto& roots : roots_) {
          std::erase_if(roots, [&](const Root& r) { return stage_of_[r.producer] == int32_t(s); });
        }
        cancelled = true;
      }
    }
    if (cancelled) Gather();
  }

  const std::vector<uint32_t>& copies(int32_t stage) const { return copies_[stage]; }
  /// Whether `stage` computes `v` itself rather than receive it.
  bool Recomputes(int32_t stage, ir::ValueId v) const {
    const ir::NodeId p = a_.graph->value(v).producer;
    const std::vector<uint32_t>& c = copies_[stage];
    return p.valid() && std::binary_search(c.begin(), c.end(), p.index());
  }

 private:
  void Plan(int32_t s, const StageContents& contents) {
    const ir::Graph& graph = *a_.graph;
    stage_ = s;
    device_ = contents.device;
    available_.clear();
    memo_.clear();
    // What the stage holds without copies: its nodes' results, and the
    // values they receive.
    std::vector<ir::ValueId> received;
    for (uint32_t i : contents.nodes) {
      for (ir::ValueId v : graph.nodes()[i].outputs) {
        if (v.valid()) available_.insert(v.index());
      }
    }
    for (uint32_t i : contents.nodes) {
      for (ir::ValueId v : a_.reads[i]) {
        const ir::Value& value = graph.value(v);
        if (!value.producer.valid() || available_.contains(v.index())) continue;
        if (a_.replicated[value.producer.index()]) continue;
        received.push_back(v);
      }
    }
    for (ir::ValueId v : received) available_.insert(v.index());
    for (ir::ValueId v : received) {
      if (!Recomputable(v)) continue;
      // Its producer, and what that reads which the stage does not hold.
      const auto p = static_cast<uint32_t>(graph.value(v).producer.index());
      Root& root = roots_[s].emplace_back(Root{.producer = p, .chain = {p}});
      for (ir::ValueId u : a_.reads[p]) Collect(u, root.chain);
    }
  }

  // copies_ from roots_.
  void Gather() {
    for (size_t s = 0; s < roots_.size(); ++s) {
      std::vector<uint32_t>& copies = copies_[s];
      copies.clear();
      for (const Root& root : roots_[s])
        copies.insert(copies.end(), root.chain.begin(), root.chain.end());
      std::sort(copies.begin(), copies.end());
      copies.erase(std::unique(copies.begin(), copies.end()), copies.end());
    }
  }

  // Whether stage `s` has an output (LeavesStage), with or without the
  // recomputation planned so far.
  bool HasOutput(int32_t s, const StageContents& contents, bool after_recompute) const {
    if (!contents.passed_outputs.empty()) return true;
    const auto recomputes = [&](int32_t reader, ir::ValueId v) {
      return after_recompute && Recomputes(reader, v);
    };
    for (uint32_t i : contents.nodes) {
      for (ir::ValueId v : a_.graph->nodes()[i].outputs) {
        if (v.valid() && LeavesStage(a_, stage_of_, s, v, recomputes)) return true;
      }
    }
    return false;
  }

  // A value the stage can read without copying anything for it: a weight,
  // a graph input its device is fed, a Constant, or what it holds.
  bool Available(ir::ValueId v) const {
    const ir::Value& value = a_.graph->value(v);
    if (value.kind == ir::ValueKind::kInitializer) return true;
    if (value.kind == ir::ValueKind::kGraphInput) {
      const std::vector<int32_t> fed = DevicesFedInput(a_, v);
      return std::binary_search(fed.begin(), fed.end(), device_);
    }
    if (value.producer.valid() && a_.replicated[value.producer.index()]) return true;
    return available_.contains(v.index());
  }

  // Whether the stage can compute received value `v` from what it holds
  // through a chain of cheap shape operators.
  bool Recomputable(ir::ValueId v) {
    if (auto it = memo_.find(v.index()); it != memo_.end()) return it->second;
    memo_[v.index()] = false;  // a cycle cannot occur; this bounds the walk
    const ir::Graph& graph = *a_.graph;
    const ir::Value& value = graph.value(v);
    if (!value.producer.valid()) return false;
    const size_t p = value.producer.index();
    const ir::Node& node = graph.nodes()[p];
    if (!IsShapeChainOp(node) || stage_of_[p] == stage_) return false;
    const bool fill = node.kind == ir::OpKind::kConstantOfShape;
    if (!fill) {
      const std::optional<int64_t> n = value.shape.NumElements();
      const bool integer = value.dtype == ir::DType::kInt64 || value.dtype == ir::DType::kInt32;
      if (!integer || !n || *n > kMaxShapeElements) return false;
    }
    const bool reads_shape_only = node.kind == ir::OpKind::kShape || node.kind == ir::OpKind::kSize;
    for (ir::ValueId u : a_.reads[p]) {
      if (Available(u)) continue;
      // Shape and Size read a tensor's shape, never worth copying the
      // tensor's producer for.
      if (reads_shape_only || !Recomputable(u)) return false;
    }
    memo_[v.index()] = true;
    return true;
  }

  // The producers an input `v` of a recomputed node needs copied (none when
  // the stage holds it), given Recomputable(v) or Available(v).
  void Collect(ir::ValueId v, std::vector<uint32_t>& chain) const {
    if (Available(v)) return;
    const size_t p = a_.graph->value(v).producer.index();
    chain.push_back(static_cast<uint32_t>(p));
    for (ir::ValueId u : a_.reads[p]) Collect(u, chain);
  }

  // A received value a stage computes itself: its producer, and every node
  // copied for it (the producer first).
  struct Root {
    uint32_t producer = 0;
    std::vector<uint32_t> chain;
  };

  const Analysis& a_;
  const std::vector<int32_t>& stage_of_;
  std::vector<std::vector<Root>> roots_;
  std::vector<std::vector<uint32_t>> copies_;
  int32_t stage_ = 0;
  int32_t device_ = 0;
  absl::flat_hash_set<uint32_t> available_;
  absl::flat_hash_map<uint32_t, bool> memo_;
};

absl::StatusOr<Stage> BuildStage(const Analysis& a, int32_t id, const StageContents& contents,
                                 const std::vector<int32_t>& stage_of,
                                 const ShapeRecompute& recompute) {
  const ir::Graph& graph = *a.graph;
  const onnx::GraphProto& source = a.source();
  Stage stage;
  stage.id = id;
  stage.device = contents.device;
  stage.level = contents.level;
  stage.phase = contents.phase;
  stage.file = absl::StrCat("stages/s", id, ".onnx");
  stage.proto = ModelShell(a.model->proto, absl::StrCat(source.name(), "_stage", id));
  onnx::GraphProto* g = stage.proto.mutable_graph();

  // The nodes: this stage's own, and a copy of each replicated node (a
  // Constant, an Identity or Cast of a weight) they read.
  std::vector<uint32_t> nodes = contents.nodes;
  for (uint32_t i : contents.nodes) {
    for (ir::ValueId v : a.reads[i]) {
      if (a.IsReplicatedProducer(v)) nodes.push_back(graph.value(v).producer.index());
    }
  }
  for (size_t j : contents.passed_outputs) {
    if (a.IsReplicatedProducer(graph.outputs()[j])) {
      nodes.push_back(graph.value(graph.outputs()[j]).producer.index());
    }
  }
  // The shape chains it computes itself (Note [Recomputed shapes]).
  const std::vector<uint32_t>& recomputed = recompute.copies(id);
  nodes.insert(nodes.end(), recomputed.begin(), recomputed.end());
  stage.recomputed.assign(recomputed.begin(), recomputed.end());
  // And what a copy reads of a chain of them (an Identity of a cast weight).
  for (size_t k = contents.nodes.size(); k < nodes.size(); ++k) {
    for (ir::ValueId v : a.reads[nodes[k]]) {
      if (a.IsReplicatedProducer(v)) nodes.push_back(graph.value(v).producer.index());
    }
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());

  absl::flat_hash_set<uint32_t> defined_here;
  std::vector<ir::ValueId> defined;
  for (uint32_t i : nodes) {
    *g->add_node() = SourceNode(a, i);
    ++stage.num_nodes;
    for (ir::ValueId v : graph.nodes()[i].outputs) {
      if (!v.valid()) continue;
      defined_here.insert(v.index());
      defined.push_back(v);
    }
  }

  // Inputs: graph inputs and weights from the source; values of other
  // stages, typed from the IR.
  std::vector<ir::ValueId> needed;
  std::vector<ir::ValueId> received;
  absl::flat_hash_set<uint32_t> received_set;
  std::vector<uint32_t> readers = contents.nodes;
  readers.insert(readers.end(), recomputed.begin(), recomputed.end());
  for (uint32_t i : readers) {
    for (ir::ValueId v : a.reads[i]) {
      if (defined_here.contains(v.index())) continue;
      const ir::Value& value = graph.value(v);
      if (value.kind == ir::ValueKind::kGraphInput || value.kind == ir::ValueKind::kInitializer) {
        needed.push_back(v);
      } else if (value.producer.valid() && value.type_kind != ir::TypeKind::kTensor) {
        // Levels keeps these inside one stage; a caller's own placement
        // that splits them ends here, with the value named.
        return absl::FailedPreconditionError(
            absl::StrCat("'", value.name, "' is not a tensor and must not cross between stages"));
      } else if (value.producer.valid() && received_set.insert(v.index()).second) {
        received.push_back(v);
        stage.after.push_back(stage_of[value.producer.index()]);
      }
    }
  }
  for (size_t j : contents.passed_outputs) {
    const ir::ValueId v = graph.outputs()[j];
    if (!graph.value(v).producer.valid()) needed.push_back(v);
  }
  // The weight a copied Identity or Cast reads (IsReplicable) comes with it.
  for (uint32_t i : nodes) {
    if (!a.replicated[i]) continue;
    for (ir::ValueId v : a.reads[i]) {
      if (graph.value(v).kind == ir::ValueKind::kInitializer) needed.push_back(v);
    }
  }
  AddSourceParts(a, std::move(needed), std::move(defined), g);
  for (ir::ValueId v : received) {
    absl::StatusOr<onnx::ValueInfoProto> info = BoundaryValueInfo(a, v);
    if (!info.ok()) return info.status();
    *g->add_input() = *std::move(info);
  }
  absl::flat_hash_set<std::string> initializer_names;
  for (const onnx::TensorProto& t : g->initializer()) initializer_names.insert(t.name());
  for (const onnx::ValueInfoProto& input : g->input()) {
    if (!initializer_names.contains(input.name())) stage.inputs.push_back(input.name());
  }

  // Outputs: what other stages read, and the graph outputs made here.
  auto add_output = [&](ir::ValueId v) -> absl::Status {
    const int32_t position = a.index.output[v.index()];
    if (position >= 0) {
      *g->add_output() = GraphOutputInfo(a, static_cast<size_t>(position));
    } else {
      absl::StatusOr<onnx::ValueInfoProto> info = BoundaryValueInfo(a, v);
      if (!info.ok()) return info.status();
      *g->add_output() = *std::move(info);
    }
    stage.outputs.push_back(graph.value(v).name);
    return absl::OkStatus();
  };
  const auto recomputes = [&](int32_t reader, ir::ValueId v) {
    return recompute.Recomputes(reader, v);
  };
  for (uint32_t i : contents.nodes) {
    for (ir::ValueId v : graph.nodes()[i].outputs) {
      if (!v.valid()) continue;
      if (!LeavesStage(a, stage_of, id, v, recomputes)) continue;
      if (absl::Status s = add_output(v); !s.ok()) return s;
    }
  }
  for (size_t j : contents.passed_outputs) {
    if (absl::Status s = add_output(graph.outputs()[j]); !s.ok()) return s;
  }
  // A stage whose results nobody reads (dead code in the source: values that
  // reach no graph output) still needs an output to be a model runtimes
  // accept, so its nodes' unread results become its outputs.
  if (stage.outputs.empty()) {
    for (uint32_t i : contents.nodes) {
      for (ir::ValueId v : graph.nodes()[i].outputs) {
        if (!v.valid() || !graph.value(v).consumers.empty()) continue;
        if (absl::Status s = add_output(v); !s.ok()) return s;
      }
    }
  }

  std::sort(stage.after.begin(), stage.after.end());
  stage.after.erase(std::unique(stage.after.begin(), stage.after.end()), stage.after.end());
  return stage;
}

}  // namespace

absl::StatusOr<std::vector<Stage>> BuildStages(const Analysis& a) {
  std::vector<int32_t> stage_of;
  absl::StatusOr<std::vector<StageContents>> grouped = GroupStages(a, stage_of);
  if (!grouped.ok()) return grouped.status();
  const std::vector<StageContents>& contents = *grouped;
  const ShapeRecompute recompute(a, contents, stage_of);
  std::vector<Stage> stages;
  stages.reserve(contents.size());
  for (size_t s = 0; s < contents.size(); ++s) {
    absl::StatusOr<Stage> stage =
        BuildStage(a, static_cast<int32_t>(s), contents[s], stage_of, recompute);
    if (!stage.ok()) return stage.status();
    stages.push_back(*std::move(stage));
  }
  return stages;
}

}  // namespace autopar::passes::partition_internal
