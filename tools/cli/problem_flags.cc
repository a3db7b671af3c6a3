#include "tools/problem_flags.h"

#include "tools/cluster_flags.h"
#include "tools/mode_flags.h"
#include "tools/model_loading.h"

namespace autopar::tools {

std::vector<FlagSpec> ProblemFlagSpecs(bool accept_cost_graph) {
  std::vector<FlagSpec> specs = ShapeFlagSpecs();
  for (const FlagSpec& s : ClusterFlagSpecs()) specs.push_back(s);
  for (const FlagSpec& s : ModeFlagSpecs()) specs.push_back(s);
  if (accept_cost_graph) specs.push_back({"costgraph", true});
  return specs;
}

absl::StatusOr<ProblemRequest> ProblemRequestFromArgs(const ParsedArgs& args,
                                                      bool accept_cost_graph) {
  ProblemRequest request;
  request.args = args;
  // Wrong counts and sizes are usage errors; files are read in PrepareProblem.
  if (absl::Status cluster = CheckClusterFlags(args); !cluster.ok()) return cluster;
  if (accept_cost_graph) request.cost_graph_path = args.Get("costgraph");
  const bool from_cost_graph = request.cost_graph_path.has_value();
  if (args.positional().size() != (from_cost_graph ? 0u : 1u)) {
    return absl::InvalidArgumentError(accept_cost_graph ? "give one model file, or --costgraph FILE"
                                                        : "give one model file");
  }
  if (from_cost_graph) {
    if (args.Has("mode") || args.Has("optimizer")) {
      return absl::InvalidArgumentError(
          "--mode and --optimizer apply to models; a cost graph has its costs");
    }
    return request;
  }
  request.model_path = args.positional()[0];
  absl::StatusOr<passes::ShapeOptions> shapes = ShapeOptionsFromArgs(args);
  if (!shapes.ok()) return shapes.status();
  request.shapes = *std::move(shapes);
  absl::StatusOr<costmodel::StepOptions> step = StepOptionsFromArgs(args);
  if (!step.ok()) return step.status();
  request.step = *step;
  return request;
}

void AttachProgress(ProgressReporter& progress, ProblemRequest& request) {
  request.load.on_progress = progress.Task("loading model", ProgressUnit::kBytes);
  request.coarsen.on_progress = progress.Task("coarsening", ProgressUnit::kCount);
}

absl::StatusOr<PlanningProblem> PrepareProblem(const ProblemRequest& request) {
  const bool from_cost_graph = request.cost_graph_path.has_value();
  // A cost graph may carry its own cluster; a model gets the default one.
  absl::StatusOr<std::optional<costmodel::Cluster>> cluster =
      ClusterFromArgs(request.args, !from_cost_graph);
  if (!cluster.ok()) return cluster.status();
  if (from_cost_graph) return PrepareCostGraph(*request.cost_graph_path, *std::move(cluster));
  return PrepareModel(request.model_path, request.shapes, **std::move(cluster), {}, request.coarsen,
                      request.step, request.load);
}

}  // namespace autopar::tools
