#include "pipeline/split.h"

#include <memory>

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

absl::StatusOr<SplitResult> Split(const SplitRequest& request) {
  if (request.problem.cost_graph_path)
    return absl::InvalidArgumentError("a cost graph has no model to split");
  const PhaseCallback& on_phase = request.problem.on_phase;
  SplitResult result;
  absl::StatusOr<PlanningProblem> problem = PrepareProblem(request.problem);
  if (!problem.ok()) return problem.status();
  result.problem = *std::move(problem);
  const PlanningProblem& p = result.problem;
  const ir::Graph& graph = p.model->graph;
  const costmodel::NodeTimes* node_times = p.node_times ? &*p.node_times : nullptr;
  // The training step's models, built once: before planning when the search
  // judges the pipelined step with them, after it otherwise.
  auto build_step = [&]() -> absl::Status {
    if (result.training_step) return absl::OkStatus();
    if (on_phase) on_phase("training step (gradient pass)");
    absl::StatusOr<training::TrainingStep> step =
        training::BuildTrainingStep(p.model->model, graph, *request.training);
    if (!step.ok()) return step.status();
    result.training_step = *std::move(step);
    return absl::OkStatus();
  };

  if (request.given_placement) {
    absl::StatusOr<std::vector<int32_t>> devices =
        ResolveNamedPlacement(*request.given_placement, graph, p.cluster.num_devices());
    if (!devices.ok()) return devices.status();
    if (on_phase) on_phase("simulate (nodes, timeline)");
    costmodel::Placement nodes{.device =
                                   passes::ColocateNonTensorValues(graph, *std::move(devices))};
    result.plan = JudgePlacement(p, "given", std::move(nodes), request.search.microbatches);
    if (result.plan.simulation.memory_overflow) {
      result.warnings.emplace_back(
          OverflowError(p.cluster, result.plan.simulation, "given").message());
    }
  } else {
    // A training step over several devices is judged as the pipeline it
    // runs as (Note [Training judge]).
    PlanPolicy policy = request.policy;
    if (request.training && p.cluster.num_devices() > 1) {
      if (absl::Status s = build_step(); !s.ok()) return s;
      absl::StatusOr<SourceNodeTimes> times = StepTimesBySourceNode(
          *result.training_step, graph, p.cluster, p.model->model.directory().string(), node_times);
      if (!times.ok()) return times.status();
      policy.training =
          TrainingJudge{.schedule = request.schedule,
                        .step_times = std::make_shared<const SourceNodeTimes>(*std::move(times))};
    }
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
    if (absl::Status s = build_step(); !s.ok()) return s;
    if (p.cluster.num_devices() == 1) {
      // The step's own models measured: their node times and run costs are
      // the prediction (Note [Measured one-device step]).
      if (node_times)
        result.measured_step =
            costmodel::TrainingStepFromNodeTimes(*node_times, result.plan.microbatches);
      return result;
    }
    if (on_phase) on_phase("training step (split into stages)");
    absl::StatusOr<SplitTrainingStep> split =
        SplitTraining(*result.training_step, graph, result.plan.node_placement.device, p.cluster,
                      p.model->model.directory().string(),
                      {.schedule = request.schedule,
                       .microbatches = result.plan.microbatches,
                       .node_times = node_times,
                       .optimizer = request.training->optimizer});
    if (!split.ok()) return split.status();
    // The pipeline's own memory (stashes in flight under the schedule)
    // decides whether the split step fits.
    for (int32_t d : split->devices) {
      const int64_t peak = split->predicted.peak_memory_bytes[d];
      if (peak <= p.cluster.device(d).memory_bytes) continue;
      const std::string message = absl::StrCat(
          "the ", result.plan.algorithm, " training split needs ", search::FormatBytes(peak),
          " on device ", d, " (", p.cluster.device(d).name, ", ",
          search::FormatBytes(p.cluster.device(d).memory_bytes), ") under ",
          std::string(costmodel::PipelineScheduleName(request.schedule)),
          "; use more devices, devices with more memory or fewer micro-batches in flight "
          "(--schedule 1f1b)");
      if (!request.given_placement) return absl::ResourceExhaustedError(message);
      result.warnings.push_back(message);
    }
    result.training_split = *std::move(split);
    return result;
  }
  if (on_phase) on_phase("rewrite (partition)");
  const std::vector<int32_t>& node_device = result.plan.node_placement.device;
  absl::StatusOr<passes::Deployment> deployment = passes::Partition(
      p.model->model, graph, node_device, p.cluster.num_devices(), request.partition);
  if (!deployment.ok()) return deployment.status();
  result.deployment = *std::move(deployment);
  if (on_phase) on_phase("validate");
  if (absl::Status valid =
          passes::ValidateDeployment(p.model->model, graph, node_device, result.deployment);
      !valid.ok()) {
    return absl::InternalError(absl::StrCat("the rewritten models are invalid: ", valid.message()));
  }
  return result;
}

}  // namespace autopar::pipeline
