// The main command with --mode training, as a user runs it: the step's models
// and plan.json's "training" object, and one clear error line (and no output
// folder) for a training request that cannot work.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
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
using testing::RunCommand;
using testing::TempDir;

constexpr int kExitUsage = 1;
constexpr int kExitBadInput = 2;

constexpr const char* kMlp = testing::kTrainingMlp;

class TrainingCommandTest : public ::testing::Test {
 protected:
  std::string WriteModel(const std::string& name, const std::string& text) {
    absl::StatusOr<onnx::ModelProto> model = onnx_io::ParseModelText(text);
    EXPECT_TRUE(model.ok()) << model.status();
    return dir_.Write(name, model->SerializeAsString()).string();
  }

  CommandResult Train(const std::string& model, const std::string& out,
                      std::vector<std::string> flags) {
    std::vector<std::string> argv = {AUTOPAR_CLI, model, "-o",     (dir_ / out).string(),
                                     "--devices", "1",   "--mode", "training"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return RunCommand(argv);
  }

  // The command failed with one line naming `needle`, and wrote nothing.
  void ExpectRefused(const CommandResult& r, int exit_code, const std::string& needle,
                     const std::string& out) {
    ExpectCleanError(r, exit_code, needle);
    EXPECT_FALSE(fs::exists(dir_ / out)) << out << " was written";
  }

  TempDir dir_;
};

TEST_F(TrainingCommandTest, WritesTheStepModelsAndTheTrainingPlan) {
  const std::string model = WriteModel("mlp.onnx", kMlp);
  CommandResult r = Train(model, "out",
                          {"--loss", "cross-entropy:logits", "--optimizer", "adamw",
                           "--learning-rate", "0.01", "--freeze", "^b1$"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  for (const char* file : {"step/init.onnx", "step/gradient.onnx", "step/update.onnx", "plan.json"})
    EXPECT_TRUE(fs::exists(dir_ / "out" / file)) << file;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "device_0.onnx")) << "no forward-only model";
  std::ifstream in(dir_ / "out" / "plan.json");
  nlohmann::json plan = nlohmann::json::parse(in);
  EXPECT_EQ(plan["mode"], "training");
  const nlohmann::json& t = plan["training"];
  EXPECT_EQ(t["loss"]["spec"], "cross-entropy:logits");
  EXPECT_EQ(t["loss"]["input"], "labels");
  EXPECT_EQ(t["loss"]["classes"], 3);
  EXPECT_EQ(t["optimizer"]["name"], "adamw");
  EXPECT_DOUBLE_EQ(t["optimizer"]["learning_rate"].get<double>(), 0.01);
  EXPECT_DOUBLE_EQ(t["optimizer"]["weight_decay"].get<double>(), 0.01);
  std::vector<std::string> trained;
  for (const auto& w : t["weights"]) trained.push_back(w["name"]);
  EXPECT_THAT(trained, ElementsAre("w1", "w2"));
  EXPECT_EQ(t["weights"][0]["shape"], nlohmann::json({8, 5}));
  EXPECT_EQ(t["weights"][0]["bytes"], 160);
  EXPECT_EQ(t["weights"][0]["update"]["state"].size(), 2u);
  EXPECT_THAT(t["frozen"], ElementsAre("b1"));
  std::vector<std::string> data;
  for (const auto& d : t["data_inputs"]) data.push_back(d["name"]);
  EXPECT_THAT(data, ElementsAre("x", "labels"));
  EXPECT_EQ(t["data_inputs"][1]["dtype"], "int64");
  EXPECT_THAT(r.stdout_text, HasSubstr("2 trained"));
}

TEST_F(TrainingCommandTest, ReusesTheModelsOwnLabelsInput) {
  std::string text = kMlp;
  text.replace(text.find("(float[4,8] x)"), 14, "(float[4,8] x, int64[4] y)");
  const std::string model = WriteModel("with_labels.onnx", text);
  CommandResult r = Train(model, "out", {"--loss", "cross-entropy:logits", "--labels", "y"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  std::ifstream in(dir_ / "out" / "plan.json");
  nlohmann::json plan = nlohmann::json::parse(in);
  EXPECT_EQ(plan["training"]["loss"]["input"], "y");
}

TEST_F(TrainingCommandTest, RefusesWhatCannotTrain) {
  const std::string model = WriteModel("mlp.onnx", kMlp);
  ExpectRefused(Train(model, "o1", {"--loss", "output:nope"}), kExitBadInput, "no value 'nope'",
                "o1");
  ExpectRefused(Train(model, "o2", {"--loss", "output:logits"}), kExitBadInput, "must be a scalar",
                "o2");
  // Labels that are the model's float input.
  ExpectRefused(Train(model, "o3", {"--loss", "cross-entropy:logits", "--labels", "x"}),
                kExitBadInput, "--labels x: the model's input is float32", "o3");
  ExpectRefused(Train(model, "o4", {"--loss", "mse:logits", "--freeze", "."}), kExitBadInput,
                "nothing to train", "o4");
  std::string no_rule = kMlp;
  no_rule.replace(no_rule.find("Relu(hb)"), 8, "Sin(hb)");
  const std::string sin_model = WriteModel("sin.onnx", no_rule);
  ExpectRefused(Train(sin_model, "o5", {"--loss", "mse:logits"}), kExitBadInput,
                "(Sin) is on the gradient path and its operator has no gradient rule", "o5");
}

// Forms a rule does not differentiate are refused by name, never given a zero
// gradient: Pad's reflect mode, Dropout in training form, BatchNormalization
// computing its batch statistics.
TEST_F(TrainingCommandTest, RefusesOperatorFormsWithoutAGradient) {
  auto with = [&](const std::string& name, const std::string& relu_replacement) {
    std::string text = kMlp;
    text.replace(text.find("    a = Relu(hb)"), 16, relu_replacement);
    return WriteModel(name, text);
  };
  ExpectRefused(Train(with("pad.onnx",
                           "    pads = Constant <value = int64[4] {0, 1, 0, 1}> ()\n"
                           "    p = Pad <mode = \"reflect\"> (hb, pads)\n"
                           "    a = Slice(p, starts, ends, axes)\n"
                           "    starts = Constant <value = int64[1] {0}> ()\n"
                           "    ends = Constant <value = int64[1] {5}> ()\n"
                           "    axes = Constant <value = int64[1] {1}> ()"),
                      "o1", {"--loss", "mse:logits"}),
                kExitBadInput, "Pad mode 'reflect' has no gradient rule", "o1");
  ExpectRefused(Train(with("dropout.onnx",
                           "    ratio = Constant <value = float {0.5}> ()\n"
                           "    training = Constant <value = bool {1}> ()\n"
                           "    a = Dropout(hb, ratio, training)"),
                      "o2", {"--loss", "mse:logits"}),
                kExitBadInput, "Dropout in training form", "o2");
  ExpectRefused(Train(with("batchnorm.onnx",
                           "    s = Constant <value = float[5] {1, 1, 1, 1, 1}> ()\n"
                           "    z = Constant <value = float[5] {0, 0, 0, 0, 0}> ()\n"
                           "    a = BatchNormalization <training_mode = 1> (hb, s, z, z, s)"),
                      "o3", {"--loss", "mse:logits"}),
                kExitBadInput, "training mode", "o3");
}

TEST_F(TrainingCommandTest, RefusesTrainingFlagsThatDoNotFit) {
  const std::string model = WriteModel("mlp.onnx", kMlp);
  ExpectRefused(Train(model, "o1", {}), kExitUsage, "--mode training needs --loss", "o1");
  ExpectRefused(
      RunCommand({AUTOPAR_CLI, model, "-o", (dir_ / "o2").string(), "--loss", "mse:logits"}),
      kExitUsage, "--loss applies to --mode training only", "o2");
  ExpectRefused(Train(model, "o3", {"--loss", "hinge:logits"}), kExitUsage, "'hinge:logits'", "o3");
  ExpectRefused(Train(model, "o4", {"--loss", "mse:logits", "--betas", "0.9"}), kExitUsage,
                "--betas must be two numbers", "o4");
  ExpectRefused(Train(model, "o5", {"--loss", "mse:logits", "--learning-rate", "-1"}), kExitUsage,
                "--learning-rate must be a number", "o5");
  ExpectRefused(Train(model, "o6", {"--loss", "mse:logits", "--stages"}), kExitUsage,
                "a training step is written as step models", "o6");
  ExpectRefused(Train(model, "o7", {"--loss", "mse:logits", "--freeze", "("}), kExitBadInput,
                "--freeze '(' is not a regular expression", "o7");
}

}  // namespace
}  // namespace autopar
