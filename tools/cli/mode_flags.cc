#include "tools/cli/mode_flags.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace autopar::tools {

std::vector<FlagSpec> ModeFlagSpecs() { return {{"mode", true}, {"optimizer", true}}; }

absl::StatusOr<costmodel::StepOptions> StepOptionsFromArgs(const ParsedArgs& args) {
  costmodel::StepOptions step;
  if (std::optional<std::string> mode = args.Get("mode")) {
    std::optional<costmodel::StepMode> parsed = costmodel::StepModeFromName(*mode);
    if (!parsed) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mode must be inference or training, not '", *mode, "'"));
    }
    step.mode = *parsed;
  }
  if (std::optional<std::string> optimizer = args.Get("optimizer")) {
    if (step.mode != costmodel::StepMode::kTraining) {
      return absl::InvalidArgumentError("--optimizer applies to --mode training only");
    }
    std::optional<costmodel::Optimizer> parsed = costmodel::OptimizerFromName(*optimizer);
    if (!parsed) {
      return absl::InvalidArgumentError(
          absl::StrCat("--optimizer must be adam, sgd or momentum, not '", *optimizer, "'"));
    }
    step.optimizer = *parsed;
  }
  return step;
}

std::string StepDescription(const costmodel::StepOptions& step) {
  if (step.mode == costmodel::StepMode::kInference) return "inference";
  return absl::StrCat("training (", std::string(costmodel::OptimizerName(step.optimizer)), ")");
}

}  // namespace autopar::tools
