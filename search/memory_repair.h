// The memory repair every placer falls back to before it reports that a model
// does not fit: starting from a plan that overflows some device, it moves
// the units that free the most memory off the most overflowing device onto
// the device with the most room, and re-simulates after every move. A move
// is kept only when the simulated overflow shrinks, so the repair never
// makes a plan worse by the measure it repairs, and it ends after a bounded
// number of simulations.
//
// Sharing one repair makes the placers agree about feasibility: a placer
// whose own memory handling gives up (a list scheduler's budgets, a DP's
// segment estimate) gets the same second chance as every other, from its own
// plan and from a memory-balanced split of the topological order.
#ifndef AUTOPAR_SEARCH_MEMORY_REPAIR_H_
#define AUTOPAR_SEARCH_MEMORY_REPAIR_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"

namespace autopar::search {

struct MemoryRepairOptions {
  /// Micro-batches the plan will run with (the simulator's setting).
  int microbatches = 1;
  /// Simulations the repair may spend; 0: 4 × units + 256, at most 4096 and
  /// at most 4,000,000 / units, at least 64.
  int64_t max_simulations = 0;
};

/// Repairs `start` (which must pass CheckPlacement) until it fits every
/// device's memory in the simulator. Steps:
///  1. simulate; stop when nothing overflows;
///  2. the hot device is the one furthest over its capacity, the target the
///     other device with the most room left;
///  3. the hot device's units are ranked by the memory their removal frees
///     there (parameter blocks no other unit on it reads, outputs,
///     workspace); the best ones that fit the target's room, enough to cover
///     the excess but at most the current batch size, move to the target;
///  4. re-simulate: the move stays if the total overflow shrank; else it is
///     undone and the batch size halves; a single unit that did not help
///     tries the next roomiest device, and after all of them waits until
///     some other move is accepted;
///  5. when no unit of the hot device is left to try, a unit of it is
///     exchanged with one freeing less on another device (the eight largest
///     of each), the first exchange that shrinks the total overflow kept.
/// The priorities of `start` are kept. Returns the fitting plan, or
/// std::nullopt when the simulation budget ran out or no move helped.
std::optional<costmodel::Placement> RepairMemory(const costmodel::CostGraph& graph,
                                                 const costmodel::Cluster& cluster,
                                                 costmodel::Placement start,
                                                 const MemoryRepairOptions& options = {});

/// A contiguous split of the topological order in which each device's share
/// of the memory (parameters, outputs, workspace) is proportional to its
/// capacity: the repair's start when a placer has no plan of its own.
costmodel::Placement MemoryBalancedSplit(const costmodel::CostGraph& graph,
                                         const costmodel::Cluster& cluster);

/// Each unit, in topological order, on the device with the most memory left
/// (parameters, outputs and workspace counted, a shared block once per
/// device): a start that spreads memory without regard to transfers.
costmodel::Placement MostRoomFirst(const costmodel::CostGraph& graph,
                                   const costmodel::Cluster& cluster);

/// What a placer returns when its own memory handling found no plan that
/// fits: RepairMemory from `overflowing` (the placer's best plan, if it made
/// one), then from MemoryBalancedSplit, then from MostRoomFirst; the first
/// plan that fits, else InfeasibleError's ResourceExhausted.
absl::StatusOr<costmodel::Placement> RepairOrGiveUp(
    const costmodel::CostGraph& graph, const costmodel::Cluster& cluster, int microbatches,
    std::optional<costmodel::Placement> overflowing);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_MEMORY_REPAIR_H_
