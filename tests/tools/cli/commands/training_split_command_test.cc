// The main command with --mode training over several devices: the split step
// (forward and backward stages, one update model per device) and plan.json's
// "training"."pipeline", as the runner reads it; report.html's "Pipeline step"
// section drawing that step; one clear error line and no output folder for
// pipeline flags that do not fit.
#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
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

namespace fs = std::filesystem;
using testing::CommandResult;
using ::testing::ElementsAre;
using testing::ExpectCleanError;
using ::testing::HasSubstr;
using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

constexpr int kExitUsage = 1;

constexpr const char* kMlp = testing::kTrainingMlp;

class TrainingSplitCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<onnx::ModelProto> model = onnx_io::ParseModelText(kMlp);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = dir_.Write("mlp.onnx", model->SerializeAsString()).string();
  }

  // The MLP's nodes on these devices, in node order.
  std::string PlacementFile(const std::vector<int>& devices) {
    static constexpr const char* kNodes[] = {"MatMul_0", "Add_1", "Relu_2", "MatMul_3"};
    nlohmann::json placement = nlohmann::json::object();
    for (size_t i = 0; i < devices.size(); ++i) placement[kNodes[i]] = devices[i];
    return dir_.Write("placement.json", placement.dump()).string();
  }

  CommandResult Train(const std::string& out, std::vector<std::string> flags) {
    std::vector<std::string> argv = {AUTOPAR_CLI, model_,      "-o",     (dir_ / out).string(),
                                     "--devices", "2",         "--mode", "training",
                                     "--loss",    "mse:logits"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return RunCommand(argv);
  }

  nlohmann::json Plan(const std::string& out) {
    return nlohmann::json::parse(ReadFile(dir_ / out / "plan.json"));
  }

  TempDir dir_;
  std::string model_;
};

// What every split step must satisfy, whatever the placement: stages in a
// runnable order, each weight's gradient made by one stage on the weight's
// device, and an order that runs every (stage, micro-batch) once on its device.
void ExpectConsistentPipeline(const nlohmann::json& training, const fs::path& out, int m) {
  const nlohmann::json& p = training["pipeline"];
  ASSERT_TRUE(p.is_object());
  EXPECT_EQ(p["microbatches"], m);
  std::set<std::pair<int, int>> expected_runs;
  std::map<std::string, int> made_by;  // tensor → stage
  for (const nlohmann::json& s : p["stages"]) {
    const int id = s["id"];
    EXPECT_TRUE(fs::exists(out / s["file"].get<std::string>())) << s["file"];
    if (s["kind"] == "update") {
      EXPECT_FALSE(s["per_microbatch"].get<bool>());
      continue;
    }
    EXPECT_TRUE(s["per_microbatch"].get<bool>());
    for (const nlohmann::json& a : s["after"]) EXPECT_LT(a.get<int>(), id);
    for (const nlohmann::json& o : s["outputs"]) made_by[o] = id;
    for (int k = 0; k < m; ++k) expected_runs.insert({id, k});
  }
  for (const nlohmann::json& w : training["weights"]) {
    ASSERT_TRUE(made_by.contains(w["gradient"])) << w["name"];
    EXPECT_EQ(p["stages"][made_by[w["gradient"]]]["device"], w["device"]) << w["name"];
  }
  std::set<std::pair<int, int>> runs;
  for (const nlohmann::json& d : p["order"]) {
    for (const nlohmann::json& run : d["runs"]) {
      const int stage = run[0];
      EXPECT_EQ(p["stages"][stage]["device"], d["device"]);
      EXPECT_TRUE(runs.insert({stage, run[1].get<int>()}).second) << "run listed twice";
    }
  }
  EXPECT_EQ(runs, expected_runs);
}

TEST_F(TrainingSplitCommandTest, WritesForwardBackwardAndUpdateStagesPerDevice) {
  const std::string placement = PlacementFile({0, 0, 1, 1});
  CommandResult r = Train("out", {"--placement", placement, "--microbatches", "4", "--optimizer",
                                  "sgd", "--schedule", "gpipe"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json plan = Plan("out");
  const nlohmann::json& t = plan["training"];
  ExpectConsistentPipeline(t, dir_ / "out", 4);
  const nlohmann::json& p = t["pipeline"];
  EXPECT_EQ(p["schedule"], "gpipe");
  EXPECT_EQ(p["devices"], nlohmann::json({0, 1}));
  // Forward on device 0, then 1 (with the loss); backward on 1, then 0.
  std::vector<std::pair<std::string, int>> kinds;
  for (const nlohmann::json& s : p["stages"]) kinds.emplace_back(s["kind"], s["device"]);
  EXPECT_THAT(kinds, ElementsAre(std::pair<std::string, int>{"forward", 0},
                                 std::pair<std::string, int>{"forward", 1},
                                 std::pair<std::string, int>{"backward", 1},
                                 std::pair<std::string, int>{"backward", 0},
                                 std::pair<std::string, int>{"update", 0},
                                 std::pair<std::string, int>{"update", 1}));
  EXPECT_THAT(p["stages"][4]["weights"], ElementsAre("w1", "b1"));
  EXPECT_THAT(p["stages"][5]["weights"], ElementsAre("w2"));
  // The loss comes out of the forward stage holding the last layer.
  EXPECT_THAT(p["stages"][1]["outputs"], ::testing::Contains(t["loss"]["output"]));
  // GPipe: device 0 runs every forward before any backward and so holds the
  // stashes of all 4 micro-batches.
  const nlohmann::json& d0 = p["order"][0]["runs"];
  for (int k = 0; k < 4; ++k) EXPECT_EQ(d0[k][0], 0) << k;
  EXPECT_EQ(p["predicted"]["max_stashes"][0], 4);
  EXPECT_THAT(r.stdout_text, HasSubstr("gpipe, 4 micro-batches, 2 devices"));
  for (const char* file : {"step/init.onnx", "step/gradient.onnx", "step/update.onnx",
                           "step/update_d0.onnx", "step/update_d1.onnx"})
    EXPECT_TRUE(fs::exists(dir_ / "out" / file)) << file;
}

// 1F1B holds at most S - i micro-batches on device i: 2 on the first of two.
TEST_F(TrainingSplitCommandTest, OneForwardOneBackwardHoldsFewerStashes) {
  const std::string placement = PlacementFile({0, 0, 1, 1});
  CommandResult r = Train("out", {"--placement", placement, "--microbatches", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json p = Plan("out")["training"]["pipeline"];
  EXPECT_EQ(p["schedule"], "1f1b");
  EXPECT_EQ(p["predicted"]["max_stashes"], nlohmann::json({2, 1}));
  // Device 0: two forwards, then backward and forward alternate.
  std::vector<int> stages;
  for (const nlohmann::json& run : p["order"][0]["runs"]) stages.push_back(run[0]);
  EXPECT_THAT(stages, ElementsAre(0, 0, 3, 0, 3, 0, 3, 3));
}

// A placement that comes back to a device (A, B, A, B) still gives a runnable
// split: more stages, each backward one on its forward nodes' device.
TEST_F(TrainingSplitCommandTest, SplitsAnInterleavedPlacement) {
  const std::string placement = PlacementFile({0, 1, 0, 1});
  CommandResult r = Train("out", {"--placement", placement, "--microbatches", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json plan = Plan("out");
  ExpectConsistentPipeline(plan["training"], dir_ / "out", 3);
  EXPECT_GT(plan["training"]["pipeline"]["stages"].size(), 6u);
}

// report.html draws the predicted step plan.json gives the runner: a box per
// (stage, micro-batch) run and per update, forward and backward apart.
TEST_F(TrainingSplitCommandTest, ReportDrawsThePipelineStep) {
  const std::string placement = PlacementFile({0, 0, 1, 1});
  CommandResult r = Train("out", {"--placement", placement, "--microbatches", "4", "--optimizer",
                                  "sgd", "--schedule", "gpipe"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const std::string html = ReadFile(dir_ / "out" / "report.html");
  auto count = [&](const std::string& needle) {
    int n = 0;
    for (size_t at = html.find(needle); at != std::string::npos; at = html.find(needle, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("<h2>Pipeline step</h2>"), 1);
  EXPECT_EQ(count("<h2>Timeline</h2>"), 1);
  EXPECT_THAT(html, HasSubstr("<th class=\"l\">schedule</th><td class=\"l\">gpipe</td>"));
  // 2 forward and 2 backward stages x 4 micro-batches, an update per device.
  EXPECT_EQ(count("<div class=\"run "), 18);
  EXPECT_EQ(count("<div class=\"run fwd\""), 8);
  EXPECT_EQ(count("<div class=\"run bwd\""), 8);
  EXPECT_EQ(count("<div class=\"run upd\""), 2);
  EXPECT_EQ(count("class=\"pipelabel\""), 2);
  EXPECT_THAT(html, HasSubstr("title=\"stage 3 (backward), micro-batch 3, start "));
}

TEST_F(TrainingSplitCommandTest, RefusesPipelineFlagsThatDoNotFit) {
  ExpectCleanError(RunCommand({AUTOPAR_CLI, model_, "-o", (dir_ / "o1").string(), "--devices", "2",
                               "--schedule", "gpipe"}),
                   kExitUsage, "--schedule applies to --mode training only");
  EXPECT_FALSE(fs::exists(dir_ / "o1"));
  ExpectCleanError(Train("o2", {"--schedule", "zero-bubble"}), kExitUsage,
                   "--schedule must be gpipe or 1f1b, not 'zero-bubble'");
  EXPECT_FALSE(fs::exists(dir_ / "o2"));
  ExpectCleanError(Train("o3", {"--microbatches", "0"}), kExitUsage,
                   "--microbatches must be a positive number");
  EXPECT_FALSE(fs::exists(dir_ / "o3"));
}

}  // namespace
}  // namespace autopar
