// Runs a program as a child process and collects its exit status, output and
// peak memory — how the CLI tests see onnx-autopar the way a user does.
#ifndef AUTOPAR_TESTS_TESTING_RUN_COMMAND_H_
#define AUTOPAR_TESTS_TESTING_RUN_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

namespace autopar::testing {

struct CommandResult {
  /// The exit code, or -1 when the process died of a signal (a crash).
  int exit_code = -1;
  int signal = 0;
  /// True when the child ran past the timeout and was killed (signal SIGKILL).
  bool timed_out = false;
  std::string stdout_text;
  std::string stderr_text;
  /// Peak resident set size of the child, in bytes.
  int64_t peak_rss_bytes = 0;
};

/// Runs `argv` (argv[0] is the program path) with no stdin and waits for it;
/// with `timeout_seconds` > 0 a child still running after that long is killed,
/// so that a hang fails a test instead of stalling it.
CommandResult RunCommand(const std::vector<std::string>& argv, int timeout_seconds = 0);

}  // namespace autopar::testing

#endif  // AUTOPAR_TESTS_TESTING_RUN_COMMAND_H_
