// Synthetic cost graphs of the shapes real models have, at any size, for the
// benchmarks and the search tests: wide layered DAGs, ResNet-like chains with
// skips, transformer stacks and Inception-like branchy blocks. Deterministic
// for a given seed.
#ifndef AUTOPAR_TOOLS_BENCH_GRAPH_FAMILIES_H_
#define AUTOPAR_TOOLS_BENCH_GRAPH_FAMILIES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cost_graph.h"

namespace autopar::bench {

enum class GraphFamily { kLayeredDag, kResNetChain, kTransformerStack, kInceptionBlocks };

/// "layered", "resnet", "transformer", "inception".
std::string GraphFamilyName(GraphFamily family);
std::vector<GraphFamily> AllGraphFamilies();

/// A graph of about `units` units (exactly `units` for the layered DAG), with
/// compute times for `device_kinds` kinds (kind k is (1 + k)× slower).
costmodel::CostGraph MakeGraph(GraphFamily family, uint32_t units, uint64_t seed,
                               int device_kinds = 1);

}  // namespace autopar::bench

#endif  // AUTOPAR_TOOLS_BENCH_GRAPH_FAMILIES_H_
