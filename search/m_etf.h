// m-ETF, Baechi's memory-constrained Earliest Task First placer (Jeon et
// al., "Baechi: Fast Device Placement of Machine Learning Graphs", SoCC 2020,
// after Hwang, Chow, Anger and Lee, "Scheduling precedence graphs in
// systems with interprocessor communication times", SIAM J. Comput. 1989).
//
// ETF list-schedules the graph in time: at each step, of all pairs (ready
// unit, device with memory for it) it takes the one that can start earliest,
// ties going to the unit of higher static level. Its model: a device runs
// one unit at a time, in the order scheduled; a tensor read on another device
// arrives its link's latency + bytes / bandwidth after its producer ends
// (links without contention, as in the paper's model; the simulator then
// judges the plan with contention).
//
//  1. Static level of every unit: its mean compute over the devices plus the
//     longest such path below it (no communication), as in Hwang et al.
//  2. When a unit becomes ready (its producers scheduled), its data-ready
//     time on every device is fixed: the latest arrival of its inputs there.
//     It enters each device's heap keyed by that time.
//  3. Per device, ready units whose data is there by the time the device is
//     free move to a second heap ordered by static level: the device's best
//     pair is that heap's top (start = device free), else the first heap's
//     top (start = its data-ready time). A unit whose memory the device no
//     longer has is set aside for that device (MemoryLedger), for good when
//     nothing can free enough, else until the device frees memory.
//  4. The best pair over the devices (start, then level, unit, device) is
//     committed: the unit is appended to the device's timeline and its
//     children may become ready (step 2). No pair left while units remain:
//     memory is exhausted.
//  5. Priorities are the planned start times, so the simulator runs each
//     device's units in the scheduled order.
// Every unit enters each device's two heaps once (again only after memory
// was freed on a device that lacked room for it): O((V log V + E) · D), not
// the O(V² · D) of rescanning every ready unit at every step.
//
// m-SCT (m_sct.h) runs the same scheduler with favourite children.
#ifndef AUTOPAR_SEARCH_M_ETF_H_
#define AUTOPAR_SEARCH_M_ETF_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "search/memory_ledger.h"
#include "search/search.h"

namespace autopar::search {

/// The ETF scheduler (steps in the file comment). `favourite_child`: empty
/// for plain ETF; else per unit the child to run right after it on its
/// device (−1: none) — see m_sct.h for when. Empty when memory runs out.
std::optional<costmodel::Placement> ScheduleEarliestTaskFirst(
    const costmodel::CostGraph& graph, const costmodel::Cluster& cluster,
    absl::Span<const int32_t> favourite_child, MemoryLedger& ledger);

/// m-ETF behind the common interface: ScheduleEarliestTaskFirst under
/// PlaceWithinMemory.
absl::StatusOr<costmodel::Placement> PlaceMEtf(const costmodel::CostGraph& graph,
                                               const costmodel::Cluster& cluster,
                                               const SearchOptions& options);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_M_ETF_H_
