#include "tools/cli/problem_flags.h"

#include "tools/cli/cluster_flags.h"
#include "tools/cli/mode_flags.h"
#include "tools/cli/shape_flags.h"

namespace autopar::tools {

std::vector<FlagSpec> ProblemFlagSpecs(bool accept_cost_graph) {
  std::vector<FlagSpec> specs = ShapeFlagSpecs();
  for (const FlagSpec& s : ClusterFlagSpecs()) specs.push_back(s);
  for (const FlagSpec& s : ModeFlagSpecs()) specs.push_back(s);
  specs.push_back({"node-times", true});
  if (accept_cost_graph) specs.push_back({"costgraph", true});
  return specs;
}

absl::StatusOr<pipeline::ProblemRequest> ProblemRequestFromArgs(const ParsedArgs& args,
                                                                bool accept_cost_graph) {
  pipeline::ProblemRequest request;
  // Wrong counts and sizes are usage errors; files are read in PrepareProblem.
  absl::StatusOr<pipeline::ClusterRequest> cluster = ClusterRequestFromArgs(args);
  if (!cluster.ok()) return cluster.status();
  request.cluster = *std::move(cluster);
  request.node_times_path = args.Get("node-times");
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

void AttachProgress(ProgressReporter& progress, pipeline::ProblemRequest& request) {
  request.load.on_progress = progress.Task("loading model", ProgressUnit::kBytes);
  request.coarsen.on_progress = progress.Task("coarsening", ProgressUnit::kCount);
}

}  // namespace autopar::tools
