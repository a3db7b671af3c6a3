#include "tools/cli/pipelined_plans.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace autopar::tools {

absl::StatusOr<PipelinedPlans> PipelinedPlans::Create(const pipeline::PlanningProblem& problem,
                                                      const PipelinedTraining& training) {
  absl::StatusOr<pipeline::TrainingPlanner> planner =
      pipeline::TrainingPlanner::Create(problem, training.options, training.schedule);
  if (!planner.ok()) return planner.status();
  return PipelinedPlans(*std::move(planner), problem.cluster.num_devices());
}

absl::StatusOr<const pipeline::SplitTrainingStep*> PipelinedPlans::SplitOf(
    const std::vector<int32_t>& node_device, int microbatches) {
  auto key = std::make_pair(microbatches, node_device);
  auto it = splits_.find(key);
  if (it != splits_.end()) return &it->second;
  absl::StatusOr<pipeline::SplitTrainingStep> split = planner_.SplitOf(node_device, microbatches);
  if (!split.ok()) return split.status();
  // The stage and update models are what the main command writes; a report
  // needs their kinds and the prediction only.
  for (pipeline::TrainingStage& stage : split->stages) stage.stage.proto.Clear();
  for (pipeline::DeviceUpdate& update : split->updates) update.proto.Clear();
  return &splits_.emplace(std::move(key), *std::move(split)).first->second;
}

absl::StatusOr<std::optional<SplitStepView>> PipelinedPlans::Adopt(pipeline::Plan& plan) {
  if (num_devices_ < 2) return std::nullopt;
  absl::StatusOr<const pipeline::SplitTrainingStep*> split =
      SplitOf(plan.node_placement.device, plan.microbatches);
  if (!split.ok()) return split.status();
  const std::vector<int32_t> on_first(plan.node_placement.device.size(), 0);
  absl::StatusOr<const pipeline::SplitTrainingStep*> single = SplitOf(on_first, plan.microbatches);
  if (!single.ok()) return single.status();
  const costmodel::PipelineStepResult& p = (*split)->predicted;
  SplitStepView view{
      .schedule = (*split)->schedule,
      .microbatches = (*split)->microbatches,
      .devices = (*split)->devices,
      .max_stashes = p.max_stashes,
      .step_us = p.step_us,
      .estimated_step_us = plan.pipelined ? plan.pipelined->step_us : plan.simulation.step_time_us,
      .fused_step_us =
          plan.pipelined ? plan.pipelined->fused_step_us : plan.simulation.step_time_us,
      .overflow = planner_.Overflow(**split, plan.algorithm),
      .split = *split};
  for (const pipeline::TrainingStage& t : (*split)->stages) {
    ++(t.kind == costmodel::StageKind::kForward ? view.forward_stages : view.backward_stages);
  }
  costmodel::SimulationResult& sim = plan.simulation;
  sim.step_time_us = p.step_us;
  for (size_t d = 0; d < sim.devices.size(); ++d) {
    sim.devices[d].peak_memory_bytes = p.peak_memory_bytes[d];
    sim.devices[d].busy_us = 0;
  }
  for (const costmodel::StageRun& run : p.timeline)
    sim.devices[run.device].busy_us += run.end_us - run.start_us;
  // The main command refuses a searched plan over memory in either judgement.
  sim.memory_overflow = sim.memory_overflow || !view.overflow.empty();
  plan.single_device_step_us = (*single)->predicted.step_us;
  return view;
}

std::string TrainingStepLine(const std::optional<PipelinedTraining>& training, int num_devices,
                             int microbatches) {
  if (!training) {
    return "training step judged fused: forward, backward and update of each unit in one list "
           "schedule (--loss judges it as the pipeline the main command writes)";
  }
  if (num_devices < 2) {
    return "training step judged fused: on one device the main command writes the unsplit step "
           "and predicts it so";
  }
  return absl::StrFormat(
      "training step judged as the main command's split: %s, %d micro-batch%s; searches "
      "optimise its estimate",
      std::string(costmodel::PipelineScheduleName(training->schedule)), microbatches,
      microbatches == 1 ? "" : "es");
}

std::string SplitStepText(const SplitStepView& split) {
  std::string text = absl::StrFormat(
      "%d forward and %d backward stages on %d device%s; the search's estimate %.1f us, the "
      "fused step %.1f us",
      split.forward_stages, split.backward_stages, split.devices.size(),
      split.devices.size() == 1 ? "" : "s", split.estimated_step_us, split.fused_step_us);
  if (!split.overflow.empty()) absl::StrAppend(&text, "; ", split.overflow);
  return text;
}

nlohmann::ordered_json SplitStepJson(const std::optional<SplitStepView>& split) {
  if (!split) return nullptr;
  return {{"schedule", std::string(costmodel::PipelineScheduleName(split->schedule))},
          {"microbatches", split->microbatches},
          {"forward_stages", split->forward_stages},
          {"backward_stages", split->backward_stages},
          {"devices", split->devices},
          {"max_stashes", split->max_stashes},
          {"step_us", split->step_us},
          {"estimated_step_us", split->estimated_step_us},
          {"fused_step_us", split->fused_step_us},
          {"overflow", split->overflow.empty() ? nlohmann::ordered_json()
                                               : nlohmann::ordered_json(split->overflow)}};
}

}  // namespace autopar::tools
