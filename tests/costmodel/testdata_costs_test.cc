// Every operator in ONNX's own node tests (Debian's libonnx-testdata, one
// model per operator variant) gets a cost: the test lists the op types
// without a formula or rule and fails.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "costmodel/op_costs.h"
#include "gtest/gtest.h"
#include "pipeline/model_loading.h"

namespace autopar::costmodel {
namespace {

namespace fs = std::filesystem;

std::string OpName(const ir::Node& node) {
  return node.domain.empty() ? node.op_type : absl::StrCat(node.domain, ".", node.op_type);
}

// Op types of `graph` and of its bodies whose cost has no formula, and every
// op type seen.
void Check(const ir::Graph& graph, std::set<std::string>& seen, std::set<std::string>& missing,
           bool& saturated) {
  std::vector<NodeCost> costs = ComputeGraphCosts(graph);
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& node = graph.nodes()[i];
    seen.insert(OpName(node));
    if (!costs[i].has_formula) missing.insert(OpName(node));
    saturated = saturated || costs[i].saturated;
    for (const ir::Subgraph& s : node.subgraphs) Check(*s.body, seen, missing, saturated);
  }
}

TEST(TestdataCostsTest, EveryNodeTestOperatorHasACost) {
  const fs::path suite = fs::path(AUTOPAR_ONNX_TESTDATA_DIR) / "node";
  ASSERT_TRUE(fs::exists(suite)) << suite << ": install libonnx-testdata";
  std::vector<fs::path> models;
  for (const fs::directory_entry& e : fs::directory_iterator(suite)) {
    if (fs::exists(e.path() / "model.onnx")) models.push_back(e.path() / "model.onnx");
  }
  std::sort(models.begin(), models.end());
  ASSERT_GE(models.size(), 900u);

  std::set<std::string> seen;
  std::set<std::string> missing;
  std::vector<std::string> unloadable;
  bool saturated = false;
  passes::ShapeOptions options;
  options.require_static = false;
  for (const fs::path& path : models) {
    absl::StatusOr<pipeline::LoadedModel> loaded = pipeline::LoadAndAnalyze(path.string(), options);
    if (!loaded.ok()) {
      unloadable.push_back(path.parent_path().filename().string());
      continue;
    }
    Check(loaded->graph, seen, missing, saturated);
  }
  EXPECT_TRUE(missing.empty()) << "op types without a cost: " << absl::StrJoin(missing, ", ");
  EXPECT_FALSE(saturated);
  std::printf("%zu models (%zu not loadable), %zu op types, all costed: %s\n", models.size(),
              unloadable.size(), seen.size(), missing.empty() ? "yes" : "no");
  // Loading is the import tests' business; here it only must not hide ops.
  EXPECT_LT(unloadable.size(), models.size() / 20) << absl::StrJoin(unloadable, ", ");
}

}  // namespace
}  // namespace autopar::costmodel
