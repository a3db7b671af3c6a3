// LoadModel on good and bad files: every bad file is one clear error.
#include "onnx_io/model.h"

#include <unistd.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx_io/text_format.h"
#include "tests/testing/temp_dir.h"

namespace autopar::onnx_io {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

constexpr char kTinyModel[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  tiny (float[2,3] x) => (float[2,3] y) {
    y = Relu(x)
  }
)";

std::string Serialized(const onnx::ModelProto& model) { return model.SerializeAsString(); }

std::string ErrorOf(const std::filesystem::path& path) {
  absl::StatusOr<Model> model = LoadModel(path);
  EXPECT_FALSE(model.ok()) << path;
  return model.ok() ? "" : std::string(model.status().message());
}

// A model whose single initializer `w` (float[4]) lives in `weights.bin`.
onnx::ModelProto ModelWithExternalWeight(const std::string& offset, const std::string& length) {
  absl::StatusOr<onnx::ModelProto> model = ParseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    ext (float[4] x) => (float[4] y) { y = Add(x, w) }
  )");
  onnx::TensorProto* w = model->mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [w](const char* key, const std::string& value) {
    if (value.empty()) return;
    auto* e = w->add_external_data();
    e->set_key(key);
    e->set_value(value);
  };
  add("location", "weights.bin");
  add("offset", offset);
  add("length", length);
  return *model;
}

TEST(LoadModelTest, LoadsAValidModel) {
  TempDir dir;
  absl::StatusOr<onnx::ModelProto> proto = ParseModelText(kTinyModel);
  ASSERT_TRUE(proto.ok()) << proto.status();
  absl::StatusOr<Model> model = LoadModel(dir.Write("m.onnx", Serialized(*proto)));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->proto.graph().node_size(), 1);
  EXPECT_EQ(model->directory(), dir.path());
}

TEST(LoadModelTest, ReportsTheBytesParsed) {
  TempDir dir;
  absl::StatusOr<onnx::ModelProto> proto = ParseModelText(kTinyModel);
  ASSERT_TRUE(proto.ok()) << proto.status();
  const std::string bytes = Serialized(*proto);
  std::vector<std::pair<int64_t, int64_t>> reports;
  LoadOptions options;
  options.on_progress = [&](int64_t done, int64_t total) { reports.emplace_back(done, total); };
  ASSERT_TRUE(LoadModel(dir.Write("m.onnx", bytes), options).ok());
  ASSERT_FALSE(reports.empty());
  const auto size = static_cast<int64_t>(bytes.size());
  EXPECT_EQ(reports.back(), std::make_pair(size, size));
  for (size_t i = 1; i < reports.size(); ++i) EXPECT_LE(reports[i - 1].first, reports[i].first);
}

TEST(LoadModelTest, MissingFile) {
  TempDir dir;
  EXPECT_THAT(ErrorOf(dir / "nope.onnx"), HasSubstr("no such file"));
}

TEST(LoadModelTest, Directory) { EXPECT_THAT(ErrorOf(TempDir().path()), HasSubstr("directory")); }

TEST(LoadModelTest, EmptyFile) {
  TempDir dir;
  EXPECT_THAT(ErrorOf(dir.Write("empty.onnx", "")), HasSubstr("the file is empty"));
}

TEST(LoadModelTest, RandomBytesAreNotAModel) {
  TempDir dir;
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::string bytes(1 + rng() % 4096, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    EXPECT_THAT(ErrorOf(dir.Write("random.onnx", bytes)), HasSubstr("is not an ONNX model"))
        << "trial " << trial;
  }
}

TEST(LoadModelTest, TruncatedModelIsAnError) {
  TempDir dir;
  std::string bytes = Serialized(*ParseModelText(kTinyModel));
  // Every cut inside the serialized graph either fails to parse or leaves a
  // model without the pieces every ONNX model has; none may crash.
  int errors = 0;
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    absl::StatusOr<Model> model = LoadModel(dir.Write("cut.onnx", bytes.substr(0, cut)));
    if (!model.ok()) ++errors;
  }
  EXPECT_GT(errors, static_cast<int>(bytes.size()) / 2);
  EXPECT_THAT(ErrorOf(dir.Write("half.onnx", bytes.substr(0, bytes.size() / 2))),
              HasSubstr("not an ONNX model"));
}

TEST(LoadModelTest, ProtobufThatIsNotAModel) {
  TempDir dir;
  onnx::TensorProto tensor;
  tensor.set_name("just a tensor");
  tensor.set_data_type(onnx::TensorProto::FLOAT);
  tensor.add_float_data(1.0f);
  EXPECT_THAT(ErrorOf(dir.Write("tensor.onnx", tensor.SerializeAsString())),
              HasSubstr("is not an ONNX model"));
}

TEST(LoadModelTest, ExternalDataIsIndexedNotRead) {
  TempDir dir;
  const float weights[4] = {1, 2, 3, 4};
  dir.Write("weights.bin", std::string(reinterpret_cast<const char*>(weights), sizeof(weights)));
  absl::StatusOr<Model> model =
      LoadModel(dir.Write("m.onnx", Serialized(ModelWithExternalWeight("0", "16"))));
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->external_data.count("w"), 1u);
  EXPECT_EQ(model->external_data.at("w").length, 16);
  EXPECT_FALSE(model->proto.graph().initializer(0).has_raw_data());

  absl::StatusOr<std::string> bytes = ReadTensorBytes(*model, model->proto.graph().initializer(0));
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, std::string(reinterpret_cast<const char*>(weights), sizeof(weights)));
}

TEST(LoadModelTest, MissingExternalDataFile) {
  TempDir dir;
  EXPECT_THAT(ErrorOf(dir.Write("m.onnx", Serialized(ModelWithExternalWeight("0", "16")))),
              HasSubstr("external data file"));
}

TEST(LoadModelTest, ExternalDataOutOfRange) {
  TempDir dir;
  dir.Write("weights.bin", std::string(16, '\0'));
  EXPECT_THAT(ErrorOf(dir.Write("m.onnx", Serialized(ModelWithExternalWeight("8", "16")))),
              HasSubstr("lies outside"));
  EXPECT_THAT(ErrorOf(dir.Write("m.onnx", Serialized(ModelWithExternalWeight("0", "12")))),
              HasSubstr("need 16"));
  EXPECT_THAT(ErrorOf(dir.Write("m.onnx", Serialized(ModelWithExternalWeight("x", "16")))),
              HasSubstr("not a number"));
}

TEST(LoadModelTest, ExternalDataMustStayInTheModelFolder) {
  TempDir dir;
  onnx::ModelProto proto = ModelWithExternalWeight("0", "16");
  proto.mutable_graph()->mutable_initializer(0)->mutable_external_data(0)->set_value(
      "../../etc/passwd");
  EXPECT_THAT(ErrorOf(dir.Write("m.onnx", Serialized(proto))),
              HasSubstr("inside the model's folder"));
}

TEST(ReadTensorIntsTest, ReadsTypedFieldsAndRawData) {
  Model model;
  onnx::TensorProto t;
  t.set_name("t");
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(3);
  for (int64_t v : {4, -1, 7}) t.add_int64_data(v);
  EXPECT_EQ(*ReadTensorInts(model, t), (std::vector<int64_t>{4, -1, 7}));

  onnx::TensorProto raw;
  raw.set_name("raw");
  raw.set_data_type(onnx::TensorProto::INT32);
  raw.add_dims(2);
  const int32_t values[2] = {-5, 9};
  raw.set_raw_data(std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  EXPECT_EQ(*ReadTensorInts(model, raw), (std::vector<int64_t>{-5, 9}));

  raw.add_dims(2);  // now claims 4 elements but holds 2
  EXPECT_FALSE(ReadTensorInts(model, raw).ok());
}

}  // namespace
}  // namespace autopar::onnx_io
