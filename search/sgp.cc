// SGP, step by step (see sgp.h for what it promises):
//
//  1. Comprehensive cost of every unit: its compute on each device kind
//     (prefix sums along the topological order, so that a segment's time on a
//     device is one subtraction) and the communication of its edges — each
//     tensor's transfer time on the cluster's typical link, summed into the
//     cost of cutting the order at each position. Also the in-order memory
//     profile and the graph's parallelism (work / critical path).
//  2. Load-balanced partition that respects dependencies: contiguous segments
//     of the topological order, segment j on device j, each within its
//     device's memory (SegmentEnds' estimate) and of the least possible
//     bottleneck time — bisection on the bottleneck, each probe a greedy fill
//     in O(k log V) — so a device twice as fast receives twice the work. Device
//     counts k from the fewest that hold the model upwards (the fastest
//     devices first), until kMaxFruitlessCounts counts in a row did not win.
//  3. Boundary refinement: each boundary moves to the cheapest cut within
//     reach — both segments stay within memory and within kBalanceTolerance of
//     the bottleneck; for the fewest devices also without the balance limit
//     (a chain gains nothing from balance, only from fewer, cheaper cuts).
//     Every variant is replayed in order (ScheduleEstimator); the fastest
//     wins, a plan on more devices only when clearly faster.
//  4. On graphs with any parallelism (above kListScheduleMinParallelism),
//     where segments serialise what could overlap, list schedules are the
//     other candidates. First by rank and earliest finish
//     (ScheduleByEarliestFinish) under each device's parameter budget — its
//     memory less the peak activations: within kNearLowerBound of the lower
//     bound it is final. Else also ETF (the pair of ready unit and device
//     that starts earliest, ScheduleEarliestTaskFirst, under the in-order
//     memory ledger): a static rank order leaves devices idle that ETF fills
//     when many units are ready at once (wide layered graphs on 8 devices),
//     so the two differ most where either alone is weak. The simulator picks
//     the better list schedule when the graph is small enough for the
//     post-pass (step 6), else the estimates (each replayed in its planned
//     order); then the estimates decide between it and the segments.
//  4c. With micro-batches (M > 1), interleaved stages: the order cut into
//     v·D balanced chunks, chunk i on device i mod D, for v in
//     kChunksPerDevice, the chunks growing a little along the order (why:
//     at BestInterleaved). Contiguous segments pay the pipeline's fill and
//     drain, (M + D - 1) / M of the balanced work; interleaving cuts it
//     about v-fold. Judged by the simulator (on the nodes when given), it
//     replaces the plan of steps 2–6 when it is faster.
//  5. Output: the device per unit and, as priority, the planned start times.
//     The memory is checked: ProvablePeakBytes when it suffices (not even
//     computed when the graph's tensors and parameters exceed the cluster's
//     memory: then it never does), else one simulation. When the chosen plan overflows the other is
//     tried; when both do, both are made again with each overflowing device's budget cut by its
//     overflow (at most kMaxMemoryRepairs times).
//  6. Post-pass: when both the segments and the list schedule fit, the
//     simulator picks between them (SGP's estimates can be wrong on wide
//     graphs); then one sweep of boundary moves judged by the simulator. The
//     boundaries of the topological order (where the device changes), the
//     busiest side's first, each shift once toward balance: the busier side
//     hands the units next to the boundary, up to half the two devices'
//     difference in busy time, to the other. A shift stays when the simulated
//     step shrinks and memory still fits. At most PostPassSimulations() runs
//     (kPostPassUnitRuns unit-simulations in all, at most
//     kMaxPostPassSimulations runs): bounded work, milliseconds.
//  7. Below the units (when the search is given the node graph, as the
//     pipeline does): coarsening merges nodes that could have run side by
//     side, so the best unit plan can be several per cent behind a schedule
//     of the nodes themselves (on a 1,000-node layered DAG over 8 devices
//     the unit graph's critical path alone is 4% longer; GPT-2 small's 758
//     nodes become a chain of 14 units with nothing left to overlap). ETF
//     on the nodes, and ETF with favourite children (m-SCT's rule, m_sct.h:
//     it keeps a recurrent encoder-decoder's chains local, where plain ETF
//     scatters them), each locked unit's nodes moved to its first node's
//     device, are simulated against the unit plan projected onto the nodes;
//     the fastest that fits is the result — unless the projection is already
//     within kNodesNearLowerBound of the node graph's lower bound. Node
//     graphs up to kMaxNodesBelowUnits: two schedules and three simulations
//     of the nodes at most. With micro-batches also step 4c's interleaved
//     chunks cut from the node order, from the nodes by earliest start, by
//     latest start and, where a branch reads only its own input (a decoder's
//     first block), by earliest start with that branch first (7b: units can
//     be too coarse for many balanced chunks, GPT-2 small's 14), and the
//     branches spread over the devices (repaired chain by chain when it
//     overflows, and faster than the best that fits), then one
//     sweep of boundary moves over the best node plan (7c), a sweep moving
//     whole chains of nodes to a neighbouring chain's device (7d: branches
//     that could run side by side) and sweeps moving blocks of two nodes,
//     then single nodes, to a device they exchange a tensor with (7e), each
//     judged by the node-level simulation. Where those sweeps stop, a
//     bounded iterated local search (7f: node_refinement.h's levels and
//     kicks, seeded, a fixed number of rounds) goes on from the best node
//     plan: better plans can differ in dozens of nodes at once.
//
// Cost: O((V + E) · (D + k) + V log V), ETF's O((V log V + E) · D) where the
// first list schedule is not near the bound, and the post-pass's few
// simulations; with micro-batches, up to 30 simulations for step 4c, 121 for
// 7b and 60 for its repair, 40 for 7c, 250 for 7d and 7e together and
// about 1,000,000 node instances for 7f, fewer on large graphs
// (kInterleavedUnitRuns, kMoveNodeRuns, kRefineNodeRuns).
#include "search/sgp.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "costmodel/lower_bound.h"
#include "search/feasibility.h"
#include "search/list_schedule.h"
#include "search/m_etf.h"
#include "search/m_sct.h"
#include "search/memory_ledger.h"
#include "search/memory_profile.h"
#include "search/memory_repair.h"
#include "search/node_refinement.h"
#include "search/schedule_estimate.h"

namespace autopar::search {
namespace {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;

constexpr double kInfinity = std::numeric_limits<double>::infinity();
/// At this parallelism (work / critical path) or below the graph is a chain:
/// list scheduling cannot beat one device. Above it even a little overlap
/// pays — a ResNet's downsample branch, a transformer's attention heads
/// (parallelism 1.05–1.2) run beside the main path on another device when
/// links are fast, which contiguous segments never do.
constexpr double kListScheduleMinParallelism = 1.01;
/// A moved boundary keeps both segments within this fraction above the
/// bottleneck.
constexpr double kBalanceTolerance = 0.05;
/// A plan on more devices must beat one on fewer by this fraction: it pays
/// transfers the estimate may understate.
constexpr double kMoreDevicesMargin = 0.01;
/// Rebuilds after the simulator found an overflow.
constexpr int kMaxMemoryRepairs = 4;
constexpr int kBisectionSteps = 64;
/// Device counts tried in step 2: all of them up to this many, beyond it
/// doubling.
constexpr int kAllDeviceCountsUpTo = 8;
constexpr int kMaxFruitlessCounts = 2;
/// A plan this close to the lower bound is final: no other can beat it by more.
constexpr double kNearLowerBound = 0.05;
/// Step 7 runs on node graphs up to this size: its two schedules and three
/// node-level simulations cost O(N log N · D) each.
constexpr uint32_t kMaxNodesBelowUnits = 20000;
/// Step 7 is skipped when the unit plan is this close to the node graph's
/// lower bound.
constexpr double kNodesNearLowerBound = 0.01;
/// Step 6: the post-pass's simulations, at most kMaxPostPassSimulations and
/// at most kPostPassUnitRuns / units (one run costs O(V log V)).
constexpr int kMaxPostPassSimulations = 12;
constexpr int64_t kPostPassUnitRuns = 16000;
/// Steps 4c and 7b: chunks per device of the interleaved candidates (1 is the
/// contiguous split over every device, which step 2 may have passed over for
/// fewer devices) and how much the last chunk's cap exceeds the first's (the
/// timing that decides collisions is too fine to predict: a few growths, the
/// simulator picks). Each of steps 4c, 7b and 7c simulates at most
/// kInterleavedUnitRuns unit (or node) instances: runs × the judged graph's
/// size × M. Below that the candidates are tried in the order listed, growth
/// first, until it is spent (on the models: all of them, under 1,700 nodes
/// with 4 micro-batches).
constexpr int kChunksPerDevice[] = {1, 2, 3, 4, 6, 8};
constexpr double kChunkGrowth[] = {0, 0.25, 0.5, 1, 2};
constexpr int64_t kInterleavedUnitRuns = 400000;
/// Step 7c: boundary moves tried on the best node plan with micro-batches.
constexpr int kMaxBoundarySweepSimulations = 40;
/// Steps 7d and 7e together simulate at most kMoveNodeRuns node instances
/// (runs × nodes × M). Step 7d: chain moves tried after 7c, at most
/// kMaxChainMoveSimulations runs and kChainMoveNodeRuns instances; one sweep
/// (a second gained less than 7e's moves do with the same runs: Inception-v3
/// on 8 devices with 4 micro-batches). Step 7e: node moves, blocks of
/// kNodeMoveBlockSizes nodes in turn, at most kMaxNodeMoveSimulations runs
/// and what 7d left of kMoveNodeRuns.
constexpr int64_t kMoveNodeRuns = 250000;
constexpr int kMaxChainMoveSimulations = 150;
constexpr int64_t kChainMoveNodeRuns = 200000;
constexpr int kChainMoveSweeps = 1;
/// Step 7b's memory repair of the spread candidate: rounds, and runs in all.
constexpr int kMaxNodeRepairRounds = 3;
constexpr int kMaxNodeRepairSimulations = 60;
constexpr uint32_t kNodeMoveBlockSizes[] = {2, 1};
constexpr int kMaxNodeMoveSimulations = 250;
/// Step 7f: node_refinement.h's rounds of kRefineMovesPerRound moves each,
/// as many as kRefineNodeRuns node instances allow (rounds × moves × nodes ×
/// M; a round may add one run of its improving moves together, so about
/// that many; none above 15,625 nodes with 4 micro-batches). Inception-v3's
/// 233 nodes: 67 rounds; about 80 ms of SGP's 55–135 ms on the exported
/// models with 4 micro-batches.
constexpr int kRefineMovesPerRound = 16;
constexpr int64_t kRefineNodeRuns = 1000000;

/// Segment j = [bounds[j], bounds[j + 1]) of the topological order runs on
/// devices[j].
struct Segments {
  std::vector<int> devices;
  std::vector<uint32_t> bounds;
};

struct Candidate {
  Placement placement;
  ScheduleEstimate estimate;
  double score_us = kInfinity;  // the estimate at the options' micro-batches
  double simulated_us = -1;     // the simulator's step, when it judged the plan (< 0: not yet)
  int devices_used = 0;
  std::string strategy;
  bool interleaved = false;  // step 4c's plan: judged as it is, no post-pass
};

/// Whether `a` should be preferred to `b` (see kMoreDevicesMargin).
// How many of `num_devices` devices a plan puts any unit (or node) on.
int DevicesUsed(const std::vector<int32_t>& device, int num_devices) {
  std::vector<uint8_t> used(num_devices, 0);
  for (int32_t d : device) used[d] = 1;
  return static_cast<int>(std::count(used.begin(), used.end(), 1));
}

bool Better(const Candidate& a, const Candidate& b) {
  if (a.devices_used > b.devices_used) return a.score_us < b.score_us * (1 - kMoreDevicesMargin);
  return a.score_us < b.score_us;
}

// A node without inputs (a Constant) joins its first reader: by earliest
// start they all fall into the first chunk, and every reader elsewhere would
// wait for a transfer of it, micro-batch by micro-batch, queued on one link.
// A locked unit's nodes follow its first node.
void KeepNodesTogether(const NodeLevel& level, Placement& plan) {
  const CostGraph& nodes = *level.graph;
  const uint32_t n = nodes.num_units();
  for (uint32_t v = 0; v < n; ++v) {
    if (!nodes.in_edges(v).empty() || nodes.out_edges(v).empty()) continue;
    uint32_t first_reader = n;
    for (uint32_t e : nodes.out_edges(v)) first_reader = std::min(first_reader, nodes.edge_dst(e));
    plan.device[v] = plan.device[first_reader];
  }
  std::vector<int32_t> unit_device(level.locked_units.size(), -1);
  for (uint32_t v = 0; v < n; ++v) {
    const uint32_t unit = (*level.unit_of_node)[v];
    if (unit >= level.locked_units.size() || !level.locked_units[unit]) continue;
    if (unit_device[unit] < 0) unit_device[unit] = plan.device[v];
    plan.device[v] = unit_device[unit];
  }
}

// Step 7b: the interleaved chunks of step 4c cut from `order`, a topological
// order of the nodes (units can be too coarse to balance many chunks: GPT-2
// small's 14), chunk i on devices[i mod D], each cap `growth` · i / (chunks -
// 1) above the first; bisection on the first cap. A locked unit's nodes follow
// its first node. Memory is left to the simulator that judges the plan.
Placement InterleavedNodeChunks(const NodeLevel& level, const Cluster& cluster,
                                const std::vector<int>& devices, int chunks_per_device,
                                double growth, absl::Span<const uint32_t> order) {
  const CostGraph& nodes = *level.graph;
  const uint32_t n = nodes.num_units();
  const size_t num_chunks = devices.size() * chunks_per_device;
  std::vector<std::vector<double>> prefix(nodes.num_device_kinds());
  for (int d : devices) {
    std::vector<double>& sums = prefix[cluster.device(d).kind];
    if (!sums.empty()) continue;
    sums.assign(static_cast<size_t>(n) + 1, 0);
    for (uint32_t p = 0; p < n; ++p) {
      sums[p + 1] = sums[p] + nodes.compute_us(order[p], cluster.device(d).kind);
    }
  }
  auto device_of_chunk = [&](size_t j) { return devices[j % devices.size()]; };
  const double last = static_cast<double>(std::max<size_t>(1, num_chunks - 1));
  std::vector<uint32_t> ends(num_chunks);
  // Greedy maximal chunks under the caps; true when they cover every node.
  auto fill = [&](double first_cap_us) {
    uint32_t begin = 0;
    for (size_t j = 0; j < num_chunks; ++j) {
      const std::vector<double>& sums = prefix[cluster.device(device_of_chunk(j)).kind];
      const double cap_us = first_cap_us * (1 + growth * static_cast<double>(j) / last);
      const auto end = static_cast<uint32_t>(
          std::upper_bound(sums.begin() + begin, sums.end(), sums[begin] + cap_us) - sums.begin() -
          1);
      ends[j] = std::max(begin, end);
      begin = ends[j];
    }
    return begin == n;
  };
  double low = 0, high = 0;
  for (int d : devices) high = std::max(high, prefix[cluster.device(d).kind][n]);
  for (int step = 0; step < kBisectionSteps && high - low > 1e-9 * high; ++step) {
    const double mid = (low + high) / 2;
    (fill(mid) ? high : low) = mid;
  }
  fill(high);
  Placement plan;
  plan.device.resize(n);
  uint32_t begin = 0;
  for (size_t j = 0; j < num_chunks; ++j) {
    for (uint32_t p = begin; p < ends[j]; ++p) plan.device[order[p]] = device_of_chunk(j);
    begin = ends[j];
  }
  KeepNodesTogether(level, plan);
  return plan;
}

// Whether node v reads the node just before it in the node order: the next
// link of a chain (a tower, an attention branch, a recurrent layer).
bool ReadsPrevious(const CostGraph& nodes, uint32_t v) {
  for (uint32_t e : nodes.in_edges(v)) {
    if (nodes.edge_src(e) + 1 == v) return true;
  }
  return false;
}

// The end of the chain that starts at `begin`: the nodes after it on its
// device in `plan`, each reading the one before (see ReadsPrevious).
uint32_t ChainEnd(const CostGraph& nodes, const Placement& plan, uint32_t begin) {
  uint32_t end = begin + 1;
  while (end < nodes.num_units() && plan.device[end] == plan.device[begin] &&
         ReadsPrevious(nodes, end)) {
    ++end;
  }
  return end;
}

// Step 7b's last candidate, branches spread: along the node order a node that
// reads the node before it stays on that node's device; any other node (a
// branch's start, a join) goes to the device of `devices` with the least
// compute so far. Where a cap leaves two devices just room for the model
// (Inception-v3 under the tight cap with 4 micro-batches) the interleaved
// cuts that fit are slow, while towers side by side on both devices balance
// compute and weights at once, as TGA's plans do there.
Placement SpreadBranches(const NodeLevel& level, const Cluster& cluster,
                         const std::vector<int>& devices) {
  const CostGraph& nodes = *level.graph;
  const uint32_t n = nodes.num_units();
  Placement plan;
  plan.device.assign(n, devices[0]);
  std::vector<double> load_us(cluster.num_devices(), 0);
  for (uint32_t v = 0; v < n; ++v) {
    int32_t to = devices[0];
    if (v > 0 && ReadsPrevious(nodes, v)) {
      to = plan.device[v - 1];
    } else {
      for (int d : devices) {
        if (load_us[d] < load_us[to]) to = d;
      }
    }
    plan.device[v] = to;
    load_us[to] += nodes.compute_us(v, cluster.device(to).kind);
  }
  KeepNodesTogether(level, plan);
  return plan;
}

// Whether moving nodes [begin, end) of the node order would split a locked
// unit, whose nodes must stay on one device.
bool SplitsLockedUnit(const NodeLevel& level, uint32_t begin, uint32_t end) {
  const std::vector<uint32_t>& unit_of = *level.unit_of_node;
  auto locked = [&](uint32_t v) {
    const uint32_t unit = unit_of[v];
    return unit < level.locked_units.size() && level.locked_units[unit] != 0;
  };
  return (begin > 0 && locked(begin) && unit_of[begin - 1] == unit_of[begin]) ||
         (end < unit_of.size() && locked(end) && unit_of[end - 1] == unit_of[end]);
}

// Step 7b's fourth order: `by_start` with the early region first — the nodes
// that do not descend from the entry whose path to an exit is longest (a
// decoder's first self-attention block, which reads only the decoder's
// input, beside the encoder). They can run before anything the main path
// sends them, so as a block at the head of the order they fill devices that
// wait for the pipeline's first micro-batch, instead of being spread over
// the chunks of the encoder's first round. Empty when there is no such
// region or it holds half the work or more (then it is a main path too).
std::vector<uint32_t> EarlyRegionFirst(const CostGraph& nodes,
                                       const std::vector<uint32_t>& by_start,
                                       const std::vector<double>& to_exit_us, int kind) {
  const uint32_t n = nodes.num_units();
  uint32_t main_entry = n;
  for (uint32_t v = 0; v < n; ++v) {
    if (!nodes.in_edges(v).empty()) continue;
    if (main_entry == n || to_exit_us[v] > to_exit_us[main_entry]) main_entry = v;
  }
  if (main_entry == n) return {};
  // Node indices are a topological order.
  std::vector<uint8_t> on_main(n, 0);
  on_main[main_entry] = 1;
  double early_us = 0, total_us = 0;
  for (uint32_t v = 0; v < n; ++v) {
    for (uint32_t e : nodes.in_edges(v)) on_main[v] |= on_main[nodes.edge_src(e)];
    total_us += nodes.compute_us(v, kind);
    // Entries aside: a Constant is no region.
    if (!on_main[v] && !nodes.in_edges(v).empty()) early_us += nodes.compute_us(v, kind);
  }
  if (early_us <= 0 || early_us >= total_us / 2) return {};
  std::vector<uint32_t> order = by_start;
  std::stable_partition(order.begin(), order.end(), [&](uint32_t v) { return !on_main[v]; });
  return order;
}

class Sgp {
 public:
  Sgp(const CostGraph& graph, const Cluster& cluster, const SearchOptions& options)
      : graph_(graph),
        cluster_(cluster),
        options_(options),
        n_(graph.num_units()),
        num_devices_(cluster.num_devices()),
        estimator_(graph, cluster) {}

  absl::StatusOr<SgpResult> Run();

 private:
  void ComputeCosts();
  const std::vector<uint32_t>& EndsOn(int device);
  double SegmentUs(int device, uint32_t begin, uint32_t end) const {
    const std::vector<double>& prefix = prefix_us_[cluster_.device(device).kind];
    return prefix[end] - prefix[begin];
  }
  bool Fill(const std::vector<int>& devices, double max_us, Segments& segments, double growth = 0);
  std::optional<Segments> Balance(const std::vector<int>& devices, double& bottleneck_us,
                                  double growth = 0);
  void Refine(Segments& segments, double max_us);
  bool Consider(const Segments& segments, std::optional<Candidate>& best);
  std::optional<Candidate> BestSegments();
  std::optional<Candidate> ListScheduled();
  std::optional<Candidate> EarliestTaskFirst();
  std::optional<Candidate> BestListSchedule();
  std::optional<Candidate> BestInterleaved();
  bool NodesUsable() const;
  int64_t JudgedSize() const;
  int64_t InterleavedRuns(int64_t size) const;
  double JudgedUs(const Placement& plan);
  bool FitsMemory(const Candidate& candidate);
  int PostPass(Placement& plan);
  void BelowUnits(SgpResult& result);
  double SweepNodeBoundaries(costmodel::Simulator& simulator, double best_us, SgpResult& result);
  void RefineNodePlan(double start_us, double bound_us, SgpResult& result);
  double RepairNodeMemory(costmodel::Simulator& simulator, Placement& plan);
  int MoveNodeChains(costmodel::Simulator& simulator, double& best_us, Placement& plan, int& runs);
  int MoveNodeBlocks(costmodel::Simulator& simulator, double& best_us, Placement& plan, int budget);
  const costmodel::SimulationResult* TryNodeMove(costmodel::Simulator& simulator, Placement& plan,
                                                 uint32_t begin, uint32_t end, int32_t to,
                                                 double& best_us);
  int PostPassBudget() const;
  double SimulatedUs(const Placement& plan);

  const CostGraph& graph_;
  const Cluster& cluster_;
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
};

// Step 1.
void Sgp::ComputeCosts() {
  link_ = ComputeTypicalLink(cluster_);
  profile_ = ComputeMemoryProfile(graph_);
  held_back_bytes_.assign(num_devices_, 0);
  scratch_device_.assign(n_, 0);

  // Compute: prefix sums per kind in use.
  prefix_us_.assign(graph_.num_device_kinds(), {});
  for (int d = 0; d < num_devices_; ++d) {
    std::vector<double>& prefix = prefix_us_[cluster_.device(d).kind];
    if (!prefix.empty()) continue;
    prefix.resize(static_cast<size_t>(n_) + 1);
    prefix[0] = 0;
    for (uint32_t u = 0; u < n_; ++u) {
      prefix[u + 1] = prefix[u] + graph_.compute_us(u, cluster_.device(d).kind);
    }
  }

  // Communication: a tensor is cut by every boundary between its producer and
  // its last reader. Parallelism from the fastest kind's times.
  std::vector<double> delta(static_cast<size_t>(n_) + 1, 0);
  double tensor_bytes = 0;
  for (uint32_t t = 0; t < graph_.num_tensors(); ++t) {
    tensor_bytes += static_cast<double>(graph_.tensor_bytes(t));
    const uint32_t producer = graph_.tensor_producer(t);
    uint32_t last = producer;
    for (uint32_t e : graph_.tensor_uses(t)) last = std::max(last, graph_.edge_dst(e));
    if (last == producer) continue;
    const double transfer = link_.TransferUs(graph_.tensor_bytes(t));
    delta[producer + 1] += transfer;
    delta[last + 1] -= transfer;
  }
  double memory_bytes = 0;
  for (int d = 0; d < num_devices_; ++d) memory_bytes += cluster_.device(d).memory_bytes;
  bound_can_vouch_ = std::max(1, options_.microbatches) * tensor_bytes +
                         static_cast<double>(profile_.param_bytes) <=
                     memory_bytes;
  cut_us_.assign(static_cast<size_t>(n_) + 1, 0);
  double running = 0;
  for (uint32_t b = 0; b <= n_; ++b) {
    running += delta[b];
    cut_us_[b] = running;
  }
  std::vector<double> finish(n_, 0);
  double work = 0, critical_path = 0;
  for (uint32_t u = 0; u < n_; ++u) {
    double fastest = kInfinity;
    for (int d = 0; d < num_devices_; ++d) {
      fastest = std::min(fastest, graph_.compute_us(u, cluster_.device(d).kind));
    }
    double start = 0;
    for (uint32_t e : graph_.in_edges(u)) start = std::max(start, finish[graph_.edge_src(e)]);
    finish[u] = start + fastest;
    work += fastest;
    critical_path = std::max(critical_path, finish[u]);
  }
  parallelism_ = critical_path > 0 ? work / critical_path : 1;
  double rate = 0;  // whole graphs per µs, all devices together
  for (int d = 0; d < num_devices_; ++d) {
    const double total = SegmentUs(d, 0, n_);
    if (total > 0) rate += 1 / total;
  }
  lower_bound_us_ =
      std::max(critical_path, rate > 0 ? std::max(1, options_.microbatches) / rate : 0);

  device_order_.resize(num_devices_);
  for (int d = 0; d < num_devices_; ++d) device_order_[d] = d;
  std::stable_sort(device_order_.begin(), device_order_.end(), [&](int a, int b) {
    const double ta = SegmentUs(a, 0, n_), tb = SegmentUs(b, 0, n_);
    if (ta != tb) return ta < tb;
    return cluster_.device(a).memory_bytes > cluster_.device(b).memory_bytes;
  });
}

const std::vector<uint32_t>& Sgp::EndsOn(int device) {
  const int64_t capacity = cluster_.device(device).memory_bytes - held_back_bytes_[device];
  for (const auto& [cap, ends] : ends_by_capacity_) {
    if (cap == capacity) return ends;
  }
  ends_by_capacity_.emplace_back(capacity, SegmentEnds(graph_, profile_, capacity));
  return ends_by_capacity_.back().second;
}

// Step 2, one probe: greedy maximal segments of at most `max_us` each.
// Segments past the last unit are empty. False when the units do not fit.
bool Sgp::Fill(const std::vector<int>& devices, double max_us, Segments& segments, double growth) {
  segments.devices = devices;
  segments.bounds.assign(1, 0);
  uint32_t begin = 0;
  const double last = static_cast<double>(std::max<size_t>(1, devices.size() - 1));
  for (size_t j = 0; j < devices.size(); ++j) {
    const int d = devices[j];
    uint32_t end = begin;
    if (begin < n_) {
      const std::vector<double>& prefix = prefix_us_[cluster_.device(d).kind];
      const double cap_us = max_us * (1 + growth * static_cast<double>(j) / last);
      const auto by_time = static_cast<uint32_t>(
          std::upper_bound(prefix.begin() + begin + 1, prefix.end(), prefix[begin] + cap_us) -
          prefix.begin() - 1);
      end = std::min(EndsOn(d)[begin], by_time);
      if (end == begin) return false;
    }
    segments.bounds.push_back(end);
    begin = end;
  }
  return begin == n_;
}

// Step 2: the least bottleneck over `devices` (bisection), empty segments
// dropped. Empty when the units do not fit these devices at all.
std::optional<Segments> Sgp::Balance(const std::vector<int>& devices, double& bottleneck_us,
                                     double growth) {
  Segments segments;
  if (!Fill(devices, kInfinity, segments)) return std::nullopt;
  double low = 0, high = 0;
  for (int d : devices) high = std::max(high, SegmentUs(d, 0, n_));
  for (int step = 0; step < kBisectionSteps && high - low > 1e-9 * high; ++step) {
    const double mid = (low + high) / 2;
    if (Fill(devices, mid, segments, growth)) {
      high = mid;
    } else {
      low = mid;
    }
  }
  Fill(devices, high, segments, growth);
  Segments kept;
  kept.bounds.push_back(0);
  bottleneck_us = 0;
  for (size_t j = 0; j < devices.size(); ++j) {
    const uint32_t begin = segments.bounds[j], end = segments.bounds[j + 1];
    if (begin == end) continue;
    kept.devices.push_back(devices[j]);
    kept.bounds.push_back(end);
    bottleneck_us = std::max(bottleneck_us, SegmentUs(devices[j], begin, end));
  }
  return kept;
}

// Step 3: every boundary to the cheapest cut that keeps both neighbours within
// memory and within `max_us`; two sweeps.
void Sgp::Refine(Segments& segments, double max_us) {
  std::vector<uint32_t>& bounds = segments.bounds;
  for (int sweep = 0; sweep < 2; ++sweep) {
    for (size_t j = 1; j + 1 < bounds.size(); ++j) {
      const uint32_t begin = bounds[j - 1], current = bounds[j], end = bounds[j + 1];
      const int left = segments.devices[j - 1], right = segments.devices[j];
      // Highest cut: the left segment grows.
      uint32_t high = std::min(end - 1, EndsOn(left)[begin]);
      const std::vector<double>& left_prefix = prefix_us_[cluster_.device(left).kind];
      high = std::min<uint32_t>(
          high, static_cast<uint32_t>(std::upper_bound(left_prefix.begin() + begin + 1,
                                                       left_prefix.begin() + end + 1,
                                                       left_prefix[begin] + max_us) -
                                      left_prefix.begin() - 1));
      // Lowest cut: the right segment grows (SegmentEnds is non-decreasing).
      const std::vector<uint32_t>& right_ends = EndsOn(right);
      uint32_t low = static_cast<uint32_t>(
          std::lower_bound(right_ends.begin() + begin + 1, right_ends.begin() + end, end) -
          right_ends.begin());
      const std::vector<double>& right_prefix = prefix_us_[cluster_.device(right).kind];
      low = std::max<uint32_t>(
          low, static_cast<uint32_t>(std::lower_bound(right_prefix.begin() + begin + 1,
                                                      right_prefix.begin() + end,
                                                      right_prefix[end] - max_us) -
                                     right_prefix.begin()));
      uint32_t best = current;
      for (uint32_t b = low; b <= high; ++b) {
        const bool cheaper = cut_us_[b] < cut_us_[best];
        const bool as_cheap_closer =
            cut_us_[b] == cut_us_[best] && (b > current ? b - current : current - b) <
                                               (best > current ? best - current : current - best);
        if (cheaper || as_cheap_closer) best = b;
      }
      bounds[j] = best;
    }
  }
}

// Steps 2–3, scoring: replays the segments and keeps them if best so far
// (then true).
bool Sgp::Consider(const Segments& segments, std::optional<Candidate>& best) {
  for (size_t j = 0; j < segments.devices.size(); ++j) {
    std::fill(scratch_device_.begin() + segments.bounds[j],
              scratch_device_.begin() + segments.bounds[j + 1], segments.devices[j]);
  }
  Candidate candidate;
  candidate.estimate = estimator_.Run(scratch_device_);
  candidate.score_us = candidate.estimate.PipelinedUs(options_.microbatches);
  candidate.devices_used = static_cast<int>(segments.devices.size());
  if (best && !Better(candidate, *best)) return false;
  candidate.placement.device = scratch_device_;
  candidate.placement.priority = estimator_.start_us();
  candidate.strategy = "segments";
  best = std::move(candidate);
  return true;
}

std::optional<Candidate> Sgp::BestSegments() {
  auto first_devices = [&](int k) {
    std::vector<int> devices(device_order_.begin(), device_order_.begin() + k);
    std::sort(devices.begin(), devices.end());  // neighbours in index order share islands
    return devices;
  };
  int fewest = 0;
  Segments segments;
  for (int k = 1; k <= num_devices_ && fewest == 0; ++k) {
    if (Fill(first_devices(k), kInfinity, segments)) fewest = k;
  }
  if (fewest == 0) return std::nullopt;

  // More devices stop paying off on chains and serialised segments; the
  // search stops after kMaxFruitlessCounts counts in a row that did not win.
  std::optional<Candidate> best;
  int fruitless = 0;
  for (int k = fewest; k <= num_devices_ && fruitless < kMaxFruitlessCounts;) {
    double bottleneck_us = 0;
    std::optional<Segments> balanced = Balance(first_devices(k), bottleneck_us);
    bool won = false;
    if (balanced) {
      if (k == fewest) {
        Segments cheapest = *balanced;
        Refine(cheapest, kInfinity);
        won |= Consider(cheapest, best);
      }
      Refine(*balanced, bottleneck_us * (1 + kBalanceTolerance));
      won |= Consider(*balanced, best);
    }
    fruitless = won ? 0 : fruitless + 1;
    if (k == num_devices_) break;
    k = (num_devices_ - fewest < kAllDeviceCountsUpTo) ? k + 1 : std::min(2 * k, num_devices_);
  }
  return best;
}

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

// Step 4c, with micro-batches only: interleaved (virtual) stages. M
// micro-batches through S contiguous stages idle for the fill and drain, a
// step of about (M + S - 1) / M times the balanced work; cut into v·D
// balanced chunks, chunk i on device i mod D (Megatron-LM's interleaving),
// a micro-batch leaves each device after 1/v of its share, so the idle part
// shrinks about v-fold for v times the cuts.
//
// The simulator runs the earliest micro-batch first (Note [Micro-batches] in
// costmodel/simulator.h). With M ≥ D that is tight: micro-batch 0 comes back
// to a device just as micro-batch M - 1 leaves it, and when a short chunk lets
// it come back early it takes the device, the last micro-batch falls behind
// and then waits behind every earlier one on every later device. Chunks that
// grow along the order (each cap `growth` · i / (v·D - 1) above the first)
// keep the earlier micro-batches late enough; the growth costs the last
// micro-batch's trail (M - 1 chunks) a little.
//
// SGP's estimate (one micro-batch's step, then the bottleneck per further
// one) sees none of this, so the simulator judges each candidate — on the
// nodes when it has them, since that is where the plan is judged and the
// timing there decides who collides — and the fastest that fits wins.
std::optional<Candidate> Sgp::BestInterleaved() {
  if (options_.microbatches <= 1 || num_devices_ < 2) return std::nullopt;
  // One run is kept for judging the plan of steps 2–6 against the best.
  int64_t runs_left = InterleavedRuns(JudgedSize()) - 1;
  std::vector<int> devices = device_order_;
  std::sort(devices.begin(), devices.end());  // neighbours in index order share islands
  std::optional<Candidate> best;
  std::vector<int> chunks;
  for (const double growth : kChunkGrowth) {
    for (const int v : kChunksPerDevice) {
      if (static_cast<int64_t>(v) * num_devices_ > n_ || runs_left <= 0) break;
      --runs_left;
      chunks.clear();
      for (int round = 0; round < v; ++round) {
        chunks.insert(chunks.end(), devices.begin(), devices.end());
      }
      double bottleneck_us = 0;
      std::optional<Segments> balanced = Balance(chunks, bottleneck_us, growth);
      if (!balanced) continue;
      // Cheaper cuts, where moving them keeps the chunks balanced.
      if (growth == 0) Refine(*balanced, bottleneck_us * (1 + kBalanceTolerance));
      for (size_t j = 0; j < balanced->devices.size(); ++j) {
        std::fill(scratch_device_.begin() + balanced->bounds[j],
                  scratch_device_.begin() + balanced->bounds[j + 1], balanced->devices[j]);
      }
      Placement plan{.device = scratch_device_};
      const double step_us = JudgedUs(plan);
      if (step_us == kInfinity || (best && step_us >= best->simulated_us)) continue;
      Candidate candidate;
      candidate.placement = std::move(plan);
      candidate.simulated_us = step_us;
      candidate.score_us = step_us;
      candidate.devices_used = DevicesUsed(candidate.placement.device, num_devices_);
      candidate.strategy = "interleaved segments";
      candidate.interleaved = true;
      best = std::move(candidate);
    }
  }
  return best;
}

// Step 4c's referee: the node graph's simulator when step 7 can use the nodes,
// else the units'.
bool Sgp::NodesUsable() const {
  const NodeLevel& level = options_.nodes;
  return level.graph != nullptr && level.unit_of_node != nullptr && num_devices_ >= 2 &&
         level.graph->num_units() > n_ && level.graph->num_units() <= kMaxNodesBelowUnits &&
         level.unit_of_node->size() == level.graph->num_units();
}

// The simulations steps 4c, 7b and 7c may each spend on a graph of `size`.
int64_t Sgp::InterleavedRuns(int64_t size) const {
  return kInterleavedUnitRuns / (std::max<int64_t>(1, size) * std::max(1, options_.microbatches));
}

int64_t Sgp::JudgedSize() const { return NodesUsable() ? options_.nodes.graph->num_units() : n_; }

double Sgp::JudgedUs(const Placement& plan) {
  if (!NodesUsable()) return SimulatedUs(plan);
  if (!node_simulator_) node_simulator_.emplace(*options_.nodes.graph, cluster_);
  ++simulations_;
  const costmodel::SimulationResult& result = node_simulator_->Run(
      ProjectToNodes(options_.nodes, plan), {.microbatches = options_.microbatches});
  return result.memory_overflow ? kInfinity : result.step_time_us;
}

// Step 5: the bound (unless it cannot vouch for any plan), else the
// simulator. A device over capacity has its budget cut by the overflow (and
// 1/64 of its memory) for the next attempt.
bool Sgp::FitsMemory(const Candidate& candidate) {
  if (bound_can_vouch_) {
    const std::vector<int64_t> bound =
        ProvablePeakBytes(graph_, candidate.placement.device, num_devices_, options_.microbatches);
    bool proven = true;
    for (int d = 0; d < num_devices_; ++d) proven &= bound[d] <= cluster_.device(d).memory_bytes;
    if (proven) return true;
  }
  if (!simulator_) simulator_.emplace(graph_, cluster_);
  ++simulations_;
  const costmodel::SimulationResult& result = simulator_->Run(
      candidate.placement, costmodel::SimulationOptions{.microbatches = options_.microbatches});
  bool fits = true;
  for (int d = 0; d < num_devices_; ++d) {
    const int64_t capacity = cluster_.device(d).memory_bytes;
    const int64_t over = result.devices[d].peak_memory_bytes - capacity;
    if (over <= 0) continue;
    fits = false;
    held_back_bytes_[d] += over + capacity / 64;
  }
  return fits;
}

int Sgp::PostPassBudget() const {
  return static_cast<int>(
      std::min<int64_t>(kMaxPostPassSimulations, kPostPassUnitRuns / std::max<int64_t>(1, n_)));
}

// The simulated step; infinity when the plan overflows a device's memory.
double Sgp::SimulatedUs(const Placement& plan) {
  if (!simulator_) simulator_.emplace(graph_, cluster_);
  ++simulations_;
  const costmodel::SimulationResult& result =
      simulator_->Run(plan, {.microbatches = options_.microbatches});
  return result.memory_overflow ? kInfinity : result.step_time_us;
}

// Step 6; returns the shifts kept.
int Sgp::PostPass(Placement& plan) {
  const int budget = PostPassBudget();
  if (budget < 2 || num_devices_ < 2 || n_ < 2) return 0;
  if (!simulator_) simulator_.emplace(graph_, cluster_);
  const costmodel::SimulationOptions sim_options{.microbatches = options_.microbatches};
  const costmodel::SimulationResult& start = simulator_->Run(plan, sim_options);
  ++simulations_;
  if (start.memory_overflow) return 0;
  double best_us = start.step_time_us;
  std::vector<double> busy_us(num_devices_);
  for (int d = 0; d < num_devices_; ++d) busy_us[d] = start.devices[d].busy_us;

  // The boundaries, the busiest side's first (ties: in order).
  std::vector<uint32_t> boundaries;
  for (uint32_t b = 1; b < n_; ++b) {
    if (plan.device[b] != plan.device[b - 1]) boundaries.push_back(b);
  }
  auto hotter = [&](uint32_t b) {
    return std::max(busy_us[plan.device[b]], busy_us[plan.device[b - 1]]);
  };
  std::stable_sort(boundaries.begin(), boundaries.end(),
                   [&](uint32_t a, uint32_t b) { return hotter(a) > hotter(b); });

  int simulations = 1, kept = 0;
  std::vector<uint32_t> moved;
  for (uint32_t b : boundaries) {
    if (simulations >= budget) break;
    const int left = plan.device[b - 1], right = plan.device[b];
    if (left == right) continue;  // an earlier shift closed it
    const bool left_hot = busy_us[left] >= busy_us[right];
    const int hot = left_hot ? left : right, cold = left_hot ? right : left;
    const double excess_us = (busy_us[hot] - busy_us[cold]) / 2;
    const int kind = cluster_.device(hot).kind;
    moved.clear();
    double shifted_us = 0;
    // The hot run's units next to the boundary, toward balance.
    for (int64_t u = left_hot ? int64_t{b} - 1 : int64_t{b};
         u >= 0 && u < int64_t{n_} && plan.device[u] == hot; u += left_hot ? -1 : 1) {
      const double unit_us = graph_.compute_us(static_cast<uint32_t>(u), kind);
      if (!moved.empty() && shifted_us + unit_us > excess_us) break;
      moved.push_back(static_cast<uint32_t>(u));
      shifted_us += unit_us;
    }
    for (uint32_t u : moved) plan.device[u] = cold;
    const costmodel::SimulationResult& shifted = simulator_->Run(plan, sim_options);
    ++simulations;
    ++simulations_;
    if (!shifted.memory_overflow && shifted.step_time_us < best_us * (1 - 1e-9)) {
      best_us = shifted.step_time_us;
      for (int d = 0; d < num_devices_; ++d) busy_us[d] = shifted.devices[d].busy_us;
      ++kept;
      continue;
    }
    for (uint32_t u : moved) plan.device[u] = hot;
  }
  return kept;
}

// Step 7; sets result.node_placement when a schedule of the nodes wins.
void Sgp::BelowUnits(SgpResult& result) {
  const NodeLevel& level = options_.nodes;
  if (level.graph == nullptr || level.unit_of_node == nullptr || num_devices_ < 2) return;
  const CostGraph& nodes = *level.graph;
  const uint32_t num_nodes = nodes.num_units();
  if (num_nodes <= n_ || num_nodes > kMaxNodesBelowUnits ||
      level.unit_of_node->size() != num_nodes) {
    return;
  }
  costmodel::Simulator simulator(nodes, cluster_);
  const costmodel::SimulationOptions sim_options{.microbatches = options_.microbatches};
  ++simulations_;
  const costmodel::SimulationResult& mine =
      simulator.Run(ProjectToNodes(level, result.placement), sim_options);
  const double units_us = mine.memory_overflow ? kInfinity : mine.step_time_us;
  // Without the bound's split search, which alone can take longer than SGP.
  const double bound_us =
      costmodel::ComputeLowerBound(nodes, cluster_, options_.microbatches, 0).bound_us;
  if (units_us <= bound_us * (1 + kNodesNearLowerBound)) return;
  // ETF without, then with favourite children (SCT: a child runs right
  // after its parent on the parent's device, so a recurrent chain keeps its
  // state local); the faster that fits and beats the unit plan wins.
  double best_us = units_us;
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
  // Step 7b, with micro-batches: interleaved chunks of the nodes, in their
  // own order, by earliest start (the longest path to each node, on the
  // fastest kind) and by latest start (the longest path from each node to
  // an exit, longest first): where branches run side by side the node order
  // lists one after the other, so a micro-batch reaches a chunk before the
  // chunk's predecessor in the order is done and collides with the ones
  // behind it; by earliest start chunk i holds what micro-batch 0 runs i-th;
  // by latest start a branch that joins late (a decoder's self-attention
  // beside the encoder) comes just before its join, and does not run ahead
  // of the micro-batches behind it on the devices the pipeline needs first.
  if (options_.microbatches <= 1) return;
  int64_t runs_left = InterleavedRuns(num_nodes);
  std::vector<int> devices = device_order_;
  std::sort(devices.begin(), devices.end());
  std::vector<uint32_t> node_order(num_nodes);
  std::iota(node_order.begin(), node_order.end(), 0);
  std::vector<double> earliest_start_us(num_nodes, 0);
  const int fastest_kind = cluster_.device(device_order_[0]).kind;
  for (uint32_t v = 0; v < num_nodes; ++v) {
    for (uint32_t e : nodes.in_edges(v)) {
      const uint32_t u = nodes.edge_src(e);
      earliest_start_us[v] =
          std::max(earliest_start_us[v], earliest_start_us[u] + nodes.compute_us(u, fastest_kind));
    }
  }
  std::vector<uint32_t> by_start = node_order;
  std::stable_sort(by_start.begin(), by_start.end(), [&](uint32_t a, uint32_t b) {
    return earliest_start_us[a] < earliest_start_us[b];
  });
  std::vector<double> to_exit_us(num_nodes, 0);
  for (uint32_t v = num_nodes; v-- > 0;) {
    for (uint32_t e : nodes.out_edges(v))
      to_exit_us[v] = std::max(to_exit_us[v], to_exit_us[nodes.edge_dst(e)]);
    to_exit_us[v] += nodes.compute_us(v, fastest_kind);
  }
  std::vector<uint32_t> by_latest_start = node_order;
  std::stable_sort(by_latest_start.begin(), by_latest_start.end(),
                   [&](uint32_t a, uint32_t b) { return to_exit_us[a] > to_exit_us[b]; });
  std::vector<const std::vector<uint32_t>*> orders = {&node_order, &by_start, &by_latest_start};
  const std::vector<uint32_t> early_first =
      EarlyRegionFirst(nodes, by_start, to_exit_us, fastest_kind);
  if (!early_first.empty()) orders.push_back(&early_first);
  for (const std::vector<uint32_t>* order : orders) {
    for (const double growth : kChunkGrowth) {
      for (const int v : kChunksPerDevice) {
        if (static_cast<int64_t>(v) * num_devices_ > num_nodes || runs_left <= 0) break;
        --runs_left;
        Placement plan = InterleavedNodeChunks(level, cluster_, devices, v, growth, *order);
        ++simulations_;
        const costmodel::SimulationResult& theirs = simulator.Run(plan, sim_options);
        if (theirs.memory_overflow || theirs.step_time_us >= best_us) continue;
        best_us = theirs.step_time_us;
        result.devices_used = DevicesUsed(plan.device, num_devices_);
        result.node_placement = std::move(plan);
        result.strategy = "interleaved segments of nodes";
      }
    }
  }
  if (runs_left > 0) {
    Placement spread = SpreadBranches(level, cluster_, devices);
    ++simulations_;
    const costmodel::SimulationResult& spread_run = simulator.Run(spread, sim_options);
    double spread_us = spread_run.step_time_us;
    if (spread_us < best_us && spread_run.memory_overflow) {
      spread_us = RepairNodeMemory(simulator, spread);
    }
    if (spread_us < best_us) {
      best_us = spread_us;
      result.devices_used = DevicesUsed(spread.device, num_devices_);
      result.node_placement = std::move(spread);
      result.strategy = "branches spread on nodes";
    }
  }
  best_us = SweepNodeBoundaries(simulator, best_us, result);
  RefineNodePlan(best_us, bound_us, result);
}

// Step 7b's memory repair of a node plan over memory: each chain (see
// ReadsPrevious) on the device most over its memory is tried on the device
// with the most room; the fastest move that fits is kept, else the one that
// leaves the least overflow, and again while it overflows. At most
// kMaxNodeRepairRounds rounds and kMaxNodeRepairSimulations runs (fewer on
// large graphs: InterleavedRuns). Returns the simulated step, infinity when
// the plan still overflows.
double Sgp::RepairNodeMemory(costmodel::Simulator& simulator, Placement& plan) {
  const CostGraph& nodes = *options_.nodes.graph;
  const uint32_t num_nodes = nodes.num_units();
  const costmodel::SimulationOptions sim_options{.microbatches = options_.microbatches};
  int runs_left = static_cast<int>(
      std::min<int64_t>(kMaxNodeRepairSimulations, InterleavedRuns(num_nodes) / 4));
  for (int round = 0; round < kMaxNodeRepairRounds && runs_left > 0; ++round) {
    ++simulations_;
    --runs_left;
    const costmodel::SimulationResult& now = simulator.Run(plan, sim_options);
    if (!now.memory_overflow) return now.step_time_us;
    int most_over = 0, most_room = 0;
    auto over = [&](int d) {
      return now.devices[d].peak_memory_bytes - cluster_.device(d).memory_bytes;
    };
    for (int d = 1; d < num_devices_; ++d) {
      if (over(d) > over(most_over)) most_over = d;
      if (over(d) < over(most_room)) most_room = d;
    }
    double fitting_us = kInfinity;
    int64_t least_overflow = now.overflow_bytes;
    uint32_t move_begin = 0, move_end = 0;
    for (uint32_t begin = 0, end = 0; begin < num_nodes && runs_left > 0; begin = end) {
      end = ChainEnd(nodes, plan, begin);
      if (plan.device[begin] != most_over || SplitsLockedUnit(options_.nodes, begin, end)) continue;
      std::fill(plan.device.begin() + begin, plan.device.begin() + end, most_room);
      ++simulations_;
      --runs_left;
      const costmodel::SimulationResult& moved = simulator.Run(plan, sim_options);
      std::fill(plan.device.begin() + begin, plan.device.begin() + end, most_over);
      if (!moved.memory_overflow && moved.step_time_us < fitting_us) {
        fitting_us = moved.step_time_us;
      } else if (moved.memory_overflow && fitting_us == kInfinity &&
                 moved.overflow_bytes < least_overflow) {
        least_overflow = moved.overflow_bytes;
      } else {
        continue;
      }
      move_begin = begin;
      move_end = end;
    }
    if (move_end == 0) break;
    std::fill(plan.device.begin() + move_begin, plan.device.begin() + move_end, most_room);
    if (fitting_us < kInfinity) return fitting_us;
  }
  return kInfinity;
}

// Step 7c, with micro-batches: where a pipeline's micro-batches collide
// depends on timing the chunking cannot foresee, so one sweep along the node
// order over the best node plan's boundaries (where the device changes): the
// left run's last quarter moves right, else the right run's first quarter
// moves left; a move stays when the simulated step shrinks and memory fits.
// At most kMaxBoundarySweepSimulations runs, and InterleavedRuns. Then steps
// 7d and 7e. Returns the simulated step of the node plan it leaves.
double Sgp::SweepNodeBoundaries(costmodel::Simulator& simulator, double best_us,
                                SgpResult& result) {
  const NodeLevel& level = options_.nodes;
  const uint32_t num_nodes = level.graph->num_units();
  const int budget =
      static_cast<int>(std::min<int64_t>(kMaxBoundarySweepSimulations, InterleavedRuns(num_nodes)));
  if (options_.microbatches <= 1 || budget < 1) return best_us;
  Placement plan = NodePlanOf(level, result.placement, result.node_placement);
  std::vector<uint32_t> boundaries;
  for (uint32_t v = 1; v < num_nodes; ++v) {
    if (plan.device[v] != plan.device[v - 1]) boundaries.push_back(v);
  }
  int simulations = 0, kept = 0;
  for (const uint32_t b : boundaries) {
    const int32_t left = plan.device[b - 1], right = plan.device[b];
    if (left == right) continue;  // an earlier move closed it
    uint32_t run_begin = b, run_end = b;
    while (run_begin > 0 && plan.device[run_begin - 1] == left) --run_begin;
    while (run_end < num_nodes && plan.device[run_end] == right) ++run_end;
    for (const bool left_shrinks : {true, false}) {
      if (simulations >= budget) break;
      const uint32_t k = std::max<uint32_t>(1, (left_shrinks ? b - run_begin : run_end - b) / 4);
      const uint32_t begin = left_shrinks ? b - k : b, end = left_shrinks ? b : b + k;
      if (SplitsLockedUnit(level, begin, end)) continue;
      const int32_t from = left_shrinks ? left : right, to = left_shrinks ? right : left;
      ++simulations;
      if (TryNodeMove(simulator, plan, begin, end, to, best_us) != nullptr) {
        ++kept;
        break;
      }
      std::fill(plan.device.begin() + begin, plan.device.begin() + end, from);
    }
  }
  int chain_runs = 0;
  const int chains_moved = MoveNodeChains(simulator, best_us, plan, chain_runs);
  const int64_t instances = std::max<int64_t>(1, num_nodes) * options_.microbatches;
  const int blocks_moved =
      MoveNodeBlocks(simulator, best_us, plan,
                     static_cast<int>(std::min<int64_t>(kMaxNodeMoveSimulations,
                                                        kMoveNodeRuns / instances - chain_runs)));
  if (kept + chains_moved + blocks_moved == 0) return best_us;
  result.devices_used = DevicesUsed(plan.device, num_devices_);
  result.node_placement = std::move(plan);
  if (kept > 0) result.strategy += ", boundaries moved on nodes";
  if (chains_moved > 0) result.strategy += ", chains moved on nodes";
  if (blocks_moved > 0) result.strategy += ", nodes moved";
  return best_us;
}

// Step 7f, with micro-batches: the sweeps of 7c–7e end where single moves
// gain little, while better plans can differ in dozens of nodes at once
// (Inception-v3 on 8 devices with 4 micro-batches: the best move of one
// node of the critical path to any device, taken again and again, gains
// 0.4% and stops; TGA's plan, 5.5% faster, differs in 60 of 233 nodes).
// node_refinement.h's levels and kicks (an iterated local search: random
// moves perturb the best plan, the levels descend again) go on from the
// best node plan for a fixed number of rounds (kRefineNodeRuns): bounded,
// seeded work, the same plan on every machine and thread count. The best
// plan ever simulated is kept, never a worse one: `start_us` is the step of
// the plan it starts from (infinity: over memory, nothing to refine).
void Sgp::RefineNodePlan(double start_us, double bound_us, SgpResult& result) {
  NodeLevel level = options_.nodes;
  const int64_t instances = static_cast<int64_t>(level.graph->num_units()) * options_.microbatches;
  const int64_t rounds = kRefineNodeRuns / (kRefineMovesPerRound * std::max<int64_t>(1, instances));
  if (options_.microbatches <= 1 || rounds < 1 || start_us == kInfinity) return;
  if (!level.lower_bound_us) level.lower_bound_us = bound_us;
  NodeRefinementOptions refine{.seed = options_.seed,
                               .threads = options_.threads,
                               .microbatches = options_.microbatches,
                               .deadline_s = kInfinity,
                               .max_rounds = rounds,
                               .moves_per_round = kRefineMovesPerRound,
                               .list_schedulers = {}};
  refine.node_starts.emplace_back("sgp",
                                  NodePlanOf(level, result.placement, result.node_placement));
  absl::StatusOr<NodeRefinementResult> refined = RefineOnNodes(level, cluster_, {}, refine);
  if (!refined.ok()) return;
  simulations_ += static_cast<int>(refined->evaluations);
  if (!refined->feasible || refined->step_us >= start_us * (1 - 1e-9)) return;
  result.devices_used = DevicesUsed(refined->placement.device, num_devices_);
  result.node_placement = std::move(refined->placement);
  result.strategy += ", refined on nodes";
}

// Step 7d, with micro-batches: whole chains to a neighbour's device. A chain
// is a run of nodes along the node order, each reading the one before, on
// one device: a tower of an Inception block, a decoder's self-attention
// beside the encoder, one of two recurrent layers. Where branches could run
// side by side the node order lists them one after the other, and chunks of
// that order put the end of one and the start of the next on one device;
// moving the chain to the device of the chain before or after it lets the
// two overlap, or fills a device that waits for the pipeline's first
// micro-batch. A chain that starts a branch may also go to the least busy
// device (with more devices than micro-batches a pipeline leaves devices
// idle, and a tower there shortens the path every micro-batch takes). Each
// chain in order, kChainMoveSweeps sweeps; a move stays when the simulated
// step shrinks and memory fits. At most kMaxChainMoveSimulations runs and
// kChainMoveNodeRuns node instances. Returns the moves kept; `runs` counts
// the simulations.
int Sgp::MoveNodeChains(costmodel::Simulator& simulator, double& best_us, Placement& plan,
                        int& runs) {
  const NodeLevel& level = options_.nodes;
  const CostGraph& nodes = *level.graph;
  const uint32_t num_nodes = nodes.num_units();
  const int budget = static_cast<int>(std::min<int64_t>(
      kMaxChainMoveSimulations,
      kChainMoveNodeRuns / (std::max<int64_t>(1, num_nodes) * options_.microbatches)));
  const costmodel::SimulationOptions sim_options{.microbatches = options_.microbatches};
  runs = 0;
  if (budget < 1) return 0;
  // Busy time per device in the current plan, for the least busy device.
  std::vector<double> busy_us(num_devices_);
  auto note_busy = [&](const costmodel::SimulationResult& run) {
    for (int d = 0; d < num_devices_; ++d) busy_us[d] = run.devices[d].busy_us;
  };
  note_busy(simulator.Run(plan, sim_options));
  ++simulations_;
  int simulations = 1, kept = 0;
  for (int sweep = 0; sweep < kChainMoveSweeps; ++sweep) {
    for (uint32_t begin = 0, end = 0; begin < num_nodes && simulations < budget; begin = end) {
      const int32_t from = plan.device[begin];
      end = ChainEnd(nodes, plan, begin);
      if (SplitsLockedUnit(level, begin, end)) continue;
      // The devices of the chains before and after it; a chain that starts
      // a branch (it does not read the node before it) also the least busy.
      int32_t targets[] = {begin > 0 ? plan.device[begin - 1] : from,
                           end < num_nodes ? plan.device[end] : from, from};
      if (begin > 0 && !ReadsPrevious(nodes, begin)) {
        targets[2] = static_cast<int32_t>(std::min_element(busy_us.begin(), busy_us.end()) -
                                          busy_us.begin());
      }
      int32_t best_device = from;
      for (int i = 0; i < 3 && simulations < budget; ++i) {
        const int32_t to = targets[i];
        if (to == from || std::find(targets, targets + i, to) != targets + i) continue;
        ++simulations;
        if (const costmodel::SimulationResult* moved =
                TryNodeMove(simulator, plan, begin, end, to, best_us)) {
          best_device = to;
          note_busy(*moved);
        }
      }
      std::fill(plan.device.begin() + begin, plan.device.begin() + end, best_device);
      kept += best_device != from;
    }
  }
  runs = simulations;
  return kept;
}

// Step 7e, with micro-batches: what the chains leave is fine-grained — an
// Inception tower's first convolution next to the block's input, a Relu
// beside the Concat that reads it, a node or two at a chunk's edge. Blocks
// of kNodeMoveBlockSizes consecutive nodes on one device, in node order, each
// to every device it exchanges a tensor with; a move stays when the
// simulated step shrinks and memory fits. At most `budget` runs. Returns the
// moves kept.
int Sgp::MoveNodeBlocks(costmodel::Simulator& simulator, double& best_us, Placement& plan,
                        int budget) {
  const NodeLevel& level = options_.nodes;
  const CostGraph& nodes = *level.graph;
  const uint32_t num_nodes = nodes.num_units();
  int simulations = 0, kept = 0;
  std::vector<int32_t> targets;
  for (const uint32_t size : kNodeMoveBlockSizes) {
    for (uint32_t begin = 0, end = 0; begin < num_nodes && simulations < budget; begin = end) {
      const int32_t from = plan.device[begin];
      end = begin + 1;
      while (end < num_nodes && end - begin < size && plan.device[end] == from) ++end;
      if (SplitsLockedUnit(level, begin, end)) continue;
      targets.clear();
      for (uint32_t v = begin; v < end; ++v) {
        for (uint32_t e : nodes.in_edges(v)) {
          if (nodes.edge_src(e) < begin) targets.push_back(plan.device[nodes.edge_src(e)]);
        }
        for (uint32_t e : nodes.out_edges(v)) {
          if (nodes.edge_dst(e) >= end) targets.push_back(plan.device[nodes.edge_dst(e)]);
        }
      }
      std::sort(targets.begin(), targets.end());
      targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
      int32_t best_device = from;
      for (const int32_t to : targets) {
        if (to == from || simulations >= budget) continue;
        ++simulations;
        if (TryNodeMove(simulator, plan, begin, end, to, best_us) != nullptr) best_device = to;
      }
      std::fill(plan.device.begin() + begin, plan.device.begin() + end, best_device);
      kept += best_device != from;
    }
  }
  return kept;
}

// Steps 7c and 7d's trial: nodes [begin, end) of `plan` go to device `to`
// and the plan is simulated. Returns the run when its step beats `best_us`
// (which becomes that step) and memory fits, else nullptr; either way the
// plan keeps the move, for the caller to undo or keep.
const costmodel::SimulationResult* Sgp::TryNodeMove(costmodel::Simulator& simulator,
                                                    Placement& plan, uint32_t begin, uint32_t end,
                                                    int32_t to, double& best_us) {
  std::fill(plan.device.begin() + begin, plan.device.begin() + end, to);
  ++simulations_;
  const costmodel::SimulationResult& moved =
      simulator.Run(plan, {.microbatches = options_.microbatches});
  if (moved.memory_overflow || moved.step_time_us >= best_us * (1 - 1e-9)) return nullptr;
  best_us = moved.step_time_us;
  return &moved;
}

absl::StatusOr<SgpResult> Sgp::Run() {
  if (absl::Status s = CheckSearchInputs(graph_, cluster_); !s.ok()) return s;
  SgpResult result;
  result.strategy = "segments";
  if (n_ == 0) return result;
  if (absl::Status s = CheckEveryUnitFits(graph_, cluster_); !s.ok()) return s;
  ComputeCosts();

  auto finish = [&](Candidate& chosen) {
    // The interleaved plan was judged as it is; the post-pass's moves toward
    // balance would undo its growing chunks.
    if (!chosen.interleaved) {
      result.post_pass_moves = PostPass(chosen.placement);
    }
    result.placement = std::move(chosen.placement);
    result.strategy = chosen.strategy;
    result.devices_used = chosen.devices_used;
    result.estimated_step_us = chosen.score_us;
    BelowUnits(result);
    result.simulations = simulations_;
    return result;
  };
  // Step 4c: with micro-batches the interleaved candidate, already simulated
  // (and so within memory), replaces the plan it beats in the simulator.
  std::optional<Candidate> interleaved = BestInterleaved();
  auto finish_best = [&](Candidate& chosen) {
    if (interleaved) {
      const double chosen_us = NodesUsable() || chosen.simulated_us < 0 ? JudgedUs(chosen.placement)
                                                                        : chosen.simulated_us;
      if (interleaved->simulated_us < chosen_us) return finish(*interleaved);
    }
    return finish(chosen);
  };
  // On wide graphs the list schedule comes first: when it is within
  // kNearLowerBound of the lower bound no segment plan can beat it by more.
  // A plan that overflows in the simulator has that device's budget cut by
  // the overflow (FitsMemory), and both plans are made again.
  const bool wide = num_devices_ > 1 && parallelism_ >= kListScheduleMinParallelism;
  std::optional<Placement> overflowing;  // the last plan over memory, for the repair
  for (int repair = 0; repair <= kMaxMemoryRepairs; ++repair) {
    if (repair > 0) ends_by_capacity_.clear();  // capacities changed
    bool overflowed = false;
    std::optional<Candidate> list;
    if (wide) list = BestListSchedule();
    if (list && list->score_us <= lower_bound_us_ * (1 + kNearLowerBound)) {
      if (FitsMemory(*list)) return finish_best(*list);
      overflowed = true;
      overflowing = list->placement;
      list.reset();
    }
    std::optional<Candidate> segments = BestSegments();
    std::vector<Candidate*> order;
    if (segments) order.push_back(&*segments);
    if (list) order.push_back(&*list);
    if (order.size() == 2 && Better(*order[1], *order[0])) std::swap(order[0], order[1]);
    // Step 6: when both fit, the simulator has the last word (two runs, on
    // graphs small enough for the post-pass).
    if (order.size() == 2 && PostPassBudget() >= 2 && FitsMemory(*order[0]) &&
        FitsMemory(*order[1])) {
      order[0]->simulated_us = SimulatedUs(order[0]->placement);
      order[1]->simulated_us = SimulatedUs(order[1]->placement);
      if (order[1]->simulated_us < order[0]->simulated_us) std::swap(order[0], order[1]);
    }
    for (Candidate* candidate : order) {
      if (FitsMemory(*candidate)) return finish_best(*candidate);
      overflowed = true;
      if (!overflowing) overflowing = candidate->placement;
    }
    if (!overflowed) break;  // no plan within the estimates: nothing to repair
  }
  if (interleaved) return finish(*interleaved);  // the one plan that fitted
  absl::StatusOr<Placement> repaired =
      RepairOrGiveUp(graph_, cluster_, options_.microbatches, std::move(overflowing));
  if (!repaired.ok()) return repaired.status();
  Candidate chosen{.placement = *std::move(repaired), .strategy = "memory repair"};
  chosen.devices_used = DevicesUsed(chosen.placement.device, num_devices_);
  return finish(chosen);
}

}  // namespace

absl::StatusOr<SgpResult> RunSgp(const CostGraph& graph, const Cluster& cluster,
                                 const SearchOptions& options) {
  return Sgp(graph, cluster, options).Run();
}

absl::StatusOr<Placement> PlaceSgp(const CostGraph& graph, const Cluster& cluster,
                                   const SearchOptions& options) {
  absl::StatusOr<SgpResult> result = RunSgp(graph, cluster, options);
  if (!result.ok()) return result.status();
  return std::move(result->placement);
}

}  // namespace autopar::search
