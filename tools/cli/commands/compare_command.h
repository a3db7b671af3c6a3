// `onnx-autopar compare`: runs several placement algorithms on one model (or
// cost graph) and cluster, and sets side by side how the simulator judges
// their plans — step time, its ratio to the lower bound, speed-up over one
// device, the fullest device's peak memory over its capacity, whether the
// plan fits, cut edges, bytes sent and search time — with the best plan (the
// fastest that fits) marked. An algorithm that finds no plan gets a row that
// says why; the others still run.
#ifndef AUTOPAR_TOOLS_CLI_COMMANDS_COMPARE_COMMAND_H_
#define AUTOPAR_TOOLS_CLI_COMMANDS_COMPARE_COMMAND_H_

#include <string>
#include <vector>

namespace autopar::tools {

/// Exit codes: 0 when some algorithm found a plan that fits, 3 when none did,
/// 1 for bad flags, 2 for unusable input.
int RunCompareCommand(const std::vector<std::string>& args);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_COMMANDS_COMPARE_COMMAND_H_
