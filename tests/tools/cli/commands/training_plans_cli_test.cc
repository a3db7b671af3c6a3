// `compare` and `place` with --mode training: with --loss, every plan is
// judged as the split the main command writes (pipeline/split.h, Note
// [Training plans]), so a row's step and peak memory per device are plan.json's
// "training"."pipeline"."predicted" for the same placement, and a --placement
// file is judged by the pipelined estimate on the main command and `place`
// alike; without --loss the step is the fused one and the output says so;
// training flags out of place are one error line.
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx/onnx_pb.h"
#include "onnx_io/text_format.h"
#include "tests/testing/cli_expectations.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/cli/commands/training_mlp.h"

namespace autopar {
namespace {

using testing::CommandResult;
using testing::ExpectCleanError;
using ::testing::HasSubstr;
using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

constexpr int kExitUsage = 1;

class TrainingPlansCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<onnx::ModelProto> model = onnx_io::ParseModelText(testing::kTrainingMlp);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = dir_.Write("mlp.onnx", model->SerializeAsString()).string();
  }

  // `command` (compare, place, or "" for the main command) on the MLP over
  // two devices, with `flags`.
  CommandResult Run(const std::string& command, const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {AUTOPAR_CLI};
    if (!command.empty()) argv.push_back(command);
    argv.push_back(model_);
    argv.insert(argv.end(), {"--devices", "2", "--quiet", "--max-generations", "3"});
    argv.insert(argv.end(), flags.begin(), flags.end());
    return RunCommand(argv);
  }

  // The main command's plan.json for `flags` (written to a fresh folder).
  nlohmann::json MainPlan(const std::vector<std::string>& flags) {
    const std::string out = (dir_ / ("out" + std::to_string(runs_++))).string();
    std::vector<std::string> all = {"-o", out};
    all.insert(all.end(), flags.begin(), flags.end());
    CommandResult r = Run("", all);
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    return nlohmann::json::parse(ReadFile(std::filesystem::path(out) / "plan.json"));
  }

  std::string PlacementFile(const std::vector<int>& devices) {
    static constexpr const char* kNodes[] = {"MatMul_0", "Add_1", "Relu_2", "MatMul_3"};
    nlohmann::json placement = nlohmann::json::object();
    for (size_t i = 0; i < devices.size(); ++i) placement[kNodes[i]] = devices[i];
    return dir_.Write("placement.json", placement.dump()).string();
  }

  TempDir dir_;
  std::string model_;
  int runs_ = 0;
};

const std::vector<std::string> kTraining = {
    "--mode", "training", "--loss", "mse:logits", "--optimizer", "sgd", "--microbatches", "4"};

std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Each algorithm's row is the main command's split of that algorithm's plan:
// the same step and the same peak memory and stashes on each device the
// split uses.
TEST_F(TrainingPlansCliTest, CompareRowsAreTheMainCommandsPipelinedPredictions) {
  for (const std::string schedule : {"1f1b", "gpipe"}) {
    const std::vector<std::string> flags = With(kTraining, {"--schedule", schedule});
    CommandResult r = Run("compare", With(flags, {"--format", "json"}));
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    const nlohmann::json report = nlohmann::json::parse(r.stdout_text);
    EXPECT_EQ(report["step_judged"], "pipeline");
    EXPECT_EQ(report["schedule"], schedule);
    int rows = 0;
    for (const nlohmann::json& row : report["results"]) {
      if (row["status"] != "ok" || row["algorithm"] == "single-all-threads") continue;
      const std::string algorithm = row["algorithm"];
      SCOPED_TRACE(schedule + " " + algorithm);
      // compare shows each algorithm's own plan, as --allow-slower-split keeps it.
      const nlohmann::json plan =
          MainPlan(With(flags, {"--algo", algorithm, "--allow-slower-split"}));
      const nlohmann::json& predicted = plan["training"]["pipeline"]["predicted"];
      EXPECT_EQ(row["step_time_us"].get<double>(), predicted["step_us"].get<double>());
      const nlohmann::json& devices = plan["training"]["pipeline"]["devices"];
      ASSERT_EQ(devices.size(), predicted["peak_memory_bytes"].size());
      for (size_t i = 0; i < devices.size(); ++i) {
        EXPECT_EQ(row["device_peak_memory_bytes"][devices[i].get<int>()],
                  predicted["peak_memory_bytes"][i]);
        EXPECT_EQ(row["pipeline"]["max_stashes"][devices[i].get<int>()],
                  predicted["max_stashes"][i]);
      }
      // The search's estimate is what the main command's plan was judged by.
      EXPECT_EQ(row["pipeline"]["estimated_step_us"].get<double>(),
                plan["predicted"]["step_time_us"].get<double>());
      EXPECT_EQ(row["pipeline"]["schedule"], schedule);
      ++rows;
    }
    EXPECT_GE(rows, 5);
  }
}

TEST_F(TrainingPlansCliTest, CompareTableSaysHowTheStepIsJudged) {
  const std::string report = (dir_ / "compare.html").string();
  CommandResult pipelined =
      Run("compare", With(kTraining, {"--algos", "sgp,round-robin", "--report", report}));
  ASSERT_EQ(pipelined.exit_code, 0) << pipelined.stderr_text;
  EXPECT_THAT(pipelined.stdout_text,
              HasSubstr("training step judged as the main command's split: 1f1b, 4 micro-batches"));
  // The report draws each row's split run by run, as the main command's does.
  const std::string html = ReadFile(report);
  size_t sections = 0;
  for (size_t at = html.find("<h2>Pipeline step</h2>"); at != std::string::npos;
       at = html.find("<h2>Pipeline step</h2>", at + 1))
    ++sections;
  EXPECT_EQ(sections, 2u);
  CommandResult fused = Run("compare", {"--mode", "training", "--algos", "sgp,round-robin"});
  ASSERT_EQ(fused.exit_code, 0) << fused.stderr_text;
  EXPECT_THAT(fused.stdout_text, HasSubstr("training step judged fused"));
  CommandResult json = Run("compare", {"--mode", "training", "--algos", "sgp", "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.stderr_text;
  EXPECT_EQ(nlohmann::json::parse(json.stdout_text)["step_judged"], "fused");
}

// A given placement is judged as the pipeline on `place` and the main command
// alike: place's step is the main command's split, and both report the
// pipelined estimate, not the fused step, as the plan's judgement.
TEST_F(TrainingPlansCliTest, GivenPlacementIsJudgedAsThePipeline) {
  const std::string placement = PlacementFile({0, 0, 1, 1});
  const std::vector<std::string> flags = With(kTraining, {"--placement", placement});
  CommandResult r = Run("place", With(flags, {"--format", "json"}));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json placed = nlohmann::json::parse(r.stdout_text);
  EXPECT_EQ(placed["algorithm"], "given");
  EXPECT_EQ(placed["step_judged"], "pipeline");
  const nlohmann::json plan = MainPlan(flags);
  EXPECT_EQ(plan["algorithm"], "given");
  const nlohmann::json& predicted = plan["training"]["pipeline"]["predicted"];
  EXPECT_EQ(placed["step_time_us"].get<double>(), predicted["step_us"].get<double>());
  EXPECT_EQ(placed["peak_memory_bytes"][0], predicted["peak_memory_bytes"][0]);
  EXPECT_EQ(placed["peak_memory_bytes"][1], predicted["peak_memory_bytes"][1]);
  // plan.json's predicted step is the judge's: the pipelined estimate.
  const double estimate = placed["pipeline"]["estimated_step_us"];
  EXPECT_EQ(plan["predicted"]["step_time_us"].get<double>(), estimate);
  EXPECT_NE(estimate, placed["pipeline"]["fused_step_us"].get<double>());
  EXPECT_EQ(placed["pipeline"]["forward_stages"], 2);
  EXPECT_EQ(placed["pipeline"]["backward_stages"], 2);

  // Text: how it was judged, on one line each.
  CommandResult text = Run("place", flags);
  ASSERT_EQ(text.exit_code, 0) << text.stderr_text;
  EXPECT_THAT(text.stdout_text, HasSubstr("judged        training step judged as the main "
                                          "command's split: 1f1b, 4 micro-batches"));
  EXPECT_THAT(text.stdout_text, HasSubstr("pipeline      2 forward and 2 backward stages"));
}

TEST_F(TrainingPlansCliTest, PlaceWithoutLossSaysTheStepIsFused) {
  CommandResult r = Run("place", {"--mode", "training"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("judged        training step judged fused"));
  CommandResult json = Run("place", {"--mode", "training", "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.stderr_text;
  const nlohmann::json placed = nlohmann::json::parse(json.stdout_text);
  EXPECT_EQ(placed["step_judged"], "fused");
  EXPECT_TRUE(placed["pipeline"].is_null());
}

TEST_F(TrainingPlansCliTest, TrainingFlagsOutOfPlaceAreOneErrorLine) {
  for (const std::string command : {"compare", "place"}) {
    SCOPED_TRACE(command);
    ExpectCleanError(Run(command, {"--loss", "mse:logits"}), kExitUsage,
                     "--loss applies to --mode training only");
    ExpectCleanError(Run(command, {"--schedule", "gpipe"}), kExitUsage,
                     "--schedule applies to --mode training only");
    ExpectCleanError(Run(command, {"--mode", "training", "--schedule", "gpipe"}), kExitUsage,
                     "--schedule needs --loss");
    ExpectCleanError(Run(command, With(kTraining, {"--schedule", "zero-bubble"})), kExitUsage,
                     "--schedule must be gpipe or 1f1b");
    ExpectCleanError(Run(command, {"--mode", "training", "--loss", "mse:nothing"}), 2, "nothing");
  }
  ExpectCleanError(Run("place", With(kTraining, {"--placement", PlacementFile({0, 0, 1, 1}),
                                                 "--microbatches", "auto"})),
                   kExitUsage, "--microbatches auto");
}

}  // namespace
}  // namespace autopar
