// `onnx-autopar place`: searches a placement and reports how the simulator
// judges it — per-device load and memory, cut edges, step time against the
// lower bound — without rewriting the model.
#ifndef AUTOPAR_TOOLS_CLI_COMMANDS_PLACE_COMMAND_H_
#define AUTOPAR_TOOLS_CLI_COMMANDS_PLACE_COMMAND_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "pipeline/planning.h"

namespace autopar::tools {

/// `place`'s JSON document (keys as the README documents): the placement is
/// keyed by node name for models, by node id for cost graphs.
nlohmann::ordered_json PlanJsonSummary(const pipeline::PlanningProblem& problem,
                                       const pipeline::Plan& plan);

/// Human-readable report of a plan (shared with the main command).
std::string PlanText(const pipeline::PlanningProblem& problem, const pipeline::Plan& plan);

int RunPlaceCommand(const std::vector<std::string>& args);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_COMMANDS_PLACE_COMMAND_H_
