#include "pipeline/capacity.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "search/feasibility.h"
#include "search/memory_profile.h"

namespace autopar::pipeline {
namespace {

// With a step target: the best tried micro-batch count (by time per sample)
// whose plan fits within the step, replanned with the requested algorithm;
// the plain choice when there is none, or when it already meets the step.
absl::Status MeetStep(const PlanningProblem& problem, const CapacityOptions& options,
                      double step_us, MicrobatchChoice& choice) {
  if (!choice.plan.simulation.memory_overflow && choice.plan.simulation.step_time_us <= step_us)
    return absl::OkStatus();
  const MicrobatchTrial* pick = nullptr;
  for (const MicrobatchTrial& t : choice.tried) {
    if (!t.error.empty() || !t.feasible || t.step_time_us > step_us) continue;
    if (pick == nullptr || t.time_per_sample_us < pick->time_per_sample_us ||
        (t.time_per_sample_us == pick->time_per_sample_us && t.microbatches < pick->microbatches))
      pick = &t;
  }
  if (pick == nullptr || pick->microbatches == choice.chosen) return absl::OkStatus();
  search::SearchOptions at = options.search;
  at.microbatches = pick->microbatches;
  absl::StatusOr<Plan> plan = MakePlan(problem, options.algorithm, at, {}, nullptr, options.policy);
  if (!plan.ok()) {
    // The requested algorithm found nothing within memory here: keep the
    // plain choice.
    if (plan.status().code() == absl::StatusCode::kResourceExhausted) return absl::OkStatus();
    return plan.status();
  }
  if (plan->simulation.memory_overflow || plan->simulation.step_time_us > step_us)
    return absl::OkStatus();
  choice.plan = *std::move(plan);
  choice.chosen = pick->microbatches;
  return absl::OkStatus();
}

absl::StatusOr<CapacityRow> PlanCount(const PlanningProblem& problem, int devices,
                                      const CapacityOptions& options) {
  CapacityRow row;
  row.devices = devices;
  absl::StatusOr<MicrobatchChoice> choice =
      ChooseMicrobatches(problem, options.algorithm, options.search, options.max_microbatches,
                         options.policy, options.midpoints);
  if (!choice.ok()) {
    if (choice.status().code() != absl::StatusCode::kResourceExhausted) return choice.status();
    row.error = std::string(choice.status().message());
    return row;
  }
  if (options.target.step_us) {
    if (absl::Status s = MeetStep(problem, options, *options.target.step_us, *choice); !s.ok())
      return s;
  }
  const Plan& plan = choice->plan;
  const costmodel::SimulationResult& sim = plan.simulation;
  row.microbatches = plan.microbatches;
  row.step_time_us = sim.step_time_us;
  row.time_per_sample_us = sim.step_time_us / (static_cast<double>(plan.microbatches) *
                                               static_cast<double>(choice->batch));
  row.samples_per_s = row.time_per_sample_us > 0 ? 1e6 / row.time_per_sample_us : 0;
  double fullest = -1;
  for (int d = 0; d < problem.cluster.num_devices(); ++d) {
    const int64_t capacity = problem.cluster.device(d).memory_bytes;
    const int64_t peak = sim.devices[d].peak_memory_bytes;
    const double ratio =
        capacity > 0 ? static_cast<double>(peak) / static_cast<double>(capacity) : 0;
    if (ratio > fullest) {
      fullest = ratio;
      row.peak_memory_bytes = peak;
      row.memory_capacity_bytes = capacity;
    }
  }
  row.fits = !sim.memory_overflow;
  row.choice = *std::move(choice);
  return row;
}

bool MeetsTarget(const CapacityRow& row, const CapacityTarget& target) {
  if (!row.fits) return false;
  if (target.step_us && row.step_time_us > *target.step_us) return false;
  if (target.samples_per_s && row.samples_per_s < *target.samples_per_s) return false;
  return true;
}

}  // namespace

int64_t MemoryPerDeviceNeeded(const costmodel::CostGraph& units, int devices) {
  const search::MemoryProfile profile = search::ComputeMemoryProfile(units);
  auto holds = [&](int64_t memory) {
    const int needed = search::DevicesNeeded(units, profile, memory);
    return needed > 0 && needed <= devices;
  };
  // Fewer segments with more memory each: find the least memory that holds.
  int64_t high = std::max<int64_t>(profile.peak_bytes(), 1);
  while (!holds(high) && high < (int64_t{1} << 60)) high *= 2;
  int64_t low = 0;
  while (high - low > 1) {
    const int64_t mid = low + (high - low) / 2;
    (holds(mid) ? high : low) = mid;
  }
  return high;
}

// What MakePlan reads of a problem, for one worker of the sweep: everything
// but the model file's protobuf (only its graph is planned with), so that
// workers plan on their own clusters side by side.
PlanningProblem PlanningCopy(const PlanningProblem& problem) {
  PlanningProblem copy;
  copy.cluster = problem.cluster;
  copy.step = problem.step;
  if (problem.model) {
    copy.model.emplace();
    copy.model->graph = problem.model->graph;
  }
  copy.nodes = problem.nodes;
  copy.coarsening = problem.coarsening;
  copy.cost_graph = problem.cost_graph;
  copy.cost_source = problem.cost_source;
  return copy;
}

absl::StatusOr<CapacityAnswer> PlanCapacity(const PlanningProblem& problem,
                                            const CapacityOptions& options) {
  if (options.max_devices < 1)
    return absl::InvalidArgumentError("the most devices must be at least 1");
  const int n = options.max_devices;
  // Counts are planned side by side, each count's micro-batch trials with
  // the threads left over; every plan is the same whatever the threads.
  // Each worker copies the graphs: at most kCopiedNodes nodes in all, so that
  // a model of a million nodes is not copied sixteen times.
  constexpr int64_t kCopiedNodes = 2'000'000;
  const int64_t nodes = std::max<int64_t>(1, problem.node_graph().num_units());
  const int workers = static_cast<int>(
      std::clamp<int64_t>(std::min<int64_t>(options.search.threads, kCopiedNodes / nodes), 1, n));
  CapacityOptions per_count = options;
  per_count.search.threads = std::max(1, options.search.threads / workers);
  std::vector<std::optional<absl::StatusOr<CapacityRow>>> rows(n);
  std::atomic<int> next{0};
  std::mutex progress_mutex;
  int done = 0;
  auto work = [&] {
    PlanningProblem copy = PlanningCopy(problem);
    for (int i = next++; i < n; i = next++) {
      copy.cluster = WithDeviceCount(problem.cluster, i + 1);
      try {
        rows[i] = PlanCount(copy, i + 1, per_count);
      } catch (const std::exception& e) {  // bad_alloc, say: no thread may throw
        rows[i] = absl::InternalError(e.what());
      }
      if (options.on_count) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        options.on_count(++done, n);
      }
    }
  };
  if (workers == 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (int w = 0; w < workers; ++w) pool.emplace_back(work);
    for (std::thread& t : pool) t.join();
  }
  CapacityAnswer answer;
  for (std::optional<absl::StatusOr<CapacityRow>>& row : rows) {
    if (!row->ok()) return row->status();
    if ((*row)->choice) answer.batch = (*row)->choice->batch;
    answer.rows.push_back(**std::move(row));
  }

  const CapacityRow* fastest_fit = nullptr;  // among the smaller counts
  for (CapacityRow& row : answer.rows) {
    row.meets_target = MeetsTarget(row, options.target);
    if (row.fits && fastest_fit != nullptr &&
        fastest_fit->time_per_sample_us < row.time_per_sample_us)
      row.slower_than = fastest_fit->devices;
    if (row.fits &&
        (fastest_fit == nullptr || row.time_per_sample_us < fastest_fit->time_per_sample_us))
      fastest_fit = &row;
    if (row.meets_target && answer.devices == 0) answer.devices = row.devices;
  }
  if (answer.devices == 0) {
    const CapacityRow* closest = nullptr;
    for (const CapacityRow& row : answer.rows) {
      if (!row.fits) continue;
      const bool closer =
          closest == nullptr ||
          (options.target.step_us ? row.step_time_us < closest->step_time_us
                                  : row.time_per_sample_us < closest->time_per_sample_us);
      if (closer) closest = &row;
    }
    if (closest != nullptr) answer.closest = closest->devices;
  }
  if (fastest_fit == nullptr) {
    answer.memory_needed_bytes = search::MinimumMemoryBytes(problem.units());
    answer.memory_needed_per_device_bytes =
        MemoryPerDeviceNeeded(problem.units(), options.max_devices);
  }
  return answer;
}

}  // namespace autopar::pipeline
