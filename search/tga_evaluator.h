// TGA's individuals and their fitness: a genome — a device
// per unit and which schedule orders each device's ready units — judged by
// the event simulator, in parallel, one Simulator per worker thread.
//
// Note [Infeasible loses]: fitness is compared lexicographically — a plan
// within every device's memory beats every plan that overflows; among
// overflowing plans the smaller total overflow wins (it points the search
// toward feasibility), then the step time. This is the "penalty" of the
// issue made exact: no weight can let a fast infeasible plan win.
//
// Note [Deterministic evaluation]: the simulator is a pure function of the
// placement, each batch entry is written only by the worker that took it and
// the batch is complete when Evaluate returns, so the fitness of every
// individual — and everything the search decides from it — is the same
// whatever the number of threads.
#ifndef AUTOPAR_SEARCH_TGA_EVALUATOR_H_
#define AUTOPAR_SEARCH_TGA_EVALUATOR_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/types/span.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"

namespace autopar::search {

/// What the genetic operators change.
struct Genome {
  /// Device of each unit.
  std::vector<int32_t> device;
  /// Index into the evaluator's schedules (the simulator's priorities).
  int32_t schedule = 0;

  bool operator==(const Genome& other) const = default;
};

/// The simulator's verdict (Note [Infeasible loses]).
struct Fitness {
  bool feasible = false;
  int64_t overflow_bytes = std::numeric_limits<int64_t>::max();
  double step_us = std::numeric_limits<double>::infinity();

  bool BetterThan(const Fitness& other) const {
    if (feasible != other.feasible) return feasible;
    if (!feasible && overflow_bytes != other.overflow_bytes) {
      return overflow_bytes < other.overflow_bytes;
    }
    return step_us < other.step_us;
  }
};

struct Individual {
  Genome genome;
  Fitness fitness;
  /// Per device, from the same simulation: compute time and bytes above
  /// capacity (the guided mutations relieve the hottest device).
  std::vector<double> busy_us;
  std::vector<int64_t> over_bytes;
  /// Of the genome (GenomeHash), to spot duplicates cheaply.
  uint64_t hash = 0;
};

/// A hash of the device vector and the schedule.
uint64_t GenomeHash(const Genome& genome);

/// Simulates batches of individuals on `threads` threads (the caller's one
/// included). Construction starts the workers; destruction stops them.
class FitnessEvaluator {
 public:
  /// `schedules[i]` are the priorities of schedule i (empty: the simulator's
  /// default). All arguments must outlive the evaluator.
  /// `objective`, when set, gives the step time in place of the simulator's
  /// (SearchOptions::objective; memory stays the simulator's).
  FitnessEvaluator(const costmodel::CostGraph& graph, const costmodel::Cluster& cluster,
                   const std::vector<std::vector<double>>& schedules, int microbatches, int threads,
                   std::function<double(absl::Span<const int32_t>)> objective = nullptr);
  ~FitnessEvaluator();
  FitnessEvaluator(const FitnessEvaluator&) = delete;
  FitnessEvaluator& operator=(const FitnessEvaluator&) = delete;

  /// Sets fitness, busy_us, over_bytes and hash of every individual.
  void Evaluate(absl::Span<Individual* const> batch);

  /// Simulations run so far.
  int64_t evaluations() const { return evaluations_; }

 private:
  void WorkerLoop(int worker);
  void EvaluateShare(int worker);
  void EvaluateOne(int worker, Individual& individual);

  const costmodel::Cluster& cluster_;
  const std::vector<std::vector<double>>& schedules_;
  const int microbatches_;
  const std::function<double(absl::Span<const int32_t>)> objective_;
  int64_t evaluations_ = 0;

  // Per worker (0 is the caller): its simulator and placement buffer, so
  // that nothing is shared while simulating and nothing allocated per run.
  std::vector<costmodel::Simulator> simulators_;
  std::vector<costmodel::Placement> scratch_;

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  absl::Span<Individual* const> batch_;  // guarded by mutex_ while published
  uint64_t batch_number_ = 0;            // guarded by mutex_
  int busy_workers_ = 0;                 // guarded by mutex_
  bool stopping_ = false;                // guarded by mutex_
  std::atomic<size_t> next_{0};
};

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_TGA_EVALUATOR_H_
