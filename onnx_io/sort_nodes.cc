#include "onnx_io/sort_nodes.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace autopar::onnx_io {
namespace {

// At most this many nodes of a cycle in the error line.
constexpr size_t kMaxCycleNodesShown = 8;

// The names a subgraph reads from enclosing scopes: used by its nodes (or
// their subgraphs) and not defined inside it.
void AddOuterNames(const onnx::GraphProto& body, absl::flat_hash_set<std::string>& names) {
  absl::flat_hash_set<std::string_view> defined;
  for (const onnx::ValueInfoProto& v : body.input()) defined.insert(v.name());
  for (const onnx::TensorProto& t : body.initializer()) defined.insert(t.name());
  for (const onnx::SparseTensorProto& t : body.sparse_initializer()) {
    defined.insert(t.values().name());
  }
  for (const onnx::NodeProto& n : body.node()) {
    for (const std::string& out : n.output()) defined.insert(out);
  }
  auto read = [&](const std::string& name) {
    if (!name.empty() && !defined.contains(name)) names.insert(name);
  };
  for (const onnx::NodeProto& n : body.node()) {
    for (const std::string& in : n.input()) read(in);
    for (const onnx::AttributeProto& a : n.attribute()) {
      absl::flat_hash_set<std::string> inner;
      if (a.has_g()) AddOuterNames(a.g(), inner);
      for (const onnx::GraphProto& g : a.graphs()) AddOuterNames(g, inner);
      for (const std::string& name : inner) read(name);
    }
  }
  for (const onnx::ValueInfoProto& v : body.output()) read(v.name());
}

// Everything node `n` reads: its inputs and its bodies' outer names.
std::vector<std::string> NamesRead(const onnx::NodeProto& n) {
  std::vector<std::string> names(n.input().begin(), n.input().end());
  absl::flat_hash_set<std::string> outer;
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.has_g()) AddOuterNames(a.g(), outer);
    for (const onnx::GraphProto& g : a.graphs()) AddOuterNames(g, outer);
  }
  std::vector<std::string> sorted_outer(outer.begin(), outer.end());
  std::sort(sorted_outer.begin(), sorted_outer.end());
  names.insert(names.end(), sorted_outer.begin(), sorted_outer.end());
  return names;
}

std::string Describe(const onnx::NodeProto& n) {
  std::string outputs = absl::StrJoin(n.output(), ", ", [](std::string* out, const std::string& s) {
    absl::StrAppend(out, "'", s, "'");
  });
  if (!n.name().empty()) return absl::StrCat("'", n.name(), "' (", n.op_type(), ")");
  return absl::StrCat(n.op_type(), " (output ", outputs, ")");
}

// The error for nodes left over by the sort: walks from one of them along
// unresolved reads until a node repeats, and names that loop.
absl::Status CycleError(const onnx::GraphProto& graph,
                        const std::vector<std::vector<int>>& producers_read,
                        const std::vector<int>& missing) {
  int start = -1;
  for (size_t i = 0; i < missing.size(); ++i) {
    if (missing[i] > 0) {
      start = static_cast<int>(i);
      break;
    }
  }
  std::vector<int> path;
  std::vector<int> position(missing.size(), -1);
  int at = start;
  while (position[at] < 0) {
    position[at] = static_cast<int>(path.size());
    path.push_back(at);
    int next = -1;
    for (int p : producers_read[at]) {
      if (missing[p] > 0) {
        next = p;
        break;
      }
    }
    at = next;  // a node waiting on something always waits on an unsorted node
  }
  // path[position[at]..] is the loop, each node reading the next one's
  // output; name it in data-flow order.
  std::vector<int> cycle(path.begin() + position[at], path.end());
  std::reverse(cycle.begin(), cycle.end());
  std::vector<std::string> shown;
  for (size_t i = 0; i < cycle.size() && i < kMaxCycleNodesShown; ++i) {
    shown.push_back(Describe(graph.node(cycle[i])));
  }
  if (cycle.size() > kMaxCycleNodesShown) {
    shown.push_back(absl::StrCat("... ", cycle.size() - kMaxCycleNodesShown, " more"));
  }
  shown.push_back(Describe(graph.node(cycle[0])));
  return absl::InvalidArgumentError(absl::StrCat(
      "the graph", graph.name().empty() ? "" : " '", graph.name(), graph.name().empty() ? "" : "'",
      " has a cycle through nodes ", absl::StrJoin(shown, " -> ")));
}

absl::Status SortList(onnx::GraphProto& graph) {
  const int n = graph.node_size();
  absl::flat_hash_map<std::string_view, int> producer;
  producer.reserve(n);
  for (int i = 0; i < n; ++i) {
    for (const std::string& out : graph.node(i).output()) {
      if (!out.empty()) producer.try_emplace(out, i);
    }
  }
  // For each node, the (distinct) nodes of this list whose outputs it reads.
  std::vector<std::vector<int>> reads(n);
  bool sorted = true;
  for (int i = 0; i < n; ++i) {
    const onnx::NodeProto& node = graph.node(i);
    const bool has_body =
        std::any_of(node.attribute().begin(), node.attribute().end(),
                    [](const onnx::AttributeProto& a) { return a.has_g() || a.graphs_size() > 0; });
    std::vector<std::string> names =
        has_body ? NamesRead(node)
                 : std::vector<std::string>(node.input().begin(), node.input().end());
    for (const std::string& name : names) {
      auto it = producer.find(name);
      if (it == producer.end()) continue;
      if (it->second >= i) sorted = false;
      reads[i].push_back(it->second);
    }
    std::sort(reads[i].begin(), reads[i].end());
    reads[i].erase(std::unique(reads[i].begin(), reads[i].end()), reads[i].end());
  }
  if (sorted) return absl::OkStatus();

  // Kahn's algorithm, taking the ready node with the smallest source index.
  std::vector<int> missing(n);
  std::vector<std::vector<int>> readers(n);
  for (int i = 0; i < n; ++i) {
    missing[i] = static_cast<int>(reads[i].size());
    for (int p : reads[i]) readers[p].push_back(i);
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) {
    if (missing[i] == 0) ready.push(i);
  }
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int r : readers[i]) {
      if (--missing[r] == 0) ready.push(r);
    }
  }
  if (static_cast<int>(order.size()) < n) return CycleError(graph, reads, missing);

  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  nodes.Swap(graph.mutable_node());
  for (int i : order) graph.add_node()->Swap(nodes.Mutable(i));
  return absl::OkStatus();
}

}  // namespace

absl::Status SortNodes(onnx::GraphProto& graph) {
  for (onnx::NodeProto& node : *graph.mutable_node()) {
    for (onnx::AttributeProto& a : *node.mutable_attribute()) {
      if (a.has_g()) {
        if (absl::Status s = SortNodes(*a.mutable_g()); !s.ok()) return s;
      }
      for (onnx::GraphProto& g : *a.mutable_graphs()) {
        if (absl::Status s = SortNodes(g); !s.ok()) return s;
      }
    }
  }
  return SortList(graph);
}

}  // namespace autopar::onnx_io
