// `onnx-autopar place`: searches a placement and reports how the simulator
// judges it — per-device load and memory, cut edges, step time against the
// lower bound — without rewriting the model.
#ifndef AUTOPAR_TOOLS_CLI_COMMANDS_PLACE_COMMAND_H_
#define AUTOPAR_TOOLS_CLI_COMMANDS_PLACE_COMMAND_H_

#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "pipeline/planning.h"
#include "tools/cli/pipelined_plans.h"

namespace autopar::tools {

/// `place`'s JSON document (keys as the README documents): the placement is
/// keyed by node name for models, by node id for cost graphs. In training
/// mode it says how the step was judged ("step_judged": "fused" or
/// "pipeline") and, for a pipeline, `split` (tools/cli/pipelined_plans.h).
nlohmann::ordered_json PlanJsonSummary(const pipeline::PlanningProblem& problem,
                                       const pipeline::Plan& plan,
                                       const std::optional<SplitStepView>& split = std::nullopt);

/// Human-readable report of a plan (shared with the main command).
/// When the search's split lost to one device (pipeline/planning.h, Note [Do
/// not split]): one line saying that one device is predicted fastest, both
/// step times, and that splitting pays only for memory; empty otherwise.
std::string OneDeviceVerdict(const pipeline::PlanningProblem& problem, const pipeline::Plan& plan);

/// plan.json's and `place --format json`'s record of that verdict: null, or
/// the split's devices and step against the one device's.
nlohmann::ordered_json OneDeviceVerdictJson(const pipeline::PlanningProblem& problem,
                                            const pipeline::Plan& plan);

/// The micro-batch curve of --microbatches auto (pipeline/planning.h, Note
/// [Micro-batches auto]): the count chosen, and per count tried its time per
/// sample and peak memory per device.
std::string MicrobatchCurveText(const pipeline::MicrobatchChoice& choice);
nlohmann::ordered_json MicrobatchCurveJson(const pipeline::MicrobatchChoice& choice);

/// In training mode, a line says how the step was judged (TrainingStepLine,
/// for `training`), and another what `split` adds.
std::string PlanText(const pipeline::PlanningProblem& problem, const pipeline::Plan& plan,
                     const std::optional<PipelinedTraining>& training = std::nullopt,
                     const std::optional<SplitStepView>& split = std::nullopt);

int RunPlaceCommand(const std::vector<std::string>& args);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_COMMANDS_PLACE_COMMAND_H_
