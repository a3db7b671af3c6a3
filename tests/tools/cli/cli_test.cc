// The CLI as a user meets it: bad input gives one clear error line and a
// documented non-zero exit code, never a crash; good input gives the
// documented output.
#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx_io/text_format.h"
#include "tests/testing/cli_expectations.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace autopar {
namespace {

using testing::CommandResult;
using testing::ExpectCleanError;
using ::testing::HasSubstr;
using testing::RunCommand;
using ::testing::StartsWith;
using testing::TempDir;

constexpr int kExitUsage = 1;
constexpr int kExitBadInput = 2;

constexpr char kSmallModel[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  small (float[batch,4] x) => (float[batch,2] y)
  <float[4,2] w = {1, 2, 3, 4, 5, 6, 7, 8}> {
    h = MatMul(x, w)
    y = Relu(h)
  }
)";

std::string Serialized(const char* text) {
  absl::StatusOr<onnx::ModelProto> model = onnx_io::ParseModelText(text);
  EXPECT_TRUE(model.ok()) << model.status();
  return model->SerializeAsString();
}

CommandResult Info(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {AUTOPAR_CLI, "info"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

TEST(CliTest, BadModelFilesAreOneLineErrors) {
  TempDir dir;
  ExpectCleanError(Info({(dir / "missing.onnx").string()}), kExitBadInput, "no such file");
  ExpectCleanError(Info({dir.Write("empty.onnx", "").string()}), kExitBadInput, "empty");
  std::mt19937 rng(1);
  std::string noise(3000, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  ExpectCleanError(Info({dir.Write("noise.onnx", noise).string()}), kExitBadInput,
                   "not an ONNX model");
  std::string model = Serialized(kSmallModel);
  ExpectCleanError(Info({dir.Write("cut.onnx", model.substr(0, model.size() - 7)).string()}),
                   kExitBadInput, "not an ONNX model");
}

TEST(CliTest, CycleIsAnError) {
  TempDir dir;
  std::string model = Serialized(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y) { a = Add(x, b)  b = Relu(a)  y = Neg(b) }
  )");
  ExpectCleanError(Info({dir.Write("cycle.onnx", model).string()}), kExitBadInput, "cycle");
}

TEST(CliTest, MissingExternalDataIsAnError) {
  TempDir dir;
  absl::StatusOr<onnx::ModelProto> model = onnx_io::ParseModelText(kSmallModel);
  onnx::TensorProto* w = model->mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value("gone.bin");
  ExpectCleanError(Info({dir.Write("m.onnx", model->SerializeAsString()).string()}), kExitBadInput,
                   "gone.bin");
}

TEST(CliTest, UsageErrors) {
  ExpectCleanError(RunCommand({AUTOPAR_CLI, "frobnicate"}), kExitUsage, "unknown command");
  ExpectCleanError(Info({}), kExitUsage, "one model file");
  ExpectCleanError(Info({"m.onnx", "--format", "xml"}), kExitUsage, "--format");
  ExpectCleanError(Info({"m.onnx", "--bogus"}), kExitUsage, "unknown flag '--bogus'");
  ExpectCleanError(Info({"m.onnx", "--dim", "batch"}), kExitUsage, "NAME=VALUE");
}

TEST(CliTest, InfoJsonDescribesTheModel) {
  TempDir dir;
  CommandResult r =
      Info({dir.Write("m.onnx", Serialized(kSmallModel)).string(), "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  nlohmann::json info = nlohmann::json::parse(r.stdout_text);
  EXPECT_EQ(info["nodes"], 2);
  EXPECT_EQ(info["subgraph_nodes"], 0);
  EXPECT_EQ(info["ops"]["MatMul"], 1);
  EXPECT_EQ(info["ops"]["Relu"], 1);
  EXPECT_EQ(info["opsets"]["ai.onnx"], 17);
  EXPECT_EQ(info["parameters"], 8);
  EXPECT_EQ(info["parameter_bytes"], 32);
  EXPECT_EQ(info["inputs"][0]["name"], "x");
  EXPECT_EQ(info["inputs"][0]["dtype"], "float32");
  EXPECT_EQ(info["inputs"][0]["shape"], nlohmann::json::parse(R"(["batch", 4])"));
  EXPECT_EQ(info["outputs"][0]["name"], "y");
  EXPECT_EQ(info["unresolved_dims"][0], "x: batch");
}

TEST(CliTest, DimBindsSymbolicDims) {
  TempDir dir;
  std::string path = dir.Write("m.onnx", Serialized(kSmallModel)).string();
  CommandResult r = Info({path, "--format", "json", "--dim", "batch=8"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  nlohmann::json info = nlohmann::json::parse(r.stdout_text);
  EXPECT_EQ(info["inputs"][0]["shape"], nlohmann::json::parse("[8, 4]"));
  EXPECT_EQ(info["outputs"][0]["shape"], nlohmann::json::parse("[8, 2]"));
  EXPECT_TRUE(info["unresolved_dims"].empty());
  ExpectCleanError(Info({path, "--dim", "seq=3"}), kExitBadInput,
                   "--dim seq names no symbolic dim");
}

TEST(CliTest, InfoTextAndHelp) {
  TempDir dir;
  CommandResult r = Info({dir.Write("m.onnx", Serialized(kSmallModel)).string()});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("parameters   8 (32 B) in 1 tensors"));
  EXPECT_THAT(r.stdout_text, HasSubstr("ops          MatMul 1, Relu 1"));
  CommandResult help = Info({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.stdout_text, HasSubstr("examples:"));
  CommandResult version = RunCommand({AUTOPAR_CLI, "--version"});
  EXPECT_THAT(version.stdout_text, StartsWith("onnx-autopar "));
}

}  // namespace
}  // namespace autopar
