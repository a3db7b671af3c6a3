// The atomic output folder: temp sibling + rename, refusal without force,
// nothing left behind on failure, weights streamed to external data.
#include "onnx_io/deployment_writer.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx_io/export.h"
#include "onnx_io/text_format.h"
#include "tests/testing/temp_dir.h"

namespace autopar::onnx_io {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ReadFile;
using testing::TempDir;

constexpr char kModel[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  g (float[2,3] x) => (float[2,3] y)
  <float[2,3] w = {1, 2, 3, 4, 5, 6}> {
    y = Add(x, w)
  }
)";

Model MakeModel() {
  absl::StatusOr<Model> model = ModelFromProto(*ParseModelText(kModel));
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

// Entries of `dir` (names only), sorted.
std::vector<std::string> Entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

DeploymentFiles FilesOf(const Model& model, const std::string& plan) {
  DeploymentFiles files;
  files.models.push_back({"device_0.onnx", &model.proto});
  files.models.push_back({"stages/s0.onnx", &model.proto});
  files.extra_files["plan.json"] = plan;
  return files;
}

TEST(DeploymentWriterTest, WritesModelsAndExtraFiles) {
  TempDir dir;
  const Model model = MakeModel();
  const fs::path out = dir / "out";
  absl::Status status = WriteDeployment(out, model, FilesOf(model, "{\"version\": 1}"));
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(ReadFile(out / "plan.json"), "{\"version\": 1}");
  absl::StatusOr<Model> device = LoadModel(out / "device_0.onnx");
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ(device->proto.graph().node(0).op_type(), "Add");
  EXPECT_TRUE(LoadModel(out / "stages" / "s0.onnx").ok());
  // Only the output folder is left in the parent: no temporary sibling.
  EXPECT_EQ(Entries(dir.path()), std::vector<std::string>{"out"});
}

TEST(DeploymentWriterTest, CreatesEmptyFoldersAndRefusesOnesOutside) {
  TempDir dir;
  const Model model = MakeModel();
  DeploymentFiles files = FilesOf(model, "{}");
  files.folders.push_back("triton/ensemble/1");
  ASSERT_TRUE(WriteDeployment(dir / "out", model, files).ok());
  EXPECT_TRUE(fs::is_directory(dir / "out" / "triton" / "ensemble" / "1"));
  EXPECT_TRUE(Entries(dir / "out" / "triton" / "ensemble" / "1").empty());

  DeploymentFiles outside = FilesOf(model, "{}");
  outside.folders.push_back("../elsewhere");
  EXPECT_EQ(WriteDeployment(dir / "out2", model, outside).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(dir / "out2"));
}

TEST(DeploymentWriterTest, LargeWeightsGoToExternalData) {
  TempDir dir;
  const Model model = MakeModel();
  WriteOptions options;
  options.save.external_threshold_bytes = 16;
  ASSERT_TRUE(WriteDeployment(dir / "out", model, FilesOf(model, "{}"), options).ok());
  EXPECT_TRUE(fs::exists(dir / "out" / "device_0.onnx.data"));
  EXPECT_TRUE(fs::exists(dir / "out" / "stages" / "s0.onnx.data"));
  absl::StatusOr<Model> device = LoadModel(dir / "out" / "device_0.onnx");
  ASSERT_TRUE(device.ok()) << device.status();
  const onnx::TensorProto& w = device->proto.graph().initializer(0);
  EXPECT_TRUE(IsExternal(w));
  EXPECT_EQ(*ReadTensorBytes(*device, w),
            *ReadTensorBytes(model, model.proto.graph().initializer(0)));
}

TEST(DeploymentWriterTest, ReportsExternalBytesOverAllFiles) {
  TempDir dir;
  const Model model = MakeModel();
  WriteOptions options;
  options.save.external_threshold_bytes = 16;
  std::vector<std::pair<int64_t, int64_t>> reports;
  options.on_progress = [&](int64_t done, int64_t total) { reports.emplace_back(done, total); };
  ASSERT_TRUE(WriteDeployment(dir / "out", model, FilesOf(model, "{}"), options).ok());
  // w (2x3 floats, 24 bytes), written once: the two files are one model.
  EXPECT_EQ(ExternalDataBytes(model.proto, model, options.save), 24);
  EXPECT_EQ(reports, (std::vector<std::pair<int64_t, int64_t>>{{24, 24}}));
}

TEST(DeploymentWriterTest, AModelListedTwiceSharesOneWeightsFile) {
  TempDir dir;
  const Model model = MakeModel();
  WriteOptions options;
  options.save.external_threshold_bytes = 16;
  DeploymentFiles files;
  files.models.push_back({"stages/s0.onnx", &model.proto});
  files.models.push_back({"triton/m_s0/1/model.onnx", &model.proto});
  ASSERT_TRUE(WriteDeployment(dir / "out", model, files, options).ok());
  const fs::path copy = dir / "out" / "triton" / "m_s0" / "1" / "model.onnx";
  EXPECT_EQ(fs::hard_link_count(dir / "out" / "stages" / "s0.onnx.data"), 2u);
  EXPECT_EQ(fs::hard_link_count(fs::path(copy.string() + ".data")), 2u);
  absl::StatusOr<Model> loaded = LoadModel(copy);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const onnx::TensorProto& w = loaded->proto.graph().initializer(0);
  ASSERT_TRUE(IsExternal(w));
  // The copy names its own weights file, so the folder stands on its own.
  EXPECT_EQ(w.external_data(0).key(), "location");
  EXPECT_EQ(w.external_data(0).value(), "model.onnx.data");
  EXPECT_EQ(*ReadTensorBytes(*loaded, w),
            *ReadTensorBytes(model, model.proto.graph().initializer(0)));
  EXPECT_EQ(loaded->proto.graph().node(0).op_type(), "Add");
}

TEST(DeploymentWriterTest, AnExistingFolderIsRefusedWithoutForce) {
  TempDir dir;
  const Model model = MakeModel();
  const fs::path out = dir / "out";
  fs::create_directory(out);
  dir.Write("out/keep.txt", "mine");
  absl::Status status = WriteDeployment(out, model, FilesOf(model, "{}"));
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(status.message()), HasSubstr("--force"));
  EXPECT_EQ(Entries(out), std::vector<std::string>{"keep.txt"});
  EXPECT_EQ(Entries(dir.path()), std::vector<std::string>{"out"});
}

TEST(DeploymentWriterTest, ForceReplacesTheFolderWhole) {
  TempDir dir;
  const Model model = MakeModel();
  const fs::path out = dir / "out/";  // a trailing slash names the same folder
  fs::create_directory(dir / "out");
  dir.Write("out/stale.txt", "old");
  WriteOptions options;
  options.force = true;
  absl::Status status = WriteDeployment(out, model, FilesOf(model, "new"), options);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(Entries(dir / "out"),
            (std::vector<std::string>{"device_0.onnx", "plan.json", "stages"}));
  EXPECT_EQ(ReadFile(dir / "out" / "plan.json"), "new");
  EXPECT_EQ(Entries(dir.path()), std::vector<std::string>{"out"});
}

TEST(DeploymentWriterTest, AFailureLeavesNothingBehind) {
  TempDir dir;
  // A source whose external weights vanish after loading: the second model
  // fails half-way, after the first was written.
  const Model inline_model = MakeModel();
  ASSERT_TRUE(
      SaveModel(inline_model.proto, inline_model, dir / "in.onnx", {.external_threshold_bytes = 16})
          .ok());
  absl::StatusOr<Model> source = LoadModel(dir / "in.onnx");
  ASSERT_TRUE(source.ok()) << source.status();
  fs::remove(dir / "in.onnx.data");
  DeploymentFiles files;
  files.models.push_back({"device_0.onnx", &inline_model.proto});
  files.models.push_back({"device_1.onnx", &source->proto});
  files.extra_files["plan.json"] = "{}";

  absl::Status status = WriteDeployment(dir / "out", *source, files);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("device_1.onnx"));
  EXPECT_FALSE(fs::exists(dir / "out"));
  EXPECT_EQ(Entries(dir.path()), std::vector<std::string>{"in.onnx"});

  // With force, the existing folder survives a failed write untouched.
  fs::create_directory(dir / "out");
  dir.Write("out/keep.txt", "mine");
  WriteOptions options;
  options.force = true;
  EXPECT_FALSE(WriteDeployment(dir / "out", *source, files, options).ok());
  EXPECT_EQ(ReadFile(dir / "out" / "keep.txt"), "mine");
  EXPECT_EQ(Entries(dir.path()), (std::vector<std::string>{"in.onnx", "out"}));
}

TEST(DeploymentWriterTest, RefusesBadPathsBeforeWritingAnything) {
  TempDir dir;
  const Model model = MakeModel();
  for (const char* bad : {"../escape.json", "/abs.json", "", "a/../../b"}) {
    DeploymentFiles files;
    files.extra_files[bad] = "x";
    EXPECT_EQ(WriteDeployment(dir / "out", model, files).code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  DeploymentFiles twice = FilesOf(model, "{}");
  twice.extra_files["device_0.onnx"] = "clash";
  EXPECT_EQ(WriteDeployment(dir / "out", model, twice).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Entries(dir.path()).empty());
}

TEST(DeploymentWriterTest, AMissingParentFolderIsAnError) {
  TempDir dir;
  const Model model = MakeModel();
  absl::Status status = WriteDeployment(dir / "no" / "such" / "out", model, FilesOf(model, "{}"));
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(dir / "no"));
}

TEST(DeploymentWriterTest, NeverReplacesTheFolderHoldingTheInput) {
  TempDir dir;
  const Model inline_model = MakeModel();
  fs::create_directory(dir / "models");
  ASSERT_TRUE(SaveModel(inline_model.proto, inline_model, dir / "models" / "in.onnx").ok());
  absl::StatusOr<Model> source = LoadModel(dir / "models" / "in.onnx");
  ASSERT_TRUE(source.ok());
  WriteOptions options;
  options.force = true;
  absl::Status status = WriteDeployment(dir / "models", *source, FilesOf(*source, "{}"), options);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("input model"));
  EXPECT_TRUE(fs::exists(dir / "models" / "in.onnx"));
}

TEST(DeploymentWriterTest, AFileInTheWayIsNotReplaced) {
  TempDir dir;
  const Model model = MakeModel();
  dir.Write("out", "a file");
  WriteOptions options;
  options.force = true;
  EXPECT_FALSE(WriteDeployment(dir / "out", model, FilesOf(model, "{}"), options).ok());
  EXPECT_EQ(ReadFile(dir / "out"), "a file");
}

}  // namespace
}  // namespace autopar::onnx_io
