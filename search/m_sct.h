// m-SCT, Baechi's memory-constrained Small Communication Time placer (Jeon et
// al., "Baechi: Fast Device Placement of Machine Learning Graphs", SoCC 2020,
// after Hanen and Munier, "An approximation algorithm for scheduling
// dependent tasks on m processors with small communication delays", 1995).
//
// SCT is ETF (m_etf.h) with favourite children: every unit names at most one
// child that should run right after it on its device, so that the tensor
// between them never crosses a link; every unit is the favourite of at most
// one parent. Hanen and Munier pick the favourites by rounding the LP
// relaxation of the scheduling integer program, whose constraints are
// exactly these two (in the 0/1 program, Σ_j x_ij ≥ |children(i)| − 1 and
// Σ_i x_ij ≥ |parents(j)| − 1, x_ij = 0 meaning "favourite"); Baechi solves
// that LP. The issue allows a documented combinatorial rule in its place;
// ours spends the favourites where the LP's objective — the longest path —
// gains from them:
//
//  1. Every edge i → j is weighed by the longest path through it when it pays
//     its communication: t-level(i) + compute(i) + transfer(i → j) +
//     b-level(j), with mean compute over the devices and transfers on the
//     cluster's typical link.
//  2. Edges in decreasing weight (then larger transfer, then lower edge
//     index) become favourite pairs greedily while both ends are free: a
//     maximal matching that zeroes the most critical communication first.
//     Edges with no transfer time (one device) gain nothing and are skipped.
//  3. ETF runs with the favourites: when a unit becomes ready while its
//     favourite parent is still the last unit on its device, its data is
//     there when the parent ends and the device has memory for it, it is
//     scheduled there at once ("urgent", as in Hanen and Munier); otherwise
//     it competes like any ETF unit — Baechi relaxes SCT's small-
//     communication assumption the same way.
// Memory as in memory_ledger.h. O(E log E + ETF's cost).
#ifndef AUTOPAR_SEARCH_M_SCT_H_
#define AUTOPAR_SEARCH_M_SCT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "search/search.h"

namespace autopar::search {

/// Steps 1–2: per unit its favourite child, −1 for none.
std::vector<int32_t> FavouriteChildren(const costmodel::CostGraph& graph,
                                       const costmodel::Cluster& cluster);

/// m-SCT behind the common interface (steps in the file comment).
absl::StatusOr<costmodel::Placement> PlaceMSct(const costmodel::CostGraph& graph,
                                               const costmodel::Cluster& cluster,
                                               const SearchOptions& options);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_M_SCT_H_
