// A fast estimate of a pipelined training step for a node placement: the
// stage-level problem SplitTraining (pipeline/training_split.h) would build,
// made from the planning problem's node-level costs alone — no gradient
// model, no ONNX stage, no partition — and simulated by
// costmodel::SimulatePipelineStep under the same schedule.
//
// Note [Training estimate]: SplitTraining judges a placement by building the
// gradient model, cutting it into stage models and costing them (hundreds of
// ms to seconds); a search that judges thousands of placements cannot. This
// estimate mirrors its stages from the forward graph:
//  - forward stages: the forward nodes grouped by (level, device), the levels
//    of passes/partition (Note [Stage levels]: cross-device hops from the
//    graph inputs; Constant nodes do not count, they are copied where read),
//    numbered in (level, device) order;
//  - one backward stage per forward stage with backward work, on its device
//    (Note [Gradient colocation]), numbered in the reverse order. The backward
//    stage of s reads the gradients of s's outputs from the backward stages
//    of the stages that read them (values that need a gradient), and its
//    stash: the saved activations (costmodel/training.h, Note [Saved
//    activations]) its nodes read or write, from the forward stage that made
//    them (no bytes when that is another device: the forward stage received
//    them already, as SplitTraining counts);
//  - a tensor a device received once is not sent again (SplitTraining's
//    rule): later readers on that device keep the edge without bytes;
//  - compute: per node its forward and backward times in the step's gradient
//    model when the caller has them (StepTimesBySourceNode: what
//    SplitTraining sums per stage — an unrolled LSTM, a decomposed
//    attention backward cost far more than the fused factors say);
//    otherwise the forward, backward and update times of the cost model
//    (passes/annotate_costs.h, Note [Training step]), scaled so that their
//    sum is the node graph's unit time — so measured node times, which
//    replace that sum, scale all three;
//  - memory: per device the weights its nodes read, and the gradient and
//    optimizer state of those whose first reader it holds (the update runs
//    where the gradient is made); a device's stash (its saved activations and
//    recurrent workspace) on its first forward stage; transient bytes are a
//    stage's cross-stage inputs plus its largest node output;
//  - update time: per device, the update of the weights whose first reader
//    it holds.
//  - the runner's gradient sums (SourceNodeTimes::gradient_sum_us, from a
//    step measurement): each trained weight's share by bytes, as work after
//    the backward stage of its first reader's stage, and its share of the
//    means on that device's update, as SplitTraining charges them (Note
//    [Measured run costs]).
// What it leaves out: the loss nodes, the per-run costs by bytes fed, and
// the backward nodes SplitTraining sinks into a later stage (Note [Sinking
// later phases]);
// levels ignore the non-tensor colocation groups. tests/pipeline/
// training_estimate_test.cc holds it within 25% of SplitTraining's step.
#ifndef AUTOPAR_PIPELINE_TRAINING_ESTIMATE_H_
#define AUTOPAR_PIPELINE_TRAINING_ESTIMATE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/pipeline_schedule.h"
#include "pipeline/planning.h"
#include "pipeline/training_split.h"

namespace autopar::pipeline {

struct TrainingEstimateOptions {
  costmodel::PipelineSchedule schedule = costmodel::PipelineSchedule::k1F1B;
  int microbatches = 1;
};

/// Estimates training steps of one planning problem (a model prepared in
/// training mode) for many placements: the per-node times and sizes are
/// computed once. Keeps references to `problem`, which must outlive it.
class TrainingStepEstimator {
 public:
  /// FailedPrecondition when the problem is not a model prepared for
  /// training (no node costs, or no training costs).
  /// `step_times`, when given, replace the cost model's forward and
  /// backward times per node (StepTimesBySourceNode: the gradient model's
  /// own nodes, as SplitTraining costs them).
  static absl::StatusOr<TrainingStepEstimator> Create(const PlanningProblem& problem,
                                                      const TrainingEstimateOptions& options,
                                                      const SourceNodeTimes* step_times = nullptr);

  /// The stage-level problem for `node_device` (one device per node of the
  /// problem's model), as Note [Training estimate] builds it.
  absl::StatusOr<costmodel::PipelineStepProblem> BuildProblem(
      const std::vector<int32_t>& node_device) const;

  /// BuildProblem, simulated.
  absl::StatusOr<costmodel::PipelineStepResult> Estimate(
      const std::vector<int32_t>& node_device) const;

  /// Estimate's step, or +infinity for a placement it cannot judge.
  double StepUs(const std::vector<int32_t>& node_device) const;

 private:
  TrainingStepEstimator(const PlanningProblem& problem, const TrainingEstimateOptions& options)
      : problem_(&problem), options_(options) {}

  const PlanningProblem* problem_;
  TrainingEstimateOptions options_;
  int num_kinds_ = 0;
  /// Per node × kind (node * num_kinds + kind).
  std::vector<double> forward_us_, backward_us_, update_us_;
  /// Per value: bytes (0 when unknown).
  std::vector<int64_t> bytes_;
  /// Per value: the backward pass reads it / it needs a gradient / a
  /// trainable parameter.
  std::vector<uint8_t> saved_, needs_gradient_, trainable_;
  /// Per value: a weight's bytes with its gradient and optimizer state.
  std::vector<int64_t> parameter_state_bytes_;
  /// Per value: its first non-Constant reader (-1: none).
  std::vector<int32_t> first_reader_;
  /// Per node: a Constant (copied into every stage that reads it).
  std::vector<uint8_t> replicated_;
  /// Per node: its recurrent workspace held for the backward.
  std::vector<int64_t> persistent_bytes_;
  /// The trained weights (values), and what the runner's sums and means of
  /// all their gradients cost (SourceNodeTimes).
  std::vector<int32_t> trained_weights_;
  int64_t trained_bytes_ = 0;
  double gradient_sum_us_ = 0, gradient_mean_us_ = 0;
};

}  // namespace autopar::pipeline

#endif  // AUTOPAR_PIPELINE_TRAINING_ESTIMATE_H_
