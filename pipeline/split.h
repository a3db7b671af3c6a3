// Split: the whole job of the main command as one call — prepare the problem,
// search a placement (or take a given one), judge it, rewrite the model into
// per-device (and stage) models and validate them. Nothing is written to
// disk: the caller renders plan.json and the report from the result and
// writes the deployment (tools/cli/commands/split_command.cc).
#ifndef AUTOPAR_PIPELINE_SPLIT_H_
#define AUTOPAR_PIPELINE_SPLIT_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/node_times.h"
#include "passes/partition.h"
#include "pipeline/planning.h"
#include "pipeline/training_split.h"
#include "search/search.h"
#include "training/training_step.h"

namespace autopar::pipeline {

struct SplitRequest {
  /// A model (cost graphs have nothing to rewrite).
  ProblemRequest problem;
  /// The placement search (search::AlgorithmNames()).
  std::string algorithm = "sgp";
  search::SearchOptions search;
  /// Whether a split slower than one device is kept (Note [Do not split]).
  PlanPolicy policy;
  /// Set: choose the micro-batch count in 1..this with the placement (Note
  /// [Micro-batches auto]); search.microbatches is then ignored.
  std::optional<int> auto_microbatches;
  /// Write this placement instead of searching one. A hand-made placement is
  /// the user's decision: it is written even when it overflows a device's
  /// memory (with a warning), and nodes that read a value Send/Recv cannot
  /// carry follow its producer (passes::ColocateNonTensorValues).
  std::optional<NamedPlacement> given_placement;
  passes::PartitionOptions partition;
  /// With a training step (problem.step in training mode): its loss and
  /// optimizer. The step's models are built instead of the forward
  /// deployment (training/training_step.h).
  std::optional<training::TrainingOptions> training;
  /// The schedule of a training step split over several devices
  /// (pipeline/training_split.h).
  costmodel::PipelineSchedule schedule = costmodel::PipelineSchedule::k1F1B;
};

struct SplitResult {
  PlanningProblem problem;
  /// The written placement and its judgement (Note [One judgement]);
  /// algorithm "given" for a given placement.
  Plan plan;
  /// The forward pass rewritten per device; empty for a training step.
  passes::Deployment deployment;
  /// The training step's models, when the request trains.
  std::optional<training::TrainingStep> training_step;
  /// Its split into forward, backward and update stages, when the plan uses
  /// more than one device.
  std::optional<SplitTrainingStep> training_split;
  /// The one-device step predicted from its own models' measured times, when
  /// the node-times file is such a measurement (Note [Measured one-device
  /// step]).
  std::optional<costmodel::TrainingStepTimes> measured_step;
  /// Things the user should know that did not stop the split.
  std::vector<std::string> warnings;
  /// With SplitRequest::auto_microbatches: the curve (its plan moved to
  /// `plan`).
  std::optional<MicrobatchChoice> microbatches;
};

// Note [Measured one-device step]: on one device the step runs the gradient
// model once per micro-batch and the update model once, so when the node-times
// file measured those very models (tools/fidelity/measure_step.mjs) the step
// is predicted as M × (the gradient model's node times + its per-run cost) +
// the update model's node times + its per-run cost
// (costmodel::TrainingStepFromNodeTimes), in place of the node simulation of
// the source model with training factors. The summary and plan.json report
// it; the placement search still runs on the source model, its nodes charged
// with the step's times (Note [Step times on the source]).

// Note [Training plans]: a training request is planned alike by Split,
// `place` and `compare` (TrainingPlanner): the step's models are built once;
// over several devices the searches and the plan are judged by Note
// [Training judge]'s estimate, made from those models' own node times; and
// the plan's step is the split SplitTraining writes for its placement (the
// stages costed one by one, plan.json's "training"."pipeline"."predicted"),
// whose peak memory per device under the schedule decides whether it fits.

/// The training step of one planning problem, its judge and the split of a
/// placement. Keeps a reference to `problem`, which must outlive it.
class TrainingPlanner {
 public:
  /// Builds the step's models of `problem` (a model prepared for training)
  /// and, over several devices, the judge. Fails as BuildTrainingStep and
  /// StepTimesBySourceNode fail.
  static absl::StatusOr<TrainingPlanner> Create(const PlanningProblem& problem,
                                                training::TrainingOptions options,
                                                costmodel::PipelineSchedule schedule,
                                                const PhaseCallback& on_phase = {});

  /// `base` judging a training step over several devices as a pipeline
  /// (Note [Training judge]); `base` itself on one device.
  PlanPolicy Policy(PlanPolicy base) const;

  /// The split SplitTraining makes of the step for `node_device` (one device
  /// per node of the problem's model) and `microbatches`: what Split writes.
  absl::StatusOr<SplitTrainingStep> SplitOf(const std::vector<int32_t>& node_device,
                                            int microbatches) const;

  /// Why `split` (of the `algorithm` plan) does not fit its devices under
  /// the schedule: the first device over its memory; empty when it fits.
  std::string Overflow(const SplitTrainingStep& split, const std::string& algorithm) const;

  const training::TrainingStep& step() const { return step_; }
  training::TrainingStep TakeStep() && { return std::move(step_); }
  const training::TrainingOptions& options() const { return options_; }
  costmodel::PipelineSchedule schedule() const { return schedule_; }

 private:
  TrainingPlanner(const PlanningProblem& problem, training::TrainingOptions options,
                  costmodel::PipelineSchedule schedule)
      : problem_(&problem), options_(std::move(options)), schedule_(schedule) {}

  const PlanningProblem* problem_;
  training::TrainingOptions options_;
  costmodel::PipelineSchedule schedule_;
  training::TrainingStep step_;
  std::optional<TrainingJudge> judge_;
};

/// A training request plans the training step and writes its models; over
/// several devices also their split into stages (pipeline/training_split.h).
/// Fails with ResourceExhausted when a searched placement does not fit the
/// devices' memory, and as PrepareProblem, the search or the rewrite fail
/// otherwise; an invalid rewrite is an InternalError.
absl::StatusOr<SplitResult> Split(const SplitRequest& request);

}  // namespace autopar::pipeline

#endif  // AUTOPAR_PIPELINE_SPLIT_H_
