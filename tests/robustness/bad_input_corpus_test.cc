// Runs every case of the bad-input corpus (bad_input_corpus.h) through the
// onnx-autopar executable as a user would, and checks the promise of
// A failure is one "onnx-autopar: error: ..." line with the
// documented exit code, never a crash, a hang or a half-written output; an
// input that is merely unusual gives a correct deployment.
#include "tests/robustness/bad_input_corpus.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx_io/checker.h"
#include "onnx_io/model.h"
#include "onnx_io/send_recv_schema.h"
#include "tests/testing/cli_expectations.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"
#include "tools/cli/exit_codes.h"

namespace autopar::testing {
namespace {

namespace fs = std::filesystem;

// Generous: the slowest case (a 1 s TGA search) takes about two seconds.
constexpr int kTimeoutSeconds = 120;

std::set<std::string> Entries(const fs::path& dir) {
  std::set<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    names.insert(e.path().filename().string());
  }
  return names;
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The runner checks a deployment against the original model in ONNX Runtime;
// it is optional (node and its onnxruntime-node package).
bool RunnerInstalled() {
  return fs::exists(AUTOPAR_NODE) &&
         fs::exists(fs::path(AUTOPAR_RUNNER_DIR) / "node_modules" / "onnxruntime-node");
}

// A successful split wrote a deployment that holds together: plan.json names
// every node of the source, every device and stage model loads and passes the
// ONNX checker, and (where it can run) ONNX Runtime computes what the
// original model computes.
void ExpectValidDeployment(const fs::path& out, const fs::path& model_path, bool run_in_ort,
                           int& ort_runs) {
  ASSERT_TRUE(fs::exists(out / "plan.json"));
  const nlohmann::json plan = nlohmann::json::parse(ReadText(out / "plan.json"));
  absl::StatusOr<onnx_io::Model> source = onnx_io::LoadModel(model_path);
  ASSERT_TRUE(source.ok()) << source.status();
  for (const onnx::NodeProto& node : source->proto.graph().node()) {
    if (node.name().empty()) continue;
    EXPECT_TRUE(plan["node_to_device"].contains(node.name())) << "plan.json lacks " << node.name();
  }
  onnx_io::RegisterSendRecvSchemas();
  std::vector<std::string> files;
  for (const nlohmann::json& device : plan["devices"]) {
    // A device the placement leaves empty has no model.
    if (device["model"].is_null()) {
      EXPECT_EQ(device["nodes"], 0) << out;
      continue;
    }
    files.push_back(device["model"]);
  }
  for (const nlohmann::json& stage : plan["stages"]) files.push_back(stage["model"]);
  EXPECT_FALSE(files.empty());
  for (const std::string& file : files) {
    absl::StatusOr<onnx_io::Model> model = onnx_io::LoadModel(out / file);
    ASSERT_TRUE(model.ok()) << file << ": " << model.status();
    absl::Status checked = onnx_io::CheckModel(model->proto, (out / file).parent_path());
    EXPECT_TRUE(checked.ok()) << file << ": " << checked;
  }
  if (!run_in_ort || !RunnerInstalled()) return;
  CommandResult r =
      RunCommand({AUTOPAR_NODE, std::string(AUTOPAR_RUNNER_DIR) + "/run_deployment.mjs",
                  out.string(), "--check", model_path.string()},
                 kTimeoutSeconds);
  ++ort_runs;
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_THAT(r.stdout_text, ::testing::HasSubstr("PASS"));
}

int FailuresSoFar() {
  return ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
}

TEST(BadInputCorpusTest, EveryCaseIsHandled) {
  const std::vector<CorpusCase> corpus = BadInputCorpus();
  int runs = 0;
  int handled = 0;
  int ort_runs = 0;
  for (const CorpusCase& c : corpus) {
    TempDir dir;
    for (const auto& [name, bytes] : c.files) {
      fs::create_directories((dir / name).parent_path());
      dir.Write(name, bytes);
    }
    const fs::path out = dir / "out";
    for (const CorpusRun& run : c.runs) {
      SCOPED_TRACE(absl::StrCat(c.name, " / ", run.label, " ", absl::StrJoin(run.args, " ")));
      const int failures_before = FailuresSoFar();
      const std::set<std::string> before = Entries(dir.path());
      std::vector<std::string> argv = {AUTOPAR_CLI};
      for (const std::string& arg : run.args) {
        argv.push_back(
            absl::StrReplaceAll(arg, {{"{dir}", dir.path().string()}, {"{out}", out.string()}}));
      }
      const CommandResult r = RunCommand(argv, kTimeoutSeconds);
      ++runs;
      EXPECT_FALSE(r.timed_out) << "hung";
      EXPECT_NE(r.exit_code, tools::kExitInternal) << r.stderr_text;
      if (run.outcome.exit_code != tools::kExitOk) {
        ExpectCleanError(r, run.outcome.exit_code, run.outcome.needle);
        // Nothing written, not even a temporary folder.
        EXPECT_EQ(Entries(dir.path()), before);
      } else {
        EXPECT_EQ(r.signal, 0);
        EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
        EXPECT_EQ(r.stderr_text, "");
        if (fs::exists(out)) {
          ExpectValidDeployment(out, dir / "model.onnx", run.outcome.run_in_ort, ort_runs);
          fs::remove_all(out);
        }
      }
      if (FailuresSoFar() == failures_before) ++handled;
    }
  }
  std::printf(
      "bad-input corpus: %d cases, %d handled (%zu inputs; %d deployments run in ONNX "
      "Runtime%s)\n",
      runs, handled, corpus.size(), ort_runs, RunnerInstalled() ? "" : ", runner not installed");
  EXPECT_EQ(handled, runs);
}

}  // namespace
}  // namespace autopar::testing
