// What every CLI test expects of a failure: one line on stderr, prefixed
// "onnx-autopar: error: ", the documented exit code, and no crash.
#ifndef AUTOPAR_TESTS_TESTING_CLI_EXPECTATIONS_H_
#define AUTOPAR_TESTS_TESTING_CLI_EXPECTATIONS_H_

#include <algorithm>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/run_command.h"

namespace autopar::testing {

/// `r` failed cleanly with `exit_code` and a message containing `needle`.
inline void ExpectCleanError(const CommandResult& r, int exit_code, const std::string& needle) {
  EXPECT_EQ(r.signal, 0) << "crashed: " << r.stderr_text;
  EXPECT_EQ(r.exit_code, exit_code) << r.stderr_text;
  EXPECT_THAT(r.stderr_text, ::testing::StartsWith("onnx-autopar: error: "));
  EXPECT_EQ(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n'), 1) << r.stderr_text;
  EXPECT_THAT(r.stderr_text, ::testing::HasSubstr(needle));
}

}  // namespace autopar::testing

#endif  // AUTOPAR_TESTS_TESTING_CLI_EXPECTATIONS_H_
