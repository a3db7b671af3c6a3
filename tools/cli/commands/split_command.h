// The main command, `onnx-autopar MODEL.onnx -o OUT_DIR` (also spelled
// `onnx-autopar split ...`): load → shapes → costs → coarsen → place →
// simulate → rewrite → validate → write.
#ifndef AUTOPAR_TOOLS_CLI_COMMANDS_SPLIT_COMMAND_H_
#define AUTOPAR_TOOLS_CLI_COMMANDS_SPLIT_COMMAND_H_

#include <string>
#include <vector>

namespace autopar::tools {

/// Runs the main command on its arguments; returns the exit code.
int RunSplitCommand(const std::vector<std::string>& args);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_COMMANDS_SPLIT_COMMAND_H_
