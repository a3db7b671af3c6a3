// What scripts read from onnx-autopar, run as a user runs it: --json prints
// one JSON object on stdout and nothing else; --dot writes the placed graph;
// and with stderr not a terminal (as under ctest) no progress bar appears.
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
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace autopar {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFile;
using testing::RunCommand;
using ::testing::StartsWith;
using testing::TempDir;

// Two branches with 4 KiB weights each (WEIGHTS is replaced by their values).
constexpr char kModel[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  branchy (float[8,32] x) => (float[8,32] y)
  <float[32,32] w1 = {WEIGHTS}, float[32,32] w2 = {WEIGHTS}> {
    a = MatMul(x, w1)
    b = Relu(a)
    c = MatMul(x, w2)
    d = Sigmoid(c)
    y = Add(b, d)
  }
)";

// No progress output: no carriage return, no bar, no spinner line.
void ExpectNoProgress(const CommandResult& r) {
  EXPECT_EQ(r.stderr_text.find('\r'), std::string::npos) << r.stderr_text;
  EXPECT_THAT(r.stderr_text, Not(HasSubstr("[#")));
  EXPECT_THAT(r.stderr_text, Not(HasSubstr("[-")));
  EXPECT_THAT(r.stderr_text, Not(HasSubstr("\x1b[K")));
  EXPECT_THAT(r.stderr_text, Not(HasSubstr("generation ")));
}

class MachineOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string weights = absl::StrJoin(std::vector<int>(32 * 32, 3), ",");
    absl::StatusOr<onnx::ModelProto> model =
        onnx_io::ParseModelText(absl::StrReplaceAll(kModel, {{"WEIGHTS", weights}}));
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = dir_.Write("model.onnx", model->SerializeAsString()).string();
  }

  CommandResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), AUTOPAR_CLI);
    return RunCommand(args);
  }

  TempDir dir_;
  std::string model_;
};

TEST_F(MachineOutputTest, JsonIsTheOnlyThingOnStdout) {
  const std::string out = (dir_ / "out").string();
  CommandResult r = Run({model_, "-o", out, "--devices", "2", "--algo", "round-robin", "--seed",
                         "7", "--stages", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stderr_text, "");
  // parse() rejects anything after the object but whitespace.
  const nlohmann::json summary = nlohmann::json::parse(r.stdout_text);
  ASSERT_TRUE(summary.is_object());
  EXPECT_EQ(summary["out_dir"], out);
  EXPECT_EQ(summary["algorithm"], "round-robin");
  EXPECT_EQ(summary["seed"], 7);
  EXPECT_GT(summary["step_time_us"].get<double>(), 0);
  EXPECT_GE(summary["step_time_us"].get<double>(), summary["lower_bound_us"].get<double>());
  EXPECT_GT(summary["speedup"].get<double>(), 0);
  EXPECT_GE(summary["search_time_ms"].get<double>(), 0);
  EXPECT_GT(summary["transfers"].get<int>(), 0);
  EXPECT_GT(summary["comm_bytes"].get<int64_t>(), 0);
  EXPECT_GT(summary["stages"].get<int>(), 0);
  ASSERT_EQ(summary["devices"].size(), 2u);
  for (const nlohmann::json& device : summary["devices"]) {
    EXPECT_GT(device["peak_memory_bytes"].get<int64_t>(), 0);
    EXPECT_GT(device["memory_capacity_bytes"].get<int64_t>(), 0);
    EXPECT_TRUE(fs::exists(fs::path(out) / device["file"].get<std::string>()));
  }
  // The files listed are the files written.
  std::set<std::string> listed;
  for (const nlohmann::json& f : summary["files"]) listed.insert(f.get<std::string>());
  std::set<std::string> written;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(out)) {
    if (e.is_regular_file()) written.insert(fs::relative(e.path(), out).generic_string());
  }
  EXPECT_EQ(listed, written);
  EXPECT_TRUE(listed.contains("plan.json"));
  EXPECT_TRUE(listed.contains("report.html"));
  // plan.json agrees.
  const nlohmann::json plan = nlohmann::json::parse(ReadFile(fs::path(out) / "plan.json"));
  EXPECT_EQ(plan["predicted"]["step_time_us"], summary["step_time_us"]);
}

TEST_F(MachineOutputTest, WithoutJsonTheSummaryIsText) {
  CommandResult r = Run({model_, "-o", (dir_ / "out").string(), "--devices", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, StartsWith("wrote "));
  ExpectNoProgress(r);
}

TEST_F(MachineOutputTest, DotOfTheSplitAndOfPlace) {
  const fs::path split_dot = dir_ / "split.dot";
  CommandResult r = Run({model_, "-o", (dir_ / "out").string(), "--devices", "2", "--algo",
                         "round-robin", "--dot", split_dot.string()});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const std::string dot = ReadFile(split_dot);
  EXPECT_THAT(dot, StartsWith("digraph placement {"));
  EXPECT_THAT(dot, HasSubstr("fillcolor=\"#8dd3c7\""));  // device 0
  EXPECT_THAT(dot, HasSubstr("fillcolor=\"#ffffb3\""));  // device 1
  EXPECT_THAT(dot, HasSubstr("style=bold"));

  const fs::path place_dot = dir_ / "place.dot";
  r = Run(
      {"place", model_, "--devices", "2", "--algo", "round-robin", "--dot", place_dot.string()});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(ReadFile(place_dot), dot);  // the same units, the same placement
  ExpectNoProgress(r);

  r = Run({"place", model_, "--dot", (dir_ / "no" / "such" / "dir.dot").string()});
  EXPECT_EQ(r.exit_code, 2);  // like -o into a missing folder
  EXPECT_THAT(r.stderr_text, HasSubstr("does not exist"));
  // Refused before anything is written.
  r = Run({model_, "-o", (dir_ / "out2").string(), "--dot", (dir_ / "no" / "x.dot").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(dir_ / "out2"));
}

TEST_F(MachineOutputTest, NoProgressWhenStderrIsNotATerminal) {
  // TGA reports every generation when it may; loading, coarsening and
  // writing weights report too. None of it may reach a pipe.
  CommandResult r = Run({model_, "-o", (dir_ / "out").string(), "--devices", "2", "--algo", "tga",
                         "--time-budget", "0.3s"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  ExpectNoProgress(r);
  r = Run({"place", model_, "--devices", "2", "--algo", "tga", "--time-budget", "0.3s"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  ExpectNoProgress(r);
}

}  // namespace
}  // namespace autopar
