// Every model of ONNX's own backend test data (Debian's libonnx-testdata)
// loads, becomes IR, gets shapes, and round-trips to a ModelProto that passes
// the checker with the same nodes, initializers, inputs and outputs.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "onnx_io/checker.h"
#include "onnx_io/export.h"
#include "onnx_io/import.h"
#include "onnx_io/model.h"
#include "passes/infer_shapes.h"

namespace autopar::onnx_io {
namespace {

namespace fs = std::filesystem;

// The suites the package holds and how many models each has (libonnx-testdata
// 1.12): the test fails if it covers fewer, so a broken install cannot pass.
struct Suite {
  const char* name;
  int expected_models;
};
constexpr Suite kSuites[] = {
    {"node", 932}, {"pytorch-converted", 82}, {"pytorch-operator", 35}, {"simple", 23}};

std::vector<fs::path> ModelsIn(const fs::path& suite) {
  std::vector<fs::path> models;
  for (const fs::directory_entry& e : fs::directory_iterator(suite)) {
    if (fs::exists(e.path() / "model.onnx")) models.push_back(e.path() / "model.onnx");
  }
  std::sort(models.begin(), models.end());
  return models;
}

std::vector<std::string> Serialized(const auto& repeated) {
  std::vector<std::string> items;
  for (const auto& item : repeated) items.push_back(item.SerializeAsString());
  std::sort(items.begin(), items.end());
  return items;
}

// Returns "" when the model round-trips, else what went wrong.
std::string RoundTrip(const fs::path& path, bool& all_static) {
  absl::StatusOr<Model> model = LoadModel(path);
  if (!model.ok()) return std::string(model.status().message());
  absl::StatusOr<ir::Graph> graph = BuildGraph(*model);
  if (!graph.ok()) return std::string(graph.status().message());
  passes::ShapeOptions options;
  options.require_static = false;
  if (absl::Status s = passes::InferShapes(*model, options, *graph); !s.ok()) {
    return std::string(s.message());
  }
  all_static = passes::ValuesWithoutStaticShape(*graph).empty();

  absl::StatusOr<onnx::ModelProto> exported = ExportModel(*graph, *model);
  if (!exported.ok()) return std::string(exported.status().message());
  if (absl::Status s = CheckModel(*exported, model->directory()); !s.ok()) {
    return std::string(s.message());
  }
  const onnx::GraphProto& a = model->proto.graph();
  const onnx::GraphProto& b = exported->graph();
  if (Serialized(a.node()) != Serialized(b.node())) return "nodes differ";
  if (Serialized(a.initializer()) != Serialized(b.initializer())) return "initializers differ";
  if (Serialized(a.input()) != Serialized(b.input())) return "inputs differ";
  if (Serialized(a.output()) != Serialized(b.output())) return "outputs differ";
  if (graph->num_nodes() != static_cast<size_t>(a.node_size())) return "node count differs";
  return "";
}

TEST(TestdataRoundTripTest, EveryModelRoundTrips) {
  const fs::path root = AUTOPAR_ONNX_TESTDATA_DIR;
  ASSERT_TRUE(fs::exists(root)) << root << " is missing: install libonnx-testdata";
  int covered = 0;
  int expected = 0;
  int static_shapes = 0;
  for (const Suite& suite : kSuites) {
    expected += suite.expected_models;
    std::vector<fs::path> models = ModelsIn(root / suite.name);
    EXPECT_GE(static_cast<int>(models.size()), suite.expected_models) << suite.name;
    for (const fs::path& path : models) {
      bool all_static = false;
      std::string failure = RoundTrip(path, all_static);
      EXPECT_EQ(failure, "") << path;
      if (failure.empty()) ++covered;
      if (all_static) ++static_shapes;
    }
  }
  std::printf("libonnx-testdata: %d of %d models round-trip; %d have every shape static\n", covered,
              expected, static_shapes);
  EXPECT_GE(covered, expected);
}

}  // namespace
}  // namespace autopar::onnx_io
