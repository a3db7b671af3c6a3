// What every placement algorithm checks first and reports when the model
// cannot be placed: inputs that match, units that fit some
// device on their own, and — when nothing fits — one clear error saying how
// much memory the model needs and how many devices of the cluster's kind
// would hold it.
#ifndef AUTOPAR_SEARCH_FEASIBILITY_H_
#define AUTOPAR_SEARCH_FEASIBILITY_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "search/memory_profile.h"

namespace autopar::search {

/// The cluster is valid (costmodel::Cluster::Validate) and every device's
/// kind has a compute time in the graph. InvalidArgument otherwise.
absl::Status CheckSearchInputs(const costmodel::CostGraph& graph,
                               const costmodel::Cluster& cluster);

/// The memory the model needs on one device: all its parameters plus the
/// peak of live activations run in topological order (the simulator's exact
/// single-device figure, Note [In-order liveness]).
int64_t MinimumMemoryBytes(const costmodel::CostGraph& graph);

/// How many devices of `memory_bytes` each a split of the topological order
/// into contiguous segments needs (SegmentEnds' estimate, filled greedily —
/// the fewest such segments); 0 when some unit alone does not fit.
int DevicesNeeded(const costmodel::CostGraph& graph, const MemoryProfile& profile,
                  int64_t memory_bytes);

/// The memory a unit needs on a device of its own: its parameters, workspace,
/// inputs and outputs.
int64_t UnitFootprintBytes(const costmodel::CostGraph& graph, uint32_t unit);

/// ResourceExhausted naming the first unit that fits no device on its own,
/// OK when every unit fits some device.
absl::Status CheckEveryUnitFits(const costmodel::CostGraph& graph,
                                const costmodel::Cluster& cluster);

/// The ResourceExhausted error for a model the cluster cannot hold: the
/// memory it needs (parameters + activation estimate), the devices of the
/// largest-memory kind that would hold it, and the cluster's count. A unit
/// that fits no device is named instead.
absl::Status InfeasibleError(const costmodel::CostGraph& graph, const costmodel::Cluster& cluster);

/// "1.5 GiB (1610612736 bytes)": a byte count for messages.
std::string FormatBytes(int64_t bytes);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_FEASIBILITY_H_
