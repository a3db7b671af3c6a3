// How commands talk to the user: one error line on stderr with the exit code
// it maps to (human-readable numbers come from tools/artifacts/human_numbers.h).
#ifndef AUTOPAR_TOOLS_CLI_CLI_OUTPUT_H_
#define AUTOPAR_TOOLS_CLI_CLI_OUTPUT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "tools/artifacts/human_numbers.h"

namespace autopar::tools {

/// Prints "onnx-autopar: error: <message>" and returns ExitCodeFor(status).
int ReportError(const absl::Status& status);

/// Prints the usage error and a hint, returns kExitUsage.
int UsageError(absl::string_view message, absl::string_view usage);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_CLI_OUTPUT_H_
