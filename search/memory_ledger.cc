#include "search/memory_ledger.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "search/feasibility.h"
#include "search/memory_profile.h"
#include "search/memory_repair.h"

namespace autopar::search {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;

namespace {

/// Rebuilds after the simulator found an overflow (as in SGP).
constexpr int kMaxMemoryRepairs = 4;

}  // namespace

MemoryLedger::MemoryLedger(const CostGraph& graph, const Cluster& cluster, LedgerMode mode,
                           absl::Span<const int64_t> held_back_bytes)
    : graph_(&graph), mode_(mode) {
  const int num_devices = cluster.num_devices();
  budget_.resize(num_devices);
  for (int d = 0; d < num_devices; ++d) {
    budget_[d] =
        cluster.device(d).memory_bytes - (held_back_bytes.empty() ? 0 : held_back_bytes[d]);
  }
  param_holders_.assign(graph.num_params(), 0);
  tensor_copies_.assign(graph.num_tensors(), 0);
  unplaced_readers_.resize(graph.num_tensors());
  for (uint32_t t = 0; t < graph.num_tensors(); ++t) {
    unplaced_readers_[t] = static_cast<uint32_t>(graph.tensor_uses(t).size());
  }
  param_bytes_.assign(num_devices, 0);
  live_bytes_.assign(num_devices, 0);
  peak_bytes_.assign(num_devices, 0);
  freed_count_.assign(num_devices, 0);
}

int64_t MemoryLedger::NewParamBytes(uint32_t unit, int device) const {
  int64_t bytes = 0;
  for (uint32_t p : graph_->params(unit)) {
    if (!(param_holders_[p] & (uint64_t{1} << device))) bytes += graph_->param_bytes(p);
  }
  return bytes;
}

// Inputs with no copy on the device yet: they will be received. (In-edges
// are distinct (tensor, reader) pairs: each tensor counts once.)
int64_t MemoryLedger::NewInputBytes(uint32_t unit, int device) const {
  int64_t bytes = 0;
  for (uint32_t e : graph_->in_edges(unit)) {
    if (!(tensor_copies_[graph_->edge_tensor(e)] & (uint64_t{1} << device))) {
      bytes += graph_->edge_bytes(e);
    }
  }
  return bytes;
}

int64_t MemoryLedger::BytesWith(uint32_t unit, int device) const {
  const int64_t params = param_bytes_[device] + NewParamBytes(unit, device);
  const int64_t tensors =
      live_bytes_[device] + NewInputBytes(unit, device) + graph_->output_bytes(unit);
  if (mode_ == LedgerMode::kProvable) {
    return params + tensors + std::max(peak_bytes_[device], graph_->temp_bytes(unit));
  }
  return params + std::max(peak_bytes_[device], tensors + graph_->temp_bytes(unit));
}

bool MemoryLedger::NeverFits(uint32_t unit, int device) const {
  if (mode_ == LedgerMode::kProvable) return !Fits(unit, device);  // nothing is ever freed
  // The unit's inputs stay live until it is placed: they are never freed
  // before it runs, whichever device holds them.
  int64_t own = graph_->output_bytes(unit) + graph_->temp_bytes(unit);
  for (uint32_t e : graph_->in_edges(unit)) own += graph_->edge_bytes(e);
  return param_bytes_[device] + NewParamBytes(unit, device) + std::max(peak_bytes_[device], own) >
         budget_[device];
}

void MemoryLedger::Place(uint32_t unit, int device) {
  const uint64_t bit = uint64_t{1} << device;
  if (mode_ == LedgerMode::kInOrder) {
    peak_bytes_[device] =
        std::max(peak_bytes_[device], live_bytes_[device] + NewInputBytes(unit, device) +
                                          graph_->output_bytes(unit) + graph_->temp_bytes(unit));
  } else {
    peak_bytes_[device] = std::max(peak_bytes_[device], graph_->temp_bytes(unit));
  }
  for (uint32_t p : graph_->params(unit)) {
    if (param_holders_[p] & bit) continue;
    param_holders_[p] |= bit;
    param_bytes_[device] += graph_->param_bytes(p);
  }
  for (uint32_t e : graph_->in_edges(unit)) {
    uint64_t& copies = tensor_copies_[graph_->edge_tensor(e)];
    if (copies & bit) continue;
    copies |= bit;
    live_bytes_[device] += graph_->edge_bytes(e);
  }
  // Outputs: kInOrder frees at once one nobody reads (it was counted in the
  // peak above) unless it is a graph output.
  for (uint32_t t : graph_->outputs(unit)) {
    const bool stays = mode_ == LedgerMode::kProvable || !graph_->tensor_uses(t).empty() ||
                       graph_->tensor_is_graph_output(t);
    if (!stays) continue;
    tensor_copies_[t] |= bit;
    live_bytes_[device] += graph_->tensor_bytes(t);
  }
  if (mode_ == LedgerMode::kProvable) return;
  // An input whose readers are now all placed is freed on every device that
  // holds a copy.
  for (uint32_t e : graph_->in_edges(unit)) {
    const uint32_t t = graph_->edge_tensor(e);
    if (--unplaced_readers_[t] > 0 || graph_->tensor_is_graph_output(t)) continue;
    for (uint64_t copies = tensor_copies_[t]; copies != 0; copies &= copies - 1) {
      const int d = std::countr_zero(copies);
      live_bytes_[d] -= graph_->tensor_bytes(t);
      ++freed_count_[d];
    }
  }
}

int64_t MemoryLedger::BytesOn(int device) const {
  if (mode_ == LedgerMode::kProvable) {
    return param_bytes_[device] + live_bytes_[device] + peak_bytes_[device];
  }
  return param_bytes_[device] + peak_bytes_[device];
}

absl::StatusOr<Placement> PlaceWithinMemory(const CostGraph& graph, const Cluster& cluster,
                                            const SearchOptions& options, LedgerPlacer place) {
  if (absl::Status s = CheckSearchInputs(graph, cluster); !s.ok()) return s;
  if (graph.num_units() == 0) return Placement{};
  if (absl::Status s = CheckEveryUnitFits(graph, cluster); !s.ok()) return s;
  const int num_devices = cluster.num_devices();

  // 1. The in-order ledger; a plan ProvablePeakBytes cannot vouch for is
  //    simulated, and each device that overflows holds back its excess (and
  //    1/64 of its memory) in the next try.
  std::vector<int64_t> held_back(num_devices, 0);
  std::optional<costmodel::Simulator> simulator;
  std::optional<Placement> overflowing;  // the last plan over memory, for the repair
  for (int repair = 0; repair <= kMaxMemoryRepairs; ++repair) {
    MemoryLedger ledger(graph, cluster, LedgerMode::kInOrder, held_back);
    std::optional<Placement> placement = place(ledger);
    if (!placement) break;  // holding back more cannot help
    const std::vector<int64_t> bound =
        ProvablePeakBytes(graph, placement->device, num_devices, options.microbatches);
    bool proven = true;
    for (int d = 0; d < num_devices; ++d) proven &= bound[d] <= cluster.device(d).memory_bytes;
    if (proven) return *std::move(placement);
    if (!simulator) simulator.emplace(graph, cluster);
    const costmodel::SimulationResult& result = simulator->Run(
        *placement, costmodel::SimulationOptions{.microbatches = options.microbatches});
    if (!result.memory_overflow) return *std::move(placement);
    overflowing = *placement;
    for (int d = 0; d < num_devices; ++d) {
      const int64_t capacity = cluster.device(d).memory_bytes;
      const int64_t over = result.devices[d].peak_memory_bytes - capacity;
      if (over > 0) held_back[d] += over + capacity / 64;
    }
  }
  // 2. The provable ledger: whatever it admits fits under any schedule.
  MemoryLedger ledger(graph, cluster, LedgerMode::kProvable);
  std::optional<Placement> placement = place(ledger);
  if (placement) return *std::move(placement);
  // 3. The shared repair (search/memory_repair.h).
  return RepairOrGiveUp(graph, cluster, options.microbatches, std::move(overflowing));
}

}  // namespace autopar::search
