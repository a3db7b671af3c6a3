// Determinism of the main command: the same model,
// options and seed give a byte-identical output folder — device models and
// their external data, stages, plan.json and report.html — across runs and
// across --threads values. SGP is one-shot; TGA is reproducible when bounded
// by --max-generations (not by the wall-clock --time-budget). The measured
// search time, the one run-dependent number, is written only with --timings.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace autopar {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

// A real CNN with external weights (> 40 MB of .data), split into stages.
constexpr char kModel[] = "resnet18";

// Every regular file under `dir`, by relative path, with its bytes.
std::map<std::string, std::string> Files(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = ReadFile(e.path());
  }
  return files;
}

class DeterminismTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = std::string(AUTOPAR_MODELS_DIR) + "/" + kModel + ".onnx";
    ASSERT_TRUE(fs::exists(model_)) << model_ << " missing: the exported_models fixture writes it";
  }

  // Splits the model into `out` on 4 devices with 4 micro-batches (so that
  // the plan really spreads), with stages and the report.
  fs::path Split(const std::string& out, const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {AUTOPAR_CLI,
                                     model_,
                                     "-o",
                                     (dir_ / out).string(),
                                     "--devices",
                                     "4",
                                     "--microbatches",
                                     "4",
                                     "--stages",
                                     "--seed",
                                     "7",
                                     "--quiet"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    return dir_ / out;
  }

  // Every run's folder holds the same files, byte for byte, as the first's.
  void ExpectIdentical(const std::vector<fs::path>& runs) {
    const std::map<std::string, std::string> first = Files(runs[0]);
    ASSERT_TRUE(first.contains("plan.json"));
    ASSERT_TRUE(first.contains("report.html"));
    ASSERT_TRUE(first.contains("stages/s0.onnx"));
    ASSERT_TRUE(first.contains("device_0.onnx"));
    for (size_t i = 1; i < runs.size(); ++i) {
      const std::map<std::string, std::string> other = Files(runs[i]);
      std::vector<std::string> names, other_names;
      for (const auto& [name, bytes] : first) names.push_back(name);
      for (const auto& [name, bytes] : other) other_names.push_back(name);
      ASSERT_EQ(names, other_names) << runs[i];
      for (const auto& [name, bytes] : first) {
        // Not EXPECT_EQ on the bytes: a difference in 40 MB would flood the log.
        EXPECT_TRUE(bytes == other.at(name)) << name << " differs in " << runs[i];
      }
    }
    std::printf("%zu runs, %zu files each, identical\n", runs.size(), first.size());
  }

  TempDir dir_;
  std::string model_;
};

TEST_F(DeterminismTest, SgpGivesTheSameFolderEveryRun) {
  ExpectIdentical({Split("sgp_a", {"--threads", "1"}), Split("sgp_b", {"--threads", "1"}),
                   Split("sgp_c", {"--threads", "4"})});
}

TEST_F(DeterminismTest, TgaBoundedByGenerationsGivesTheSameFolderWhateverTheThreads) {
  const std::vector<std::string> tga = {"--algo", "tga", "--max-generations", "5"};
  std::vector<fs::path> runs;
  for (const char* threads : {"1", "4"}) {
    for (const char* run : {"a", "b"}) {
      std::vector<std::string> flags = tga;
      flags.insert(flags.end(), {"--threads", threads});
      runs.push_back(Split(std::string("tga_") + threads + run, flags));
    }
  }
  ExpectIdentical(runs);
  // The report draws the five generations.
  const std::string html = ReadFile(runs[0] / "report.html");
  EXPECT_THAT(html, HasSubstr("<h2>Convergence</h2>"));
  EXPECT_THAT(html, HasSubstr("<tr><th class=\"l\">generations</th><td class=\"l\">5</td>"));
}

TEST_F(DeterminismTest, TimingsAreWrittenOnlyWhenAskedFor) {
  const fs::path plain = Split("plain", {});
  const fs::path timed = Split("timed", {"--timings"});
  const nlohmann::json plain_plan = nlohmann::json::parse(ReadFile(plain / "plan.json"));
  nlohmann::json timed_plan = nlohmann::json::parse(ReadFile(timed / "plan.json"));
  EXPECT_FALSE(plain_plan.contains("search_time_ms"));
  ASSERT_TRUE(timed_plan.contains("search_time_ms"));
  EXPECT_GE(timed_plan["search_time_ms"].get<double>(), 0);
  EXPECT_THAT(ReadFile(plain / "report.html"), Not(HasSubstr("search time")));
  EXPECT_THAT(ReadFile(timed / "report.html"), HasSubstr("<th class=\"l\">search time</th>"));
  // Otherwise the plans agree.
  timed_plan.erase("search_time_ms");
  EXPECT_EQ(plain_plan, timed_plan);
}

}  // namespace
}  // namespace autopar
