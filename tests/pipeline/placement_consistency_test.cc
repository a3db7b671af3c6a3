// One placement, one judgement (Note [One judgement] in pipeline/planning.h):
// `place`, `compare` and the main command, given the same model and flags,
// report the same node placement and the same step time, to the bit, and the
// main command's plan.json says the same — for real models and three
// algorithms (one-shot SGP and m-ETF, and TGA bounded by generations so that
// it is reproducible). Each case prints its step time, for the record.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/cli_json.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace autopar {
namespace {

namespace fs = std::filesystem;
using testing::ReadJsonFile;
using testing::RunJson;
using testing::TempDir;

// CNNs with branches (GoogLeNet, SqueezeNet), depthwise convolutions,
// attention blocks, a recurrent layer and a data-dependent If (eight models,
// about a minute of CI on two busy cores).
constexpr const char* kModels[] = {"resnet18",  "squeezenet1_1",  "mobilenet_v2",
                                   "googlenet", "bert_tiny_like", "transformer_encoder",
                                   "lstm",      "control_flow_if"};
constexpr const char* kAlgorithms[] = {"sgp", "tga", "m-etf"};

// 4 V100s, 4 micro-batches: the plans spread over several devices.
std::vector<std::string> ProblemFlags() {
  return {"--devices",         "4", "--device", "V100", "--microbatches", "4",
          "--max-generations", "3", "--quiet"};
}

nlohmann::json RunCli(std::vector<std::string> argv) {
  const std::vector<std::string> flags = ProblemFlags();
  argv.insert(argv.begin(), AUTOPAR_CLI);
  argv.insert(argv.end(), flags.begin(), flags.end());
  return RunJson(argv, 300);
}

class PlacementConsistencyTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PlacementConsistencyTest, PlaceCompareAndPlanJsonAgree) {
  const std::string model = std::string(AUTOPAR_MODELS_DIR) + "/" + GetParam() + ".onnx";
  ASSERT_TRUE(fs::exists(model)) << model << " missing: the exported_models fixture writes it";
  TempDir dir;
  const nlohmann::json compared =
      RunCli({"compare", model, "--algos", "sgp,tga,m-etf", "--format", "json"});
  ASSERT_FALSE(compared.is_discarded());
  for (size_t i = 0; i < std::size(kAlgorithms); ++i) {
    const std::string algorithm = kAlgorithms[i];
    SCOPED_TRACE(algorithm);
    const nlohmann::json placed = RunCli({"place", model, "--algo", algorithm, "--format", "json"});
    ASSERT_FALSE(placed.is_discarded());
    const fs::path out = dir / algorithm;
    RunCli({model, "-o", out.string(), "--algo", algorithm, "--no-report", "--json"});
    const nlohmann::json plan = ReadJsonFile(out / "plan.json");
    ASSERT_FALSE(plan.is_discarded());

    const nlohmann::json& row = compared["results"][i];
    ASSERT_EQ(row["algorithm"], algorithm);
    const double place_us = placed["step_time_us"].get<double>();
    EXPECT_EQ(row["step_time_us"].get<double>(), place_us);
    EXPECT_EQ(plan["predicted"]["step_time_us"].get<double>(), place_us);
    EXPECT_EQ(plan["node_to_device"], placed["placement"]);
    EXPECT_EQ(plan["predicted"]["lower_bound_us"], placed["lower_bound_us"]);
    EXPECT_EQ(plan["predicted"]["single_device_step_us"], placed["single_device_step_us"]);
    std::printf("%-20s %-6s place %10.1f us  compare %10.1f us  plan.json %10.1f us\n", GetParam(),
                algorithm.c_str(), place_us, row["step_time_us"].get<double>(),
                plan["predicted"]["step_time_us"].get<double>());
  }
}

INSTANTIATE_TEST_SUITE_P(Models, PlacementConsistencyTest, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace autopar
