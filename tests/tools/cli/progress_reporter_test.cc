// The progress line: what it prints (a search's generations, a bar for a
// known total, a spinner for an unknown one), that it stays quiet when
// disabled, and that it ends its line.
#include "tools/cli/progress_reporter.h"

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

// A file standing in for stderr on a terminal; Text() is what was written.
class FakeTerminal {
 public:
  FakeTerminal() : file_(std::tmpfile()) {}
  ~FakeTerminal() {
    if (file_ != nullptr) std::fclose(file_);
  }
  FakeTerminal(const FakeTerminal&) = delete;
  FakeTerminal& operator=(const FakeTerminal&) = delete;

  std::FILE* file() const { return file_; }
  std::string Text() const {
    std::fflush(file_);
    std::rewind(file_);
    std::string text;
    for (int c = std::fgetc(file_); c != EOF; c = std::fgetc(file_)) text += static_cast<char>(c);
    return text;
  }

 private:
  std::FILE* file_;
};

search::Progress At(int64_t generation, double best_us, bool feasible, double elapsed_s) {
  return {.iteration = generation,
          .best_step_time_us = best_us,
          .feasible = feasible,
          .elapsed_s = elapsed_s};
}

TEST(ProgressReporterTest, RewritesOneLineAndEndsIt) {
  FakeTerminal terminal;
  ASSERT_NE(terminal.file(), nullptr);
  {
    ProgressReporter reporter(terminal.file(), /*enabled=*/true);
    auto callback = reporter.Callback();
    ASSERT_TRUE(callback);
    callback(At(0, 1500.25, false, 0.01));
    callback(At(1, 1200, true, 0.5));
  }
  const std::string text = terminal.Text();
  EXPECT_THAT(text, StartsWith("\rgeneration 0  best 1500.2 us  over memory  elapsed 0.0s"));
  EXPECT_THAT(text, HasSubstr("\rgeneration 1  best 1200.0 us  feasible  elapsed 0.5s\x1b[K"));
  EXPECT_THAT(text, EndsWith("\n"));
  EXPECT_EQ(text.find('\n'), text.size() - 1);  // one line, rewritten
}

TEST(ProgressReporterTest, ThrottlesButShowsTheLastProgress) {
  FakeTerminal terminal;
  ASSERT_NE(terminal.file(), nullptr);
  ProgressReporter reporter(terminal.file(), /*enabled=*/true);
  auto callback = reporter.Callback();
  for (int g = 0; g < 100; ++g) callback(At(g, 1000 - g, true, g * 0.001));
  EXPECT_THAT(terminal.Text(), Not(HasSubstr("generation 99 ")));
  reporter.Finish();
  reporter.Finish();
  const std::string text = terminal.Text();
  EXPECT_THAT(text, HasSubstr("generation 99  best 901.0 us"));
  EXPECT_EQ(text.find('\n'), text.size() - 1);
}

TEST(ProgressReporterTest, DisabledPrintsNothing) {
  FakeTerminal terminal;
  ASSERT_NE(terminal.file(), nullptr);
  {
    ProgressReporter reporter(terminal.file(), /*enabled=*/false);
    EXPECT_FALSE(reporter.Callback());
  }
  EXPECT_EQ(terminal.Text(), "");
  // --quiet turns it off whatever stderr is.
  ProgressReporter quiet(/*quiet=*/true);
  EXPECT_FALSE(quiet.Callback());
}

TEST(ProgressReporterTest, ATimeBudgetIsDrawnAsABar) {
  FakeTerminal terminal;
  ASSERT_NE(terminal.file(), nullptr);
  {
    ProgressReporter reporter(terminal.file(), /*enabled=*/true);
    reporter.Callback(/*time_budget_s=*/10)(At(3, 900, true, 5));
  }
  EXPECT_EQ(terminal.Text(),
            "\rgeneration 3  best 900.0 us  feasible  elapsed 5.0s of 10.0s "
            "[############------------]\x1b[K\n");
}

TEST(ProgressReporterTest, TaskWithATotalDrawsABar) {
  FakeTerminal terminal;
  ASSERT_NE(terminal.file(), nullptr);
  {
    ProgressReporter reporter(terminal.file(), /*enabled=*/true);
    TaskCallback loading = reporter.Task("loading model", ProgressUnit::kBytes);
    ASSERT_TRUE(loading);
    loading(0, 4096);
    loading(4096, 4096);  // the end always shows, however soon
    loading(4096, 4096);  // nothing new: not drawn again
  }
  const std::string text = terminal.Text();
  EXPECT_THAT(text, StartsWith("\rloading model  [------------------------]   0%  0 B of 4.0 KiB"));
  EXPECT_THAT(text,
              HasSubstr("\rloading model  [########################] 100%  4.0 KiB of 4.0 KiB"));
  EXPECT_EQ(text.find("100%"), text.rfind("100%"));
  EXPECT_THAT(text, EndsWith("\n"));
  EXPECT_EQ(text.find('\n'), text.size() - 1);
}

TEST(ProgressReporterTest, TaskWithoutATotalSpinsAndCounts) {
  FakeTerminal terminal;
  ASSERT_NE(terminal.file(), nullptr);
  ProgressReporter reporter(terminal.file(), /*enabled=*/true);
  TaskCallback counting = reporter.Task("coarsening", ProgressUnit::kCount);
  counting(12000, 0);
  reporter.Finish();
  const std::string text = terminal.Text();
  EXPECT_EQ(text, "\rcoarsening  |  12,000\x1b[K\n");
}

TEST(ProgressReporterTest, EachTaskGetsItsOwnLine) {
  FakeTerminal terminal;
  ASSERT_NE(terminal.file(), nullptr);
  {
    ProgressReporter reporter(terminal.file(), /*enabled=*/true);
    TaskCallback first = reporter.Task("loading model", ProgressUnit::kBytes);
    TaskCallback second = reporter.Task("coarsening", ProgressUnit::kCount);
    first(10, 10);
    second(3, 3);
  }
  const std::string text = terminal.Text();
  EXPECT_THAT(text, HasSubstr("10 B of 10 B\x1b[K\n\rcoarsening  [#"));
  EXPECT_THAT(text, EndsWith("3 of 3\x1b[K\n"));
}

TEST(ProgressReporterTest, DisabledTasksPrintNothing) {
  FakeTerminal terminal;
  ASSERT_NE(terminal.file(), nullptr);
  {
    ProgressReporter reporter(terminal.file(), /*enabled=*/false);
    EXPECT_FALSE(reporter.Task("loading model", ProgressUnit::kBytes));
    EXPECT_FALSE(reporter.enabled());
  }
  EXPECT_EQ(terminal.Text(), "");
}

TEST(ProgressReporterTest, BarsAndEtas) {
  EXPECT_EQ(ProgressBar(0, 4), "[----]");
  EXPECT_EQ(ProgressBar(0.5, 4), "[##--]");
  EXPECT_EQ(ProgressBar(2, 4), "[####]");
  EXPECT_EQ(ProgressBar(-1, 4), "[----]");
  EXPECT_EQ(FormatEta(0.2), "1s");
  EXPECT_EQ(FormatEta(65), "1m05s");
  EXPECT_EQ(FormatEta(7380), "2h03m");
}

}  // namespace
}  // namespace autopar::tools
