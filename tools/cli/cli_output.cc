#include "tools/cli/cli_output.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/cli/exit_codes.h"

namespace autopar::tools {
namespace {

// One line, whatever the message holds.
std::string OneLine(absl::string_view message) {
  std::string line(message);
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return line;
}

}  // namespace

int ReportError(const absl::Status& status) {
  std::fprintf(stderr, "onnx-autopar: error: %s\n", OneLine(status.message()).c_str());
  return ExitCodeFor(status);
}

int UsageError(absl::string_view message, absl::string_view usage) {
  std::string first_line(usage.substr(0, usage.find('\n')));
  std::fprintf(stderr, "onnx-autopar: error: %s (%s)\n", OneLine(message).c_str(),
               first_line.c_str());
  return kExitUsage;
}

}  // namespace autopar::tools
