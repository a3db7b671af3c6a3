// The flags that say what is being planned, shared by `place`, `compare` and
// the main command: a model (one positional argument, with --dim /
// --input-shape and --mode / --optimizer) or, where a command accepts it, a
// --costgraph file; and the cluster flags.
//
// Reading them takes two steps so that commands report flag mistakes as usage
// errors (exit 1) before touching any file, and unusable files as input errors.
#ifndef AUTOPAR_TOOLS_PROBLEM_FLAGS_H_
#define AUTOPAR_TOOLS_PROBLEM_FLAGS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/training.h"
#include "passes/infer_shapes.h"
#include "tools/args.h"
#include "tools/planning.h"
#include "tools/progress_reporter.h"

namespace autopar::tools {

/// Shape, mode and cluster flags, plus --costgraph when `accept_cost_graph`.
std::vector<FlagSpec> ProblemFlagSpecs(bool accept_cost_graph);

/// What the flags ask for, checked but not yet read from disk.
struct ProblemRequest {
  /// The model file, or empty with --costgraph.
  std::string model_path;
  std::optional<std::string> cost_graph_path;
  passes::ShapeOptions shapes;
  costmodel::StepOptions step;
  /// Progress callbacks for loading and coarsening a model (the command
  /// sets them from its ProgressReporter; empty by default).
  onnx_io::LoadOptions load;
  passes::CoarsenOptions coarsen;
  ParsedArgs args;  // for the cluster flags, read in PrepareProblem
};

/// Checks the flags of ProblemFlagSpecs() and the positional arguments (one
/// model, or none with --costgraph). Failures are usage errors.
absl::StatusOr<ProblemRequest> ProblemRequestFromArgs(const ParsedArgs& args,
                                                      bool accept_cost_graph);

/// Points the request's loading and coarsening callbacks at `progress`.
void AttachProgress(ProgressReporter& progress, ProblemRequest& request);

/// Reads the cluster and the model (PrepareModel) or cost graph
/// (PrepareCostGraph). Failures are about the files.
absl::StatusOr<PlanningProblem> PrepareProblem(const ProblemRequest& request);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_PROBLEM_FLAGS_H_
