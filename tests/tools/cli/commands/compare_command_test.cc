// `onnx-autopar compare` as a user runs it: the documented JSON, table and CSV
// outputs with the best plan marked, rows for algorithms that find no plan,
// the --report page, and one-line errors for bad flags.
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
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
constexpr int kExitInfeasible = 3;
constexpr int kExitIo = 4;

// A fork-join cost graph: n0 feeds six independent 100 µs units that n7
// joins. Each unit holds `param_bytes`; `memory_bytes` per device.
std::string ForkJoin(int devices, int64_t memory_bytes, int64_t param_bytes = 1000) {
  nlohmann::json nodes = nlohmann::json::array(), edges = nlohmann::json::array();
  for (int i = 0; i < 8; ++i) {
    const bool branch = i > 0 && i < 7;
    nodes.push_back({{"id", i},
                     {"name", "n" + std::to_string(i)},
                     {"op", "Op"},
                     {"compute_us", branch ? 100 : 10},
                     {"param_bytes", param_bytes},
                     {"output_bytes", {i == 0 ? 1000 : 100}},
                     {"temp_bytes", 0}});
  }
  for (int i = 1; i < 7; ++i) {
    edges.push_back({{"src", 0}, {"dst", i}, {"bytes", 1000}, {"tensor", "x"}});
    edges.push_back({{"src", i}, {"dst", 7}, {"bytes", 100}, {"tensor", "y" + std::to_string(i)}});
  }
  nlohmann::json graph = {{"nodes", nodes},
                          {"edges", edges},
                          {"devices",
                           {{"count", devices},
                            {"memory_bytes", std::vector<int64_t>(devices, memory_bytes)},
                            {"bandwidth_bytes_per_s", 1e10},
                            {"latency_us", 1}}}};
  return graph.dump();
}

CommandResult Compare(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {AUTOPAR_CLI, "compare"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

TEST(CompareCommandTest, JsonSchema) {
  TempDir dir;
  const std::string graph = dir.Write("g.json", ForkJoin(4, int64_t{1} << 30)).string();
  CommandResult r = Compare({"--costgraph", graph, "--format", "json", "--time-budget", "1s"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json report = nlohmann::json::parse(r.stdout_text);
  EXPECT_EQ(report["units"], 8);
  EXPECT_EQ(report["devices"], 4);
  EXPECT_GT(report["lower_bound_us"].get<double>(), 0);
  EXPECT_GT(report["single_device_step_us"].get<double>(), 600);
  ASSERT_TRUE(report["results"].is_array());

  // Every algorithm has a row (one device holds this model, so "single" too),
  // with every documented field.
  std::vector<std::string> algorithms;
  double best_step_us = 1e300;
  std::string fastest;
  for (const nlohmann::json& row : report["results"]) {
    algorithms.push_back(row["algorithm"]);
    for (const char* key :
         {"algorithm", "status", "step_time_us", "ratio_to_lower_bound", "speedup",
          "peak_memory_bytes", "memory_capacity_bytes", "peak_memory_over_capacity", "feasible",
          "cut_edges", "comm_bytes", "search_time_ms", "best"}) {
      EXPECT_TRUE(row.contains(key)) << row["algorithm"] << " lacks " << key;
    }
    ASSERT_EQ(row["status"], "ok") << row.dump();
    EXPECT_TRUE(row["feasible"].get<bool>());
    EXPECT_GE(row["ratio_to_lower_bound"].get<double>(), 1 - 1e-9);
    EXPECT_NEAR(row["speedup"].get<double>(),
                report["single_device_step_us"].get<double>() / row["step_time_us"].get<double>(),
                1e-9);
    EXPECT_LE(row["peak_memory_over_capacity"].get<double>(), 1);
    EXPECT_EQ(row["memory_capacity_bytes"], int64_t{1} << 30);
    EXPECT_GE(row["search_time_ms"].get<double>(), 0);
    if (row["step_time_us"].get<double>() < best_step_us) {
      best_step_us = row["step_time_us"];
      fastest = row["algorithm"];
    }
  }
  EXPECT_THAT(algorithms, ::testing::IsSupersetOf({"sgp", "single", "heft", "pipeline-dp"}));
  // Exactly one best row: the fastest, named at the top.
  EXPECT_EQ(report["best"], fastest);
  int best_rows = 0;
  for (const nlohmann::json& row : report["results"]) {
    if (row["best"].get<bool>()) {
      ++best_rows;
      EXPECT_EQ(row["algorithm"], fastest);
    }
  }
  EXPECT_EQ(best_rows, 1);
  // Six parallel branches on four devices: the best plan is well ahead of one
  // device.
  EXPECT_LT(best_step_us, 0.6 * report["single_device_step_us"].get<double>());
}

TEST(CompareCommandTest, TableMarksTheBestRow) {
  TempDir dir;
  const std::string graph = dir.Write("g.json", ForkJoin(4, int64_t{1} << 30)).string();
  CommandResult json =
      Compare({"--costgraph", graph, "--format", "json", "--algos", "single,heft"});
  ASSERT_EQ(json.exit_code, 0) << json.stderr_text;
  const std::string best = nlohmann::json::parse(json.stdout_text)["best"];
  EXPECT_EQ(best, "heft");

  CommandResult r = Compare({"--costgraph", graph, "--algos", "single,heft"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  std::vector<std::string> marked;
  for (absl::string_view line : absl::StrSplit(r.stdout_text, '\n')) {
    if (absl::StartsWith(line, "* ") && !absl::StrContains(line, "fastest")) {
      marked.emplace_back(line);
    }
  }
  ASSERT_EQ(marked.size(), 1u) << r.stdout_text;
  EXPECT_THAT(marked[0], StartsWith("* heft "));
  EXPECT_THAT(r.stdout_text, HasSubstr("  single "));
  EXPECT_THAT(r.stdout_text, HasSubstr("* the fastest plan that fits"));
}

TEST(CompareCommandTest, CsvHasOneRowPerAlgorithm) {
  TempDir dir;
  const std::string graph = dir.Write("g.json", ForkJoin(2, int64_t{1} << 30)).string();
  CommandResult r = Compare({"--costgraph", graph, "--format", "csv", "--algos", "heft,sgp,heft"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  std::vector<std::string> lines = absl::StrSplit(r.stdout_text, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << r.stdout_text;  // header, heft, sgp: each algorithm once
  EXPECT_THAT(lines[0], StartsWith("algorithm,status,step_time_us,"));
  EXPECT_THAT(lines[1], StartsWith("heft,ok,"));
  EXPECT_THAT(lines[2], StartsWith("sgp,ok,"));
  const size_t fields = std::count(lines[0].begin(), lines[0].end(), ',');
  for (const std::string& line : lines)
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), fields);
}

TEST(CompareCommandTest, AlgorithmsWithoutAPlanGetARow) {
  TempDir dir;
  // 8,000 parameter bytes: one device of 6,000 cannot hold them, two can.
  const std::string graph = dir.Write("g.json", ForkJoin(2, 6000)).string();
  CommandResult r = Compare({"--costgraph", graph, "--format", "json", "--algos", "single,sgp"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json report = nlohmann::json::parse(r.stdout_text);
  ASSERT_EQ(report["results"].size(), 2u);
  const nlohmann::json& single = report["results"][0];
  EXPECT_EQ(single["status"], "infeasible");
  EXPECT_FALSE(single["feasible"].get<bool>());
  EXPECT_TRUE(single["step_time_us"].is_null());
  EXPECT_THAT(single["error"].get<std::string>(), HasSubstr("does not fit"));
  EXPECT_EQ(report["best"], "sgp");

  // "all" leaves "single" out when one device cannot hold the model.
  CommandResult all = Compare({"--costgraph", graph, "--format", "json", "--time-budget", "1s"});
  ASSERT_EQ(all.exit_code, 0) << all.stderr_text;
  // Named: a range-for over a member of a temporary would read freed memory.
  const nlohmann::json all_report = nlohmann::json::parse(all.stdout_text);
  for (const nlohmann::json& row : all_report["results"]) {
    EXPECT_NE(row["algorithm"], "single");
  }

  // Nothing fits: every row says so, the table lists why, exit code 3.
  const std::string tiny = dir.Write("tiny.json", ForkJoin(2, 3000)).string();
  CommandResult none = Compare({"--costgraph", tiny, "--algos", "sgp,heft"});
  EXPECT_EQ(none.exit_code, kExitInfeasible) << none.stderr_text;
  EXPECT_THAT(none.stdout_text, HasSubstr("no algorithm found a plan that fits"));
  EXPECT_THAT(none.stdout_text, HasSubstr("sgp, heft: the model does not fit"));
}

TEST(CompareCommandTest, ReportDrawsEveryPlanBehindASelector) {
  TempDir dir;
  const std::string graph = dir.Write("g.json", ForkJoin(3, int64_t{1} << 30)).string();
  const std::string report = (dir / "cmp.html").string();
  CommandResult r = Compare({"--costgraph", graph, "--algos", "sgp,tga,round-robin",
                             "--max-generations", "3", "--report", report, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const std::string best = nlohmann::json::parse(r.stdout_text)["best"];
  std::ifstream in(report, std::ios::binary);
  std::stringstream html;
  html << in.rdbuf();
  const std::string text = html.str();
  EXPECT_THAT(text, StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(text, HasSubstr("class=\"comparison\""));
  EXPECT_THAT(text, HasSubstr("<tr class=\"best\"><td class=\"l\">" + best + " *</td>"));
  // One section per algorithm; the best one shown, TGA's with its curve.
  for (const char* algorithm : {"sgp", "tga", "round-robin"}) {
    EXPECT_THAT(text, HasSubstr(std::string("<section class=\"plan\" data-algorithm=\"") +
                                algorithm + (algorithm == best ? "\">" : "\" hidden>")));
  }
  EXPECT_THAT(text, HasSubstr("<option value=\"" + best + "\" selected>"));
  EXPECT_THAT(text, HasSubstr("<h2>Convergence</h2>"));
  // SGP's plan is at the lower bound already, so TGA ends before generation 1.
  EXPECT_THAT(text, HasSubstr("<tr><th class=\"l\">generations</th><td class=\"l\">0</td>"));
  // Round robin spreads the fork over the three devices: their lanes and links.
  EXPECT_THAT(text, HasSubstr("class=\"lanelabel\">device 2 "));
  EXPECT_THAT(text, HasSubstr("class=\"lanelabel\">link 0&#8594;1<"));
  // An unwritable report path is a clean error.
  ExpectCleanError(Compare({"--costgraph", graph, "--algos", "sgp", "--report",
                            (dir / "no" / "such" / "dir.html").string()}),
                   kExitIo, "cannot write");
}

TEST(CompareCommandTest, BadFlagsAreOneLineUsageErrors) {
  TempDir dir;
  const std::string graph = dir.Write("g.json", ForkJoin(2, int64_t{1} << 30)).string();
  ExpectCleanError(Compare({}), kExitUsage, "one model file");
  ExpectCleanError(Compare({"--costgraph", graph, "--format", "xml"}), kExitUsage, "--format");
  ExpectCleanError(Compare({"--costgraph", graph, "--algos", "sgp,nope"}), kExitUsage,
                   "unknown algorithm 'nope'");
  ExpectCleanError(Compare({"--costgraph", graph, "--algos", ","}), kExitUsage, "--algos");
  ExpectCleanError(Compare({"--costgraph", graph, "--algo", "sgp"}), kExitUsage,
                   "unknown flag '--algo'");
  ExpectCleanError(Compare({"--costgraph", graph, "--seed", "x"}), kExitUsage, "--seed");
  ExpectCleanError(Compare({"--costgraph", graph, "--max-generations", "0"}), kExitUsage,
                   "--max-generations");
  ExpectCleanError(Compare({"--costgraph", graph, "extra.onnx"}), kExitUsage, "one model file");
}

}  // namespace
}  // namespace autopar
