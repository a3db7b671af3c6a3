// The planning pipeline shared by `place`, `compare` and the main command:
// a model (or a tool-neutral cost graph) and a cluster in, a placement of
// units and its simulated judgement out (DESIGN.md §1).
//
//   model:      load → shapes → AnnotateCosts → Coarsen → units
//   cost graph: read → units (each node is a unit)
#ifndef AUTOPAR_TOOLS_PLANNING_H_
#define AUTOPAR_TOOLS_PLANNING_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/lower_bound.h"
#include "costmodel/simulator.h"
#include "costmodel/training.h"
#include "passes/annotate_costs.h"
#include "passes/coarsen.h"
#include "search/search.h"
#include "tools/model_loading.h"

namespace autopar::tools {

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

  /// The graph the search runs on.
  const costmodel::CostGraph& units() const { return coarsening ? coarsening->graph : *cost_graph; }
};

/// `step` says whether the units cost an inference or a training step
/// (passes/annotate_costs.h, Note [Training step]); tools/mode_flags.h reads
/// it from --mode and --optimizer.
absl::StatusOr<PlanningProblem> PrepareModel(
    const std::string& path, const passes::ShapeOptions& shapes, costmodel::Cluster cluster,
    const costmodel::CostOptions& costs = {}, const passes::CoarsenOptions& coarsen = {},
    const costmodel::StepOptions& step = {}, const onnx_io::LoadOptions& load = {});

/// `cluster` overrides the file's "devices" block; one of the two must exist.
absl::StatusOr<PlanningProblem> PrepareCostGraph(const std::string& path,
                                                 std::optional<costmodel::Cluster> cluster);

/// One algorithm's plan and how the simulator judges it.
struct Plan {
  std::string algorithm;
  costmodel::Placement placement;  // of units
  double search_time_ms = 0;
  costmodel::SimulationResult simulation;
  costmodel::LowerBound lower_bound;
  /// Step time with every unit on device 0 and memory ignored: the baseline
  /// speed-ups are measured against.
  double single_device_step_us = 0;
  /// Edges whose ends are on different devices.
  int64_t cut_edges = 0;
  /// What an iterative search reported, in order (TGA: one entry per
  /// generation, the best plan so far); empty for one-shot algorithms.
  std::vector<search::Progress> progress;
};

/// Runs `algorithm` on the problem and simulates its placement. The search's
/// progress is recorded in the plan and passed on to options.on_progress.
absl::StatusOr<Plan> MakePlan(const PlanningProblem& problem, const std::string& algorithm,
                              const search::SearchOptions& options);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_PLANNING_H_
