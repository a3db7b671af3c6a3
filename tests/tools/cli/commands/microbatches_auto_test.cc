// --microbatches auto (Note [Micro-batches auto] in pipeline/planning.h) as a
// user runs it: `place`, the main command and `compare` choose the count with
// the placement, the lowest time per sample among the plans that fit, and
// show the curve (report.html and compare --report draw it); inference and
// training; bad input is one error line.
#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
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
using testing::TempDir;

constexpr int kExitUsage = 1;

std::string Model() { return std::string(AUTOPAR_MODELS_DIR) + "/resnet18.onnx"; }

CommandResult Cli(std::vector<std::string> args) {
  args.insert(args.begin(), AUTOPAR_CLI);
  for (const char* flag : {"--devices", "4", "--device", "V100", "--quiet"}) args.push_back(flag);
  return RunCommand(args, 120);
}

nlohmann::json Json(const std::string& text) {
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

// The curve tries the powers of two up to the maximum and the maximum, and
// chooses the lowest time per sample among the plans that fit.
void ExpectAWellChosenCurve(const nlohmann::json& search, int max) {
  ASSERT_TRUE(search.is_object());
  EXPECT_EQ(search["max"], max);
  std::set<int> tried;
  double best = 1e300;
  int best_m = 0;
  for (const nlohmann::json& t : search["tried"]) {
    const int m = t["m"].get<int>();
    tried.insert(m);
    EXPECT_GE(m, 1);
    EXPECT_LE(m, max);
    EXPECT_NEAR(t["time_per_sample_us"].get<double>(),
                t["step_time_us"].get<double>() / (m * search["batch"].get<double>()), 1e-6);
    EXPECT_EQ(t["peak_memory_bytes"].size(), 4u);
    if (t["feasible"].get<bool>() && t["time_per_sample_us"].get<double>() < best) {
      best = t["time_per_sample_us"].get<double>();
      best_m = m;
    }
  }
  for (int m = 1; m <= max; m *= 2) EXPECT_TRUE(tried.contains(m)) << m;
  EXPECT_TRUE(tried.contains(max));
  EXPECT_EQ(search["chosen"], best_m);
}

TEST(MicrobatchesAutoTest, PlaceChoosesTheBestTimePerSample) {
  ASSERT_TRUE(fs::exists(Model())) << Model() << " missing: the exported_models fixture writes it";
  CommandResult r = Cli(
      {"place", Model(), "--microbatches", "auto", "--max-microbatches", "8", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json placed = Json(r.stdout_text);
  ASSERT_FALSE(placed.is_discarded());
  ExpectAWellChosenCurve(placed["microbatches_search"], 8);
  EXPECT_EQ(placed["microbatches"], placed["microbatches_search"]["chosen"]);
  // Pipelining ResNet-18 over four devices pays: more than one micro-batch.
  EXPECT_GT(placed["microbatches"].get<int>(), 1);

  CommandResult text = Cli({"place", Model(), "--microbatches", "auto", "--max-microbatches", "4"});
  ASSERT_EQ(text.exit_code, 0) << text.stderr_text;
  EXPECT_THAT(text.stdout_text, HasSubstr("chosen of 1..4 by time per sample"));
  EXPECT_THAT(text.stdout_text, HasSubstr("us/sample"));
}

TEST(MicrobatchesAutoTest, TrainingStepsToo) {
  CommandResult r = Cli({"place", Model(), "--mode", "training", "--microbatches", "auto",
                         "--max-microbatches", "4", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json placed = Json(r.stdout_text);
  ASSERT_FALSE(placed.is_discarded());
  EXPECT_EQ(placed["mode"], "training");
  ExpectAWellChosenCurve(placed["microbatches_search"], 4);
  EXPECT_EQ(placed["microbatches"], placed["microbatches_search"]["chosen"]);
}

TEST(MicrobatchesAutoTest, MainCommandWritesTheChosenCountAndTheCurve) {
  TempDir dir;
  const fs::path out = dir / "out";
  CommandResult r = Cli({Model(), "-o", out.string(), "--microbatches", "auto",
                         "--max-microbatches", "8", "--no-report"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("chosen of 1..8 by time per sample"));
  const nlohmann::json plan = Json(ReadFile(out / "plan.json"));
  ASSERT_FALSE(plan.is_discarded());
  ExpectAWellChosenCurve(plan["microbatches_search"], 8);
  // The runner reads "microbatches" as a count.
  ASSERT_TRUE(plan["microbatches"].is_number_integer());
  EXPECT_EQ(plan["microbatches"], plan["microbatches_search"]["chosen"]);
  EXPECT_EQ(plan["predicted"]["microbatches"], plan["microbatches"]);
  EXPECT_THAT(r.stdout_text,
              HasSubstr("step       " + std::to_string(plan["microbatches"].get<int>()) +
                        " micro-batches"));
}

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// report.html draws the curve plan.json keeps: two charts, and a table row
// per count tried with the chosen one marked; compare --report draws it
// once, above the plans.
TEST(MicrobatchesAutoTest, ReportsDrawTheCurve) {
  TempDir dir;
  const fs::path out = dir / "out";
  CommandResult r =
      Cli({Model(), "-o", out.string(), "--microbatches", "auto", "--max-microbatches", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json plan = Json(ReadFile(out / "plan.json"));
  ASSERT_FALSE(plan.is_discarded());
  const nlohmann::json& search = plan["microbatches_search"];
  const std::string html = ReadFile(out / "report.html");
  EXPECT_EQ(Count(html, "<h2>Micro-batches</h2>"), 1);
  EXPECT_EQ(Count(html, "<svg class=\"curve mb\""), 2);
  const size_t table = html.find("<table class=\"mbtable\">");
  ASSERT_NE(table, std::string::npos);
  const std::string rows = html.substr(table, html.find("</table>", table) - table);
  EXPECT_EQ(Count(rows, "<tr"), static_cast<int>(search["tried"].size()) + 1);
  const int chosen = search["chosen"].get<int>();
  EXPECT_THAT(rows, HasSubstr("<tr class=\"best\"><td>" + std::to_string(chosen) + " *</td>"));
  EXPECT_EQ(Count(rows, "class=\"best\""), 1);
  EXPECT_THAT(html, HasSubstr("chose M=" + std::to_string(chosen) + " of 1..8"));

  const fs::path page = dir / "cmp.html";
  r = Cli({"compare", Model(), "--algos", "sgp,m-etf", "--microbatches", "auto",
           "--max-microbatches", "4", "--report", page.string()});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const std::string compared = ReadFile(page);
  EXPECT_EQ(Count(compared, "<h2>Micro-batches</h2>"), 1);
  EXPECT_THAT(compared, HasSubstr("every algorithm above is compared at M="));
  EXPECT_LT(compared.find("<h2>Micro-batches</h2>"), compared.find("<section class=\"plan\""));

  // A fixed count has no curve.
  r = Cli({Model(), "-o", (dir / "fixed").string(), "--microbatches", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(ReadFile(dir / "fixed" / "report.html"), Not(HasSubstr("<h2>Micro-batches</h2>")));
}

TEST(MicrobatchesAutoTest, CompareComparesAtTheChosenCount) {
  CommandResult r = Cli({"compare", Model(), "--algos", "sgp,m-etf", "--microbatches", "auto",
                         "--max-microbatches", "4", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json compared = Json(r.stdout_text);
  ASSERT_FALSE(compared.is_discarded());
  ExpectAWellChosenCurve(compared["microbatches_search"], 4);
  EXPECT_EQ(compared["microbatches"], compared["microbatches_search"]["chosen"]);
}

// More micro-batches hold more activations: on two devices of 64 MiB the
// GPT-2-like model fits with one micro-batch only. The counts without a plan
// are part of the curve, and the choice is the count that has one.
TEST(MicrobatchesAutoTest, CountsWithoutAPlanWithinMemoryAreSkipped) {
  const std::string gpt2 = std::string(AUTOPAR_MODELS_DIR) + "/gpt2_tiny_like.onnx";
  CommandResult r = RunCommand(
      {AUTOPAR_CLI, "place", gpt2, "--device", "V100", "--devices", "2", "--memory-per-device",
       "64MiB", "--microbatches", "auto", "--max-microbatches", "8", "--format", "json", "--quiet"},
      120);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json placed = Json(r.stdout_text);
  ASSERT_FALSE(placed.is_discarded());
  EXPECT_EQ(placed["feasible"], true);
  const nlohmann::json& search = placed["microbatches_search"];
  EXPECT_EQ(search["chosen"], 1);
  std::set<int> without_plan;
  for (const nlohmann::json& t : search["tried"]) {
    if (!t.contains("error")) continue;
    EXPECT_EQ(t["feasible"], false);
    EXPECT_TRUE(t["step_time_us"].is_null());
    EXPECT_FALSE(t["error"].get<std::string>().empty());
    EXPECT_TRUE(without_plan.insert(t["m"].get<int>()).second) << "tried twice: " << t["m"];
  }
  EXPECT_TRUE(without_plan.contains(8));
}

TEST(MicrobatchesAutoTest, BadInputIsOneLine) {
  ExpectCleanError(Cli({"place", Model(), "--microbatches", "auto", "--max-microbatches", "0"}),
                   kExitUsage, "--max-microbatches must be a number from 1 to 4096");
  ExpectCleanError(Cli({"place", Model(), "--max-microbatches", "4"}), kExitUsage,
                   "--max-microbatches goes with --microbatches auto");
  ExpectCleanError(Cli({"place", Model(), "--microbatches", "automatic"}), kExitUsage,
                   "--microbatches must be a positive number or auto");
  TempDir dir;
  ExpectCleanError(Cli({Model(), "-o", (dir / "o").string(), "--microbatches", "auto",
                        "--max-microbatches", "x"}),
                   kExitUsage, "--max-microbatches");
  ExpectCleanError(Cli({Model(), "-o", (dir / "o").string(), "--microbatches", "auto",
                        "--placement", (dir / "p.json").string()}),
                   kExitUsage, "--microbatches auto chooses the count with a searched placement");
  ExpectCleanError(Cli({"compare", Model(), "--microbatches", "auto", "--max-microbatches", "-1"}),
                   kExitUsage, "--max-microbatches");
}

}  // namespace
}  // namespace autopar
