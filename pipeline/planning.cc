#include "tools/planning.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "costmodel/cost_graph_json.h"

namespace autopar::tools {

absl::StatusOr<PlanningProblem> PrepareModel(
    const std::string& path, const passes::ShapeOptions& shapes, costmodel::Cluster cluster,
    const costmodel::CostOptions& costs, const passes::CoarsenOptions& coarsen,
    const costmodel::StepOptions& step, const onnx_io::LoadOptions& load) {
  PlanningProblem problem;
  problem.cluster = std::move(cluster);
  problem.step = step;
  absl::StatusOr<LoadedModel> loaded = LoadAndAnalyze(path, shapes, load);
  if (!loaded.ok()) return loaded.status();
  problem.model = *std::move(loaded);
  absl::StatusOr<passes::AnnotatedGraph> nodes =
      passes::AnnotateCosts(problem.model->graph, problem.cluster, costs, step);
  if (!nodes.ok())
    return absl::Status(nodes.status().code(),
                        absl::StrCat("'", path, "': ", nodes.status().message()));
  problem.nodes = *std::move(nodes);
  absl::StatusOr<passes::Coarsening> coarsening =
      passes::Coarsen(problem.nodes->graph, problem.cluster, coarsen);
  if (!coarsening.ok()) return coarsening.status();
  problem.coarsening = *std::move(coarsening);
  return problem;
}

absl::StatusOr<PlanningProblem> PrepareCostGraph(const std::string& path,
                                                 std::optional<costmodel::Cluster> cluster) {
  absl::StatusOr<costmodel::CostGraphDocument> doc = costmodel::LoadCostGraphFile(path);
  if (!doc.ok()) return doc.status();
  PlanningProblem problem;
  if (cluster) {
    if (doc->graph.num_device_kinds() != static_cast<int>(cluster->kinds.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", path, "' has compute times for ", doc->graph.num_device_kinds(),
                       " device kind(s) but the cluster has ", cluster->kinds.size()));
    }
    problem.cluster = *std::move(cluster);
  } else if (doc->cluster) {
    problem.cluster = *std::move(doc->cluster);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path,
        "' has no \"devices\" block: give --devices N --memory-per-device SIZE or --cluster"));
  }
  problem.cost_graph = std::move(doc->graph);
  return problem;
}

absl::StatusOr<Plan> MakePlan(const PlanningProblem& problem, const std::string& algorithm,
                              const search::SearchOptions& options) {
  const costmodel::CostGraph& units = problem.units();
  Plan plan;
  plan.algorithm = algorithm;
  search::SearchOptions recorded = options;
  recorded.on_progress = [&plan, &options](const search::Progress& progress) {
    plan.progress.push_back(progress);
    if (options.on_progress) options.on_progress(progress);
  };
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<costmodel::Placement> placement =
      search::Place(algorithm, units, problem.cluster, recorded);
  plan.search_time_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!placement.ok()) return placement.status();
  if (absl::Status s = costmodel::CheckPlacement(units, problem.cluster, *placement); !s.ok()) {
    return absl::InternalError(
        absl::StrCat(algorithm, " returned an invalid placement: ", s.message()));
  }
  plan.placement = *std::move(placement);
  costmodel::Simulator simulator(units, problem.cluster);
  costmodel::SimulationOptions sim_options{.microbatches = options.microbatches,
                                           .record_timeline = true};
  plan.simulation = simulator.Run(plan.placement, sim_options);
  plan.lower_bound = costmodel::ComputeLowerBound(units, problem.cluster, options.microbatches);
  costmodel::Placement single{.device = std::vector<int32_t>(units.num_units(), 0)};
  plan.single_device_step_us =
      simulator.Run(single, {.microbatches = options.microbatches}).step_time_us;
  for (uint32_t e = 0; e < units.num_edges(); ++e) {
    if (plan.placement.device[units.edge_src(e)] != plan.placement.device[units.edge_dst(e)])
      ++plan.cut_edges;
  }
  return plan;
}

}  // namespace autopar::tools
