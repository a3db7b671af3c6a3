// The flags that say what kind of step a command costs and plans (`place`,
// `compare`, `cost` and the main command):
//   --mode inference|training        default inference
//   --optimizer sgd|momentum|adam|adamw    training only; default adam
// (costmodel/training.h documents what a training step adds), and the flags
// of the training step the main command writes (training/training_step.h),
// which `place` and `compare` judge it by:
//   --loss output:NAME|cross-entropy:LOGITS|mse:OUTPUT   required by the main
//                       command; optional for place and compare (without it
//                       they judge the fused step)
//   --labels NAME       the input cross-entropy or mse adds
//   --learning-rate X  --momentum X  --betas B1,B2  --eps X  --weight-decay X
//   --freeze REGEX      initializers not to train
//   --schedule gpipe|1f1b   a split step's pipeline schedule (default 1f1b)
#ifndef AUTOPAR_TOOLS_CLI_MODE_FLAGS_H_
#define AUTOPAR_TOOLS_CLI_MODE_FLAGS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/pipeline_schedule.h"
#include "costmodel/training.h"
#include "tools/cli/args.h"
#include "training/training_step.h"

namespace autopar::tools {

/// --mode, --optimizer.
std::vector<FlagSpec> ModeFlagSpecs();

/// The step the flags of ModeFlagSpecs() describe — what PrepareModel,
/// AnnotateCosts and CostModelFile take. An unknown value, or --optimizer
/// without --mode training, is an InvalidArgument naming the flag.
absl::StatusOr<costmodel::StepOptions> StepOptionsFromArgs(const ParsedArgs& args);

/// --loss, --labels, the optimizer's hyper-parameters, --freeze.
std::vector<FlagSpec> TrainingFlagSpecs();

/// The training step the flags of TrainingFlagSpecs() describe, for `step`
/// (nullopt in inference mode). Errors name the flag: a training flag
/// without --mode training, --mode training without --loss, a value that
/// does not parse, a hyper-parameter out of range.
absl::StatusOr<std::optional<training::TrainingOptions>> TrainingOptionsFromArgs(
    const ParsedArgs& args, const costmodel::StepOptions& step);

/// --schedule (checked against --mode by TrainingOptionsFromArgs): 1f1b
/// unless given; an unknown name is an InvalidArgument naming the flag.
absl::StatusOr<costmodel::PipelineSchedule> PipelineScheduleFromArgs(const ParsedArgs& args);

/// What `place` and `compare` judge a training step by (pipeline/split.h,
/// Note [Training plans]): with --loss, the step's options and --schedule,
/// judged as the pipeline the main command writes.
struct PipelinedTraining {
  training::TrainingOptions options;
  costmodel::PipelineSchedule schedule = costmodel::PipelineSchedule::k1F1B;
};

/// The flags of TrainingFlagSpecs() as `place` and `compare` read them:
/// nullopt in inference mode, and in training mode without --loss (the
/// fused step: forward, backward and update of each unit in one list
/// schedule). Errors name the flag: a training flag without --mode training,
/// another training flag in training mode without --loss, and those of
/// TrainingOptionsFromArgs and PipelineScheduleFromArgs.
absl::StatusOr<std::optional<PipelinedTraining>> PipelinedTrainingFromArgs(
    const ParsedArgs& args, const costmodel::StepOptions& step);

/// "inference", or "training (adam)": for reports.
std::string StepDescription(const costmodel::StepOptions& step);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_MODE_FLAGS_H_
