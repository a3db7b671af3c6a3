// m-TOPO, Baechi's memory-constrained topological placer (Jeon et al.,
// "Baechi: Fast Device Placement of Machine Learning Graphs", SoCC 2020):
// the topological order cut into one run of units per device, each
// device filled up to its share of the work or its memory, whichever comes
// first.
//
//  1. Share: the balanced step time T = 1 / Σ_d 1 / W(d), W(d) the whole
//     graph's compute on device d's kind — so a device twice as fast takes
//     twice the work, and every device's run would take T on it.
//  2. Devices in index order (neighbours share links), units in topological
//     order: a unit joins the current device while its time there stays
//     within the share (rounded to the nearer unit boundary: it joins when
//     at least half of it fits under T) and the device's memory holds it
//     (MemoryLedger); otherwise the next device opens. The last device takes
//     the rest, within its memory.
//  3. When memory left units over, a second pass fills each device up to its
//     memory alone — the fewest devices that hold the model.
//  4. Priorities follow the topological order: each device runs its run in
//     order.
// Memory as in memory_ledger.h; ResourceExhausted when neither pass places
// every unit. O((V + E) · D).
#ifndef AUTOPAR_SEARCH_M_TOPO_H_
#define AUTOPAR_SEARCH_M_TOPO_H_

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "search/search.h"

namespace autopar::search {

/// m-TOPO behind the common interface (steps in the file comment).
absl::StatusOr<costmodel::Placement> PlaceMTopo(const costmodel::CostGraph& graph,
                                                const costmodel::Cluster& cluster,
                                                const SearchOptions& options);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_M_TOPO_H_
