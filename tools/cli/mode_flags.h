// The flags that say what kind of step a command costs and plans (`place`,
// `cost` and the main command):
//   --mode inference|training        default inference
//   --optimizer adam|sgd|momentum    training only; default adam
// (costmodel/training.h documents what a training step adds).
#ifndef AUTOPAR_TOOLS_CLI_MODE_FLAGS_H_
#define AUTOPAR_TOOLS_CLI_MODE_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/training.h"
#include "tools/cli/args.h"

namespace autopar::tools {

/// --mode, --optimizer.
std::vector<FlagSpec> ModeFlagSpecs();

/// The step the flags of ModeFlagSpecs() describe — what PrepareModel,
/// AnnotateCosts and CostModelFile take. An unknown value, or --optimizer
/// without --mode training, is an InvalidArgument naming the flag.
absl::StatusOr<costmodel::StepOptions> StepOptionsFromArgs(const ParsedArgs& args);

/// "inference", or "training (adam)": for reports.
std::string StepDescription(const costmodel::StepOptions& step);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_MODE_FLAGS_H_
