// SGP's insides, shared by the files of its steps (not part of the search
// interface: callers use sgp.h). One class holds what the steps share — the
// costs of step 1, the memory held back after an overflow, the simulators —
// and declares one member per step; each member is defined in the file of
// its phase:
//
//   sgp.cc             the order of the steps (Run) and step 7's sequence
//   sgp_seed.cc        steps 1–3, 5 and 6: costs, balanced segments, cheap
//                      boundaries, the memory check and the post-pass
//   sgp_list.cc        step 4 and 7a: list schedules of the units and nodes
//   sgp_interleave.cc  steps 4c and 7b: interleaved stages, micro-batches
//   sgp_node_sweeps.cc steps 7c–7e: boundary, chain and node moves
//
// Step 7f is not SGP's own: it is node_refinement.h's polish, the one TGA
// ends with too (sgp.cc, PolishOnNodes).
#ifndef AUTOPAR_SEARCH_SGP_STEPS_H_
#define AUTOPAR_SEARCH_SGP_STEPS_H_

#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "search/capped_chunks.h"
#include "search/memory_profile.h"
#include "search/schedule_estimate.h"
#include "search/search.h"
#include "search/sgp.h"

namespace autopar::search::sgp {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
/// Step 7 runs on node graphs up to this size: its two schedules and three
/// node-level simulations cost O(N log N · D) each.
constexpr uint32_t kMaxNodesBelowUnits = 20000;
/// Step 7 is skipped when the unit plan is this close to the node graph's
/// lower bound.
constexpr double kNodesNearLowerBound = 0.01;
/// A moved boundary keeps both segments within this fraction above the
/// bottleneck (steps 3 and 4c).
constexpr double kBalanceTolerance = 0.05;
/// A plan this close to the lower bound is final: no other can beat it by more.
constexpr double kNearLowerBound = 0.05;
/// A plan on more devices must beat one on fewer by this fraction: it pays
/// transfers the estimate may understate.
constexpr double kMoreDevicesMargin = 0.01;

/// Segment j = [bounds[j], bounds[j + 1]) of the topological order runs on
/// devices[j].
struct Segments {
  std::vector<int> devices;
  std::vector<uint32_t> bounds;
};

struct Candidate {
  costmodel::Placement placement;
  ScheduleEstimate estimate;
  double score_us = kInfinity;  // the estimate at the options' micro-batches
  double simulated_us = -1;     // the simulator's step, when it judged the plan (< 0: not yet)
  int devices_used = 0;
  std::string strategy;
  bool interleaved = false;  // step 4c's plan: judged as it is, no post-pass
};

/// How many of `num_devices` devices a plan puts any unit (or node) on.
int DevicesUsed(const std::vector<int32_t>& device, int num_devices);

/// Whether `a` should be preferred to `b` (see kMoreDevicesMargin).
bool Better(const Candidate& a, const Candidate& b);

class Sgp {
 public:
  Sgp(const costmodel::CostGraph& graph, const costmodel::Cluster& cluster,
      const SearchOptions& options)
      : graph_(graph),
        cluster_(cluster),
        options_(options),
        n_(graph.num_units()),
        num_devices_(cluster.num_devices()),
        estimator_(graph, cluster) {}

  absl::StatusOr<SgpResult> Run();  // sgp.cc

 private:
  // sgp.cc: step 7's sequence and 7f.
  void BelowUnits(SgpResult& result);
  void PolishOnNodes(double start_us, double bound_us, SgpResult& result);
  void ChooseByObjective(SgpResult& result);

  // sgp_seed.cc: steps 1–3.
  void ComputeCosts();
  const std::vector<uint32_t>& EndsOn(int device);
  double SegmentUs(int device, uint32_t begin, uint32_t end) const {
    const std::vector<double>& prefix = prefix_us_[cluster_.device(device).kind];
    return prefix[end] - prefix[begin];
  }
  CappedChunker SegmentChunker(const std::vector<int>& devices);
  bool FitsSegments(const std::vector<int>& devices);
  std::optional<Segments> Balance(const std::vector<int>& devices, double& bottleneck_us,
                                  double growth = 0);
  void Refine(Segments& segments, double max_us);
  bool Consider(const Segments& segments, std::optional<Candidate>& best);
  std::optional<Candidate> BestSegments();
  // sgp_seed.cc: steps 5 and 6.
  bool FitsMemory(const Candidate& candidate);
  int PostPass(costmodel::Placement& plan);
  int PostPassBudget() const;
  double SimulatedUs(const costmodel::Placement& plan);

  // sgp_list.cc: step 4 and 7a.
  std::optional<Candidate> ListScheduled();
  std::optional<Candidate> EarliestTaskFirst();
  std::optional<Candidate> BestListSchedule();
  double ScheduleNodes(costmodel::Simulator& simulator, double best_us, SgpResult& result);

  // sgp_interleave.cc: steps 4c and 7b.
  std::optional<Candidate> BestInterleaved();
  bool NodesUsable() const;
  int64_t JudgedSize() const;
  int64_t InterleavedRuns(int64_t size) const;
  double JudgedUs(const costmodel::Placement& plan);
  double InterleaveNodes(costmodel::Simulator& simulator, double best_us, SgpResult& result);
  double RepairNodeMemory(costmodel::Simulator& simulator, costmodel::Placement& plan);

  // sgp_node_sweeps.cc: steps 7c–7e.
  double SweepNodeBoundaries(costmodel::Simulator& simulator, double best_us, SgpResult& result);
  int MoveNodeChains(costmodel::Simulator& simulator, double& best_us, costmodel::Placement& plan,
                     int& runs);
  int MoveNodeBlocks(costmodel::Simulator& simulator, double& best_us, costmodel::Placement& plan,
                     int budget);
  const costmodel::SimulationResult* TryNodeMove(costmodel::Simulator& simulator,
                                                 costmodel::Placement& plan, uint32_t begin,
                                                 uint32_t end, int32_t to, double& best_us);

  const costmodel::CostGraph& graph_;
  const costmodel::Cluster& cluster_;
  const SearchOptions& options_;
  const uint32_t n_;
  const int num_devices_;

  // Step 1.
  TypicalLink link_;
  MemoryProfile profile_;
  std::vector<std::vector<double>> prefix_us_;  // per kind the cluster uses: n + 1 sums
  std::vector<double> cut_us_;                  // cut_us_[b]: cost of cutting before unit b
  double parallelism_ = 1;
  // What every placement's ProvablePeakBytes adds up to at least — each
  // tensor on its producer's device, each parameter block once — against the
  // cluster's memory: when it is more, no bound can vouch for a plan.
  bool bound_can_vouch_ = true;
  double lower_bound_us_ = 0;      // costmodel::ComputeLowerBound's, at the options' micro-batches
  std::vector<int> device_order_;  // fastest first, then most memory, then index

  // Memory held back per device after the simulator found an overflow, and
  // SegmentEnds per capacity in use.
  std::vector<int64_t> held_back_bytes_;
  // A deque: references to its arrays stay valid as it grows.
  std::deque<std::pair<int64_t, std::vector<uint32_t>>> ends_by_capacity_;
  std::vector<int32_t> scratch_device_;
  ScheduleEstimator estimator_;
  std::optional<costmodel::Simulator> simulator_;
  std::optional<costmodel::Simulator> node_simulator_;  // on SearchOptions::nodes
  int simulations_ = 0;
  std::vector<uint32_t> replay_order_;
  // With SearchOptions::objective: the unit plans steps 2–4c made, for the
  // final choice by that objective (ChooseByObjective).
  std::vector<Candidate> objective_candidates_;
};

}  // namespace autopar::search::sgp

#endif  // AUTOPAR_SEARCH_SGP_STEPS_H_
