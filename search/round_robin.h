// The round-robin baseline: units dealt to the
// devices in turn, in topological order — the simplest placement that uses
// every device, and the one Baechi compares its placers against (Jeon et al.,
// "Baechi: Fast Device Placement of Machine Learning Graphs", SoCC 2020).
//
//  1. Units in topological order; device pointer at device 0.
//  2. A unit goes to the device under the pointer if it still fits there
//     (MemoryLedger), else to the next device in turn that it fits; the
//     pointer moves past the device it went to.
//  3. Priorities follow the topological order, so each device runs its units
//     in that order.
// Memory as in memory_ledger.h; ResourceExhausted when a unit fits no device.
// O((V + E) · D).
#ifndef AUTOPAR_SEARCH_ROUND_ROBIN_H_
#define AUTOPAR_SEARCH_ROUND_ROBIN_H_

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "search/search.h"

namespace autopar::search {

/// Round-robin behind the common interface (steps in the file comment).
absl::StatusOr<costmodel::Placement> PlaceRoundRobin(const costmodel::CostGraph& graph,
                                                     const costmodel::Cluster& cluster,
                                                     const SearchOptions& options);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_ROUND_ROBIN_H_
