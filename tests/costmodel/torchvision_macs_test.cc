// The accuracy anchor: MAC totals of torchvision's architectures,
// exported at batch 1 by tools/export_models.py, match the published
// multiply-add counts within 2%. Published counts are conv + linear MACs;
// BatchNorm (folded into Conv by the export), ReLU, pooling and Add count as
// FLOPs, not MACs (node_cost.h, Note [Counting convention]).
//
// Models are read from $AUTOPAR_MODELS_DIR when set, else from the build's
// models folder (the exported_models fixture). The default export set holds
// resnet50, mobilenet_v2, squeezenet1_1 and googlenet, which must be there;
// inception_v3, vgg16 and densenet121 (`--models all`) are checked when
// present.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "costmodel/op_costs.h"
#include "gtest/gtest.h"
#include "pipeline/model_loading.h"

namespace autopar::costmodel {
namespace {

namespace fs = std::filesystem;

struct Anchor {
  const char* model;
  double published_gmacs;
  bool in_default_export;
};

constexpr Anchor kAnchors[] = {
    {"resnet50", 4.09, true},     {"mobilenet_v2", 0.30, true},  {"squeezenet1_1", 0.35, true},
    {"googlenet", 1.50, true},    {"inception_v3", 5.71, false}, {"vgg16", 15.47, false},
    {"densenet121", 2.83, false},
};

fs::path ModelsDir() {
  const char* env = std::getenv("AUTOPAR_MODELS_DIR");
  return env != nullptr && *env != '\0' ? fs::path(env) : fs::path(AUTOPAR_MODELS_DIR);
}

class TorchvisionMacsTest : public ::testing::TestWithParam<Anchor> {};

TEST_P(TorchvisionMacsTest, MatchesPublishedCount) {
  const Anchor& anchor = GetParam();
  fs::path path = ModelsDir() / (std::string(anchor.model) + ".onnx");
  if (!fs::exists(path)) {
    if (anchor.in_default_export) FAIL() << path << ": run tools/export_models.py";
    GTEST_SKIP() << path << " not exported (tools/export_models.py --models all)";
  }
  absl::StatusOr<pipeline::LoadedModel> loaded = pipeline::LoadAndAnalyze(path.string(), {});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  std::vector<NodeCost> costs = ComputeGraphCosts(loaded->graph);
  CostTotals totals = SumCosts(loaded->graph, costs);
  double gmacs = static_cast<double>(totals.macs) / 1e9;
  std::printf("%-14s %.4f GMACs (published %.2f, %+.2f%%), %.3f GFLOPs\n", anchor.model, gmacs,
              anchor.published_gmacs, 100 * (gmacs / anchor.published_gmacs - 1),
              static_cast<double>(totals.flops) / 1e9);
  EXPECT_NEAR(gmacs, anchor.published_gmacs, 0.02 * anchor.published_gmacs);
  EXPECT_EQ(totals.nodes_without_formula, 0);
  EXPECT_EQ(totals.nodes_estimated, 0);
  EXPECT_GT(totals.flops, 2 * totals.macs);  // biases, activations, pooling on top
}

INSTANTIATE_TEST_SUITE_P(Anchors, TorchvisionMacsTest, ::testing::ValuesIn(kAnchors),
                         [](const ::testing::TestParamInfo<Anchor>& info) {
                           return std::string(info.param.model);
                         });

}  // namespace
}  // namespace autopar::costmodel
