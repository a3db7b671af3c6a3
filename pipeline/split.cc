#include "pipeline/split.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "passes/validate_deployment.h"
#include "search/feasibility.h"

namespace autopar::pipeline {
namespace {

// The first device over its memory, as an error.
absl::Status OverflowError(const costmodel::Cluster& cluster,
                           const costmodel::SimulationResult& sim, const std::string& algorithm) {
  for (int d = 0; d < cluster.num_devices(); ++d) {
    if (sim.devices[d].peak_memory_bytes > cluster.device(d).memory_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the ", algorithm, " placement needs ",
          search::FormatBytes(sim.devices[d].peak_memory_bytes), " on device ", d, " (",
          cluster.device(d).name, ", ", search::FormatBytes(cluster.device(d).memory_bytes),
          "); use more devices or devices with more memory"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TrainingPlanner> TrainingPlanner::Create(const PlanningProblem& problem,
                                                        training::TrainingOptions options,
                                                        costmodel::PipelineSchedule schedule,
                                                        const PhaseCallback& on_phase) {
  if (!problem.model)
    return absl::InvalidArgumentError("a training step needs a model, not a cost graph");
  TrainingPlanner planner(problem, std::move(options), schedule);
  if (on_phase) on_phase("training step (gradient pass)");
  absl::StatusOr<training::TrainingStep> step =
      training::BuildTrainingStep(problem.model->model, problem.model->graph, planner.options_);
  if (!step.ok()) return step.status();
  planner.step_ = *std::move(step);
  if (problem.cluster.num_devices() > 1) {
    // Once, for every plan judged (--microbatches auto judges several).
    absl::StatusOr<SourceNodeTimes> times =
        StepTimesBySourceNode(planner.step_, problem.model->graph, problem.cluster,
                              problem.model->model.directory().string(),
                              problem.node_times ? &*problem.node_times : nullptr);
    if (!times.ok()) return times.status();
    planner.judge_ =
        TrainingJudge{.schedule = schedule,
                      .step_times = std::make_shared<const SourceNodeTimes>(*std::move(times))};
  }
  return planner;
}

PlanPolicy TrainingPlanner::Policy(PlanPolicy base) const {
  if (judge_) base.training = judge_;
  return base;
}

absl::StatusOr<SplitTrainingStep> TrainingPlanner::SplitOf(const std::vector<int32_t>& node_device,
                                                           int microbatches) const {
  const PlanningProblem& p = *problem_;
  return SplitTraining(step_, p.model->graph, node_device, p.cluster,
                       p.model->model.directory().string(),
                       {.schedule = schedule_,
                        .microbatches = std::max(1, microbatches),
                        .node_times = p.node_times ? &*p.node_times : nullptr,
                        .optimizer = options_.optimizer});
}

std::string TrainingPlanner::Overflow(const SplitTrainingStep& split,
                                      const std::string& algorithm) const {
  const costmodel::Cluster& cluster = problem_->cluster;
  for (int32_t d : split.devices) {
    const int64_t peak = split.predicted.peak_memory_bytes[d];
    if (peak <= cluster.device(d).memory_bytes) continue;
    return absl::StrCat("the ", algorithm, " training split needs ", search::FormatBytes(peak),
                        " on device ", d, " (", cluster.device(d).name, ", ",
                        search::FormatBytes(cluster.device(d).memory_bytes), ") under ",
                        std::string(costmodel::PipelineScheduleName(schedule_)),
                        "; use more devices, devices with more memory or fewer micro-batches in "
                        "flight (--schedule 1f1b)");
  }
  return "";
}

absl::StatusOr<SplitResult> Split(const SplitRequest& request) {
  if (request.problem.cost_graph_path)
    return absl::InvalidArgumentError("a cost graph has no model to split");
  const PhaseCallback& on_phase = request.problem.on_phase;
  SplitResult result;
  absl::StatusOr<PlanningProblem> problem = PrepareProblem(request.problem);
  if (!problem.ok()) return problem.status();
  result.problem = *std::move(problem);
  const PlanningProblem& p = result.problem;
  const costmodel::NodeTimes* node_times = p.node_times ? &*p.node_times : nullptr;
  // The training step's models, built once (Note [Training plans]): before
  // planning when the plan is judged as a pipeline with them, after it
  // otherwise.
  std::optional<TrainingPlanner> planner;
  auto plan_training = [&]() -> absl::Status {
    if (planner || !request.training) return absl::OkStatus();
    absl::StatusOr<TrainingPlanner> created =
        TrainingPlanner::Create(p, *request.training, request.schedule, on_phase);
    if (!created.ok()) return created.status();
    planner = *std::move(created);
    return absl::OkStatus();
  };
  if (p.cluster.num_devices() > 1) {
    if (absl::Status s = plan_training(); !s.ok()) return s;
  }
  // A training step over several devices is judged as the pipeline it runs
  // as (Note [Training judge]), a given placement too.
  const PlanPolicy policy = planner ? planner->Policy(request.policy) : request.policy;

  if (request.given_placement) {
    if (on_phase) on_phase("simulate (nodes, timeline)");
    absl::StatusOr<Plan> plan =
        JudgeGivenPlacement(p, *request.given_placement, request.search.microbatches, policy);
    if (!plan.ok()) return plan.status();
    result.plan = *std::move(plan);
    if (result.plan.simulation.memory_overflow) {
      result.warnings.emplace_back(
          OverflowError(p.cluster, result.plan.simulation, "given").message());
    }
  } else {
    absl::StatusOr<Plan> plan = absl::UnknownError("no plan");
    if (request.auto_microbatches) {
      if (on_phase) on_phase("placement (micro-batches auto)");
      absl::StatusOr<MicrobatchChoice> choice = ChooseMicrobatches(
          p, request.algorithm, request.search, *request.auto_microbatches, policy);
      if (!choice.ok()) return choice.status();
      plan = std::move(choice->plan);
      result.microbatches = *std::move(choice);
      result.microbatches->plan = {};
    } else {
      plan = MakePlan(p, request.algorithm, request.search, on_phase, nullptr, policy);
    }
    if (!plan.ok()) return plan.status();
    result.plan = *std::move(plan);
    if (result.plan.simulation.memory_overflow)
      return OverflowError(p.cluster, result.plan.simulation, result.plan.algorithm);
  }

  if (request.training) {
    if (absl::Status s = plan_training(); !s.ok()) return s;
    if (p.cluster.num_devices() == 1) {
      // The step's own models measured: their node times and run costs are
      // the prediction (Note [Measured one-device step]).
      if (node_times)
        result.measured_step =
            costmodel::TrainingStepFromNodeTimes(*node_times, result.plan.microbatches);
      result.training_step = std::move(*planner).TakeStep();
      return result;
    }
    if (on_phase) on_phase("training step (split into stages)");
    absl::StatusOr<SplitTrainingStep> split =
        planner->SplitOf(result.plan.node_placement.device, result.plan.microbatches);
    if (!split.ok()) return split.status();
    // The pipeline's own memory (stashes in flight under the schedule)
    // decides whether the split step fits.
    if (std::string overflow = planner->Overflow(*split, result.plan.algorithm);
        !overflow.empty()) {
      if (!request.given_placement) return absl::ResourceExhaustedError(overflow);
      result.warnings.push_back(std::move(overflow));
    }
    result.training_split = *std::move(split);
    result.training_step = std::move(*planner).TakeStep();
    return result;
  }
  if (on_phase) on_phase("rewrite (partition)");
  const std::vector<int32_t>& node_device = result.plan.node_placement.device;
  absl::StatusOr<passes::Deployment> deployment = passes::Partition(
      p.model->model, p.model->graph, node_device, p.cluster.num_devices(), request.partition);
  if (!deployment.ok()) return deployment.status();
  result.deployment = *std::move(deployment);
  if (on_phase) on_phase("validate");
  if (absl::Status valid = passes::ValidateDeployment(p.model->model, p.model->graph, node_device,
                                                      result.deployment);
      !valid.ok()) {
    return absl::InternalError(absl::StrCat("the rewritten models are invalid: ", valid.message()));
  }
  return result;
}

}  // namespace autopar::pipeline
