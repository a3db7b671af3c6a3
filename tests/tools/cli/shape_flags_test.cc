// The shape flags every model-reading command shares, run as a user runs
// them: --input-value steering an If, the estimates listed once per kind on
// stderr and in plan.json, --strict-shapes refusing instead, and models with
// unsorted nodes accepted and written sorted.
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx_io/checker.h"
#include "onnx_io/model.h"
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
using testing::TempDir;

constexpr int kExitUsage = 1;
constexpr int kExitBadInput = 2;

// An If on a sample rate whose branches differ in shape, after an input with
// a dim that has neither name nor value; its nodes are out of order.
constexpr char kModel[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  rate_model (int64 rate, float[?,16] x) => (float[?,?] y) {
    y = If(high) <
      then_branch = then_g () => (float[?,?] a) { a = Concat <axis = 1> (h, h) },
      else_branch = else_g () => (float[?,?] b) { b = Neg(h) }
    >
    high = Greater(rate, limit)
    h = Relu(x)
    limit = Constant <value = int64 {16000}> ()
  }
)";

class ShapeFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<onnx::ModelProto> model = onnx_io::ParseModelText(kModel);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = dir_.Write("model.onnx", model->SerializeAsString()).string();
  }

  CommandResult Run(std::vector<std::string> args) {
    std::vector<std::string> argv = {AUTOPAR_CLI};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv);
  }

  TempDir dir_;
  std::string model_;
};

TEST_F(ShapeFlagsTest, EstimatesAreListedOncePerKindAndInPlanJson) {
  const std::string out = (dir_ / "out").string();
  CommandResult r = Run({model_, "-o", out, "--devices", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stderr_text,
              HasSubstr("onnx-autopar: estimated 1 unnamed input dim(s): 'x' dim 0 = 1"));
  EXPECT_THAT(r.stderr_text,
              HasSubstr("onnx-autopar: estimated 1 If branch shape(s): 'y' then-branch shape "
                        "[1,32] (other branch [1,16])"));
  nlohmann::json plan = nlohmann::json::parse(ReadFile(dir_ / "out" / "plan.json"));
  ASSERT_EQ(plan["estimates"].size(), 2u);
  EXPECT_EQ(plan["estimates"][0]["kind"], "unnamed input dim");
  EXPECT_EQ(plan["estimates"][0]["value"], "x");
  EXPECT_EQ(plan["estimates"][1]["kind"], "If branch shape");
  EXPECT_EQ(plan["estimates"][1]["value"], "y");
}

TEST_F(ShapeFlagsTest, InputValueDecidesTheIfAndBindingEverythingLeavesNoEstimate) {
  const std::string out = (dir_ / "out").string();
  CommandResult r = Run({model_, "-o", out, "--devices", "2", "--input-value", "rate=8000",
                         "--input-shape", "x=3,16"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stderr_text, Not(HasSubstr("estimated")));
  nlohmann::json plan = nlohmann::json::parse(ReadFile(dir_ / "out" / "plan.json"));
  EXPECT_TRUE(plan["estimates"].empty());
  CommandResult info =
      Run({"info", model_, "--input-value", "rate=44100", "--input-shape", "x=3,16"});
  ASSERT_EQ(info.exit_code, 0) << info.stderr_text;
  EXPECT_THAT(info.stdout_text, HasSubstr("y float32 [3,32]"));
}

TEST_F(ShapeFlagsTest, StrictShapesRefusesWhatWouldBeEstimated) {
  ExpectCleanError(Run({"cost", model_, "--strict-shapes"}), kExitBadInput, "--input-shape x=");
  ExpectCleanError(Run({"cost", model_, "--strict-shapes", "--input-shape", "x=2,16"}),
                   kExitBadInput, "'y' from If");
}

TEST_F(ShapeFlagsTest, MalformedValuesAreUsageErrors) {
  ExpectCleanError(Run({"cost", model_, "--input-value", "rate"}), kExitUsage, "--input-value");
  ExpectCleanError(Run({"cost", model_, "--input-value", "rate=fast"}), kExitUsage,
                   "--input-value");
  ExpectCleanError(Run({"cost", model_, "--loop-trips", "0"}), kExitUsage, "--loop-trips");
  ExpectCleanError(Run({"cost", model_, "--input-value", "nothere=1"}), kExitBadInput,
                   "'nothere', which is not an input");
}

TEST_F(ShapeFlagsTest, UnsortedNodesAreSortedInTheWrittenModels) {
  const std::string out = (dir_ / "out").string();
  CommandResult r = Run({model_, "-o", out, "--devices", "2", "--stages", "--input-value",
                         "rate=8000", "--input-shape", "x=3,16"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  int devices = 0, stages = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir_ / "out")) {
    if (e.path().extension() != ".onnx") continue;
    absl::StatusOr<onnx_io::Model> m = onnx_io::ModelFromProto([&] {
      onnx::ModelProto p;
      p.ParseFromString(ReadFile(e.path()));
      return p;
    }());
    ASSERT_TRUE(m.ok()) << e.path();
    // ModelFromProto keeps the order as written: the checker sees it.
    EXPECT_TRUE(onnx_io::CheckModel(m->proto, e.path().parent_path()).ok()) << e.path();
    ++(e.path().parent_path().filename() == "stages" ? stages : devices);
  }
  EXPECT_GE(devices, 1);
  EXPECT_GE(stages, 1);
}

TEST_F(ShapeFlagsTest, CycleIsOneErrorNamingItsNodes) {
  absl::StatusOr<onnx::ModelProto> model = onnx_io::ParseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y) {
      a = Add(x, b)
      b = Relu(a)
      y = Neg(b)
    }
  )");
  ASSERT_TRUE(model.ok());
  const std::string path = dir_.Write("cycle.onnx", model->SerializeAsString()).string();
  ExpectCleanError(Run({"info", path}), kExitBadInput,
                   "has a cycle through nodes Relu (output 'b') -> Add (output 'a') -> Relu");
}

}  // namespace
}  // namespace autopar
