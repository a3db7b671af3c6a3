// The progress line: what it prints, that it stays quiet when disabled, and
// that it ends its line.
#include "tools/progress_reporter.h"

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace autopar::tools {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Everything written to `file` so far.
std::string Contents(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  for (int c = std::fgetc(file); c != EOF; c = std::fgetc(file)) text += static_cast<char>(c);
  return text;
}

search::Progress At(int64_t generation, double best_us, bool feasible, double elapsed_s) {
  return {.iteration = generation,
          .best_step_time_us = best_us,
          .feasible = feasible,
          .elapsed_s = elapsed_s};
}

TEST(ProgressReporterTest, RewritesOneLineAndEndsIt) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressReporter reporter(file, /*enabled=*/true);
    auto callback = reporter.Callback();
    ASSERT_TRUE(callback);
    callback(At(0, 1500.25, false, 0.01));
    callback(At(1, 1200, true, 0.5));
  }
  const std::string text = Contents(file);
  std::fclose(file);
  EXPECT_THAT(text, StartsWith("\rgeneration 0  best 1500.2 us  over memory  elapsed 0.0s"));
  EXPECT_THAT(text, HasSubstr("\rgeneration 1  best 1200.0 us  feasible  elapsed 0.5s\x1b[K"));
  EXPECT_THAT(text, EndsWith("\n"));
  EXPECT_EQ(text.find('\n'), text.size() - 1);  // one line, rewritten
}

TEST(ProgressReporterTest, ThrottlesButShowsTheLastProgress) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  ProgressReporter reporter(file, /*enabled=*/true);
  auto callback = reporter.Callback();
  for (int g = 0; g < 100; ++g) callback(At(g, 1000 - g, true, g * 0.001));
  EXPECT_THAT(Contents(file), Not(HasSubstr("generation 99 ")));
  reporter.Finish();
  reporter.Finish();
  const std::string text = Contents(file);
  std::fclose(file);
  EXPECT_THAT(text, HasSubstr("generation 99  best 901.0 us"));
  EXPECT_EQ(text.find('\n'), text.size() - 1);
}

TEST(ProgressReporterTest, DisabledPrintsNothing) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressReporter reporter(file, /*enabled=*/false);
    EXPECT_FALSE(reporter.Callback());
  }
  EXPECT_EQ(Contents(file), "");
  std::fclose(file);
  // --quiet turns it off whatever stderr is.
  ProgressReporter quiet(/*quiet=*/true);
  EXPECT_FALSE(quiet.Callback());
}

}  // namespace
}  // namespace autopar::tools
