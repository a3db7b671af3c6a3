// SGP's step 4 and 7a: list schedules as the candidates beside the
// segments. Contiguous segments serialise parallel branches; a list schedule
// (by rank and earliest finish, else earliest task first) lets them overlap.
// Step 7a schedules the nodes below the units the same way, with m-SCT's
// favourite children beside plain ETF. See the list of steps in sgp.cc.
#include <algorithm>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "search/list_schedule.h"
#include "search/m_etf.h"
#include "search/m_sct.h"
#include "search/memory_ledger.h"
#include "search/sgp_steps.h"

namespace autopar::search::sgp {

using costmodel::CostGraph;
using costmodel::Placement;

// Step 4.
std::optional<Candidate> Sgp::ListScheduled() {
  std::vector<int64_t> budget(num_devices_);
  for (int d = 0; d < num_devices_; ++d) {
    budget[d] =
        cluster_.device(d).memory_bytes - held_back_bytes_[d] - profile_.peak_activation_bytes;
  }
  std::optional<ListSchedule> schedule = ScheduleByEarliestFinish(graph_, cluster_, link_, budget);
  if (!schedule) return std::nullopt;
  Candidate candidate;
  candidate.placement = std::move(schedule->placement);
  candidate.estimate = schedule->estimate;
  candidate.score_us = candidate.estimate.PipelinedUs(options_.microbatches);
  candidate.devices_used = DevicesUsed(candidate.placement.device, num_devices_);
  candidate.strategy = "list";
  return candidate;
}

// Step 4b: ETF (Hwang et al. 1989, as m-ETF runs it) under each device's
// memory less what the simulator found held back. Its estimate replays the
// units in its planned order.
std::optional<Candidate> Sgp::EarliestTaskFirst() {
  MemoryLedger ledger(graph_, cluster_, LedgerMode::kInOrder, held_back_bytes_);
  std::optional<Placement> plan = ScheduleEarliestTaskFirst(graph_, cluster_, {}, ledger);
  if (!plan) return std::nullopt;
  // A unit starts after its producers end, so start time, then index, is a
  // topological order.
  replay_order_.resize(n_);
  std::iota(replay_order_.begin(), replay_order_.end(), 0);
  std::stable_sort(replay_order_.begin(), replay_order_.end(),
                   [&](uint32_t a, uint32_t b) { return plan->priority[a] < plan->priority[b]; });
  Candidate candidate;
  candidate.estimate = estimator_.Run(plan->device, replay_order_);
  candidate.score_us = candidate.estimate.PipelinedUs(options_.microbatches);
  candidate.placement = *std::move(plan);
  candidate.devices_used = DevicesUsed(candidate.placement.device, num_devices_);
  candidate.strategy = "earliest task first";
  return candidate;
}

// Step 4: the rank-ordered list schedule, and unless it is near the lower
// bound the ETF one; the simulator picks between them on graphs small enough
// for the post-pass, else the estimates.
std::optional<Candidate> Sgp::BestListSchedule() {
  std::optional<Candidate> ranked = ListScheduled();
  if (ranked && ranked->score_us <= lower_bound_us_ * (1 + kNearLowerBound)) return ranked;
  std::optional<Candidate> earliest = EarliestTaskFirst();
  if (!ranked || !earliest) return ranked ? ranked : earliest;
  if (PostPassBudget() >= 2) {
    return SimulatedUs(earliest->placement) < SimulatedUs(ranked->placement) ? earliest : ranked;
  }
  return Better(*earliest, *ranked) ? earliest : ranked;
}

// Step 7a: ETF on the nodes, each locked unit's nodes on its first node's
// device; `best_us` is the unit plan's node-level step. Returns the step of
// the best node plan so far (result.node_placement when a schedule won).
double Sgp::ScheduleNodes(costmodel::Simulator& simulator, double best_us, SgpResult& result) {
  const NodeLevel& level = options_.nodes;
  const CostGraph& nodes = *level.graph;
  const uint32_t num_nodes = nodes.num_units();
  const costmodel::SimulationOptions sim_options{.microbatches = options_.microbatches};
  // ETF without, then with favourite children (SCT: a child runs right
  // after its parent on the parent's device, so a recurrent chain keeps its
  // state local); the faster that fits and beats the unit plan wins.
  const std::vector<int32_t> favourites = FavouriteChildren(nodes, cluster_);
  for (const bool with_favourites : {false, true}) {
    MemoryLedger ledger(nodes, cluster_, LedgerMode::kInOrder);
    std::optional<Placement> schedule = ScheduleEarliestTaskFirst(
        nodes, cluster_,
        with_favourites ? absl::Span<const int32_t>(favourites) : absl::Span<const int32_t>(),
        ledger);
    if (!schedule) continue;
    // A locked unit's nodes follow its first node (in node order).
    std::vector<int32_t> unit_device(n_, -1);
    for (uint32_t v = 0; v < num_nodes; ++v) {
      const uint32_t unit = (*level.unit_of_node)[v];
      if (unit >= level.locked_units.size() || !level.locked_units[unit]) continue;
      if (unit_device[unit] < 0) unit_device[unit] = schedule->device[v];
      schedule->device[v] = unit_device[unit];
    }
    ++simulations_;
    const costmodel::SimulationResult& theirs = simulator.Run(*schedule, sim_options);
    if (theirs.memory_overflow || theirs.step_time_us >= best_us) continue;
    best_us = theirs.step_time_us;
    result.devices_used = DevicesUsed(schedule->device, num_devices_);
    result.node_placement = *std::move(schedule);
    result.strategy =
        with_favourites ? "favourite-child ETF on nodes" : "earliest task first on nodes";
  }
  return best_us;
}

}  // namespace autopar::search::sgp
