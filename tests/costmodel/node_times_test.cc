// Measured node times: both file formats, the errors a user can make, and how
// the times replace and scale the cost model's (Note [Measured and scaled
// times]).
#include "costmodel/node_times.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace autopar::costmodel {
namespace {

using ::testing::HasSubstr;

// Four units a, b, c, d in a chain, predicted 10, 20, 40 and 80 µs.
CostGraph Chain(int kinds = 1) {
  CostGraph::Builder b(kinds);
  const double times[] = {10, 20, 40, 80};
  const char* names[] = {"a", "b", "c", "d"};
  for (int u = 0; u < 4; ++u) {
    b.AddUnit({.name = names[u], .op = "Op", .compute_us = std::vector<double>(kinds, times[u])});
    if (u > 0) b.AddUse(b.AddTensor({.name = "t", .producer = static_cast<uint32_t>(u - 1)}), u);
  }
  return *std::move(b).Build();
}

TEST(NodeTimesTest, ReadsThePlainMapAndMeasureOutput) {
  absl::StatusOr<NodeTimes> plain =
      NodeTimesFromJson(nlohmann::json::parse(R"({"a": 12.5, "b": 0})"), "f");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->node_us, (std::vector<std::pair<std::string, double>>{{"a", 12.5}, {"b", 0}}));
  // measure.mjs: only node_us counts; its other fields are ignored.
  absl::StatusOr<NodeTimes> measured = NodeTimesFromJson(
      nlohmann::json::parse(R"({"model": "m.onnx", "threads": 1, "runs": 20, "wall_us": 900,
                                "node_us": {"c": 44}, "nodes": {"c": {"op": "Op"}}})"),
      "f");
  ASSERT_TRUE(measured.ok()) << measured.status();
  EXPECT_EQ(measured->node_us, (std::vector<std::pair<std::string, double>>{{"c", 44}}));
}

TEST(NodeTimesTest, BadFilesAreErrorsNamingTheFileAndTheNode) {
  EXPECT_THAT(NodeTimesFromJson(nlohmann::json::array(), "node times file 'x'").status().message(),
              HasSubstr("node times file 'x' must be a JSON object"));
  EXPECT_THAT(NodeTimesFromJson(nlohmann::json::parse(R"({"a": "fast"})"), "f").status().message(),
              HasSubstr("node 'a'"));
  EXPECT_THAT(NodeTimesFromJson(nlohmann::json::parse(R"({"a": -1})"), "f").status().message(),
              HasSubstr(">= 0"));
  EXPECT_THAT(NodeTimesFromJson(nlohmann::json::object(), "f").status().message(),
              HasSubstr("names no node"));
  autopar::testing::TempDir dir;
  EXPECT_EQ(LoadNodeTimesFile(dir.Write("t.json", "{not json").string()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadNodeTimesFile((dir.path() / "missing.json").string()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(NodeTimesTest, NamedNodesTakeTheirTimeAndTheOthersTheMedianRatio) {
  CostGraph g = Chain();
  // Ratios 3 (a: 30/10), 2 (b: 40/20) and 1 (c: 40/40): median 2.
  const NodeTimes times{.source = "f", .node_us = {{"a", 30}, {"b", 40}, {"c", 40}}};
  absl::StatusOr<CostSource> source = ApplyNodeTimes(times, g);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_DOUBLE_EQ(g.compute_us(0, 0), 30);
  EXPECT_DOUBLE_EQ(g.compute_us(1, 0), 40);
  EXPECT_DOUBLE_EQ(g.compute_us(2, 0), 40);
  EXPECT_DOUBLE_EQ(g.compute_us(3, 0), 160);  // 80 predicted x 2
  EXPECT_TRUE(source->measured);
  EXPECT_EQ(source->measured_nodes, 3);
  EXPECT_EQ(source->scaled_nodes, 1);
  EXPECT_DOUBLE_EQ(source->scale, 2);
  EXPECT_EQ(CostSourceJson(*source).dump(),
            R"({"source":"measured","measured_nodes":3,"scaled_nodes":1,"scale":2.0})");
}

TEST(NodeTimesTest, AnEvenCountTakesTheMeanOfTheMiddleRatiosAndZeroTimesDoNotCount) {
  CostGraph g = Chain();
  // a: 1, b: 3; c measured 0 (a node the runtime folded) gives no ratio.
  const NodeTimes times{.source = "f", .node_us = {{"a", 10}, {"b", 60}, {"c", 0}}};
  absl::StatusOr<CostSource> source = ApplyNodeTimes(times, g);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_DOUBLE_EQ(source->scale, 2);
  EXPECT_DOUBLE_EQ(g.compute_us(2, 0), 0);
  EXPECT_DOUBLE_EQ(g.compute_us(3, 0), 160);
}

TEST(NodeTimesTest, AnUnknownNodeIsAnErrorNotIgnored) {
  CostGraph g = Chain();
  absl::StatusOr<CostSource> source =
      ApplyNodeTimes({.source = "node times file 't.json'", .node_us = {{"a", 1}, {"zz", 2}}}, g);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(source.status().message(),
              HasSubstr("node times file 't.json' names 'zz', which is not a node"));
}

TEST(NodeTimesTest, SeveralDeviceKindsAreRefused) {
  CostGraph g = Chain(/*kinds=*/2);
  EXPECT_THAT(ApplyNodeTimes({.source = "f", .node_us = {{"a", 1}}}, g).status().message(),
              HasSubstr("one kind of device"));
}

}  // namespace
}  // namespace autopar::costmodel
