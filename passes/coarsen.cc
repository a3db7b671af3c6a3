#include "passes/coarsen.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>

#include "absl/strings/str_cat.h"

namespace autopar::passes {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

class UnionFind {
 public:
  explicit UnionFind(uint32_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  uint32_t Find(uint32_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  // Makes `into`'s root the root of both.
  void Merge(uint32_t from, uint32_t into) { parent_[Find(from)] = Find(into); }

 private:
  std::vector<uint32_t> parent_;
};

// Running totals of a group, kept at its root.
struct Group {
  double compute_us = 0;
  int64_t memory_bytes = 0;  // weights + workspace (an upper bound: blocks may repeat)
};

// The distinct groups among a node's predecessors (or successors).
template <typename Edges, typename End>
uint32_t OnlyNeighbourGroup(const costmodel::CostGraph& g, UnionFind& groups, Edges edges,
                            End end) {
  uint32_t only = kNone;
  for (uint32_t e : edges) {
    uint32_t group = groups.Find(end(g, e));
    if (only == kNone) {
      only = group;
    } else if (only != group) {
      return kNone;
    }
  }
  return only;
}

// Rule 0: each node's representative in the strongly connected components of
// the node graph plus, for every group of `groups`, edges from each member to
// its root and back. Two nodes of one group are then in one component, and so
// is every node on a path between them: merging the components leaves the
// quotient graph acyclic. Iterative Tarjan, so deep graphs cannot overflow
// the stack.
std::vector<uint32_t> ColocationComponents(const costmodel::CostGraph& g, UnionFind& groups) {
  const uint32_t n = g.num_units();
  std::vector<std::vector<uint32_t>> extra(n);  // root -> its other members
  for (uint32_t u = 0; u < n; ++u) {
    const uint32_t r = groups.Find(u);
    if (r != u) extra[r].push_back(u);
  }
  auto successor_count = [&](uint32_t u) {
    const uint32_t r = groups.Find(u);
    return g.out_edges(u).size() + extra[u].size() + (r != u ? 1 : 0);
  };
  auto successor = [&](uint32_t u, size_t i) -> uint32_t {
    const auto out = g.out_edges(u);
    if (i < out.size()) return g.edge_dst(out[i]);
    i -= out.size();
    if (i < extra[u].size()) return extra[u][i];
    return groups.Find(u);
  };
  std::vector<uint32_t> index(n, kNone), low(n, 0), component(n, kNone);
  std::vector<uint32_t> stack;
  std::vector<std::pair<uint32_t, size_t>> calls;  // (node, next successor)
  uint32_t next_index = 0;
  for (uint32_t start = 0; start < n; ++start) {
    if (index[start] != kNone) continue;
    calls.emplace_back(start, 0);
    index[start] = low[start] = next_index++;
    stack.push_back(start);
    while (!calls.empty()) {
      auto& [u, i] = calls.back();
      if (i < successor_count(u)) {
        const uint32_t v = successor(u, i++);
        if (index[v] == kNone) {
          index[v] = low[v] = next_index++;
          stack.push_back(v);
          calls.emplace_back(v, 0);
        } else if (component[v] == kNone) {
          low[u] = std::min(low[u], index[v]);
        }
        continue;
      }
      const uint32_t done = u;
      calls.pop_back();
      if (!calls.empty()) low[calls.back().first] = std::min(low[calls.back().first], low[done]);
      if (low[done] != index[done]) continue;
      uint32_t member = kNone;
      do {
        member = stack.back();
        stack.pop_back();
        component[member] = done;
      } while (member != done);
    }
  }
  return component;
}

}  // namespace

absl::StatusOr<Coarsening> Coarsen(const costmodel::CostGraph& g, const costmodel::Cluster& cluster,
                                   const CoarsenOptions& options) {
  const uint32_t n = g.num_units();
  int64_t max_memory = 0;
  for (const costmodel::ClusterDevice& d : cluster.devices)
    max_memory = std::max(max_memory, d.memory_bytes);
  double total = 0;
  double largest = 0;
  for (uint32_t u = 0; u < n; ++u) {
    total += g.compute_us(u, 0);
    largest = std::max(largest, g.compute_us(u, 0));
  }
  const double cap = std::max(largest, total / std::max(1, options.target_units));

  UnionFind groups(n);
  std::vector<Group> group(n);
  for (uint32_t u = 0; u < n; ++u) {
    group[u] = {g.compute_us(u, 0), g.unit_param_bytes(u) + g.temp_bytes(u)};
  }
  auto merge = [&](uint32_t node, uint32_t into_group) {
    uint32_t from = groups.Find(node);
    if (from == into_group) return;
    Group merged{group[from].compute_us + group[into_group].compute_us,
                 group[from].memory_bytes + group[into_group].memory_bytes};
    groups.Merge(from, into_group);
    group[groups.Find(into_group)] = merged;
  };
  auto fits = [&](uint32_t a, uint32_t b) {
    return group[groups.Find(a)].memory_bytes + group[groups.Find(b)].memory_bytes <= max_memory;
  };
  // 0. Nodes that must share a device, with every node between them.
  if (!options.colocated.empty()) {
    UnionFind colocated(n);
    for (const auto& [a, b] : options.colocated) {
      if (a >= n || b >= n) {
        return absl::InvalidArgumentError(
            absl::StrCat("colocated nodes ", a, " and ", b, " are not nodes of the graph"));
      }
      colocated.Merge(b, a);
    }
    const std::vector<uint32_t> component = ColocationComponents(g, colocated);
    for (uint32_t u = 0; u < n; ++u) merge(u, groups.Find(component[u]));
  }
  // Progress every few thousand nodes: a callback per node would cost more
  // than the rule it reports on.
  const int64_t total_work = 3 * static_cast<int64_t>(n);
  auto progress = [&](int64_t done) {
    if (options.on_progress && (done % 4096 == 0 || done == total_work))
      options.on_progress(done, total_work);
  };
  auto dst_of = [](const costmodel::CostGraph& graph, uint32_t e) { return graph.edge_dst(e); };

  // 1. Negligible nodes join their only successor (reverse order, so whole
  //    shape-computation chains fold into the node that uses them).
  for (uint32_t u = n; u-- > 0;) {
    progress(n - u);
    const auto outputs = static_cast<int64_t>(std::max<size_t>(1, g.outputs(u).size()));
    bool tiny_outputs = g.output_bytes(u) <= options.negligible_output_bytes * outputs;
    bool negligible = g.unit_param_bytes(u) == 0 && (tiny_outputs || g.compute_us(u, 0) == 0);
    if (!negligible) continue;
    if (g.out_edges(u).empty()) {
      // Isolated zero-cost nodes (Constant weights have no tensor edges).
      if (g.in_edges(u).empty() && g.compute_us(u, 0) == 0 && n > 1)
        merge(u, groups.Find(u + 1 < n ? u + 1 : u - 1));
      continue;
    }
    uint32_t successor = OnlyNeighbourGroup(g, groups, g.out_edges(u), dst_of);
    if (successor != kNone && fits(u, successor)) merge(u, successor);
  }
  // 2. A group whose predecessors are all in one other group joins it, under
  //    the cap. The whole group moves, so every member's inputs count, not
  //    only one node's: a rule-1 group {shape node, consumer} whose consumer
  //    also reads a tensor from elsewhere must not follow the shape node's
  //    producer, or the unit graph gets a cycle. Each rule-1 group is judged
  //    once, at its last member in topological order (rule-2 merges only ever
  //    grow the group they merge into, whose members all come earlier).
  std::vector<uint32_t> member_start(n + 1, 0);  // rule-1 groups as CSR by root
  std::vector<uint32_t> members_by_root(n);
  std::vector<uint32_t> last_member(n, 0);
  for (uint32_t u = 0; u < n; ++u) {
    const uint32_t r = groups.Find(u);
    ++member_start[r + 1];
    last_member[r] = u;
  }
  std::partial_sum(member_start.begin(), member_start.end(), member_start.begin());
  {
    std::vector<uint32_t> fill(member_start.begin(), member_start.end() - 1);
    for (uint32_t u = 0; u < n; ++u) members_by_root[fill[groups.Find(u)]++] = u;
  }
  std::vector<uint32_t> root_after_rule1(n);
  for (uint32_t u = 0; u < n; ++u) root_after_rule1[u] = groups.Find(u);
  for (uint32_t u = 0; u < n; ++u) {
    progress(int64_t{n} + u + 1);
    const uint32_t r = root_after_rule1[u];
    if (last_member[r] != u) continue;
    uint32_t own = groups.Find(u);
    uint32_t predecessor = kNone;
    bool one_predecessor = true;
    for (uint32_t i = member_start[r]; i < member_start[r + 1] && one_predecessor; ++i) {
      for (uint32_t e : g.in_edges(members_by_root[i])) {
        const uint32_t from = groups.Find(g.edge_src(e));
        if (from == own) continue;
        if (predecessor == kNone) predecessor = from;
        one_predecessor = predecessor == from;
        if (!one_predecessor) break;
      }
    }
    if (!one_predecessor || predecessor == kNone) continue;
    if (group[own].compute_us + group[predecessor].compute_us > cap) continue;
    if (!fits(u, predecessor)) continue;
    merge(u, predecessor);
  }

  // 3. Number the groups in a topological order of the quotient graph (Kahn,
  //    lowest first node first).
  std::vector<uint32_t> root_index(n, kNone);
  std::vector<uint32_t> first_node;
  for (uint32_t u = 0; u < n; ++u) {
    uint32_t r = groups.Find(u);
    if (root_index[r] == kNone) {
      root_index[r] = static_cast<uint32_t>(first_node.size());
      first_node.push_back(u);
    }
  }
  const auto m = static_cast<uint32_t>(first_node.size());
  std::vector<uint32_t> group_of(n);
  for (uint32_t u = 0; u < n; ++u) group_of[u] = root_index[groups.Find(u)];
  std::vector<std::vector<uint32_t>> successors(m);
  std::vector<uint32_t> pending(m, 0);
  for (uint32_t e = 0; e < g.num_edges(); ++e) {
    uint32_t a = group_of[g.edge_src(e)];
    uint32_t b = group_of[g.edge_dst(e)];
    if (a != b) successors[a].push_back(b);
  }
  for (std::vector<uint32_t>& s : successors) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    for (uint32_t b : s) ++pending[b];
  }
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  for (uint32_t a = 0; a < m; ++a) {
    if (pending[a] == 0) ready.push(a);
  }
  std::vector<uint32_t> unit_of_group(m, kNone);
  uint32_t next_unit = 0;
  while (!ready.empty()) {
    uint32_t a = ready.top();
    ready.pop();
    unit_of_group[a] = next_unit++;
    for (uint32_t b : successors[a]) {
      if (--pending[b] == 0) ready.push(b);
    }
  }
  if (next_unit != m) return absl::InternalError("coarsening produced a cycle");

  Coarsening out;
  out.unit_of_node.resize(n);
  for (uint32_t u = 0; u < n; ++u) out.unit_of_node[u] = unit_of_group[group_of[u]];

  // 4. The unit-level graph.
  std::vector<std::vector<uint32_t>> members(m);
  for (uint32_t u = 0; u < n; ++u) members[out.unit_of_node[u]].push_back(u);
  costmodel::CostGraph::Builder builder(g.num_device_kinds());
  for (uint32_t p = 0; p < g.num_params(); ++p) builder.AddParameter(g.param_bytes(p));
  int64_t nodes_built = 0;
  for (uint32_t unit = 0; unit < m; ++unit) {
    costmodel::CostGraph::UnitSpec spec;
    const std::vector<uint32_t>& nodes = members[unit];
    // Reported per unit: a node count that passes a multiple of the stride
    // inside a unit still shows, at the unit's end.
    const int64_t before = nodes_built;
    nodes_built += static_cast<int64_t>(nodes.size());
    if (options.on_progress && (nodes_built / 4096 != before / 4096 || unit + 1 == m))
      options.on_progress(2 * int64_t{n} + nodes_built, total_work);
    spec.name = g.name(nodes.front());
    spec.op = g.op(nodes.front());
    if (nodes.size() > 1) absl::StrAppend(&spec.name, " +", nodes.size() - 1);
    spec.compute_us.assign(g.num_device_kinds(), 0);
    for (uint32_t u : nodes) {
      for (int k = 0; k < g.num_device_kinds(); ++k) spec.compute_us[k] += g.compute_us(u, k);
      for (uint32_t p : g.params(u)) {
        if (std::find(spec.params.begin(), spec.params.end(), p) == spec.params.end())
          spec.params.push_back(p);
      }
      // Members run one after another: the workspace is the largest member's
      // workspace plus its outputs that stay inside the unit.
      int64_t internal = 0;
      for (uint32_t t : g.outputs(u)) {
        bool leaves = g.tensor_is_graph_output(t);
        for (uint32_t e : g.tensor_uses(t)) leaves |= out.unit_of_node[g.edge_dst(e)] != unit;
        if (!leaves) internal += g.tensor_bytes(t);
      }
      spec.temp_bytes = std::max(spec.temp_bytes, g.temp_bytes(u) + internal);
      spec.flops += g.flops(u);
    }
    builder.AddUnit(std::move(spec));
  }
  for (uint32_t t = 0; t < g.num_tensors(); ++t) {
    const uint32_t unit = out.unit_of_node[g.tensor_producer(t)];
    std::vector<uint32_t> readers;
    for (uint32_t e : g.tensor_uses(t)) {
      uint32_t reader = out.unit_of_node[g.edge_dst(e)];
      if (reader != unit) readers.push_back(reader);
    }
    if (readers.empty() && !g.tensor_is_graph_output(t)) continue;
    uint32_t tensor = builder.AddTensor({.name = g.tensor_name(t),
                                         .producer = unit,
                                         .bytes = g.tensor_bytes(t),
                                         .is_graph_output = g.tensor_is_graph_output(t)});
    for (uint32_t reader : readers) builder.AddUse(tensor, reader);
  }
  absl::StatusOr<costmodel::CostGraph> units = std::move(builder).Build();
  if (!units.ok()) return units.status();
  out.graph = *std::move(units);
  return out;
}

costmodel::Placement ExpandPlacement(const Coarsening& coarsening,
                                     const costmodel::Placement& units) {
  costmodel::Placement nodes;
  nodes.device.reserve(coarsening.unit_of_node.size());
  for (uint32_t unit : coarsening.unit_of_node) nodes.device.push_back(units.device[unit]);
  if (!units.priority.empty()) {
    for (uint32_t unit : coarsening.unit_of_node) nodes.priority.push_back(units.priority[unit]);
  }
  return nodes;
}

}  // namespace autopar::passes
