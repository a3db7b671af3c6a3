// Inlining of Ifs whose condition is known; see Note [If inlining] in
// passes/inline_if.h. Works on the ONNX proto, since the written models copy
// the source's NodeProtos (the IR has no proto of its own).
#include "passes/inline_if.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "onnx_io/sort_nodes.h"

namespace autopar::passes {
namespace {

using NameSet = absl::flat_hash_set<std::string>;
using NameMap = absl::flat_hash_map<std::string, std::string>;

void CollectNames(const onnx::GraphProto& g, NameSet& names);

// Every name a node mentions, in its own fields and in its bodies.
void CollectNodeNames(const onnx::NodeProto& node, NameSet& names) {
  for (const std::string& n : node.input()) names.insert(n);
  for (const std::string& n : node.output()) names.insert(n);
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.has_g()) CollectNames(a.g(), names);
    for (const onnx::GraphProto& body : a.graphs()) CollectNames(body, names);
  }
}

// Every name `g` and its bodies mention (defined or read).
void CollectNames(const onnx::GraphProto& g, NameSet& names) {
  for (const onnx::ValueInfoProto& v : g.input()) names.insert(v.name());
  for (const onnx::ValueInfoProto& v : g.output()) names.insert(v.name());
  for (const onnx::ValueInfoProto& v : g.value_info()) names.insert(v.name());
  for (const onnx::TensorProto& t : g.initializer()) names.insert(t.name());
  for (const onnx::NodeProto& node : g.node()) CollectNodeNames(node, names);
}

// Names `g` defines (initializers, node outputs) and, in nested bodies, also
// their inputs: what renaming may touch without reaching the outer scope.
void CollectDefined(const onnx::GraphProto& g, bool nested, NameSet& defined) {
  if (nested) {
    for (const onnx::ValueInfoProto& v : g.input()) defined.insert(v.name());
  }
  for (const onnx::TensorProto& t : g.initializer()) defined.insert(t.name());
  for (const onnx::NodeProto& node : g.node()) {
    for (const std::string& n : node.output()) {
      if (!n.empty()) defined.insert(n);
    }
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.has_g()) CollectDefined(a.g(), true, defined);
      for (const onnx::GraphProto& body : a.graphs()) CollectDefined(body, true, defined);
    }
  }
}

void Rename(const NameMap& map, std::string* name) {
  if (auto it = map.find(*name); it != map.end()) *name = it->second;
}

void RenameGraph(const NameMap& map, onnx::GraphProto& g);

void RenameNode(const NameMap& map, onnx::NodeProto& node) {
  for (std::string& n : *node.mutable_input()) Rename(map, &n);
  for (std::string& n : *node.mutable_output()) Rename(map, &n);
  for (onnx::AttributeProto& a : *node.mutable_attribute()) {
    if (a.has_g()) RenameGraph(map, *a.mutable_g());
    for (onnx::GraphProto& body : *a.mutable_graphs()) RenameGraph(map, body);
  }
}

void RenameGraph(const NameMap& map, onnx::GraphProto& g) {
  for (onnx::ValueInfoProto& v : *g.mutable_input()) Rename(map, v.mutable_name());
  for (onnx::ValueInfoProto& v : *g.mutable_output()) Rename(map, v.mutable_name());
  for (onnx::ValueInfoProto& v : *g.mutable_value_info()) Rename(map, v.mutable_name());
  for (onnx::TensorProto& t : *g.mutable_initializer()) Rename(map, t.mutable_name());
  for (onnx::NodeProto& node : *g.mutable_node()) RenameNode(map, node);
}

// `base`, or base_inl<k> for the first k that is not taken; marks it taken.
std::string Unique(const std::string& base, NameSet& taken) {
  std::string name = base;
  for (int k = 1; taken.contains(name); ++k) name = absl::StrCat(base, "_inl", k);
  taken.insert(name);
  return name;
}

const onnx::GraphProto* Branch(const onnx::NodeProto& node, bool then_branch) {
  const char* wanted = then_branch ? "then_branch" : "else_branch";
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == wanted && a.has_g()) return &a.g();
  }
  return nullptr;
}

// A branch whose weights we cannot move into the main graph as they are.
bool Movable(const onnx::GraphProto& branch) {
  if (branch.sparse_initializer_size() > 0) return false;
  return std::none_of(branch.initializer().begin(), branch.initializer().end(),
                      [](const onnx::TensorProto& t) { return onnx_io::IsExternal(t); });
}

// Replaces main.node(index), an If, by its branch (Note [If inlining]).
void InlineOne(onnx::GraphProto& main, int index, const onnx::GraphProto& branch) {
  const onnx::NodeProto if_node = main.node(index);
  NameSet used;  // names the rest of the model mentions
  NameSet node_names;
  for (const onnx::ValueInfoProto& v : main.input()) used.insert(v.name());
  for (const onnx::ValueInfoProto& v : main.output()) used.insert(v.name());
  for (const onnx::ValueInfoProto& v : main.value_info()) used.insert(v.name());
  for (const onnx::TensorProto& t : main.initializer()) used.insert(t.name());
  for (int i = 0; i < main.node_size(); ++i) {
    if (i == index) continue;  // its outputs are free once it is gone
    CollectNodeNames(main.node(i), used);
    node_names.insert(main.node(i).name());
  }
  // The If's outputs are taken too: a branch value of the same name that is
  // not the matching output must not end up defined twice.
  for (const std::string& n : if_node.output()) used.insert(n);
  NameSet defined;
  CollectDefined(branch, false, defined);
  std::vector<std::string> sorted(defined.begin(), defined.end());
  std::sort(sorted.begin(), sorted.end());  // deterministic new names
  NameSet taken = used;
  taken.insert(defined.begin(), defined.end());
  NameMap map;
  for (const std::string& n : sorted) {
    if (used.contains(n)) map[n] = Unique(n, taken);
  }
  // Branch outputs: rename the producing node's output to the If's output
  // where that is a plain one-to-one rename, else an Identity.
  NameSet top_level_outputs;
  for (const onnx::NodeProto& node : branch.node()) {
    for (const std::string& n : node.output()) top_level_outputs.insert(n);
  }
  absl::flat_hash_map<std::string, int> times_output;
  for (const onnx::ValueInfoProto& v : branch.output()) ++times_output[v.name()];
  std::vector<onnx::NodeProto> identities;
  for (int i = 0; i < branch.output_size() && i < if_node.output_size(); ++i) {
    const std::string& from = branch.output(i).name();
    const std::string& to = if_node.output(i);
    if (to.empty()) continue;
    if (top_level_outputs.contains(from) && times_output[from] == 1) {
      map[from] = to;
      continue;
    }
    onnx::NodeProto identity;
    identity.set_op_type("Identity");
    identity.set_name(Unique(absl::StrCat(if_node.name(), "_output", i), node_names));
    identity.add_input(from);  // renamed with the branch below
    identity.add_output(to);
    identities.push_back(std::move(identity));
  }

  std::vector<onnx::NodeProto> inlined;
  for (const onnx::NodeProto& source : branch.node()) {
    onnx::NodeProto node = source;
    RenameNode(map, node);
    if (node.name().empty() || node_names.contains(node.name())) {
      node.set_name(Unique(
          node.name().empty() ? absl::StrCat(if_node.name(), "_", node.op_type()) : node.name(),
          node_names));
    } else {
      node_names.insert(node.name());
    }
    inlined.push_back(std::move(node));
  }
  for (onnx::NodeProto& identity : identities) {
    Rename(map, identity.mutable_input(0));
    inlined.push_back(std::move(identity));
  }
  for (const onnx::TensorProto& t : branch.initializer()) {
    onnx::TensorProto* moved = main.add_initializer();
    *moved = t;
    Rename(map, moved->mutable_name());
  }
  NameSet typed;  // one value_info per name
  for (const onnx::ValueInfoProto& v : main.value_info()) typed.insert(v.name());
  for (const onnx::ValueInfoProto& v : main.output()) typed.insert(v.name());
  for (const onnx::ValueInfoProto& v : branch.value_info()) {
    onnx::ValueInfoProto info = v;
    Rename(map, info.mutable_name());
    if (typed.insert(info.name()).second) *main.add_value_info() = std::move(info);
  }

  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < main.node_size(); ++i) {
    if (i != index) {
      *nodes.Add() = main.node(i);
      continue;
    }
    for (onnx::NodeProto& node : inlined) *nodes.Add() = std::move(node);
  }
  main.mutable_node()->Swap(&nodes);
}

// Removes the main-graph nodes that only fed the inlined conditions: nodes
// whose every output nothing reads any more, starting from `names`.
void RemoveDeadProducers(onnx::GraphProto& main, std::vector<std::string> names) {
  while (!names.empty()) {
    NameSet read;
    for (const onnx::ValueInfoProto& v : main.output()) read.insert(v.name());
    for (const onnx::NodeProto& node : main.node()) {
      NameSet mentioned;
      CollectNodeNames(node, mentioned);
      for (const std::string& o : node.output()) mentioned.erase(o);
      read.insert(mentioned.begin(), mentioned.end());
    }
    std::vector<std::string> next;
    for (const std::string& name : names) {
      if (name.empty() || read.contains(name)) continue;
      for (int i = 0; i < main.node_size(); ++i) {
        const onnx::NodeProto& node = main.node(i);
        if (std::find(node.output().begin(), node.output().end(), name) == node.output().end())
          continue;
        const bool dead = std::none_of(node.output().begin(), node.output().end(),
                                       [&read](const std::string& o) { return read.contains(o); });
        if (!dead) break;
        next.insert(next.end(), node.input().begin(), node.input().end());
        main.mutable_node()->DeleteSubrange(i, 1);
        break;
      }
    }
    names = std::move(next);
  }
}

}  // namespace

absl::StatusOr<int> InlineKnownIfs(onnx_io::Model& model, const ir::Graph& graph) {
  onnx::GraphProto& main = *model.proto.mutable_graph();
  struct Known {
    int proto_index;
    bool cond;
  };
  std::vector<Known> known;
  for (const ir::Node& node : graph.nodes()) {
    if (node.kind != ir::OpKind::kIf || node.inputs.empty() || !node.inputs[0].valid()) continue;
    const ir::Value& cond = graph.value(node.inputs[0]);
    if (!cond.int_data || cond.int_data->size() != 1) continue;
    if (node.proto_index < 0 || node.proto_index >= main.node_size()) continue;
    known.push_back({node.proto_index, (*cond.int_data)[0] != 0});
  }
  // From the last, so that the indices still to do stay valid.
  std::sort(known.begin(), known.end(),
            [](const Known& a, const Known& b) { return a.proto_index > b.proto_index; });
  int inlined = 0;
  std::vector<std::string> conditions;
  for (const Known& k : known) {
    const onnx::NodeProto& if_node = main.node(k.proto_index);
    const onnx::GraphProto* branch = Branch(if_node, k.cond);
    if (branch == nullptr || !Movable(*branch)) continue;
    const onnx::GraphProto taken = *branch;  // InlineOne replaces the node that owns it
    conditions.push_back(if_node.input(0));
    InlineOne(main, k.proto_index, taken);
    ++inlined;
  }
  if (inlined == 0) return 0;
  RemoveDeadProducers(main, std::move(conditions));
  if (absl::Status s = onnx_io::SortNodes(main); !s.ok()) return s;
  return inlined;
}

}  // namespace autopar::passes
