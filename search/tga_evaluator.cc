#include "search/tga_evaluator.h"

#include <algorithm>

namespace autopar::search {

uint64_t GenomeHash(const Genome& genome) {
  // FNV-1a over the devices, then the schedule, finished by a splitmix step.
  uint64_t h = 1469598103934665603ULL;
  for (int32_t d : genome.device) h = (h ^ static_cast<uint32_t>(d)) * 1099511628211ULL;
  h = (h ^ static_cast<uint32_t>(genome.schedule)) * 1099511628211ULL;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  return h;
}

FitnessEvaluator::FitnessEvaluator(const costmodel::CostGraph& graph,
                                   const costmodel::Cluster& cluster,
                                   const std::vector<std::vector<double>>& schedules,
                                   int microbatches, int threads,
                                   std::function<double(absl::Span<const int32_t>)> objective)
    : cluster_(cluster),
      schedules_(schedules),
      microbatches_(microbatches),
      objective_(std::move(objective)) {
  // More workers than cores only contend; the results are the same.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int workers = std::clamp(threads, 1, cores);
  simulators_.reserve(workers);
  for (int w = 0; w < workers; ++w) simulators_.emplace_back(graph, cluster);
  scratch_.resize(workers);
  for (int w = 1; w < workers; ++w) threads_.emplace_back([this, w] { WorkerLoop(w); });
}

FitnessEvaluator::~FitnessEvaluator() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void FitnessEvaluator::Evaluate(absl::Span<Individual* const> batch) {
  evaluations_ += static_cast<int64_t>(batch.size());
  if (threads_.empty() || batch.size() <= 1) {
    for (Individual* individual : batch) EvaluateOne(0, *individual);
    return;
  }
  // Publish the batch; workers and this thread take entries one at a time.
  {
    std::lock_guard<std::mutex> lock(mutex_);
    batch_ = batch;
    next_.store(0);
    busy_workers_ = static_cast<int>(threads_.size());
    ++batch_number_;
  }
  start_.notify_all();
  EvaluateShare(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return busy_workers_ == 0; });
  batch_ = {};
}

void FitnessEvaluator::WorkerLoop(int worker) {
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || batch_number_ != seen; });
      if (stopping_) return;
      seen = batch_number_;
    }
    EvaluateShare(worker);
    std::lock_guard<std::mutex> lock(mutex_);
    if (--busy_workers_ == 0) done_.notify_one();
  }
}

void FitnessEvaluator::EvaluateShare(int worker) {
  for (size_t i = next_.fetch_add(1); i < batch_.size(); i = next_.fetch_add(1)) {
    EvaluateOne(worker, *batch_[i]);
  }
}

void FitnessEvaluator::EvaluateOne(int worker, Individual& individual) {
  costmodel::Placement& placement = scratch_[worker];
  placement.device.assign(individual.genome.device.begin(), individual.genome.device.end());
  placement.priority = schedules_[individual.genome.schedule];  // reuses the buffer
  const costmodel::SimulationResult& result = simulators_[worker].Run(
      placement, costmodel::SimulationOptions{.microbatches = microbatches_});
  individual.fitness =
      Fitness{.feasible = !result.memory_overflow,
              .overflow_bytes = result.overflow_bytes,
              .step_us = objective_ ? objective_(individual.genome.device) : result.step_time_us};
  const int num_devices = cluster_.num_devices();
  individual.busy_us.resize(num_devices);
  individual.over_bytes.resize(num_devices);
  for (int d = 0; d < num_devices; ++d) {
    individual.busy_us[d] = result.devices[d].busy_us;
    individual.over_bytes[d] =
        std::max<int64_t>(0, result.devices[d].peak_memory_bytes - cluster_.device(d).memory_bytes);
  }
  individual.hash = GenomeHash(individual.genome);
}

}  // namespace autopar::search
