// The split of a training step over devices: pipeline-parallel training.
//
// A training step (training/training_step.h) is one gradient model (forward,
// loss, backward) and one update model. Given a placement of the source
// model's nodes, SplitTrainingStep cuts them into:
//   - forward stages, which compute their part of the forward pass and output
//     what later stages read, including the activations the backward pass of
//     the same micro-batch needs (the stash);
//   - backward stages, which read the stash and the gradients coming back,
//     and output the gradients earlier stages need and the weight gradients;
//   - one update model per device, for the weights whose gradient it makes.
// The stages are plain ONNX models (no Send/Recv): passes::Partition writes
// them, with the phase (forward, backward) as part of each stage's key.
//
// Note [Gradient colocation]: every node of the gradient model runs on the
// device of the source node it works for (TrainingStep::node_origin): a
// backward node with its forward node, a loss node with the node whose output
// the loss reads, a weight's summed gradient with the weight's first reader.
// This is TensorFlow's colocate_gradients_with_ops (what Baechi places by)
// and the rule ONNX Runtime's pipeline partitioner enforced: a backward node
// reads the forward values its forward node read, which are already on its
// device (made there, or received there for the forward pass), so the stash
// never travels again, and a placement of the forward nodes is a placement
// of the whole step.
//
// Note [Training schedule]: the step is judged, and its run order made, by
// the stage-level simulator of costmodel/pipeline_schedule.h under the
// chosen schedule (GPipe or 1F1B): each stage run costs the stage's nodes
// (the cost model's times, or measured ones) plus the cluster's per-run
// overheads; memory counts weights, gradient accumulators and optimizer state
// on each weight's device, the stashes of the micro-batches in flight and the
// running stage's working set. Each device's order of (stage, micro-batch)
// runs from that simulation is written into plan.json and the runner
// (tools/runner/train.mjs) follows it exactly.
#ifndef AUTOPAR_PIPELINE_TRAINING_SPLIT_H_
#define AUTOPAR_PIPELINE_TRAINING_SPLIT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/node_times.h"
#include "costmodel/pipeline_schedule.h"
#include "ir/graph.h"
#include "onnx/onnx_pb.h"
#include "passes/partition.h"
#include "training/training_step.h"

namespace autopar::pipeline {

struct TrainingSplitOptions {
  costmodel::PipelineSchedule schedule = costmodel::PipelineSchedule::k1F1B;
  int microbatches = 1;
  /// Measured node times: nodes of the gradient model they name get them
  /// (forward nodes keep their source names, backward ones are "grad/…"),
  /// the others are scaled (Note [Measured and scaled times]). Null: the
  /// cost model's times.
  const costmodel::NodeTimes* node_times = nullptr;
  /// The optimizer the step's update model was built with (the per-device
  /// update models are built again, each for its own weights).
  training::OptimizerOptions optimizer;
};

/// One forward or backward stage of the split step.
struct TrainingStage {
  /// The stage model, its inputs, outputs and the earlier stages it reads
  /// (passes::Stage; `file` is "stages/s<id>.onnx").
  passes::Stage stage;
  costmodel::StageKind kind = costmodel::StageKind::kForward;
  /// Predicted compute time of one run (one micro-batch), overheads excluded.
  double compute_us = 0;
  /// The runner's work after each run: summing the weight gradients the
  /// stage outputs (Note [Measured run costs]); 0 without a step measurement.
  double after_us = 0;
};

/// The update model of one device: the weights whose gradient it makes.
struct DeviceUpdate {
  int32_t device = 0;
  /// "step/update_d<device>.onnx".
  std::string file;
  onnx::ModelProto proto;
  /// Names of TrainingStep::weights, in their order.
  std::vector<std::string> weights;
  double compute_us = 0;
};

struct SplitTrainingStep {
  std::vector<TrainingStage> stages;
  std::vector<DeviceUpdate> updates;
  /// Per TrainingStep::weights entry: the device that updates it (where its
  /// gradient is made).
  std::vector<int32_t> weight_device;
  /// The devices that run stages, ascending.
  std::vector<int32_t> devices;
  costmodel::PipelineSchedule schedule = costmodel::PipelineSchedule::k1F1B;
  int microbatches = 1;
  /// The simulated step (Note [Training schedule]): its order is the one
  /// the runner follows.
  costmodel::PipelineStepResult predicted;
};

/// Splits `step` (built from the model whose IR is `source`) by `node_device`,
/// the device of each node of `source`, over `cluster`. `directory` resolves
/// the model's external data. Errors: a stage that cannot be written
/// (passes::Partition's), or a schedule the simulator cannot run.
absl::StatusOr<SplitTrainingStep> SplitTraining(const training::TrainingStep& step,
                                                const ir::Graph& source,
                                                const std::vector<int32_t>& node_device,
                                                const costmodel::Cluster& cluster,
                                                const std::string& directory,
                                                const TrainingSplitOptions& options);

/// The compute of the step's gradient model, summed per node of the source
/// model it works for (Note [Gradient colocation]) and per phase: what each
/// source node adds to the stages SplitTraining writes, whatever the
/// placement (the gradient model's own nodes: unrolled recurrent nodes, a
/// decomposed backward). pipeline/training_estimate.h builds on it.
struct SourceNodeTimes {
  int num_kinds = 0;
  /// Per source node × device kind (node * num_kinds + kind).
  std::vector<double> forward_us;
  std::vector<double> backward_us;
  /// The runner's gradient sums of all weights, per micro-batch, and their
  /// means, per step (NodeTimes::RunCosts; 0 without a step measurement).
  double gradient_sum_us = 0;
  double gradient_mean_us = 0;
};

/// SourceNodeTimes of `step`, built from the model whose IR is `source`, on
/// the device kinds of `cluster`; `node_times` as TrainingSplitOptions's.
absl::StatusOr<SourceNodeTimes> StepTimesBySourceNode(const training::TrainingStep& step,
                                                      const ir::Graph& source,
                                                      const costmodel::Cluster& cluster,
                                                      const std::string& directory,
                                                      const costmodel::NodeTimes* node_times);

}  // namespace autopar::pipeline

#endif  // AUTOPAR_PIPELINE_TRAINING_SPLIT_H_
