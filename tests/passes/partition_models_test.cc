// The rewriter on real models under random placements — uniform per node (the
// most interleaved cuts) and random contiguous segments — for 2, 3, 4 and 8
// devices and several seeds: every deployment validates, and every device and
// stage model passes the ONNX checker. Exported models also pass ONNX's strict
// shape inference. Numeric equivalence in ONNX Runtime is tools/'s runner's.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "passes/partition.h"
#include "passes/validate_deployment.h"
#include "tests/passes/partition_test_util.h"

namespace autopar::passes {
namespace {

namespace fs = std::filesystem;
using testing::Loaded;

const std::vector<std::string> kModels = {
    "resnet18",          "transformer_encoder", "lstm",         "control_flow_if",
    "control_flow_loop", "bert_tiny_like",      "mobilenet_v2", "gru"};

class ExportedModelPartitionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExportedModelPartitionTest, RandomPlacementsValidate) {
  const fs::path path = fs::path(AUTOPAR_MODELS_DIR) / (GetParam() + ".onnx");
  ASSERT_TRUE(fs::exists(path)) << path << ": run tools/export_models.py";
  absl::StatusOr<Loaded> m = testing::FromFile(path);
  ASSERT_TRUE(m.ok()) << m.status();
  const size_t n = m->graph.num_nodes();
  int placements = 0;
  size_t max_transfers = 0, max_stages = 0;
  for (int devices : {2, 3, 4, 8}) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      for (bool segments : {false, true}) {
        const std::vector<int32_t> placement = ColocateNonTensorValues(
            m->graph, segments ? testing::RandomSegments(n, devices, seed)
                               : testing::RandomPlacement(n, devices, seed));
        const std::string what = absl::StrCat(GetParam(), " on ", devices, " devices, seed ", seed,
                                              segments ? ", segments" : ", uniform");
        absl::StatusOr<Deployment> d = Partition(m->model, m->graph, placement, devices);
        ASSERT_TRUE(d.ok()) << what << ": " << d.status();
        // Strict shape inference on every model is slow; once per device count.
        ValidateOptions options;
        options.infer_shapes = seed == 1 && !segments;
        absl::Status valid = ValidateDeployment(m->model, m->graph, placement, *d, options);
        ASSERT_TRUE(valid.ok()) << what << ": " << valid;
        ASSERT_EQ(d->devices.size(), static_cast<size_t>(devices));
        ASSERT_FALSE(d->stages.empty());
        max_transfers = std::max(max_transfers, d->transfers.size());
        max_stages = std::max(max_stages, d->stages.size());
        ++placements;
      }
    }
  }
  std::printf("%s: %zu nodes, %d placements validated (up to %zu transfers, %zu stages)\n",
              GetParam().c_str(), n, placements, max_transfers, max_stages);
}

INSTANTIATE_TEST_SUITE_P(Models, ExportedModelPartitionTest, ::testing::ValuesIn(kModels));

// Every model of ONNX's backend test data with more than one node, split on
// two devices at random: the deployment validates and passes the checker.
TEST(TestdataPartitionTest, EveryMultiNodeModelSplitsOnTwoDevices) {
  int split = 0, inferred = 0, single_node = 0, not_analyzable = 0;
  for (const char* folder : {"node", "simple", "pytorch-converted", "pytorch-operator"}) {
    const fs::path dir = fs::path(AUTOPAR_ONNX_TESTDATA_DIR) / folder;
    if (!fs::is_directory(dir)) continue;
    std::vector<fs::path> models;
    for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
      if (fs::exists(e.path() / "model.onnx")) models.push_back(e.path() / "model.onnx");
    }
    std::sort(models.begin(), models.end());
    for (const fs::path& path : models) {
      // Shapes need not be static: Partition types crossings from dtypes.
      absl::StatusOr<Loaded> m = testing::FromFile(path, /*require_static=*/false);
      if (!m.ok()) {
        ++not_analyzable;
        continue;
      }
      if (m->graph.num_nodes() < 2) {
        ++single_node;
        continue;
      }
      const std::string name = path.parent_path().filename().string();
      const std::vector<int32_t> placement =
          ColocateNonTensorValues(m->graph, testing::RandomPlacement(m->graph.num_nodes(), 2, 7));
      absl::StatusOr<Deployment> d = Partition(m->model, m->graph, placement, 2);
      ASSERT_TRUE(d.ok()) << name << ": " << d.status();
      // Strict shape inference too, where the unsplit model passes it.
      const std::vector<int32_t> one_device(m->graph.num_nodes(), 0);
      absl::StatusOr<Deployment> whole = Partition(m->model, m->graph, one_device, 1);
      ASSERT_TRUE(whole.ok()) << name << ": " << whole.status();
      ValidateOptions options;
      options.infer_shapes =
          ValidateDeployment(m->model, m->graph, one_device, *whole, {.infer_shapes = true}).ok();
      absl::Status valid = ValidateDeployment(m->model, m->graph, placement, *d, options);
      ASSERT_TRUE(valid.ok()) << name << ": " << valid;
      ++split;
      inferred += options.infer_shapes ? 1 : 0;
    }
  }
  std::printf(
      "test data: %d multi-node models split and validated (%d also through strict "
      "shape inference), %d single-node, %d not analyzable\n",
      split, inferred, single_node, not_analyzable);
  EXPECT_GT(split, 100);
}

}  // namespace
}  // namespace autopar::passes
