// --triton and --triton-gpus through the executable: the repository appears
// inside OUT_DIR with configs that parse, GPUs follow the list, and bad
// combinations are one-line usage errors that write nothing.
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx_io/text_format.h"
#include "tests/testing/cli_expectations.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"
#include "tools/artifacts/triton/model_config.pb.h"

namespace autopar {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using ::testing::Contains;
using testing::ExpectCleanError;
using ::testing::HasSubstr;
using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;

constexpr int kExitUsage = 1;

// Four nodes in a chain, so that two devices get work.
constexpr char kChain[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  chain (float[64,64] x) => (float[64,64] y) {
    a = MatMul(x, x)
    b = Relu(a)
    c = MatMul(b, x)
    y = Relu(c)
  }
)";

fs::path WriteModel(const TempDir& dir, const std::string& name) {
  absl::StatusOr<onnx::ModelProto> model = onnx_io::ParseModelText(kChain);
  EXPECT_TRUE(model.ok()) << model.status();
  return dir.Write(name, model->SerializeAsString());
}

CommandResult Split(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {AUTOPAR_CLI};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, 300);
}

triton::ModelConfig ReadConfig(const fs::path& path) {
  triton::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(ReadFile(path), &config)) << path;
  return config;
}

TEST(TritonFlagsTest, TritonWithoutStagesIsAUsageError) {
  TempDir dir;
  const fs::path model = WriteModel(dir, "chain.onnx");
  ExpectCleanError(Split({model.string(), "-o", (dir / "out").string(), "--triton"}), kExitUsage,
                   "--triton needs --stages");
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(TritonFlagsTest, BadGpuListsAreUsageErrors) {
  TempDir dir;
  const fs::path model = WriteModel(dir, "chain.onnx");
  const std::string out = (dir / "out").string();
  ExpectCleanError(Split({model.string(), "-o", out, "--stages", "--triton-gpus", "0,1"}),
                   kExitUsage, "--triton-gpus applies to --triton only");
  for (const char* bad : {"0,x", "0,,1", "-1", ""}) {
    ExpectCleanError(
        Split({model.string(), "-o", out, "--stages", "--triton", "--triton-gpus", bad}),
        kExitUsage, "--triton-gpus takes GPU indices");
  }
  ExpectCleanError(Split({model.string(), "-o", out, "--stages", "--triton", "--devices", "4",
                          "--triton-gpus", "0,1"}),
                   kExitUsage, "the plan has 4 devices but --triton-gpus lists 2");
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(TritonFlagsTest, BadMaxBatchSizesAreUsageErrors) {
  TempDir dir;
  const fs::path model = WriteModel(dir, "chain.onnx");
  const std::string out = (dir / "out").string();
  ExpectCleanError(Split({model.string(), "-o", out, "--stages", "--triton-max-batch", "4"}),
                   kExitUsage, "--triton-max-batch applies to --triton only");
  for (const char* bad : {"-1", "x", "", "2.5"}) {
    ExpectCleanError(
        Split({model.string(), "-o", out, "--stages", "--triton", "--triton-max-batch", bad}),
        kExitUsage, "--triton-max-batch takes a batch size");
  }
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(TritonFlagsTest, WritesARepositoryWhoseConfigsParseAndFollowTheGpuList) {
  TempDir dir;
  const fs::path model = WriteModel(dir, "my chain (v2).onnx");
  const fs::path out = dir / "out";
  const CommandResult r = Split({model.string(), "-o", out.string(), "--devices", "2", "--stages",
                                 "--triton", "--triton-gpus", "6,4", "--algo", "round-robin",
                                 "--allow-slower-split", "--quiet", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const fs::path repo = out / "triton";
  const std::string name = "my_chain__v2_";
  const triton::ModelConfig ensemble = ReadConfig(repo / name / "config.pbtxt");
  EXPECT_EQ(ensemble.name(), name);
  EXPECT_EQ(ensemble.platform(), "ensemble");
  EXPECT_TRUE(fs::is_directory(repo / name / "1"));
  EXPECT_TRUE(fs::is_empty(repo / name / "1"));
  const nlohmann::json plan = nlohmann::json::parse(ReadFile(out / "plan.json"));
  ASSERT_EQ(ensemble.ensemble_scheduling().step_size(), static_cast<int>(plan["stages"].size()));
  std::set<int> devices;
  for (const nlohmann::json& stage : plan["stages"]) {
    const int id = stage["id"].get<int>();
    const int device = stage["device"].get<int>();
    devices.insert(device);
    const std::string stage_name = name + "_s" + std::to_string(id);
    EXPECT_EQ(ensemble.ensemble_scheduling().step(id).model_name(), stage_name);
    const triton::ModelConfig config = ReadConfig(repo / stage_name / "config.pbtxt");
    EXPECT_EQ(config.platform(), "onnxruntime_onnx");
    ASSERT_EQ(config.instance_group_size(), 1);
    EXPECT_THAT(config.instance_group(0).gpus(), ::testing::ElementsAre(device == 0 ? 6 : 4));
    EXPECT_TRUE(fs::is_regular_file(repo / stage_name / "1" / "model.onnx"));
  }
  EXPECT_EQ(devices.size(), 2u) << "round-robin should use both devices";
  // The JSON summary lists the repository's files with the rest.
  const nlohmann::json summary = nlohmann::json::parse(r.stdout_text);
  EXPECT_THAT(summary["files"].get<std::vector<std::string>>(),
              Contains("triton/" + name + "/config.pbtxt"));
}

// Each stage model is written once: the Triton repository's model.onnx of a
// stage shares the stage's weights file (a hard link), plan.json's stage
// paths name the stage models, and two runs write the same bytes.
TEST(TritonFlagsTest, StageModelsAreWrittenOnceAndTheFolderIsReproducible) {
  TempDir dir;
  // Two 1.4 MB weights, above the 1 MiB external-data threshold.
  absl::StatusOr<onnx::ModelProto> model = onnx_io::ParseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    weighted (float[1,600] x) => (float[1,600] y) {
      a = MatMul(x, w0)
      b = Relu(a)
      c = MatMul(b, w1)
      y = Relu(c)
    }
  )");
  ASSERT_TRUE(model.ok()) << model.status();
  for (const char* name : {"w0", "w1"}) {
    onnx::TensorProto* w = model->mutable_graph()->add_initializer();
    w->set_name(name);
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(600);
    w->add_dims(600);
    w->set_raw_data(std::string(600 * 600 * 4, name[1]));
  }
  const fs::path source = dir.Write("weighted.onnx", model->SerializeAsString());
  const fs::path out[] = {dir / "a", dir / "b"};
  for (const fs::path& o : out) {
    const CommandResult r =
        Split({source.string(), "-o", o.string(), "--devices", "2", "--stages", "--triton",
               "--algo", "round-robin", "--allow-slower-split", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  }
  const nlohmann::json plan = nlohmann::json::parse(ReadFile(out[0] / "plan.json"));
  ASSERT_GE(plan["stages"].size(), 2u);
  int with_weights = 0;
  for (const nlohmann::json& stage : plan["stages"]) {
    const fs::path stage_model = out[0] / stage["model"].get<std::string>();
    EXPECT_TRUE(fs::is_regular_file(stage_model)) << stage_model;
    const fs::path triton_model = out[0] / "triton" /
                                  ("weighted_s" + std::to_string(stage["id"].get<int>())) / "1" /
                                  "model.onnx";
    ASSERT_TRUE(fs::is_regular_file(triton_model)) << triton_model;
    const fs::path weights = stage_model.string() + ".data";
    EXPECT_EQ(fs::exists(weights), fs::exists(triton_model.string() + ".data")) << weights;
    if (!fs::exists(weights)) continue;  // a stage of Relus
    ++with_weights;
    EXPECT_TRUE(fs::equivalent(weights, triton_model.string() + ".data"));
    EXPECT_EQ(fs::hard_link_count(weights), 2u);
  }
  EXPECT_GE(with_weights, 1);
  // The same files with the same bytes (plan.json included) in both runs.
  std::vector<std::string> files;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(out[0])) {
    if (e.is_regular_file()) files.push_back(fs::relative(e.path(), out[0]).string());
  }
  size_t files_b = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(out[1])) {
    files_b += e.is_regular_file() ? 1 : 0;
  }
  EXPECT_EQ(files.size(), files_b);
  for (const std::string& file : files) {
    EXPECT_EQ(ReadFile(out[0] / file), ReadFile(out[1] / file)) << file;
  }
}

TEST(TritonFlagsTest, TheHumanSummaryNamesTheEnsemble) {
  TempDir dir;
  const fs::path model = WriteModel(dir, "chain.onnx");
  const CommandResult r = Split({model.string(), "-o", (dir / "out").string(), "--devices", "2",
                                 "--stages", "--triton", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("triton/ (ensemble 'chain' of "));
  EXPECT_TRUE(fs::exists(dir / "out" / "triton" / "chain_s0" / "config.pbtxt"));
}

}  // namespace
}  // namespace autopar
