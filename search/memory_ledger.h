// Memory for placers that put units on devices one at a time (round-robin,
// m-TOPO, m-ETF, m-SCT): a ledger that says whether a unit still fits a
// device given what is already there, and the driver that turns such a
// placer into one whose result never overflows in the simulator.
//
// Baechi's memory-constrained placers (Jeon et al., "Baechi: Fast Device
// Placement of Machine Learning Graphs", SoCC 2020) admit an operator to a
// device only while the device's memory holds it, and treat a device that
// does not as unavailable. What "holds it" means is the ledger's mode:
//
//  - kProvable: nothing is ever freed — the device keeps its distinct
//    parameter blocks, every tensor it produces or receives, and its largest
//    workspace. This is ProvablePeakBytes' bound: it holds under any
//    schedule, so a plan built with it always fits. On activation-heavy
//    graphs it is far above the real peak.
//  - kInOrder: the units run in the order they were placed on their device.
//    A tensor (its producer's copy and every received copy) stays live until
//    all its readers are placed, a graph output to the end; a unit's
//    workspace only while it runs. The device needs its parameters plus the
//    peak of those live bytes. Close to the simulator when the placement
//    order is the execution order; not a proof.
//
// PlaceWithinMemory runs a placer with kInOrder, has the result checked
// (ProvablePeakBytes, else one simulation) and repairs an overflow by holding
// back the overflowing device's memory; last it falls back to kProvable.
#ifndef AUTOPAR_SEARCH_MEMORY_LEDGER_H_
#define AUTOPAR_SEARCH_MEMORY_LEDGER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "search/search.h"

namespace autopar::search {

enum class LedgerMode { kInOrder, kProvable };

/// Per device, the memory its units need (see the file comment). Units must
/// be placed after their producers. Copyable: a placer that tries twice keeps
/// a copy of the empty ledger.
class MemoryLedger {
 public:
  /// `held_back_bytes`: per device, memory not to use (empty: none).
  MemoryLedger(const costmodel::CostGraph& graph, const costmodel::Cluster& cluster,
               LedgerMode mode, absl::Span<const int64_t> held_back_bytes = {});

  /// The bytes `device` would need with `unit` placed on it next.
  int64_t BytesWith(uint32_t unit, int device) const;
  bool Fits(uint32_t unit, int device) const { return BytesWith(unit, device) <= budget_[device]; }
  /// The unit cannot fit the device whatever is freed later (its parameters
  /// and the device's activation peak so far already overflow). Fits() may
  /// turn true again only for units where this is false, and only after
  /// freed_count(device) changed.
  bool NeverFits(uint32_t unit, int device) const;
  void Place(uint32_t unit, int device);

  /// What `device` needs for the units placed so far.
  int64_t BytesOn(int device) const;
  /// Bumped whenever live bytes on the device are freed.
  uint64_t freed_count(int device) const { return freed_count_[device]; }

 private:
  int64_t NewParamBytes(uint32_t unit, int device) const;
  int64_t NewInputBytes(uint32_t unit, int device) const;

  const costmodel::CostGraph* graph_;
  LedgerMode mode_;
  std::vector<int64_t> budget_;             // per device: memory less what is held back
  std::vector<uint64_t> param_holders_;     // per parameter: bit d = on device d
  std::vector<uint64_t> tensor_copies_;     // per tensor: bit d = a copy on device d
  std::vector<uint32_t> unplaced_readers_;  // per tensor
  std::vector<int64_t> param_bytes_;        // per device
  std::vector<int64_t> live_bytes_;         // per device: kInOrder live, kProvable all tensors
  std::vector<int64_t> peak_bytes_;  // per device: kInOrder peak live, kProvable max workspace
  std::vector<uint64_t> freed_count_;
};

/// A placer that asks `ledger` where units fit; empty when some unit fits no
/// device.
using LedgerPlacer = absl::FunctionRef<std::optional<costmodel::Placement>(MemoryLedger& ledger)>;

/// Checks the inputs, then runs `place` (steps in the file comment): with a
/// kInOrder ledger, checking each result by ProvablePeakBytes or one
/// simulation at the options' micro-batches and holding back an overflowing
/// device's excess for the next try; then with a kProvable ledger. An empty
/// graph gets an empty placement. ResourceExhausted (InfeasibleError) when no
/// try yields a plan that fits.
absl::StatusOr<costmodel::Placement> PlaceWithinMemory(const costmodel::CostGraph& graph,
                                                       const costmodel::Cluster& cluster,
                                                       const SearchOptions& options,
                                                       LedgerPlacer place);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_MEMORY_LEDGER_H_
