// The flags that say what is being planned, shared by `place`, `compare` and
// the main command: a model (one positional argument, with --dim /
// --input-shape and --mode / --optimizer) or, where a command accepts it, a
// --costgraph file; --node-times FILE (measured node times); and the cluster
// flags.
//
// Reading them takes two steps so that commands report flag mistakes as usage
// errors (exit 1) before touching any file, and unusable files as input errors
// (pipeline::PrepareProblem reads them).
#ifndef AUTOPAR_TOOLS_CLI_PROBLEM_FLAGS_H_
#define AUTOPAR_TOOLS_CLI_PROBLEM_FLAGS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "pipeline/planning.h"
#include "tools/cli/args.h"
#include "tools/cli/progress_reporter.h"

namespace autopar::tools {

/// Shape, mode and cluster flags, plus --costgraph when `accept_cost_graph`.
std::vector<FlagSpec> ProblemFlagSpecs(bool accept_cost_graph);

/// Checks the flags of ProblemFlagSpecs() and the positional arguments (one
/// model, or none with --costgraph) and maps them onto a request. Failures are
/// usage errors.
absl::StatusOr<pipeline::ProblemRequest> ProblemRequestFromArgs(const ParsedArgs& args,
                                                                bool accept_cost_graph);

/// Points the request's loading and coarsening callbacks at `progress`.
void AttachProgress(ProgressReporter& progress, pipeline::ProblemRequest& request);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_PROBLEM_FLAGS_H_
