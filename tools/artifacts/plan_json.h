// plan.json, the contract between onnx-autopar and whatever runs its output
// (the README documents every field). Version 1. Field names
// are stable: a change that removes or renames one bumps "version"; new
// fields may be added.
#ifndef AUTOPAR_TOOLS_ARTIFACTS_PLAN_JSON_H_
#define AUTOPAR_TOOLS_ARTIFACTS_PLAN_JSON_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/types/span.h"
#include "costmodel/cluster.h"
#include "costmodel/node_cost.h"
#include "costmodel/node_times.h"
#include "costmodel/simulator.h"
#include "costmodel/training.h"
#include "ir/graph.h"
#include "nlohmann/json.hpp"
#include "passes/infer_shapes.h"
#include "passes/partition.h"
#include "pipeline/training_split.h"
#include "training/training_step.h"

namespace autopar::tools {

inline constexpr int kPlanFormatVersion = 1;

/// Everything plan.json reports; the pointers must be set.
struct PlanRecord {
  std::string source_path;
  std::string source_sha256;
  std::string algorithm;
  uint64_t seed = 0;
  /// Written only when set (`--timings`): a wall-clock measurement would make
  /// the plan differ from run to run.
  std::optional<double> search_time_ms;
  /// Micro-batches per step; the model as given is one micro-batch (Note
  /// [Micro-batches] in costmodel/simulator.h).
  int microbatches = 1;
  /// Whether node times were measured (--node-times) or predicted.
  costmodel::CostSource cost_source;
  /// Inference, or a training step with its optimizer.
  costmodel::StepOptions step;
  const costmodel::Cluster* cluster = nullptr;
  const ir::Graph* graph = nullptr;
  /// Per node of `graph`, its device and its costs.
  absl::Span<const int32_t> node_device;
  absl::Span<const costmodel::NodeCost> node_costs;
  const passes::Deployment* deployment = nullptr;
  /// The simulation of the node placement as written.
  const costmodel::SimulationResult* simulation = nullptr;
  double lower_bound_us = 0;
  double single_device_step_us = 0;
  /// Shapes that were estimated, not known (`"estimates"`; empty list when
  /// every shape is known).
  absl::Span<const passes::ShapeEstimate> estimates;
  /// A training step's models and options (`"mode": "training"` and the
  /// `"training"` object, tools/artifacts/training_json.h); null for
  /// inference. The deployment is then empty: no device model is written.
  const training::TrainingStep* training_step = nullptr;
  const training::TrainingOptions* training_options = nullptr;
  /// Its split over several devices ("training"."pipeline"); null when the
  /// step runs on one device.
  const pipeline::SplitTrainingStep* training_split = nullptr;
  /// A one-device step predicted from its own models' measured times
  /// (pipeline/split.h, Note [Measured one-device step]): the predicted step
  /// time, and "predicted"."measured_step"; null otherwise.
  const costmodel::TrainingStepTimes* measured_step = nullptr;
  /// Set when the searched split was predicted slower than the whole model on
  /// one device that fits, and this plan is that device (pipeline/planning.h,
  /// Note [Do not split]): written as "predicted"."split_predicted_slower",
  /// null otherwise.
  struct SlowerSplit {
    int devices = 0;
    double step_time_us = 0;
    std::string device;
  };
  std::optional<SlowerSplit> slower_split;
};

/// The step time plan.json and the summaries report: the measured step's
/// when set, the simulation's otherwise.
double PredictedStepUs(const PlanRecord& r);

/// The "split_predicted_slower" record of `r`: null, or the rejected split's
/// devices and step against the one device's.
nlohmann::ordered_json SlowerSplitJson(const PlanRecord& r);

nlohmann::ordered_json PlanJson(const PlanRecord& record);

/// plan.json's "symbolic_dims": the bound symbols of the graph inputs
/// (`--dim`) and their planned values, how many tensors at a model boundary
/// of the deployment (graph inputs and outputs, stage inputs and outputs,
/// transfers) keep a symbol, and each boundary dim derived from a symbol that
/// no name can keep (passes/symbolic_dims.h), with the reason. Null when no
/// input dim is a bound symbol.
nlohmann::ordered_json SymbolicDimsJson(const ir::Graph& graph,
                                        const passes::Deployment& deployment);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_ARTIFACTS_PLAN_JSON_H_
