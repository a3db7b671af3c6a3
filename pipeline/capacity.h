// Capacity planning: how many devices a model needs. For each device count
// 1..N of one cluster, the plan `place --devices k --microbatches auto`
// makes (pipeline/planning.h, Note [Micro-batches auto] and Note [Do not
// split]), and the smallest count that fits and meets a target.
//
// Note [Capacity sweep]: the problem is prepared once, for the largest
// count, and each count k plans on WithDeviceCount(cluster, k)
// (pipeline/cluster_request.h, rule 3): for a homogeneous cluster that is
// exactly the cluster `--devices k` makes. Each count chooses its
// micro-batches as `place --devices k --microbatches auto` does, but tries
// only the powers of two and the maximum, not the bisection around the best
// (ResNet-50 on up to 16 V100s, 1..32 micro-batches: the same table for
// 8.5 s of CPU instead of 12 s with the bisection's first round alone; the
// whole bisection costs more still). Counts are planned side by side.
// (For a heterogeneous template with fewer devices than it lists, the units
// were coarsened for the template's largest memory rather than the first
// k's.)
//
// What a count must reach:
//  - nothing: it fits (every device within its memory);
//  - a step: it fits with a step of at most that time. The count's micro-batch
//    choice is then the best time per sample among the tried counts whose
//    step meets the target (more micro-batches lengthen the step), the plain
//    choice when none does;
//  - a throughput: it fits with at least that many samples per second
//    (1 / time per sample).
// A count whose best plan is slower per sample than a smaller count that
// fits says so (CapacityRow::slower_than): adding devices did not pay.
#ifndef AUTOPAR_PIPELINE_CAPACITY_H_
#define AUTOPAR_PIPELINE_CAPACITY_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pipeline/planning.h"
#include "search/search.h"

namespace autopar::pipeline {

struct CapacityTarget {
  /// The step, M micro-batches, within this time.
  std::optional<double> step_us;
  /// At least this many samples per second.
  std::optional<double> samples_per_s;
};

struct CapacityOptions {
  /// Counts 1..max_devices are planned.
  int max_devices = 8;
  /// Each count's micro-batch search tries 1..max_microbatches: the powers
  /// of two and the maximum, and with `midpoints` also the bisection around
  /// the best (as --microbatches auto does: for `place` on ResNet-50, 1.4 s
  /// of CPU instead of 0.8-1.0 s).
  int max_microbatches = 32;
  bool midpoints = false;
  /// Plans the chosen micro-batch count (SGP plans every candidate).
  std::string algorithm = "sgp";
  search::SearchOptions search;
  PlanPolicy policy;
  CapacityTarget target;
  /// Called after each count with the counts done and their total (from one
  /// thread at a time); may be empty.
  std::function<void(int64_t done, int64_t total)> on_count;
};

struct CapacityRow {
  int devices = 0;
  /// The micro-batch search and its plan; unset when no micro-batch count
  /// had a plan within memory (`error` says why).
  std::optional<MicrobatchChoice> choice;
  std::string error;
  /// The plan's figures (0 without a plan).
  int microbatches = 0;
  double step_time_us = 0;
  double time_per_sample_us = 0;
  double samples_per_s = 0;
  /// The fullest device (peak over capacity): its peak and its capacity.
  int64_t peak_memory_bytes = 0;
  int64_t memory_capacity_bytes = 0;
  bool fits = false;
  /// Fits and meets the target (just fits when there is none).
  bool meets_target = false;
  /// The smaller count that fits with the lowest time per sample, when that
  /// is strictly lower than this count's; 0 otherwise.
  int slower_than = 0;
};

struct CapacityAnswer {
  std::vector<CapacityRow> rows;
  int64_t batch = 1;
  /// The smallest count that meets the target; 0 when none does.
  int devices = 0;
  /// When none does: the count that comes closest among those that fit (the
  /// shortest step for a step target, else the lowest time per sample); 0
  /// when none fits.
  int closest = 0;
  /// When no count fits: the memory the model needs on one device, and about
  /// how much each of max_devices devices would need to hold it (the
  /// contiguous-segment estimate of search/feasibility.h).
  int64_t memory_needed_bytes = 0;
  int64_t memory_needed_per_device_bytes = 0;
};

/// Plans each count 1..options.max_devices as Note [Capacity sweep] says,
/// up to options.search.threads counts side by side (each worker plans on a
/// copy of the problem's graphs, not of the model file, and the copies hold
/// at most some two million nodes in all; the answer does not depend on the
/// threads). `problem`'s cluster is the template. A count
/// without a plan within memory is a row that says so; any other failure
/// fails the sweep.
absl::StatusOr<CapacityAnswer> PlanCapacity(const PlanningProblem& problem,
                                            const CapacityOptions& options);

/// About the least memory per device with which `devices` devices hold the
/// unit graph, by the contiguous-segment estimate (search::DevicesNeeded).
int64_t MemoryPerDeviceNeeded(const costmodel::CostGraph& units, int devices);

}  // namespace autopar::pipeline

#endif  // AUTOPAR_PIPELINE_CAPACITY_H_
