// `onnx-autopar size` as a user runs it: the smallest device count that fits
// is the one a manual sweep of `place --devices k` finds, a step target picks
// the smallest count that meets it, the JSON document's shape, the --report
// page (a row per count, the answer line, each count's micro-batch curve),
// one-line usage errors, and exit 3 with the memory needed when no count fits.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
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
using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

constexpr int kExitUsage = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitInfeasible = 3;

std::string Model(const std::string& name) {
  return std::string(AUTOPAR_MODELS_DIR) + "/" + name + ".onnx";
}

CommandResult Cli(std::vector<std::string> args) {
  args.insert(args.begin(), AUTOPAR_CLI);
  args.push_back("--quiet");
  return RunCommand(args, 300);
}

nlohmann::json Json(const std::string& text) {
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

struct FitCase {
  std::string model;
  std::string memory;
  int max_devices;
};

class SmallestFitTest : public ::testing::TestWithParam<FitCase> {};

// The model needs several devices just to fit; `size` names the count that a
// sweep of `place --devices k` with the same flags finds first, and agrees
// with every count's verdict.
TEST_P(SmallestFitTest, MatchesAManualSweepOfPlace) {
  const FitCase& c = GetParam();
  ASSERT_TRUE(fs::exists(Model(c.model))) << "the exported_models fixture writes it";
  const std::vector<std::string> flags = {
      "--device", "V100", "--memory-per-device", c.memory, "--max-microbatches", "4"};
  std::vector<std::string> args = {"size", Model(c.model), "--max-devices",
                                   std::to_string(c.max_devices), "--json"};
  args.insert(args.end(), flags.begin(), flags.end());
  CommandResult sized = Cli(args);
  ASSERT_EQ(sized.exit_code, 0) << sized.stderr_text;
  const nlohmann::json doc = Json(sized.stdout_text);
  ASSERT_FALSE(doc.is_discarded()) << sized.stdout_text;
  const nlohmann::json& rows = doc["rows"];
  ASSERT_EQ(rows.size(), static_cast<size_t>(c.max_devices));

  int first_fit = 0;
  for (int k = 1; k <= c.max_devices; ++k) {
    std::vector<std::string> place = {
        "place",          Model(c.model), "--devices", std::to_string(k),
        "--microbatches", "auto",         "--format",  "json"};
    place.insert(place.end(), flags.begin(), flags.end());
    CommandResult placed = Cli(place);
    ASSERT_THAT(placed.exit_code, ::testing::AnyOf(0, kExitInfeasible)) << placed.stderr_text;
    bool fits = false;
    if (placed.exit_code == 0) {
      const nlohmann::json plan = Json(placed.stdout_text);
      ASSERT_FALSE(plan.is_discarded());
      fits = plan["feasible"].get<bool>();
    }
    EXPECT_EQ(rows[k - 1]["devices"], k);
    EXPECT_EQ(rows[k - 1]["fits"].get<bool>(), fits) << k << " devices";
    if (fits && first_fit == 0) first_fit = k;
  }
  EXPECT_GT(first_fit, 1) << "the case should need several devices";
  EXPECT_EQ(doc["answer"]["devices"], first_fit);
}

INSTANTIATE_TEST_SUITE_P(Models, SmallestFitTest,
                         ::testing::Values(FitCase{"gpt2_tiny_like", "56MiB", 4},
                                           FitCase{"resnet50", "30MB", 6}),
                         [](const auto& info) { return info.param.model; });

// One V100 takes about 750 us for the GPT-2-like model; two, split, less
// with one micro-batch. A target between the two picks two devices, the
// first count whose row fits within it.
TEST(SizeCommandTest, TargetStepPicksTheSmallestCountThatMeetsIt) {
  const std::vector<std::string> common = {
      "size", Model("gpt2_tiny_like"), "--device", "V100", "--max-devices",
      "4",    "--max-microbatches",    "8"};
  std::vector<std::string> args = common;
  for (const char* a : {"--target-step", "0.72ms", "--json"}) args.push_back(a);
  CommandResult r = Cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json doc = Json(r.stdout_text);
  ASSERT_FALSE(doc.is_discarded());
  EXPECT_DOUBLE_EQ(doc["target"]["step_us"].get<double>(), 720);
  int expected = 0;
  for (const nlohmann::json& row : doc["rows"]) {
    const bool meets = row["fits"].get<bool>() && row["step_time_us"].get<double>() <= 720;
    EXPECT_EQ(row["meets_target"].get<bool>(), meets) << row.dump();
    if (meets && expected == 0) expected = row["devices"].get<int>();
  }
  EXPECT_EQ(expected, 2);
  EXPECT_EQ(doc["answer"]["devices"], expected);

  // The text names it; a target no count meets exits 3 and names the closest.
  args = common;
  for (const char* a : {"--target-step", "0.72ms"}) args.push_back(a);
  r = Cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("answer: 2 devices, the fewest that fit with a step"));
  args = common;
  for (const char* a : {"--target-step", "10us"}) args.push_back(a);
  r = Cli(args);
  EXPECT_EQ(r.exit_code, kExitUsage) << "us is not a unit of durations";
  args = common;
  for (const char* a : {"--target-step", "0.001ms"}) args.push_back(a);
  r = Cli(args);
  EXPECT_EQ(r.exit_code, kExitInfeasible) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("answer: none: no count of 1..4 devices fits with a step"));
  EXPECT_THAT(r.stdout_text, HasSubstr("the closest"));
}

TEST(SizeCommandTest, JsonShape) {
  CommandResult r = Cli({"size", Model("gpt2_tiny_like"), "--device", "V100", "--max-devices", "3",
                         "--max-microbatches", "4", "--target-throughput", "100", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json doc = Json(r.stdout_text);
  ASSERT_TRUE(doc.is_object()) << r.stdout_text;
  for (const char* key : {"max_devices", "device", "cluster", "mode", "algorithm",
                          "max_microbatches", "batch", "target", "rows", "answer"}) {
    EXPECT_TRUE(doc.contains(key)) << key;
  }
  EXPECT_EQ(doc["max_devices"], 3);
  EXPECT_EQ(doc["algorithm"], "sgp");
  EXPECT_EQ(doc["mode"], "inference");
  EXPECT_EQ(doc["batch"], 1);
  EXPECT_TRUE(doc["target"]["step_us"].is_null());
  EXPECT_DOUBLE_EQ(doc["target"]["samples_per_s"].get<double>(), 100);
  ASSERT_EQ(doc["rows"].size(), 3u);
  for (const nlohmann::json& row : doc["rows"]) {
    for (const char* key :
         {"devices", "fits", "meets_target", "microbatches", "step_time_us", "time_per_sample_us",
          "samples_per_s", "peak_memory_bytes", "memory_capacity_bytes", "split_predicted_slower",
          "slower_than_devices", "error"}) {
      EXPECT_TRUE(row.contains(key)) << key;
    }
    EXPECT_TRUE(row["fits"].get<bool>());
    const double per_sample = row["time_per_sample_us"].get<double>();
    EXPECT_NEAR(per_sample, row["step_time_us"].get<double>() / row["microbatches"].get<double>(),
                1e-6);
    EXPECT_NEAR(row["samples_per_s"].get<double>(), 1e6 / per_sample, 1e-6);
    EXPECT_LE(row["peak_memory_bytes"].get<int64_t>(), row["memory_capacity_bytes"].get<int64_t>());
  }
  // One device already makes more than 100 samples/s.
  EXPECT_EQ(doc["answer"]["devices"], 1);
  for (const char* key :
       {"devices", "closest_devices", "memory_needed_bytes", "memory_needed_per_device_bytes"}) {
    EXPECT_TRUE(doc["answer"].contains(key)) << key;
  }
  EXPECT_TRUE(doc["answer"]["memory_needed_bytes"].is_null());
}

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// --report writes the table as a page: a row per count with the figures the
// JSON has, the answer line the text prints, and per count the curve of
// micro-batch counts its M was chosen from.
TEST(SizeCommandTest, ReportHasARowPerCountAndTheAnswer) {
  TempDir dir;
  const fs::path report = dir / "size.html";
  const std::vector<std::string> common = {
      "size", Model("gpt2_tiny_like"), "--device", "V100", "--max-devices",
      "3",    "--max-microbatches",    "4"};
  std::vector<std::string> args = common;
  for (const std::string& a : {std::string("--report"), report.string()}) args.push_back(a);
  CommandResult text = Cli(args);
  ASSERT_EQ(text.exit_code, 0) << text.stderr_text;
  ASSERT_TRUE(fs::exists(report));
  const std::string html = ReadFile(report);
  EXPECT_THAT(html, ::testing::StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(html, ::testing::EndsWith("</html>\n"));
  // The answer line, as the text prints it.
  const size_t at = text.stdout_text.find("answer: ");
  ASSERT_NE(at, std::string::npos) << text.stdout_text;
  const std::string answer = text.stdout_text.substr(at, text.stdout_text.find('\n', at) - at);
  EXPECT_THAT(html, HasSubstr("<p class=\"answer\"><b>" + answer + "</b></p>"));

  // A row per count, with the JSON's figures; the answer's row marked.
  args = common;
  args.push_back("--json");
  CommandResult json = Cli(args);
  ASSERT_EQ(json.exit_code, 0) << json.stderr_text;
  const nlohmann::json doc = Json(json.stdout_text);
  ASSERT_TRUE(doc.is_object()) << json.stdout_text;
  const size_t table = html.find("<table class=\"size\">");
  ASSERT_NE(table, std::string::npos);
  const std::string rows = html.substr(table, html.find("</table>", table) - table);
  EXPECT_EQ(Count(rows, "<tr"), 4) << "a header and a row per count";
  for (const nlohmann::json& row : doc["rows"]) {
    const int devices = row["devices"].get<int>();
    const bool marked = doc["answer"]["devices"] == devices;
    EXPECT_THAT(rows,
                HasSubstr(absl::StrFormat("%s<td>%d%s</td><td>%.1f&#160;&#181;s</td>"
                                          "<td>%.2f&#160;&#181;s</td><td>%.1f</td>",
                                          marked ? "<tr class=\"best\">" : "<tr>", devices,
                                          marked ? " *" : "", row["step_time_us"].get<double>(),
                                          row["time_per_sample_us"].get<double>(),
                                          row["samples_per_s"].get<double>())))
        << devices << " devices";
    EXPECT_THAT(rows, HasSubstr(absl::StrFormat("<td>yes</td><td>%d</td>",
                                                row["microbatches"].get<int>())));
  }
  // Each count's micro-batch curve: charts and a table row per count tried
  // (1, 2 and 4).
  for (int devices = 1; devices <= 3; ++devices)
    EXPECT_THAT(
        html, HasSubstr(absl::StrFormat("<details class=\"count\" data-devices=\"%d\"", devices)));
  EXPECT_EQ(Count(html, "<table class=\"mbtable\">"), 3);
  EXPECT_EQ(Count(html, "<svg class=\"curve mb\""), 6);

  // The same sweep writes the same bytes (Note [Deterministic report]).
  const fs::path again = dir / "again.html";
  args = common;
  for (const std::string& a : {std::string("--report"), again.string()}) args.push_back(a);
  ASSERT_EQ(Cli(args).exit_code, 0);
  EXPECT_EQ(ReadFile(again), html);
}

TEST(SizeCommandTest, BadInputIsOneUsageLine) {
  const std::string model = Model("gpt2_tiny_like");
  ExpectCleanError(Cli({"size", model, "--max-devices", "0"}), kExitUsage,
                   "--max-devices must be a number from 1 to 64");
  ExpectCleanError(Cli({"size", model, "--target-step", "abc"}), kExitUsage,
                   "--target-step must be a positive time");
  ExpectCleanError(Cli({"size", model, "--target-step", "20ms", "--target-throughput", "100"}),
                   kExitUsage, "not both");
  ExpectCleanError(Cli({"size", model, "--target-throughput", "-5"}), kExitUsage,
                   "--target-throughput must be a positive number");
  ExpectCleanError(Cli({"size", model, "--devices", "4"}), kExitUsage, "--max-devices");
  ExpectCleanError(Cli({"size", model, "--microbatches", "4"}), kExitUsage, "microbatches");
  ExpectCleanError(Cli({"size", model, "--algo", "nope"}), kExitUsage, "unknown algorithm 'nope'");
  ExpectCleanError(Cli({"size", model, "--cluster", "cpu:2x1"}), kExitUsage, "cpu:KxT");
  ExpectCleanError(Cli({"size"}), kExitUsage, "give one model file");
  ExpectCleanError(Cli({"size", model, "--report", ""}), kExitUsage, "--report needs a file name");
  // A report into a folder that does not exist is refused before the sweep.
  TempDir dir;
  const std::string missing = (dir / "no" / "such" / "size.html").string();
  ExpectCleanError(Cli({"size", model, "--report", missing}), kExitBadInput, "does not exist");
  EXPECT_FALSE(fs::exists(missing));
}

// 40 MiB V100s: the GPT-2-like model's LM head alone needs more, so no count
// fits; the one line says what the model needs and about how much per device.
TEST(SizeCommandTest, NoCountFitsExitsThreeWithTheMemoryNeeded) {
  const std::vector<std::string> args = {"size",
                                         Model("gpt2_tiny_like"),
                                         "--device",
                                         "V100",
                                         "--memory-per-device",
                                         "40MiB",
                                         "--max-devices",
                                         "3",
                                         "--max-microbatches",
                                         "2"};
  CommandResult r = Cli(args);
  ExpectCleanError(r, kExitInfeasible, "no count of 1..3 devices of ");
  EXPECT_THAT(r.stderr_text, HasSubstr("the model needs 75.3 MiB on one device"));
  EXPECT_THAT(r.stderr_text, HasSubstr("3 devices would need about "));
  EXPECT_THAT(r.stdout_text, HasSubstr("no plan within memory"));

  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  r = Cli(json_args);
  EXPECT_EQ(r.exit_code, kExitInfeasible);
  const nlohmann::json doc = Json(r.stdout_text);
  ASSERT_TRUE(doc.is_object()) << r.stdout_text;
  EXPECT_TRUE(doc["answer"]["devices"].is_null());
  EXPECT_TRUE(doc["answer"]["closest_devices"].is_null());
  const int64_t total = doc["answer"]["memory_needed_bytes"].get<int64_t>();
  const int64_t each = doc["answer"]["memory_needed_per_device_bytes"].get<int64_t>();
  EXPECT_GT(each, int64_t{40} << 20);  // more than the devices have
  EXPECT_GE(each, total / 3);
  EXPECT_LE(each, total);
  for (const nlohmann::json& row : doc["rows"]) {
    EXPECT_FALSE(row["fits"].get<bool>());
    if (row["microbatches"].is_null()) {
      EXPECT_FALSE(row["error"].get<std::string>().empty());
    }
  }
}

}  // namespace
}  // namespace autopar
