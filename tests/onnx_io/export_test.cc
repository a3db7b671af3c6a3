// IR → ONNX: verbatim node copies in topological order, and external data.
#include "onnx_io/export.h"

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx_io/checker.h"
#include "onnx_io/import.h"
#include "onnx_io/text_format.h"
#include "tests/testing/temp_dir.h"

namespace autopar::onnx_io {
namespace {

using testing::TempDir;

constexpr char kUnsorted[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  g (float[2,3] x) => (float[2,3] z)
  <float[2,3] w = {1, 2, 3, 4, 5, 6}> {
    z = Relu(y)
    y = Add(x, w)
  }
)";

TEST(ExportTest, ExportedModelIsSortedAndPassesTheChecker) {
  absl::StatusOr<Model> model = ModelFromProto(*ParseModelText(kUnsorted));
  ASSERT_TRUE(model.ok());
  // ONNX requires sorted nodes; the source is not.
  EXPECT_FALSE(CheckModel(model->proto, {}).ok());
  absl::StatusOr<ir::Graph> graph = BuildGraph(*model);
  ASSERT_TRUE(graph.ok());
  absl::StatusOr<onnx::ModelProto> exported = ExportModel(*graph, *model);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_TRUE(CheckModel(*exported, {}).ok());
  ASSERT_EQ(exported->graph().node_size(), 2);
  EXPECT_EQ(exported->graph().node(0).op_type(), "Add");
  EXPECT_EQ(exported->graph().node(1).SerializeAsString(),
            model->proto.graph().node(0).SerializeAsString());
}

TEST(ExportTest, LargeInitializersGoToExternalDataAndReloadEqual) {
  TempDir dir;
  absl::StatusOr<Model> model = ModelFromProto(*ParseModelText(kUnsorted));
  ASSERT_TRUE(model.ok());
  const std::filesystem::path path = dir / "out.onnx";
  ASSERT_TRUE(SaveModel(model->proto, *model, path, {.external_threshold_bytes = 16}).ok());
  ASSERT_TRUE(std::filesystem::exists(dir / "out.onnx.data"));

  absl::StatusOr<Model> reloaded = LoadModel(path);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  const onnx::TensorProto& w = reloaded->proto.graph().initializer(0);
  EXPECT_TRUE(IsExternal(w));
  absl::StatusOr<std::string> original =
      ReadTensorBytes(*model, model->proto.graph().initializer(0));
  absl::StatusOr<std::string> copied = ReadTensorBytes(*reloaded, w);
  ASSERT_TRUE(original.ok() && copied.ok());
  EXPECT_EQ(*original, *copied);
  EXPECT_EQ(original->size(), 24u);

  // Saving again streams the external bytes from the reloaded model's file.
  const std::filesystem::path again = dir / "again.onnx";
  ASSERT_TRUE(SaveModel(reloaded->proto, *reloaded, again).ok());
  absl::StatusOr<Model> third = LoadModel(again);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(*ReadTensorBytes(*third, third->proto.graph().initializer(0)), *original);
}

TEST(ExportTest, SmallInitializersStayInline) {
  TempDir dir;
  absl::StatusOr<Model> model = ModelFromProto(*ParseModelText(kUnsorted));
  ASSERT_TRUE(model.ok());
  ASSERT_TRUE(SaveModel(model->proto, *model, dir / "m.onnx").ok());
  EXPECT_FALSE(std::filesystem::exists(dir / "m.onnx.data"));
  absl::StatusOr<Model> reloaded = LoadModel(dir / "m.onnx");
  ASSERT_TRUE(reloaded.ok());
  EXPECT_FALSE(IsExternal(reloaded->proto.graph().initializer(0)));
}

}  // namespace
}  // namespace autopar::onnx_io
