// The single-device baseline: the whole model on one device,
// when one device holds it. What every plan's speed-up is measured against.
#ifndef AUTOPAR_SEARCH_SINGLE_DEVICE_H_
#define AUTOPAR_SEARCH_SINGLE_DEVICE_H_

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "search/search.h"

namespace autopar::search {

/// Every unit on the fastest device (least total compute on its kind; then
/// most memory, then lowest index) among those whose memory holds
/// MinimumMemoryBytes — exact here: the priorities follow the topological
/// order, which the device then runs. ResourceExhausted (InfeasibleError)
/// when no device holds the model.
absl::StatusOr<costmodel::Placement> PlaceSingleDevice(const costmodel::CostGraph& graph,
                                                       const costmodel::Cluster& cluster,
                                                       const SearchOptions& options);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_SINGLE_DEVICE_H_
