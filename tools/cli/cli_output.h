// How commands talk to the user: one error line on stderr with the exit code
// it maps to, and human-readable numbers.
#ifndef AUTOPAR_TOOLS_CLI_OUTPUT_H_
#define AUTOPAR_TOOLS_CLI_OUTPUT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace autopar::tools {

/// Prints "onnx-autopar: error: <message>" and returns ExitCodeFor(status).
int ReportError(const absl::Status& status);

/// Prints the usage error and a hint, returns kExitUsage.
int UsageError(absl::string_view message, absl::string_view usage);

/// "44.6 MiB", "512 B".
std::string FormatBytes(int64_t bytes);

/// "11,689,512".
std::string FormatCount(int64_t count);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_OUTPUT_H_
