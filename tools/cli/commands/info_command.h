// `onnx-autopar info`: what a model contains — nodes, operators, opsets,
// parameters, inputs and outputs, and which dims are still unresolved.
#ifndef AUTOPAR_TOOLS_CLI_COMMANDS_INFO_COMMAND_H_
#define AUTOPAR_TOOLS_CLI_COMMANDS_INFO_COMMAND_H_

#include <string>
#include <vector>

#include "ir/graph.h"
#include "nlohmann/json.hpp"

namespace autopar::tools {

/// `info`'s JSON document for a graph (keys as the README documents).
nlohmann::ordered_json ModelInfoJson(const ir::Graph& graph);

/// Runs `onnx-autopar info ARGS...`; returns the exit code.
int RunInfoCommand(const std::vector<std::string>& args);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_COMMANDS_INFO_COMMAND_H_
