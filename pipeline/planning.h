// The planning step shared by `place`, `compare` and the main command: a
// model (or a tool-neutral cost graph) and a cluster in, a placement and its
// judgement out.
//
//   model:      load → shapes → AnnotateCosts → Coarsen → units
//   cost graph: read → units (each node is a unit)
//
// Note [One judgement]: the search places units, but what is written is a
// placement of nodes, and that is what every command reports: the node-level
// simulation of the written placement (step time, memory, transfers), its
// lower bound and the one-device step on the same node graph. Coarsening keeps
// every group of nodes that must share a device in one unit (values Send/Recv
// cannot carry), so nothing after the search changes the placement but one
// tidy-up applied before the judgement (constant nodes join their readers,
// passes/constant_nodes.h), and `place`, `compare`, plan.json and the
// report agree to the microsecond.
#ifndef AUTOPAR_PIPELINE_PLANNING_H_
#define AUTOPAR_PIPELINE_PLANNING_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/lower_bound.h"
#include "costmodel/node_times.h"
#include "costmodel/pipeline_schedule.h"
#include "costmodel/simulator.h"
#include "costmodel/training.h"
#include "passes/annotate_costs.h"
#include "passes/coarsen.h"
#include "pipeline/cluster_request.h"
#include "pipeline/model_loading.h"
#include "pipeline/training_split.h"
#include "search/search.h"
#include "training/training_step.h"

namespace autopar::pipeline {

/// What to plan, and for which cluster.
struct ProblemRequest {
  /// The model file; empty when `cost_graph_path` is set.
  std::string model_path;
  /// A cost-graph file (costmodel/cost_graph_json.h) instead of a model.
  std::optional<std::string> cost_graph_path;
  passes::ShapeOptions shapes;
  /// The step a model's costs describe (inference unless training).
  costmodel::StepOptions step;
  ClusterRequest cluster;
  /// Measured node times replacing the cost model's (costmodel/node_times.h).
  std::optional<std::string> node_times_path;
  /// Progress callbacks for loading and coarsening a model; may be empty.
  onnx_io::LoadOptions load;
  passes::CoarsenOptions coarsen;
  PhaseCallback on_phase;
};

/// What is being placed.
struct PlanningProblem {
  costmodel::Cluster cluster;
  /// The step the unit graph's costs describe (inference unless a model was
  /// prepared for training).
  costmodel::StepOptions step;
  /// Set when planning an ONNX model.
  std::optional<LoadedModel> model;
  std::optional<passes::AnnotatedGraph> nodes;
  std::optional<passes::Coarsening> coarsening;
  /// Set when planning a cost graph file: it is already the unit graph.
  std::optional<costmodel::CostGraph> cost_graph;
  /// Whether the node times are the cost model's or measured ones.
  costmodel::CostSource cost_source;
  /// The measured node times the costs were given (--node-times), kept for
  /// what is costed after planning: a training step's own models.
  std::optional<costmodel::NodeTimes> node_times;

  /// The graph the search runs on.
  const costmodel::CostGraph& units() const { return coarsening ? coarsening->graph : *cost_graph; }
  /// The graph placements are written and judged on (Note [One judgement]):
  /// the model's nodes, or the cost graph's.
  const costmodel::CostGraph& node_graph() const { return nodes ? nodes->graph : *cost_graph; }
};

/// Reads the model or cost graph and resolves the cluster
/// (pipeline/cluster_request.h says which request wins over what the input
/// brings).
absl::StatusOr<PlanningProblem> PrepareProblem(const ProblemRequest& request);

/// A model for a given cluster. `step` says whether the units cost an
/// inference or a training step (passes/annotate_costs.h, Note [Training
/// step]). `node_times`, when given, replace the predicted node times before
/// the nodes are coarsened into units.
absl::StatusOr<PlanningProblem> PrepareModel(
    const std::string& path, const passes::ShapeOptions& shapes, costmodel::Cluster cluster,
    const costmodel::CostOptions& costs = {}, const passes::CoarsenOptions& coarsen = {},
    const costmodel::StepOptions& step = {}, const onnx_io::LoadOptions& load = {},
    const PhaseCallback& on_phase = {}, const costmodel::NodeTimes* node_times = nullptr);

/// A cost-graph file, with the cluster `request` makes of its own "devices"
/// block; without that block the request must name the cluster.
absl::StatusOr<PlanningProblem> PrepareCostGraph(const std::string& path,
                                                 const ClusterRequest& request,
                                                 const costmodel::NodeTimes* node_times = nullptr);

/// One placement and how the simulator judges it (Note [One judgement]).
struct Plan {
  std::string algorithm;
  /// What the search placed, one device per unit of problem.units(); empty
  /// for a placement that was given rather than searched.
  costmodel::Placement unit_placement;
  /// What is written and judged, one device per node of
  /// problem.node_graph(): the unit placement expanded node by node, unless
  /// the search handed back a node-level placement of its own.
  costmodel::Placement node_placement;
  double search_time_ms = 0;
  /// Micro-batches per step, each the model as given.
  int microbatches = 1;
  /// The node-level simulation of node_placement, timeline included.
  costmodel::SimulationResult simulation;
  costmodel::LowerBound lower_bound;
  /// Step time with every node on device 0 and memory ignored: the baseline
  /// speed-ups are measured against.
  double single_device_step_us = 0;
  /// Node-graph edges whose ends are on different devices.
  int64_t cut_edges = 0;
  /// What an iterative search reported, in order (TGA: one entry per
  /// generation, the best plan so far, in the search's own unit-level
  /// estimate); empty for one-shot algorithms.
  std::vector<search::Progress> progress;
  /// Set when the search's placement used several devices but one device
  /// that fits was predicted faster, so this plan is that one device
  /// (Note [Do not split]).
  struct RejectedSplit {
    /// Devices the searched placement used, and its predicted step.
    int devices = 0;
    double step_time_us = 0;
    /// The device the whole model went to.
    int device = 0;
  };
  std::optional<RejectedSplit> rejected_split;
  /// Set when the plan was judged as a pipelined training step
  /// (PlanPolicy::training, Note [Training judge]).
  struct PipelinedStep {
    /// The estimate (pipeline/training_estimate.h); simulation.step_time_us
    /// is set to it.
    double step_us = 0;
    /// What the node-level simulation of the fused step had predicted.
    double fused_step_us = 0;
    /// Per device: the estimate's peak memory.
    std::vector<int64_t> peak_memory_bytes;
  };
  std::optional<PipelinedStep> pipelined;
};

// Note [Do not split]: one device is an answer. A search sees unit-level
// costs; the judge (Note [One judgement]) may find its split slower than
// running the whole model on one device, e.g. when the links are slow or
// the cut tensors large. MakePlan therefore also judges the whole model on
// each distinct device (kind and memory) and, when the fastest of those that
// fit is predicted strictly faster than the searched plan, returns it, with
// Plan::rejected_split saying what the search had found. Splitting then
// pays only for memory. `compare`, which compares the algorithms themselves,
// and a user who asks to split anyway (--allow-slower-split) keep the
// searched plan.
//
// Note [Training judge]: a training step over several devices runs as a
// pipeline of forward and backward stages (pipeline/training_split.h), which
// the fused training cost graph the searches see (passes/annotate_costs.h,
// Note [Training step]) does not describe: an alternating placement the
// node-level simulator finds fast may be slow once 1F1B caps the
// micro-batches in flight. With PlanPolicy::training, MakePlan judges
// placements by the pipelined step's estimate (pipeline/training_estimate.h):
// the searches optimise it (SearchOptions::objective), the plan's step
// (simulation.step_time_us, and Plan::pipelined) is it, and the one-device
// alternatives of Note [Do not split] are judged by it too (memory: one
// device fits when its node-level simulation does).
struct TrainingJudge {
  costmodel::PipelineSchedule schedule = costmodel::PipelineSchedule::k1F1B;
  /// The training step's forward and backward times per source node
  /// (StepTimesBySourceNode), computed once from its gradient model for
  /// every plan judged (--microbatches auto judges several); set.
  std::shared_ptr<const SourceNodeTimes> step_times;
};

struct PlanPolicy {
  /// Keep the searched plan even when one device is predicted faster.
  bool allow_slower_split = false;
  /// Set: judge a model's training step as a pipeline (Note [Training
  /// judge]); ignored for a cost graph or a one-device cluster.
  /// TrainingPlanner::Policy (pipeline/split.h) sets it for a training
  /// request: Split's, and `place`'s and `compare`'s with --loss.
  std::optional<TrainingJudge> training;
};

/// Runs `algorithm` on the problem's units and judges the placement it
/// writes. A model's search also sees its nodes (SearchOptions::nodes, the
/// units holding nodes that must share a device locked), so that TGA can
/// refine below the units. The search's progress is recorded in the plan and
/// passed on to options.on_progress.
///
/// `bound`: the node graph's lower bound for problem.cluster at
/// options.microbatches, when the caller runs several plans on one problem
/// (it takes tens of ms on 10k nodes; a problem does not keep it, since
/// callers change its cluster in place); null: computed here, once, for
/// the search and the judgement alike.
///
/// Unless `policy` allows a slower split, a split predicted slower than one
/// device that fits gives way to that device (Note [Do not split]).
absl::StatusOr<Plan> MakePlan(const PlanningProblem& problem, const std::string& algorithm,
                              const search::SearchOptions& options,
                              const PhaseCallback& on_phase = {},
                              const costmodel::LowerBound* bound = nullptr,
                              const PlanPolicy& policy = {});

/// The fastest plan with the whole model on one device that fits, when it is
/// predicted strictly faster than `plan` and `plan` uses several devices; the
/// plan itself otherwise (Note [Do not split]). MakePlan applies it unless
/// its policy allows a slower split.
Plan PreferOneDeviceIfFaster(const PlanningProblem& problem, Plan plan,
                             const costmodel::LowerBound* bound = nullptr);

// Note [Micro-batches auto]: with `--microbatches auto` the micro-batch
// count is chosen together with the placement. More micro-batches shrink the
// pipeline's fill and drain but add per-run and hand-over overheads and hold
// more activations; the model as given stays one micro-batch, so the choices
// are compared on time per sample, step ÷ (M × batch). SGP (tens of ms) plans
// each candidate — the powers of two up to the maximum, the maximum itself,
// then by bisection around the best: the midpoints between the best so far
// and its nearest tried neighbours, round after round until the best's
// neighbours are the counts next to it (16 of 32: 12 and 24, then 20 or 28,
// ...; at most 2 log2(max) more) — up to SearchOptions::threads candidates
// at a time (each is planned on its own; the choice is the same whatever the
// threads), and the requested algorithm plans the chosen count once. Each
// count's plan is searched on its own, so the curve is not smooth: the
// bisection keeps the choice within 3% of the best of every count 1..32
// (tests/pipeline/microbatches_choice_test.cc), where the first midpoints
// alone came within 2.9%. Plans that fit win over plans that do not.
// More micro-batches hold more activations, so a count may find no plan
// within memory where fewer do: that trial is recorded as such and the
// choice goes on among the others (it fails only when no count has a plan).

/// One micro-batch count tried: SGP's plan at that count, as judged.
struct MicrobatchTrial {
  int microbatches = 1;
  double step_time_us = 0;
  /// step_time_us ÷ (microbatches × batch).
  double time_per_sample_us = 0;
  std::vector<int64_t> peak_memory_bytes;
  bool feasible = true;
  /// Why SGP found no plan at this count (it ran out of memory); empty when
  /// it did. Such a trial has no step time and is never chosen.
  std::string error;
};

struct MicrobatchChoice {
  /// The requested algorithm's plan at the chosen count.
  Plan plan;
  int chosen = 1;
  int max_microbatches = 1;
  /// The samples in one micro-batch: the first graph input's leading dim
  /// when known, 1 otherwise (a cost graph says nothing of it).
  int64_t batch = 1;
  /// In the order tried.
  std::vector<MicrobatchTrial> tried;
};

/// Chooses the micro-batch count in 1..max_microbatches with the placement
/// (Note [Micro-batches auto]); options.microbatches is ignored. Without
/// `midpoints` only the powers of two and the maximum are tried, not the
/// bisection around the best (a cheaper search, for callers that choose many
/// times: pipeline/capacity.h).
absl::StatusOr<MicrobatchChoice> ChooseMicrobatches(const PlanningProblem& problem,
                                                    const std::string& algorithm,
                                                    const search::SearchOptions& options,
                                                    int max_microbatches,
                                                    const PlanPolicy& policy = {},
                                                    bool midpoints = true);

/// Judges a node-level placement (one device per node of
/// problem.node_graph()) as MakePlan judges a searched one; `bound` as there.
Plan JudgePlacement(const PlanningProblem& problem, const std::string& algorithm,
                    costmodel::Placement node_placement, int microbatches,
                    const costmodel::LowerBound* bound = nullptr);

/// A placement by node name, as a user writes it (a plan.json's
/// node_to_device, or an object of node name → device).
struct NamedPlacement {
  /// Where it comes from, for messages: "placement file 'p.json'".
  std::string source;
  std::vector<std::pair<std::string, int64_t>> device_of_node;
};

/// The device of each node of `graph`. Fails, naming the node, when a node is
/// missing, a name is not a node of the graph, or a device is not in
/// [0, num_devices).
absl::StatusOr<std::vector<int32_t>> ResolveNamedPlacement(const NamedPlacement& placement,
                                                           const ir::Graph& graph, int num_devices);

/// A placement the user gave, judged as MakePlan judges a searched one
/// (algorithm "given"), a pipelined training step included (policy.training,
/// Note [Training judge]) but never replaced by one device: its nodes
/// resolved on the problem's model (ResolveNamedPlacement), and nodes that
/// read a value Send/Recv cannot carry moved to its producer
/// (passes::ColocateNonTensorValues). The main command and `place` judge
/// `--placement FILE` by it. InvalidArgument for a cost graph, and as
/// ResolveNamedPlacement fails.
absl::StatusOr<Plan> JudgeGivenPlacement(const PlanningProblem& problem,
                                         const NamedPlacement& placement, int microbatches,
                                         const PlanPolicy& policy = {});

}  // namespace autopar::pipeline

#endif  // AUTOPAR_PIPELINE_PLANNING_H_
