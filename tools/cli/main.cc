// onnx-autopar: the command-line entry point. Dispatches subcommands; every
// flag is parsed in tools/, never in the libraries.
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "tools/cli/cli_output.h"
#include "tools/cli/commands/compare_command.h"
#include "tools/cli/commands/cost_command.h"
#include "tools/cli/commands/info_command.h"
#include "tools/cli/commands/place_command.h"
#include "tools/cli/commands/size_command.h"
#include "tools/cli/commands/split_command.h"
#include "tools/cli/exit_codes.h"

namespace {

constexpr char kVersion[] = "0.1.0";

constexpr char kUsage[] =
    R"(usage: onnx-autopar MODEL.onnx -o OUT_DIR [--devices N | --cluster ...] [--stages]
       onnx-autopar COMMAND [ARGS...]

Prepares ONNX models for model-parallel execution across several devices.
The first form splits MODEL.onnx into one model per device joined by
Send/Recv, with plan.json (`onnx-autopar split --help` lists its flags).

commands:
  split MODEL.onnx    the first form, spelled out
  info MODEL.onnx     what the model contains: nodes, operators, parameters, shapes
  cost MODEL.onnx     per-node MACs, FLOPs, bytes and predicted time on a device
  place MODEL.onnx    search a device placement and report its simulated step
  compare MODEL.onnx  run several placement algorithms and compare their plans
  size MODEL.onnx     how many devices it needs: plans 1..N devices, the fewest that fit or meet a target

For scripts: --json prints one JSON summary on stdout, --dot FILE writes the
placed graph as GraphViz, --quiet turns off the progress bars (drawn only when
stderr is a terminal).

Run `onnx-autopar COMMAND --help` for a command's flags and examples.
Exit codes: 0 ok, 1 usage error, 2 unusable input, 3 infeasible, 4 internal error.
)";

int Dispatch(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? autopar::tools::kExitUsage : autopar::tools::kExitOk;
  }
  if (args[0] == "--version") {
    std::printf("onnx-autopar %s\n", kVersion);
    return autopar::tools::kExitOk;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "info") return autopar::tools::RunInfoCommand(rest);
  if (args[0] == "cost") return autopar::tools::RunCostCommand(rest);
  if (args[0] == "place") return autopar::tools::RunPlaceCommand(rest);
  if (args[0] == "compare") return autopar::tools::RunCompareCommand(rest);
  if (args[0] == "size") return autopar::tools::RunSizeCommand(rest);
  if (args[0] == "split") return autopar::tools::RunSplitCommand(rest);
  // `onnx-autopar MODEL.onnx -o OUT ...`: anything that is not a command but
  // looks like a file or a flag goes to the main command.
  if (args[0].starts_with("-") || args[0].ends_with(".onnx") || std::filesystem::exists(args[0])) {
    return autopar::tools::RunSplitCommand(args);
  }
  return autopar::tools::UsageError("unknown command '" + args[0] + "'", kUsage);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Every expected failure is a Status by now; this is the last line of defence
  // against a library throwing (bad_alloc on a hostile model, say).
  try {
    return Dispatch(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onnx-autopar: error: internal error: %s\n", e.what());
    return autopar::tools::kExitInternal;
  }
}
