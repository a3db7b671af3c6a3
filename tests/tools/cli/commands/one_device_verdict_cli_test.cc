// "Do not split" as a user sees it (Note [Do not split] in
// pipeline/planning.h): m-ETF's split of SqueezeNet over two V100s is
// predicted slower than one device, so `place` and the main command return
// the one-device plan and say so (text, JSON and plan.json);
// --allow-slower-split keeps the split; `compare` shows each algorithm's own
// plan.
#include <filesystem>
#include <fstream>
#include <sstream>
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
using testing::RunCommand;
using testing::TempDir;

const std::string& Model() {
  static const std::string path = std::string(AUTOPAR_MODELS_DIR) + "/squeezenet1_1.onnx";
  return path;
}

CommandResult Cli(std::vector<std::string> args) {
  args.insert(args.begin(), AUTOPAR_CLI);
  for (const char* flag : {"--devices", "2", "--device", "V100", "--quiet"}) args.push_back(flag);
  return RunCommand(args, 120);
}

nlohmann::json Json(const std::string& text) {
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

TEST(OneDeviceVerdictCliTest, PlaceReturnsOneDeviceAndSaysSo) {
  ASSERT_TRUE(fs::exists(Model())) << Model() << " missing: the exported_models fixture writes it";
  CommandResult text = Cli({"place", Model(), "--algo", "m-etf"});
  ASSERT_EQ(text.exit_code, 0) << text.stderr_text;
  EXPECT_THAT(text.stdout_text, HasSubstr("one device is predicted fastest"));
  EXPECT_THAT(text.stdout_text, HasSubstr("splitting pays only for memory"));
  EXPECT_THAT(text.stdout_text, HasSubstr("0 cut edges"));

  const nlohmann::json placed =
      Json(Cli({"place", Model(), "--algo", "m-etf", "--format", "json"}).stdout_text);
  ASSERT_FALSE(placed.is_discarded());
  EXPECT_EQ(placed["algorithm"], "m-etf");
  EXPECT_EQ(placed["cut_edges"], 0);
  EXPECT_EQ(placed["step_time_us"], placed["single_device_step_us"]);
  const nlohmann::json& verdict = placed["split_predicted_slower"];
  ASSERT_TRUE(verdict.is_object()) << placed.dump();
  EXPECT_EQ(verdict["split_devices"], 2);
  EXPECT_GT(verdict["split_step_time_us"].get<double>(),
            verdict["one_device_step_time_us"].get<double>());
  EXPECT_EQ(verdict["one_device_step_time_us"], placed["step_time_us"]);

  const nlohmann::json split =
      Json(Cli({"place", Model(), "--algo", "m-etf", "--format", "json", "--allow-slower-split"})
               .stdout_text);
  ASSERT_FALSE(split.is_discarded());
  EXPECT_TRUE(split["split_predicted_slower"].is_null());
  EXPECT_GT(split["cut_edges"].get<int>(), 0);
  EXPECT_EQ(split["step_time_us"], verdict["split_step_time_us"]);
}

TEST(OneDeviceVerdictCliTest, MainCommandWritesOneDeviceAndRecordsTheVerdict) {
  TempDir dir;
  const fs::path out = dir / "out";
  CommandResult r = Cli({Model(), "-o", out.string(), "--algo", "m-etf", "--no-report"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("verdict    one device is predicted fastest"));
  EXPECT_THAT(r.stdout_text, HasSubstr("1 of 2 devices unused"));
  std::ifstream in(out / "plan.json");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json plan = Json(text.str());
  ASSERT_FALSE(plan.is_discarded());
  EXPECT_EQ(plan["algorithm"], "m-etf");
  EXPECT_EQ(plan["devices"].size(), 2u);
  EXPECT_TRUE(plan["transfers"].empty());
  const nlohmann::json& verdict = plan["predicted"]["split_predicted_slower"];
  ASSERT_TRUE(verdict.is_object()) << plan["predicted"].dump();
  EXPECT_EQ(verdict["split_devices"], 2);
  EXPECT_EQ(verdict["one_device_step_time_us"], plan["predicted"]["step_time_us"]);

  // Asked to split anyway, it splits, and says nothing of the kind.
  const fs::path forced = dir / "forced";
  CommandResult f = Cli(
      {Model(), "-o", forced.string(), "--algo", "m-etf", "--no-report", "--allow-slower-split"});
  ASSERT_EQ(f.exit_code, 0) << f.stderr_text;
  EXPECT_THAT(f.stdout_text, Not(HasSubstr("one device is predicted fastest")));
  EXPECT_THAT(f.stdout_text, HasSubstr("2 device models"));
}

// TGA's split is predicted faster than one device: it stays.
TEST(OneDeviceVerdictCliTest, AFasterSplitIsKept) {
  const nlohmann::json placed =
      Json(Cli({"place", Model(), "--algo", "tga", "--max-generations", "3", "--format", "json"})
               .stdout_text);
  ASSERT_FALSE(placed.is_discarded());
  EXPECT_TRUE(placed["split_predicted_slower"].is_null());
  EXPECT_GT(placed["cut_edges"].get<int>(), 0);
  EXPECT_GT(placed["speedup"].get<double>(), 1);
}

// compare compares the algorithms: m-ETF's row is its own, slower, split.
TEST(OneDeviceVerdictCliTest, CompareShowsEachAlgorithmsOwnPlan) {
  const nlohmann::json compared =
      Json(Cli({"compare", Model(), "--algos", "m-etf", "--format", "json"}).stdout_text);
  ASSERT_FALSE(compared.is_discarded());
  EXPECT_LT(compared["results"][0]["speedup"].get<double>(), 1);
  EXPECT_GT(compared["results"][0]["cut_edges"].get<int>(), 0);
}

}  // namespace
}  // namespace autopar
