// The main command, `onnx-autopar MODEL.onnx -o OUT_DIR`, as a user runs it:
// what it writes (device models, stages, plan.json as the README documents it), that
// it is deterministic, that it never leaves a half-written or clobbered
// folder, and that a hand-made placement is applied or refused clearly.
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx_io/text_format.h"
#include "tests/testing/cli_expectations.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace autopar {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::ExpectCleanError;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFile;
using testing::RunCommand;
using ::testing::StartsWith;
using testing::TempDir;

constexpr int kExitUsage = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitInfeasible = 3;

// A branchy model with enough work that a placement on two devices cuts it
// (4 KiB weights; WEIGHTS is replaced by their values).
constexpr char kModel[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  branchy (float[8,32] x) => (float[8,32] y, float[8,32] z)
  <float[32,32] w1 = {WEIGHTS}, float[32,32] w2 = {WEIGHTS}> {
    a = MatMul(x, w1)
    b = Relu(a)
    c = MatMul(x, w2)
    d = Sigmoid(c)
    e = Add(b, d)
    y = MatMul(e, w1)
    z = Mul(e, d)
  }
)";

class SplitCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<std::string> weights;
    for (int i = 0; i < 32 * 32; ++i) weights.push_back(std::to_string(i % 7));
    const std::string text =
        absl::StrReplaceAll(kModel, {{"WEIGHTS", absl::StrJoin(weights, ",")}});
    absl::StatusOr<onnx::ModelProto> model = onnx_io::ParseModelText(text);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = dir_.Write("model.onnx", model->SerializeAsString()).string();
  }

  CommandResult Split(const std::string& out, std::vector<std::string> flags) {
    std::vector<std::string> argv = {AUTOPAR_CLI, model_, "-o", (dir_ / out).string()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return RunCommand(argv);
  }

  // A placement file giving the model's nodes, in order, these devices. The
  // text format leaves nodes unnamed; the importer names them <op>_<index>.
  std::string PlacementFile(const std::vector<int>& devices) {
    static constexpr const char* kNodes[] = {"MatMul_0", "Relu_1",   "MatMul_2", "Sigmoid_3",
                                             "Add_4",    "MatMul_5", "Mul_6"};
    nlohmann::json placement = nlohmann::json::object();
    for (size_t i = 0; i < devices.size() && i < std::size(kNodes); ++i)
      placement[kNodes[i]] = devices[i];
    return dir_.Write("placement.json", placement.dump()).string();
  }

  nlohmann::json Plan(const std::string& out) {
    return nlohmann::json::parse(ReadFile(dir_ / out / "plan.json"));
  }

  TempDir dir_;
  std::string model_;
};

TEST_F(SplitCommandTest, WritesDeviceModelsStagesAndPlanJson) {
  const std::string placement = PlacementFile({0, 0, 1, 1, 0, 1, 0});
  CommandResult r = Split("out", {"--devices", "2", "--stages", "--placement", placement});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("wrote"));
  EXPECT_THAT(r.stdout_text, HasSubstr("plan.json, report.html"));
  for (const char* file :
       {"plan.json", "report.html", "device_0.onnx", "device_1.onnx", "stages/s0.onnx"}) {
    EXPECT_TRUE(fs::exists(dir_ / "out" / file)) << file;
  }
  nlohmann::json plan = Plan("out");
  EXPECT_EQ(plan["format"], "onnx-autopar-plan");
  EXPECT_EQ(plan["version"], 1);
  EXPECT_EQ(plan["source"]["path"], model_);
  EXPECT_EQ(plan["source"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(plan["source"]["nodes"], 7);
  EXPECT_EQ(plan["algorithm"], "given");
  ASSERT_EQ(plan["devices"].size(), 2u);
  EXPECT_EQ(plan["devices"][0]["model"], "device_0.onnx");
  EXPECT_EQ(plan["devices"][0]["nodes"].get<int>() + plan["devices"][1]["nodes"].get<int>(), 7);
  EXPECT_GT(plan["devices"][1]["flops"].get<int64_t>(), 0);
  // c (MatMul, dev 1) feeds d (dev 1); d and the Relu output cross to the Add
  // and Mul on device 0; e crosses to y's MatMul on device 1.
  std::set<std::string> crossing;
  for (const nlohmann::json& t : plan["transfers"]) {
    crossing.insert(t["tensor"].get<std::string>() + ":" + std::to_string(t["src"].get<int>()) +
                    ">" + std::to_string(t["dst"].get<int>()));
    EXPECT_EQ(t["dtype"], "float32");
    EXPECT_EQ(t["bytes"], 8 * 32 * 4);
  }
  EXPECT_EQ(crossing, (std::set<std::string>{"d:1>0", "e:0>1"}));
  EXPECT_EQ(plan["outputs"][0]["name"], "y");
  EXPECT_EQ(plan["outputs"][0]["device"], 1);
  EXPECT_EQ(plan["inputs"][0]["devices"], nlohmann::json::array({0, 1}));
  EXPECT_FALSE(plan["stages"].empty());
  EXPECT_GT(plan["predicted"]["step_time_us"].get<double>(), 0);
  EXPECT_GE(plan["predicted"]["step_time_us"].get<double>(),
            plan["predicted"]["lower_bound_us"].get<double>());
  EXPECT_EQ(plan["node_to_device"].size(), 7u);
  EXPECT_EQ(plan["node_to_device"]["MatMul_2"], 1);
}

TEST_F(SplitCommandTest, DevicesThePlacementLeavesEmptyGetNoModel) {
  const std::string placement = PlacementFile({0, 0, 2, 2, 0, 2, 0});
  CommandResult r = Split("out", {"--devices", "3", "--placement", placement});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("2 device models (1 of 3 devices unused)"));
  EXPECT_THAT(r.stdout_text, HasSubstr("unused         dev1 (the placement puts nothing there"));
  EXPECT_TRUE(fs::exists(dir_ / "out" / "device_0.onnx"));
  EXPECT_FALSE(fs::exists(dir_ / "out" / "device_1.onnx"));
  EXPECT_TRUE(fs::exists(dir_ / "out" / "device_2.onnx"));
  nlohmann::json plan = Plan("out");
  ASSERT_EQ(plan["devices"].size(), 3u);
  EXPECT_TRUE(plan["devices"][1]["model"].is_null());
  EXPECT_EQ(plan["devices"][1]["nodes"], 0);
  EXPECT_EQ(plan["devices"][2]["model"], "device_2.onnx");
}

TEST_F(SplitCommandTest, SameInputAndSeedGiveIdenticalOutput) {
  ASSERT_EQ(Split("a", {"--devices", "3", "--stages", "--seed", "5"}).exit_code, 0);
  ASSERT_EQ(Split("b", {"--devices", "3", "--stages", "--seed", "5"}).exit_code, 0);
  int files = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir_ / "a")) {
    // plan.json and report.html carry the measured search time.
    if (!e.is_regular_file() || e.path().filename() == "plan.json" ||
        e.path().filename() == "report.html") {
      continue;
    }
    const fs::path relative = fs::relative(e.path(), dir_ / "a");
    EXPECT_EQ(ReadFile(e.path()), ReadFile(dir_ / "b" / relative)) << relative;
    ++files;
  }
  EXPECT_GE(files, 3);
  // plan.json differs only in the measured search time.
  nlohmann::json a = Plan("a"), b = Plan("b");
  a.erase("search_time_ms");
  b.erase("search_time_ms");
  EXPECT_EQ(a, b);
}

TEST_F(SplitCommandTest, WritesAReportUnlessToldNotTo) {
  ASSERT_EQ(Split("with", {"--devices", "2"}).exit_code, 0);
  const std::string html = ReadFile(dir_ / "with" / "report.html");
  EXPECT_THAT(html, StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(html, HasSubstr("class=\"lanelabel\">device 0 "));
  EXPECT_THAT(html, HasSubstr("class=\"lanelabel\">device 1 "));
  EXPECT_THAT(html, HasSubstr("<title>MatMul_0 (MatMul), "));
  CommandResult r = Split("without", {"--devices", "2", "--no-report"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, Not(HasSubstr("report.html")));
  EXPECT_TRUE(fs::exists(dir_ / "without" / "plan.json"));
  EXPECT_FALSE(fs::exists(dir_ / "without" / "report.html"));
  // The report leaves plan.json as it was.
  nlohmann::json with = Plan("with"), without = Plan("without");
  with.erase("search_time_ms");
  without.erase("search_time_ms");
  EXPECT_EQ(with, without);
}

TEST_F(SplitCommandTest, ExistingOutputIsRefusedWithoutForce) {
  fs::create_directory(dir_ / "out");
  dir_.Write("out/keep.txt", "mine");
  ExpectCleanError(Split("out", {"--devices", "2"}), kExitUsage, "already exists (use --force");
  EXPECT_EQ(ReadFile(dir_ / "out" / "keep.txt"), "mine");
  ASSERT_EQ(Split("out", {"--devices", "2", "--force"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(dir_ / "out" / "keep.txt"));
  EXPECT_TRUE(fs::exists(dir_ / "out" / "plan.json"));
}

TEST_F(SplitCommandTest, FailuresLeaveNoOutputFolder) {
  ExpectCleanError(Split("out", {"--devices", "2", "--memory-per-device", "2KiB"}), kExitInfeasible,
                   "more than the largest device");
  ExpectCleanError(
      RunCommand({AUTOPAR_CLI, (dir_ / "missing.onnx").string(), "-o", (dir_ / "out").string()}),
      kExitBadInput, "missing.onnx");
  ExpectCleanError(Split("out", {"--devices", "2", "--algo", "nonsense"}), kExitBadInput,
                   "unknown placement algorithm");
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  // Nothing temporary is left beside it either.
  for (const fs::directory_entry& e : fs::directory_iterator(dir_.path())) {
    EXPECT_EQ(e.path().filename(), "model.onnx") << "left behind: " << e.path();
  }
}

TEST_F(SplitCommandTest, BadPlacementFilesAreOneLineErrors) {
  ExpectCleanError(
      Split("out", {"--devices", "2", "--placement", dir_.Write("p1.json", "{nope").string()}),
      kExitBadInput, "not valid JSON");
  ExpectCleanError(Split("out", {"--devices", "2", "--placement",
                                 dir_.Write("p2.json", R"({"MatMul_0": 0})").string()}),
                   kExitBadInput, "gives no device for node 'Relu_1'");
  ExpectCleanError(Split("out", {"--devices", "2", "--placement",
                                 dir_.Write("p3.json", R"({"zz": 0})").string()}),
                   kExitBadInput, "'zz', which is not a node");
  ExpectCleanError(Split("out", {"--devices", "2", "--placement",
                                 dir_.Write("p4.json", R"({"MatMul_0": 2})").string()}),
                   kExitBadInput, "devices are 0..1");
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(SplitCommandTest, APlanJsonCanBeReapplied) {
  ASSERT_EQ(Split("first", {"--devices", "4"}).exit_code, 0);
  const std::string plan = (dir_ / "first" / "plan.json").string();
  ASSERT_EQ(Split("second", {"--devices", "4", "--placement", plan}).exit_code, 0);
  EXPECT_EQ(Plan("first")["node_to_device"], Plan("second")["node_to_device"]);
  EXPECT_EQ(ReadFile(dir_ / "first" / "device_0.onnx"),
            ReadFile(dir_ / "second" / "device_0.onnx"));
}

TEST_F(SplitCommandTest, UsageErrors) {
  ExpectCleanError(RunCommand({AUTOPAR_CLI, model_}), kExitUsage, "-o OUT_DIR");
  ExpectCleanError(Split("out", {"--stagez"}), kExitUsage, "stagez");
  ExpectCleanError(Split("out", {"--seed", "x"}), kExitUsage, "--seed");
  CommandResult help = RunCommand({AUTOPAR_CLI, "split", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.stdout_text, HasSubstr("--stages"));
}

}  // namespace
}  // namespace autopar
