// The least time one series phase can take over every way its units can
// share devices: an exhaustive search that tightens LowerBound's phased terms
// (costmodel/lower_bound.h) where a phase is small, e.g. a transformer
// layer's attention or an Inception block's towers.
#ifndef AUTOPAR_COSTMODEL_PHASE_PARTITIONS_H_
#define AUTOPAR_COSTMODEL_PHASE_PARTITIONS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace autopar::costmodel {

/// One series phase with its units numbered in topological order: unit 0 is
/// the cut before it (time 0 is when it ends), the last unit the cut after it
/// (the phase ends when that one may start), the others run inside.
struct PhaseGraph {
  struct Edge {
    uint32_t src, dst;   // src < dst
    double transfer_us;  // paid when src and dst run on different devices
  };
  /// The fastest time of each unit; the two cuts' are not counted.
  std::vector<double> time_us;
  std::vector<Edge> edges;
};

/// The least span of `phase` (Note [Phase partitions]) over every split of
/// its units among `devices` interchangeable devices, or nothing when the
/// search would visit more than `max_steps` partial splits. `steps_taken`,
/// when given, gets how many it visited.
std::optional<double> LeastPhaseSpanUs(const PhaseGraph& phase, int devices, int64_t max_steps,
                                       int64_t* steps_taken = nullptr);

/// LeastPhaseSpanUs with a shared step budget and memory: a phase equal to
/// one seen before (a transformer's repeated layers) costs no search, and
/// once `total_steps` are spent every further phase gets nothing.
class PhaseSpanCache {
 public:
  PhaseSpanCache(int devices, int64_t steps_per_phase, int64_t total_steps)
      : devices_(devices), steps_per_phase_(steps_per_phase), steps_left_(total_steps) {}

  std::optional<double> LeastSpanUs(const PhaseGraph& phase);

 private:
  int devices_;
  int64_t steps_per_phase_;
  int64_t steps_left_;
  std::map<std::vector<double>, std::optional<double>> seen_;
};

// Note [Phase partitions]: fix how the units of one micro-batch's phase share
// devices. Each unit starts no sooner than every input's producer's end plus,
// when they are apart, the least transfer of the tensor (Note [Transfers and
// neighbours] in costmodel/lower_bound.h); so the exit cut starts no sooner
// than the longest such path from the entry cut. The units sharing a device
// run one after another there: the first starts no sooner than the least of
// their earliest starts, they take their times summed, and after the last
// one the longest path to the exit remains, at least the least such path of
// any of them. The phase's span under that split is at least the larger of
// these; the least over all splits bounds every run. With fastest times and
// least transfers the devices are interchangeable, so only which units share
// a device matters: splits are enumerated as restricted growth strings (a
// unit's device is one already used or the next new one), depth-first in
// topological order, and a partial split is dropped once its longest path so
// far or its busiest device reaches the best span found.

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_PHASE_PARTITIONS_H_
