// Real architectures exported by tools/export_models.py (Debian's torch,
// random weights): each loads, gets fully static shapes, and round-trips to a
// model the ONNX checker accepts.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "onnx_io/checker.h"
#include "onnx_io/export.h"
#include "passes/infer_shapes.h"
#include "pipeline/model_loading.h"

namespace autopar::pipeline {
namespace {

namespace fs = std::filesystem;

// The models the export script's default set produces; each must be there.
const std::vector<std::string> kExpectedModels = {"resnet18",
                                                  "mobilenet_v2",
                                                  "squeezenet1_1",
                                                  "googlenet",
                                                  "resnet50",
                                                  "transformer_encoder",
                                                  "bert_tiny_like",
                                                  "gpt2_tiny_like",
                                                  "lstm",
                                                  "lstm_bidirectional",
                                                  "gru",
                                                  "control_flow_if",
                                                  "control_flow_loop"};

class ExportedModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExportedModelTest, LoadsWithStaticShapesAndRoundTrips) {
  const fs::path path = fs::path(AUTOPAR_MODELS_DIR) / (GetParam() + ".onnx");
  ASSERT_TRUE(fs::exists(path)) << path << ": run tools/export_models.py";
  absl::StatusOr<LoadedModel> loaded = LoadAndAnalyze(path.string(), passes::ShapeOptions{});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const ir::Graph& graph = loaded->graph;
  EXPECT_GT(graph.num_nodes(), 0u);
  EXPECT_TRUE(passes::ValuesWithoutStaticShape(graph).empty());

  absl::StatusOr<onnx::ModelProto> exported = onnx_io::ExportModel(graph, loaded->model);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_TRUE(onnx_io::CheckModel(*exported, loaded->model.directory()).ok());
  EXPECT_EQ(exported->graph().node_size(), static_cast<int>(graph.num_nodes()));
  std::printf("%s: %zu nodes (+%lld in subgraphs), %zu values\n", GetParam().c_str(),
              graph.num_nodes(), static_cast<long long>(graph.NumSubgraphNodes()),
              graph.num_values());
}

INSTANTIATE_TEST_SUITE_P(Models, ExportedModelTest, ::testing::ValuesIn(kExpectedModels));

TEST(ExportedControlFlowTest, BodiesAreAttachedToTheirNode) {
  for (const char* name : {"control_flow_if", "control_flow_loop"}) {
    const fs::path path = fs::path(AUTOPAR_MODELS_DIR) / (std::string(name) + ".onnx");
    absl::StatusOr<LoadedModel> loaded = LoadAndAnalyze(path.string(), passes::ShapeOptions{});
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_GT(loaded->graph.NumSubgraphNodes(), 0) << name;
    bool has_control_flow = std::any_of(
        loaded->graph.nodes().begin(), loaded->graph.nodes().end(),
        [](const ir::Node& n) { return n.kind == ir::OpKind::kIf || n.kind == ir::OpKind::kLoop; });
    EXPECT_TRUE(has_control_flow) << name;
  }
}

}  // namespace
}  // namespace autopar::pipeline
