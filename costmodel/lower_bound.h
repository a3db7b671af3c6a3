// A lower bound on the step time of any placement, reported
// beside every simulated step time so users see how far a plan is from ideal.
#ifndef AUTOPAR_COSTMODEL_LOWER_BOUND_H_
#define AUTOPAR_COSTMODEL_LOWER_BOUND_H_

#include <cstdint>
#include <vector>

#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"

namespace autopar::costmodel {

struct LowerBound {
  /// Longest path through the graph, each unit at its fastest kind's time,
  /// transfers free: one micro-batch can finish no sooner, and so neither can
  /// the step (Note [Micro-batches] in costmodel/simulator.h). With whole
  /// stages, plus one stage run (Note [Stage execution]).
  double critical_path_us = 0;
  /// All M micro-batches' work spread perfectly over all devices:
  /// M / Σ_d (1 / W_kind(d)) where W_k is the total compute of one
  /// micro-batch on kind k (with whole stages, plus one stage run). Exact when
  /// the kinds' speed ratio is the same for every unit; otherwise an
  /// approximation.
  double balanced_work_us = 0;
  /// One micro-batch's latency through the graph's series phases (Note
  /// [Series phases]): the sum over phases of max(longest path inside the
  /// phase, the phase's work spread over all devices as in balanced_work_us,
  /// the busiest device's share by Note [Pigeonholes], and for a small phase
  /// its least span over every split among devices, Note [Phase partitions]
  /// in costmodel/phase_partitions.h), plus the cut units' fastest times
  /// (with whole stages, plus one stage run). Never below critical_path_us;
  /// above it where a phase is wider than the devices can run at once.
  double phased_latency_us = 0;
  /// One micro-batch's latency where each unit also waits for the transfers
  /// of all inputs but those made on its own device, and those run one after
  /// another there (Note [Transfers and neighbours]); the phases count as in
  /// phased_latency_us. Never below it.
  double transfer_latency_us = 0;
  /// With M micro-batches, each unit runs M times on its one device, one
  /// instance after another: the last of them ends no sooner than the unit's
  /// earliest start (as in transfer_latency_us) plus M times its fastest
  /// time, and its micro-batch still needs the least time from the unit's
  /// end to the end of the graph (with whole stages not for a Constant: no
  /// other stage waits for it). The largest over units. A long unit on the
  /// critical path paces a pipeline: Inception-v3's Conv2d_4a (135 µs) on 8
  /// A100s with 4 micro-batches lifts the bound from 1,295 to 1,700 µs. Never
  /// above transfer_latency_us with one micro-batch.
  double pipelined_unit_us = 0;
  /// The largest of the above.
  double bound_us = 0;
};

/// Steps the split search of small phases (Note [Phase partitions] in
/// costmodel/phase_partitions.h) may take by default: at about 0.1 µs a step,
/// 50 ms at most. A 10k-node Inception graph takes 0.3M–0.4M; repeated
/// phases, like a transformer's layers, are searched once.
inline constexpr int64_t kDefaultSplitSearchSteps = int64_t{1} << 19;

/// The bound for a step of `microbatches` pipelined micro-batches (the
/// simulator's SimulationOptions::microbatches). O(units + edges), plus at
/// most `split_search_steps` steps of the split search (0: none).
LowerBound ComputeLowerBound(const CostGraph& graph, const Cluster& cluster, int microbatches = 1,
                             int64_t split_search_steps = kDefaultSplitSearchSteps);

/// Note [Series phases]: which units take part (all but sources and sinks
/// with no time on any kind) and which of those are cuts. O(units + edges).
struct SeriesCuts {
  std::vector<uint8_t> present;
  std::vector<uint8_t> cut;
};
SeriesCuts FindSeriesCuts(const CostGraph& graph);

// Note [Series phases]: a unit v is a cut when every other unit is its
// ancestor or its descendant; every micro-batch then runs all units before v,
// then v, then all after, so the phases between consecutive cuts add up.
// With units in topological order, position i is a cut iff (a) no edge jumps
// over i, (b) every unit before i has an out-edge and (c) every unit after i
// has an in-edge. Proof: by (a) an out-edge of a unit before i ends at or
// before i, so by (b) and induction downwards from i - 1 each one reaches i;
// symmetrically by (a), (c) and induction upwards each unit after i is
// reached from i. Units with no time on any kind that are sources or sinks
// (a Constant, a free side output) are left out of the test: dropping them
// only removes constraints, so the bound of what is left stays valid.

// Note [Pigeonholes]: within a phase, take its j longest units (each at its
// fastest time). On D devices one device holds at least c = ceil(j / D) of
// them and runs them one after another inside the phase, so the phase lasts
// at least the c shortest of those j summed. The bound takes the largest
// over j. It beats the spread where a phase has a few large units: three
// equal units on two devices take two units' time, not one and a half.

// Note [Transfers and neighbours]: a unit v runs on one device. Each input
// made on another device arrives at the earliest its producer's earliest
// start + fastest time + the least transfer of its tensor (the smallest
// latency, or hop, plus bytes over the widest link); the inputs made on v's
// device ran there one after another, so they end no sooner than any one's
// earliest end, nor than their earliest start + their times summed. Whatever
// the split, v starts no sooner than the least over local sets L of the
// larger of the two; L need only range over the inputs with the longest
// remote waits (moving a shorter one out of L never delays the larger). The
// same holds backward with successors and their least times to the end, and
// a unit's earliest start + its least time to the end bounds the micro-batch.
// Links shared by transfers, whole stages' waits and memory only add time.

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_LOWER_BOUND_H_
