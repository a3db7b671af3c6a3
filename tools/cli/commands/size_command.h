// `onnx-autopar size`: capacity planning. Plans the model on 1..N devices of
// one kind (pipeline/capacity.h) and answers how many it needs: the smallest
// count that fits the devices' memory, or that also reaches a step time or a
// throughput.
#ifndef AUTOPAR_TOOLS_CLI_COMMANDS_SIZE_COMMAND_H_
#define AUTOPAR_TOOLS_CLI_COMMANDS_SIZE_COMMAND_H_

#include <string>
#include <vector>

namespace autopar::tools {

/// Exit codes: 0 when some count meets the target (or fits), 3 when none
/// does, 1 for bad flags, 2 for unusable input.
int RunSizeCommand(const std::vector<std::string>& args);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_COMMANDS_SIZE_COMMAND_H_
