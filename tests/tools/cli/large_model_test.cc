// A model with more than 2 GiB of external weights loads and `info` runs on
// it in a small fraction of that memory: external weights are never read
// unless something needs their bytes.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx_io/text_format.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace autopar {
namespace {

using testing::RunCommand;
using testing::TempDir;

constexpr int64_t kWidth = 16384;  // 16384² floats = 1 GiB
constexpr int64_t kWeightBytes = kWidth * kWidth * 4;
constexpr int kLayers = 3;                            // 3 GiB of weights in all
constexpr int64_t kMaxRssBytes = int64_t{256} << 20;  // far below the weights

// Writes a 3-layer MatMul chain whose weights are zero-filled external data in
// one sparse file (it takes no disk space).
std::filesystem::path WriteLargeModel(const TempDir& dir) {
  absl::StatusOr<onnx::ModelProto> model = onnx_io::ParseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    big (float[1,16384] x) => (float[1,16384] y2) {
      y0 = MatMul(x, w0)
      y1 = MatMul(y0, w1)
      y2 = MatMul(y1, w2)
    }
  )");
  EXPECT_TRUE(model.ok()) << model.status();
  for (int i = 0; i < kLayers; ++i) {
    onnx::TensorProto* w = model->mutable_graph()->add_initializer();
    w->set_name("w" + std::to_string(i));
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(kWidth);
    w->add_dims(kWidth);
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [key, value] : {std::pair<std::string, std::string>{"location", "weights.bin"},
                              {"offset", std::to_string(i * kWeightBytes)},
                              {"length", std::to_string(kWeightBytes)}}) {
      auto* e = w->add_external_data();
      e->set_key(key);
      e->set_value(value);
    }
  }
  int fd = open((dir / "weights.bin").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  EXPECT_EQ(ftruncate(fd, kLayers * kWeightBytes), 0);
  close(fd);
  return dir.Write("big.onnx", model->SerializeAsString());
}

TEST(LargeModelTest, InfoOnThreeGiBOfExternalWeightsUsesLittleMemory) {
  TempDir dir;
  std::filesystem::path model = WriteLargeModel(dir);

  testing::CommandResult info =
      RunCommand({AUTOPAR_CLI, "info", model.string(), "--format", "json"});
  ASSERT_EQ(info.exit_code, 0) << info.stderr_text;
  nlohmann::json json = nlohmann::json::parse(info.stdout_text);
  EXPECT_EQ(json["parameter_bytes"].get<int64_t>(), kLayers * kWeightBytes);
  EXPECT_EQ(json["nodes"].get<int64_t>(), kLayers);

  std::printf("info on a model with %lld MiB of external weights: peak RSS %lld MiB\n",
              static_cast<long long>(kLayers * kWeightBytes >> 20),
              static_cast<long long>(info.peak_rss_bytes >> 20));
  EXPECT_LT(info.peak_rss_bytes, kMaxRssBytes);
}

}  // namespace
}  // namespace autopar
