// Measured node times (--node-times), the host cluster (--cluster cpu:KxT,
// --host-calibration) and what plan.json says about micro-batches, as a user
// meets them through the executable.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx_io/text_format.h"
#include "tests/testing/cli_expectations.h"
#include "tests/testing/cli_json.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace autopar {
namespace {

using testing::CommandResult;
using testing::ExpectCleanError;
using ::testing::HasSubstr;
using testing::ReadJsonFile;
using testing::RunCommand;
using testing::StdoutJson;
using testing::TempDir;

constexpr int kExitUsage = 1;
constexpr int kExitBadInput = 2;

// Four unnamed nodes: onnx-autopar names them MatMul_0, Relu_1, MatMul_2, Relu_3.
constexpr char kChain[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  chain (float[1,4] x) => (float[1,4] y)
  <float[4,4] w = {1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1}> {
    a = MatMul(x, w)
    b = Relu(a)
    c = MatMul(b, w)
    y = Relu(c)
  }
)";

std::string WriteChain(const TempDir& dir) {
  absl::StatusOr<onnx::ModelProto> model = onnx_io::ParseModelText(kChain);
  EXPECT_TRUE(model.ok()) << model.status();
  return dir.Write("chain.onnx", model->SerializeAsString()).string();
}

CommandResult Cli(std::vector<std::string> args) {
  args.insert(args.begin(), AUTOPAR_CLI);
  return RunCommand(args, 120);
}

TEST(NodeTimesFlagTest, MeasuredTimesAreWhatThePlaceCommandSimulates) {
  TempDir dir;
  const std::string model = WriteChain(dir);
  // Every node measured: one device runs them back to back.
  const std::string times = dir.Write("t.json", R"({"MatMul_0": 1000, "Relu_1": 10,
                                                    "MatMul_2": 1000, "Relu_3": 10})")
                                .string();
  const nlohmann::json plan = StdoutJson(Cli({"place", model, "--devices", "1", "--device", "cpu:1",
                                              "--node-times", times, "--format", "json"}));
  EXPECT_DOUBLE_EQ(plan["step_time_us"].get<double>(), 2020);
  EXPECT_EQ(plan["costs"]["source"], "measured");
  EXPECT_EQ(plan["costs"]["measured_nodes"], 4);
  EXPECT_EQ(plan["costs"]["scaled_nodes"], 0);
  // Without the file, the cost model's times.
  const nlohmann::json predicted =
      StdoutJson(Cli({"place", model, "--devices", "1", "--device", "cpu:1", "--format", "json"}));
  EXPECT_LT(predicted["step_time_us"].get<double>(), 100);
  EXPECT_EQ(predicted["costs"]["source"], "model");
}

TEST(NodeTimesFlagTest, MeasureOutputWorksAndUnnamedNodesAreScaled) {
  TempDir dir;
  const std::string model = WriteChain(dir);
  const std::string times =
      dir.Write("measured.json", R"({"model": "chain.onnx", "threads": 1, "runs": 20,
                                     "node_us": {"MatMul_0": 500, "MatMul_2": 500}})")
          .string();
  CommandResult r =
      Cli({"place", model, "--devices", "1", "--device", "cpu:1", "--node-times", times});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("node times    measured for 2 nodes; 2 more predicted x"));
}

TEST(NodeTimesFlagTest, TheCostGraphExportCarriesTheMeasuredTimes) {
  TempDir dir;
  const std::string model = WriteChain(dir);
  const std::string times = dir.Write("t.json", R"({"MatMul_0": 1234.5})").string();
  const nlohmann::json graph =
      StdoutJson(Cli({"cost", model, "--format", "costgraph", "--node-times", times}));
  bool found = false;
  for (const nlohmann::json& node : graph["nodes"]) {
    if (node["name"] != "MatMul_0") continue;
    found = true;
    EXPECT_DOUBLE_EQ(node["compute_us"].get<double>(), 1234.5) << node.dump();
  }
  EXPECT_TRUE(found) << graph.dump();
  ExpectCleanError(Cli({"cost", model, "--node-times", times}), kExitUsage, "--format costgraph");
}

TEST(NodeTimesFlagTest, UnknownNodesAndBadFilesAreOneLineErrors) {
  TempDir dir;
  const std::string model = WriteChain(dir);
  const std::string unknown = dir.Write("u.json", R"({"MatMul_0": 5, "conv9": 7})").string();
  for (const char* command : {"place", "compare", "split"}) {
    std::vector<std::string> args = {command, model, "--node-times", unknown};
    if (std::string(command) == "split") {
      args.push_back("-o");
      args.push_back((dir.path() / "out").string());
    }
    ExpectCleanError(Cli(args), kExitBadInput, "names 'conv9', which is not a node of the model");
  }
  ExpectCleanError(Cli({"place", model, "--node-times", dir.Write("b.json", "{oops").string()}),
                   kExitBadInput, "is not valid JSON");
  ExpectCleanError(
      Cli({"place", model, "--node-times", dir.Write("n.json", R"({"Relu_1": "x"})").string()}),
      kExitBadInput, "node 'Relu_1'");
  ExpectCleanError(Cli({"place", model, "--node-times", (dir.path() / "none.json").string()}),
                   kExitBadInput, "cannot open node times file");
  ExpectCleanError(Cli({"cost", model, "--format", "costgraph", "--node-times", unknown}),
                   kExitBadInput, "conv9");
}

TEST(HostClusterFlagTest, CpuKxTIsKDevicesLinkedAsTheCalibrationSays) {
  TempDir dir;
  const std::string model = WriteChain(dir);
  const std::string calibration =
      dir.Write("host.json", R"({"version": 1, "transfer": {"latency_us": 77, "bytes_per_s": 5e8},
                                 "stage_run_us": 150, "cut_us": 40, "cut_bytes_per_s": 3e9,
                                 "thread_speedup": {"1": 1.0, "2": 1.6}})")
          .string();
  const std::string out = (dir.path() / "out").string();
  CommandResult r = Cli({model, "-o", out, "--cluster", "cpu:2x1", "--host-calibration",
                         calibration, "--placement",
                         dir.Write("p.json", R"({"MatMul_0": 0,
                         "Relu_1": 0, "MatMul_2": 1, "Relu_3": 1})")
                             .string(),
                         "--stages"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json plan = ReadJsonFile(out + "/plan.json");
  const nlohmann::json& cluster = plan["cluster"];
  ASSERT_EQ(cluster["devices"].size(), 2u);
  EXPECT_EQ(cluster["devices"][0]["device"], "cpu:1");
  EXPECT_DOUBLE_EQ(cluster["latency_matrix_us"][0][1].get<double>(), 77);
  EXPECT_DOUBLE_EQ(cluster["bandwidth_matrix_bytes_per_s"][1][0].get<double>(), 5e8);
  EXPECT_EQ(cluster["execution"]["whole_stages"], true);
  EXPECT_DOUBLE_EQ(cluster["execution"]["stage_run_us"].get<double>(), 150);
  EXPECT_DOUBLE_EQ(cluster["execution"]["cut_us"].get<double>(), 40);
  EXPECT_DOUBLE_EQ(cluster["execution"]["cut_bytes_per_s"].get<double>(), 3e9);
}

TEST(HostClusterFlagTest, MistakesAreErrors) {
  TempDir dir;
  const std::string model = WriteChain(dir);
  ExpectCleanError(Cli({"place", model, "--cluster", "cpu:0x1"}), kExitUsage, "cpu:KxT");
  ExpectCleanError(Cli({"place", model, "--cluster", "cpu:2x1", "--devices", "2"}), kExitUsage,
                   "--cluster cannot be combined");
  ExpectCleanError(Cli({"place", model, "--devices", "2", "--host-calibration",
                        dir.Write("h.json", "{}").string()}),
                   kExitUsage, "--host-calibration applies to a --cluster cpu:KxT only");
  ExpectCleanError(Cli({"place", model, "--cluster", "cpu:2x1", "--host-calibration",
                        dir.Write("bad.json", R"({"cut_us": -3})").string()}),
                   kExitBadInput, "cut_us");
}

// A host where threads scale perfectly and a stage run costs 1 ms: no split
// of the small chain can beat one device with both threads.
std::string ThreadFriendlyHost(const TempDir& dir) {
  return dir.Write("host.json", R"({"stage_run_us": 1000, "thread_speedup": {"1": 1.0, "2": 2.0}})")
      .string();
}

TEST(HostClusterFlagTest, CompareHasTheAllThreadsRowAndSaysWhenItWins) {
  TempDir dir;
  const std::string model = WriteChain(dir);
  const std::string host = ThreadFriendlyHost(dir);
  const nlohmann::json table =
      StdoutJson(Cli({"compare", model, "--cluster", "cpu:2x1", "--host-calibration", host,
                      "--algos", "sgp,round-robin", "--microbatches", "2", "--format", "json"}));
  const nlohmann::json& last = table["results"].back();
  ASSERT_EQ(last["algorithm"], "single-all-threads") << table.dump(2);
  EXPECT_EQ(last["threads"], 2);
  // One device (one thread) runs two micro-batches in two stage runs; both
  // threads halve that.
  EXPECT_DOUBLE_EQ(last["step_time_us"].get<double>(),
                   table["single_device_step_us"].get<double>() / 2);
  EXPECT_EQ(last["beats_every_split"], true);
  EXPECT_EQ(table["microbatches"], 2);
  CommandResult text = Cli({"compare", model, "--cluster", "cpu:2x1", "--host-calibration", host,
                            "--algos", "sgp,round-robin"});
  EXPECT_EQ(text.exit_code, 0) << text.stderr_text;
  EXPECT_THAT(text.stdout_text, HasSubstr("single-all-threads"));
  EXPECT_THAT(text.stdout_text, HasSubstr("it beats every split"));
  // Other clusters have no such row.
  const nlohmann::json gpus =
      StdoutJson(Cli({"compare", model, "--devices", "2", "--algos", "sgp", "--format", "json"}));
  EXPECT_NE(gpus["results"].back()["algorithm"], "single-all-threads");
}

TEST(HostClusterFlagTest, TheMainCommandSaysPlainlyWhenAllThreadsOnOneDeviceWin) {
  TempDir dir;
  const std::string model = WriteChain(dir);
  const std::string out = (dir.path() / "out").string();
  CommandResult r = Cli({model, "-o", out, "--cluster", "cpu:2x1", "--host-calibration",
                         ThreadFriendlyHost(dir), "--algo", "round-robin"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text,
              HasSubstr("one device with all 2 threads is predicted faster than this split"));
  EXPECT_TRUE(std::filesystem::exists(out + "/plan.json"));
  // Where threads do not scale, the whole model on one device is no faster
  // with both: nothing is said.
  const std::string flat =
      dir.Write("flat.json", R"({"stage_run_us": 0, "cut_us": 0, "thread_speedup": {"2": 1.0}})")
          .string();
  CommandResult quiet = Cli({model, "-o", out, "--force", "--cluster", "cpu:2x1",
                             "--host-calibration", flat, "--algo", "single"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.stderr_text;
  EXPECT_THAT(quiet.stdout_text, ::testing::Not(HasSubstr("predicted faster")));
}

TEST(PlanJsonMicrobatchTest, PlanSaysHowManyMicrobatchesAndThatInputsArePerMicrobatch) {
  TempDir dir;
  const std::string model = WriteChain(dir);
  const std::string out = (dir.path() / "out").string();
  CommandResult r = Cli({model, "-o", out, "--devices", "2", "--microbatches", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text,
              HasSubstr("4 micro-batches of the model as given; node times: cost model"));
  const nlohmann::json plan = ReadJsonFile(out + "/plan.json");
  EXPECT_EQ(plan["microbatches"], 4);
  EXPECT_EQ(plan["predicted"]["microbatches"], 4);
  EXPECT_EQ(plan["costs"]["source"], "model");
  for (const char* side : {"inputs", "outputs"}) {
    ASSERT_FALSE(plan[side].empty());
    for (const nlohmann::json& entry : plan[side]) EXPECT_EQ(entry["per_microbatch"], true) << side;
  }
}

}  // namespace
}  // namespace autopar
