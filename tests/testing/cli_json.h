// Running onnx-autopar (or any program) and reading its JSON, as the CLI
// tests do with `--format json` and plan.json: one copy of "it succeeded,
// and this is what it printed".
#ifndef AUTOPAR_TESTS_TESTING_CLI_JSON_H_
#define AUTOPAR_TESTS_TESTING_CLI_JSON_H_

#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace autopar::testing {

/// `r`'s stdout as JSON, expecting exit code 0 (a test failure with its
/// stderr otherwise); discarded (is_discarded()) when it is not JSON.
inline nlohmann::json StdoutJson(const CommandResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  return nlohmann::json::parse(r.stdout_text, nullptr, /*allow_exceptions=*/false);
}

/// Runs `argv` (see RunCommand) and returns StdoutJson of it.
inline nlohmann::json RunJson(const std::vector<std::string>& argv, int timeout_seconds = 0) {
  return StdoutJson(RunCommand(argv, timeout_seconds));
}

/// The JSON file at `path` (plan.json); discarded when it is not JSON.
inline nlohmann::json ReadJsonFile(const std::filesystem::path& path) {
  return nlohmann::json::parse(ReadFile(path), nullptr, /*allow_exceptions=*/false);
}

}  // namespace autopar::testing

#endif  // AUTOPAR_TESTS_TESTING_CLI_JSON_H_
