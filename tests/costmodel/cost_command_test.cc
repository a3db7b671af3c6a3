// `onnx-autopar cost` as a user runs it: the documented JSON, table and CSV
// outputs, and one-line errors for bad flags, devices and models.
#include <string>

#include "absl/strings/str_cat.h"
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

// Conv 3→4 channels 3×3 on 8×8 (pads 1), ReLU, global pool, a 4×4 MatMul:
// 4·64·3·9 + 4·4 = 6,928 MACs.
std::string SmallCnn(const std::string& input_dims = "1,3,8,8") {
  auto values = [](int n) {
    std::string text;
    for (int i = 0; i < n; ++i) absl::StrAppend(&text, i == 0 ? "" : ", ", (i % 7) * 0.1);
    return text;
  };
  return absl::StrCat(R"(<ir_version: 8, opset_import: ["" : 17]>
    cnn (float[)",
                      input_dims, R"(] x) => (float[1,4] y)
    <float[4,3,3,3] w = {)",
                      values(108), R"(}, float[4] b = {)", values(4), R"(}, float[4,4] fc = {)",
                      values(16), R"(}> {
      c = Conv <pads = [1, 1, 1, 1]> (x, w, b)
      r = Relu(c)
      p = GlobalAveragePool(r)
      f = Flatten(p)
      y = MatMul(f, fc)
    })");
}

std::string WriteModel(const TempDir& dir, const std::string& text) {
  absl::StatusOr<onnx::ModelProto> model = onnx_io::ParseModelText(text);
  EXPECT_TRUE(model.ok()) << model.status();
  return dir.Write("cnn.onnx", model->SerializeAsString()).string();
}

CommandResult Cost(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {AUTOPAR_CLI, "cost"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

std::vector<std::string> Keys(const nlohmann::ordered_json& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.push_back(key);
  return keys;
}

TEST(CostCommandTest, JsonHasTheDocumentedFields) {
  TempDir dir;
  std::string model = WriteModel(dir, SmallCnn());
  CommandResult r = Cost({model, "--format", "json", "--device", "t4"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  nlohmann::ordered_json report = nlohmann::ordered_json::parse(r.stdout_text);
  EXPECT_THAT(Keys(report), ::testing::ElementsAre("model", "device", "totals", "nodes"));
  EXPECT_EQ(report["model"], model);
  EXPECT_EQ(report["device"], "t4");
  EXPECT_THAT(Keys(report["totals"]), ::testing::ElementsAre("macs", "flops", "param_bytes",
                                                             "activation_bytes", "time_us"));
  EXPECT_EQ(report["totals"]["macs"], 4 * 64 * 3 * 9 + 4 * 4);
  EXPECT_EQ(report["totals"]["param_bytes"], (108 + 4 + 16) * 4);
  ASSERT_EQ(report["nodes"].size(), 5u);
  for (const auto& node : report["nodes"]) {
    EXPECT_THAT(Keys(node), ::testing::ElementsAre("name", "op", "macs", "flops", "bytes_read",
                                                   "bytes_written", "param_bytes", "output_bytes",
                                                   "time_us", "op_class", "kernels"));
  }
  EXPECT_EQ(report["nodes"][0]["op"], "Conv");
  EXPECT_EQ(report["nodes"][0]["macs"], 4 * 64 * 3 * 9);
  EXPECT_EQ(report["nodes"][0]["output_bytes"], 4 * 64 * 4);
  double sum = 0;
  for (const auto& node : report["nodes"]) sum += node["time_us"].get<double>();
  EXPECT_NEAR(report["totals"]["time_us"].get<double>(), sum, 1e-6);
}

TEST(CostCommandTest, TopByOpAndFormats) {
  TempDir dir;
  std::string model = WriteModel(dir, SmallCnn());
  CommandResult top = Cost({model, "--format", "json", "--top", "2", "--by-op"});
  ASSERT_EQ(top.exit_code, 0) << top.stderr_text;
  nlohmann::json report = nlohmann::json::parse(top.stdout_text);
  ASSERT_EQ(report["nodes"].size(), 2u);
  EXPECT_GE(report["nodes"][0]["time_us"], report["nodes"][1]["time_us"]);
  EXPECT_EQ(report["by_op"].size(), 5u);
  EXPECT_EQ(report["device"], "cpu");  // the default

  CommandResult table = Cost({model, "--by-op", "--device", "h100"});
  ASSERT_EQ(table.exit_code, 0) << table.stderr_text;
  EXPECT_THAT(table.stdout_text, HasSubstr("device  h100"));
  EXPECT_THAT(table.stdout_text, HasSubstr("time_us"));
  EXPECT_THAT(table.stdout_text, HasSubstr("total   5 nodes: 6.93K MACs"));
  EXPECT_THAT(table.stdout_text, HasSubstr("time%"));

  CommandResult csv = Cost({model, "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.stderr_text;
  EXPECT_THAT(csv.stdout_text, StartsWith("name,op,output_shape,macs,flops,"));
  EXPECT_THAT(csv.stdout_text, HasSubstr(",Conv,\"[1,4,8,8]\",6912,"));
  EXPECT_EQ(std::count(csv.stdout_text.begin(), csv.stdout_text.end(), '\n'), 6);
}

TEST(CostCommandTest, DeviceFile) {
  TempDir dir;
  std::string model = WriteModel(dir, SmallCnn());
  std::string device =
      dir.Write("dev.json", R"({"base": "cpu:2", "name": "laptop", "kernel_overhead_us": 1000})")
          .string();
  CommandResult r = Cost({model, "--format", "json", "--device", device});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  nlohmann::json report = nlohmann::json::parse(r.stdout_text);
  EXPECT_EQ(report["device"], "laptop");
  EXPECT_GT(report["totals"]["time_us"].get<double>(), 5 * 1000);
}

TEST(CostCommandTest, CostGraphFormatFeedsPlace) {
  TempDir dir;
  std::string model = WriteModel(dir, SmallCnn());
  CommandResult r = Cost({model, "--format", "costgraph", "--device", "t4", "--devices", "2",
                          "--memory-per-device", "1GiB"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  nlohmann::json graph = nlohmann::json::parse(r.stdout_text);
  ASSERT_EQ(graph["nodes"].size(), 5u);
  for (size_t i = 0; i < graph["nodes"].size(); ++i) EXPECT_EQ(graph["nodes"][i]["id"], i);
  EXPECT_EQ(graph["edges"].size(), 4u);
  EXPECT_EQ(graph["devices"]["count"], 2);
  EXPECT_EQ(graph["devices"]["memory_bytes"][1], int64_t{1} << 30);

  // The same document is what `place --costgraph` reads.
  std::string path = dir.Write("graph.json", r.stdout_text).string();
  CommandResult place = RunCommand({AUTOPAR_CLI, "place", "--costgraph", path, "--format", "json"});
  ASSERT_EQ(place.exit_code, 0) << place.stderr_text;
  nlohmann::json plan = nlohmann::json::parse(place.stdout_text);
  EXPECT_EQ(plan["placement"].size(), 5u);
  EXPECT_TRUE(plan["feasible"].get<bool>());
}

TEST(CostCommandTest, TrainingMode) {
  TempDir dir;
  std::string model = WriteModel(dir, SmallCnn());
  CommandResult inference = Cost({model, "--format", "json"});
  CommandResult training =
      Cost({model, "--format", "json", "--mode", "training", "--optimizer", "momentum"});
  ASSERT_EQ(inference.exit_code, 0) << inference.stderr_text;
  ASSERT_EQ(training.exit_code, 0) << training.stderr_text;
  nlohmann::json before = nlohmann::json::parse(inference.stdout_text);
  nlohmann::json after = nlohmann::json::parse(training.stdout_text);
  EXPECT_FALSE(before.contains("mode"));
  EXPECT_EQ(after["mode"], "training");
  EXPECT_EQ(after["optimizer"], "momentum");
  // Forward figures are unchanged; the step's time grows.
  EXPECT_EQ(after["totals"]["flops"], before["totals"]["flops"]);
  EXPECT_GT(after["totals"]["time_us"].get<double>(), before["totals"]["time_us"].get<double>());
  const nlohmann::json& t = after["totals"]["training"];
  const int64_t weights = (108 + 4 + 16) * 4;
  EXPECT_EQ(t["trainable_param_bytes"], weights);
  EXPECT_EQ(t["gradient_bytes"], weights);
  EXPECT_EQ(t["optimizer_state_bytes"], weights);  // one fp32 momentum buffer
  // The Conv reads the image (no gradient needed): only dW, 1 × its MACs.
  EXPECT_EQ(after["nodes"][0]["backward_flops"], before["nodes"][0]["flops"]);
  EXPECT_GT(after["nodes"][0]["update_flops"].get<int64_t>(), 0);

  CommandResult table = Cost({model, "--mode", "training"});
  ASSERT_EQ(table.exit_code, 0) << table.stderr_text;
  EXPECT_THAT(table.stdout_text, HasSubstr("step    training (adam)"));
  EXPECT_THAT(table.stdout_text, HasSubstr("optimizer state 1.0 KiB"));

  // The cost graph of a training step holds the parameter state, and place
  // plans a training step from the model.
  CommandResult graph = Cost({model, "--format", "costgraph", "--mode", "training"});
  ASSERT_EQ(graph.exit_code, 0) << graph.stderr_text;
  EXPECT_EQ(nlohmann::json::parse(graph.stdout_text)["nodes"][0]["param_bytes"], 4 * (108 + 4) * 4);
  CommandResult place = RunCommand(
      {AUTOPAR_CLI, "place", model, "--devices", "2", "--mode", "training", "--format", "json"});
  ASSERT_EQ(place.exit_code, 0) << place.stderr_text;
  EXPECT_EQ(nlohmann::json::parse(place.stdout_text)["mode"], "training");
  CommandResult text = RunCommand({AUTOPAR_CLI, "place", model, "--mode", "training"});
  EXPECT_THAT(text.stdout_text, HasSubstr("step          training (adam)"));

  ExpectCleanError(Cost({model, "--mode", "train"}), kExitUsage, "--mode");
  ExpectCleanError(Cost({model, "--optimizer", "sgd"}), kExitUsage, "--mode training");
  std::string path = dir.Write("graph.json", graph.stdout_text).string();
  ExpectCleanError(RunCommand({AUTOPAR_CLI, "place", "--costgraph", path, "--mode", "training"}),
                   kExitUsage, "--mode");
}

TEST(CostCommandTest, Errors) {
  TempDir dir;
  std::string model = WriteModel(dir, SmallCnn());
  ExpectCleanError(Cost({}), kExitUsage, "one model file");
  ExpectCleanError(Cost({model, "--format", "xml"}), kExitUsage, "--format");
  ExpectCleanError(Cost({model, "--top", "0"}), kExitUsage, "--top");
  ExpectCleanError(Cost({model, "--loop-trips", "many"}), kExitUsage, "--loop-trips");
  ExpectCleanError(Cost({model, "--device", "tpu-v9"}), kExitBadInput, "neither a preset");
  ExpectCleanError(Cost({model, "--device", dir.Write("bad.json", "{}").string()}), kExitBadInput,
                   "'name'");
  ExpectCleanError(Cost({(dir / "missing.onnx").string()}), kExitBadInput, "missing.onnx");

  TempDir symbolic;
  std::string dynamic = WriteModel(symbolic, SmallCnn("batch,3,8,8"));
  ExpectCleanError(Cost({dynamic}), kExitBadInput, "--dim");
  CommandResult bound = Cost({dynamic, "--dim", "batch=1", "--format", "json"});
  EXPECT_EQ(bound.exit_code, 0) << bound.stderr_text;
}

}  // namespace
}  // namespace autopar
