#include "ir/graph.h"

#include <algorithm>
#include <functional>
#include <queue>

#include "absl/strings/str_cat.h"

namespace autopar::ir {

std::optional<int64_t> Value::SizeBytes() const {
  if (type_kind != TypeKind::kTensor) return std::nullopt;
  std::optional<int64_t> elements = shape.NumElements();
  if (!elements || dtype == DType::kUndefined) return std::nullopt;
  return CheckedMul(*elements, DTypeSizeBytes(dtype));
}

const Attribute* Node::FindAttribute(std::string_view attr_name) const {
  for (const Attribute& a : attributes) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

int64_t Node::GetInt(std::string_view attr_name, int64_t default_value) const {
  const Attribute* a = FindAttribute(attr_name);
  return a != nullptr && a->type == AttributeType::kInt ? a->i : default_value;
}

float Node::GetFloat(std::string_view attr_name, float default_value) const {
  const Attribute* a = FindAttribute(attr_name);
  return a != nullptr && a->type == AttributeType::kFloat ? a->f : default_value;
}

std::string Node::GetString(std::string_view attr_name, std::string_view default_value) const {
  const Attribute* a = FindAttribute(attr_name);
  return std::string(a != nullptr && a->type == AttributeType::kString ? a->s : default_value);
}

std::vector<int64_t> Node::GetInts(std::string_view attr_name) const {
  const Attribute* a = FindAttribute(attr_name);
  return a != nullptr && a->type == AttributeType::kInts ? a->ints : std::vector<int64_t>{};
}

ValueId Graph::AddValue(Value value) {
  ValueId id(static_cast<uint32_t>(values_.size()));
  value_by_name_.try_emplace(value.name, id);
  values_.push_back(std::move(value));
  return id;
}

NodeId Graph::AddNode(Node node) {
  NodeId id(static_cast<uint32_t>(nodes_.size()));
  nodes_.push_back(std::move(node));
  return id;
}

void Graph::SetOpsetImport(std::string domain, int64_t version) {
  if (domain == "ai.onnx") domain.clear();
  opset_imports_[std::move(domain)] = version;
}

std::optional<ValueId> Graph::FindValue(std::string_view value_name) const {
  auto it = value_by_name_.find(absl::string_view(value_name.data(), value_name.size()));
  if (it == value_by_name_.end()) return std::nullopt;
  return it->second;
}

int64_t Graph::NumSubgraphNodes() const {
  int64_t count = 0;
  for (const Node& n : nodes_) {
    for (const Subgraph& s : n.subgraphs) {
      count += static_cast<int64_t>(s.body->num_nodes()) + s.body->NumSubgraphNodes();
    }
  }
  return count;
}

namespace {

// Calls `fn(value)` for every value the node reads: explicit inputs and
// captured outer values.
template <typename Fn>
void ForEachRead(const Node& node, Fn fn) {
  for (ValueId v : node.inputs) {
    if (v.valid()) fn(v);
  }
  for (ValueId v : node.captured) fn(v);
}

}  // namespace

absl::Status Graph::Finalize() {
  if (value_by_name_.size() != values_.size()) {
    for (size_t i = 0; i < values_.size(); ++i) {
      if (value_by_name_.at(values_[i].name).index() != i) {
        return absl::InvalidArgumentError(
            absl::StrCat("value name '", values_[i].name, "' is defined twice"));
      }
    }
  }

  // 1. Producer of every value, in the source node numbering.
  const size_t n = nodes_.size();
  std::vector<uint32_t> producer(values_.size(), NodeId::kInvalid);
  for (uint32_t i = 0; i < n; ++i) {
    for (ValueId v : nodes_[i].outputs) {
      if (!v.valid()) continue;
      if (producer[v.index()] != NodeId::kInvalid) {
        return absl::InvalidArgumentError(
            absl::StrCat("value '", values_[v.index()].name, "' is produced by both node '",
                         nodes_[producer[v.index()]].name, "' and node '", nodes_[i].name, "'"));
      }
      producer[v.index()] = i;
    }
  }

  // 2. Kahn's algorithm; among ready nodes the lowest source index goes first,
  //    so an already sorted node list keeps its order.
  std::vector<uint32_t> pending(n, 0);
  std::vector<std::vector<uint32_t>> successors(n);
  for (uint32_t i = 0; i < n; ++i) {
    ForEachRead(nodes_[i], [&](ValueId v) {
      uint32_t p = producer[v.index()];
      if (p == NodeId::kInvalid) return;
      successors[p].push_back(i);
      ++pending[i];
    });
  }
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  for (uint32_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<uint32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    uint32_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (uint32_t s : successors[i]) {
      if (--pending[s] == 0) ready.push(s);
    }
  }
  if (order.size() != n) {
    // Every node left has a pending input; walking back along pending
    // producers must revisit a node, which lies on a cycle.
    uint32_t at = 0;
    while (pending[at] == 0) ++at;
    std::vector<bool> seen(n, false);
    while (!seen[at]) {
      seen[at] = true;
      uint32_t next = at;
      ForEachRead(nodes_[at], [&](ValueId v) {
        uint32_t p = producer[v.index()];
        if (next == at && p != NodeId::kInvalid && pending[p] != 0) next = p;
      });
      at = next;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "the graph has a cycle through node '", nodes_[at].name, "' (", nodes_[at].op_type, ")"));
  }

  // 3. Permute into topological order and link producers and consumers.
  std::vector<Node> sorted;
  sorted.reserve(n);
  for (uint32_t i : order) sorted.push_back(std::move(nodes_[i]));
  nodes_ = std::move(sorted);
  for (Value& v : values_) {
    v.producer = NodeId();
    v.consumers.clear();
  }
  for (uint32_t i = 0; i < n; ++i) {
    NodeId id(i);
    for (ValueId v : nodes_[i].outputs) {
      if (v.valid()) values_[v.index()].producer = id;
    }
    ForEachRead(nodes_[i], [&](ValueId v) {
      std::vector<NodeId>& consumers = values_[v.index()].consumers;
      if (consumers.empty() || consumers.back() != id) consumers.push_back(id);
    });
  }
  return absl::OkStatus();
}

}  // namespace autopar::ir
