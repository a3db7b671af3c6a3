// `place` and `compare` in training mode with --loss: each plan is reported
// as the main command would write it (pipeline/split.h, Note [Training
// plans]). The searches optimise the pipelined step's estimate (Note
// [Training judge]); a plan's step, peak memory and busy time per device are
// then those of the split SplitTraining makes of its placement — plan.json's
// "training"."pipeline"."predicted" for that placement — and its one-device
// baseline is the split with every node on device 0.
#ifndef AUTOPAR_TOOLS_CLI_PIPELINED_PLANS_H_
#define AUTOPAR_TOOLS_CLI_PIPELINED_PLANS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "pipeline/planning.h"
#include "pipeline/split.h"
#include "tools/cli/mode_flags.h"

namespace autopar::tools {

/// What a plan's split adds to its report.
struct SplitStepView {
  costmodel::PipelineSchedule schedule = costmodel::PipelineSchedule::k1F1B;
  int microbatches = 1;
  int forward_stages = 0;
  int backward_stages = 0;
  /// The devices that run stages, ascending.
  std::vector<int32_t> devices;
  /// Per device of the cluster.
  std::vector<int32_t> max_stashes;
  /// The split's step (the plan's step now), and what the search's estimate
  /// and the fused list schedule had said of the placement.
  double step_us = 0;
  double estimated_step_us = 0;
  double fused_step_us = 0;
  /// Why the split does not fit its devices under the schedule; empty when
  /// it does.
  std::string overflow;
  /// The split itself, its stage and update models dropped (for a report);
  /// owned by the PipelinedPlans that made the view.
  const pipeline::SplitTrainingStep* split = nullptr;
};

class PipelinedPlans {
 public:
  /// Builds the training step's models and judge for `problem` (which must
  /// outlive it).
  static absl::StatusOr<PipelinedPlans> Create(const pipeline::PlanningProblem& problem,
                                               const PipelinedTraining& training);

  /// `base` judging the step as a pipeline (over several devices).
  pipeline::PlanPolicy Policy(pipeline::PlanPolicy base) const { return planner_.Policy(base); }

  /// Replaces `plan`'s step, its devices' peak memory and busy time, its
  /// one-device step and whether it fits by those of its split; a placement
  /// split before is not split again. Nullopt on a one-device cluster, where
  /// the main command writes the unsplit step and predicts the fused one.
  absl::StatusOr<std::optional<SplitStepView>> Adopt(pipeline::Plan& plan);

 private:
  PipelinedPlans(pipeline::TrainingPlanner planner, int num_devices)
      : planner_(std::move(planner)), num_devices_(num_devices) {}

  /// The split of a placement at a micro-batch count, its stage and update
  /// models dropped (a report draws its runs, which need none).
  absl::StatusOr<const pipeline::SplitTrainingStep*> SplitOf(
      const std::vector<int32_t>& node_device, int microbatches);

  pipeline::TrainingPlanner planner_;
  int num_devices_ = 1;
  std::map<std::pair<int, std::vector<int32_t>>, pipeline::SplitTrainingStep> splits_;
};

/// The line `place` and `compare` print in training mode: how the step is
/// judged — fused (without --loss, or on one device, where the main command
/// predicts the unsplit step so), or as the main command's split under
/// `training`'s schedule at `microbatches`.
std::string TrainingStepLine(const std::optional<PipelinedTraining>& training, int num_devices,
                             int microbatches);

/// place's line about a plan's split: its stages, the search's estimate and
/// the fused step of the placement, and why it does not fit, if it does not.
std::string SplitStepText(const SplitStepView& split);

/// place's and compare's JSON record of a split: its schedule, stages,
/// step, estimate, fused step and stashes per device; null without one.
nlohmann::ordered_json SplitStepJson(const std::optional<SplitStepView>& split);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_PIPELINED_PLANS_H_
