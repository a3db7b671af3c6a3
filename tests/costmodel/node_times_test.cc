// Measured node times: both file formats, the errors a user can make, how
// the times replace and scale the cost model's (Note [Measured and scaled
// times]), and a training step's measurement: its nodes charged to their
// source nodes (Note [Step times on the source]) and the one-device step.
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

// A training step's measurement as tools/fidelity/measure_step.mjs writes it:
// a, b forward; grad/b and loss/x work for b, grad/a for a; update/w for a.
constexpr char kStepFile[] = R"({
  "node_us": {"a": 10, "b": 20, "loss/x": 1, "grad/b": 30, "grad/a": 4, "update/w": 7},
  "node_origin": {"loss/x": "b", "grad/b": "b", "grad/a": "a"},
  "update_origin": {"update/w": "a", "update/const": "a"},
  "run_us": {"gradient": 100, "update": 50, "gradient_sum": 6, "gradient_mean": 9},
  "co_run_slowdown": 1.25})";

TEST(NodeTimesTest, ReadsAStepMeasurement) {
  absl::StatusOr<NodeTimes> times = NodeTimesFromJson(nlohmann::json::parse(kStepFile), "f");
  ASSERT_TRUE(times.ok()) << times.status();
  EXPECT_EQ(times->node_us.size(), 6u);
  EXPECT_EQ(times->origin.size(), 5u);
  EXPECT_EQ(times->origin.at("grad/b"), "b");
  EXPECT_EQ(times->origin.at("update/w"), "a");
  EXPECT_EQ(times->update_nodes, (absl::flat_hash_set<std::string>{"update/w", "update/const"}));
  ASSERT_TRUE(times->run_us.has_value());
  EXPECT_DOUBLE_EQ(times->run_us->gradient_us, 100);
  EXPECT_DOUBLE_EQ(times->run_us->update_us, 50);
  EXPECT_DOUBLE_EQ(times->run_us->gradient_sum_us, 6);
  EXPECT_DOUBLE_EQ(times->run_us->gradient_mean_us, 9);
  EXPECT_EQ(times->co_run_slowdown, 1.25);
  // Files written before the runner's sums were measured: they cost nothing.
  absl::StatusOr<NodeTimes> older = NodeTimesFromJson(
      nlohmann::json::parse(R"({"node_us": {"a": 1}, "run_us": {"gradient": 3, "update": 4}})"),
      "f");
  ASSERT_TRUE(older.ok()) << older.status();
  EXPECT_EQ(older->run_us->gradient_sum_us, 0);
  EXPECT_EQ(older->run_us->gradient_mean_us, 0);
  // Without "run_us" it is no step measurement; a plain map has none.
  absl::StatusOr<NodeTimes> plain = NodeTimesFromJson(nlohmann::json::parse(R"({"a": 1})"), "f");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->run_us.has_value());
  EXPECT_FALSE(plain->co_run_slowdown.has_value());
  EXPECT_FALSE(TrainingStepFromNodeTimes(*plain, 4).has_value());
}

TEST(NodeTimesTest, BadStepFieldsAreErrors) {
  auto message = [](const char* text) {
    return std::string(NodeTimesFromJson(nlohmann::json::parse(text), "f").status().message());
  };
  EXPECT_THAT(message(R"({"node_us": {"a": 1}, "node_origin": ["b"]})"),
              HasSubstr("\"node_origin\" must be an object"));
  EXPECT_THAT(message(R"({"node_us": {"a": 1}, "node_origin": {"g": 3}})"),
              HasSubstr("origin of node 'g'"));
  EXPECT_THAT(message(R"({"node_us": {"a": 1}, "node_origin": {"g": "a"},
                          "update_origin": {"g": "a"}})"),
              HasSubstr("node 'g' is in both"));
  EXPECT_THAT(message(R"({"node_us": {"a": 1}, "run_us": {"gradient": 1}})"),
              HasSubstr("\"run_us\" must be"));
  EXPECT_THAT(message(R"({"node_us": {"a": 1}, "run_us": {"gradient": 1, "update": -2}})"),
              HasSubstr("\"run_us\" must be"));
  EXPECT_THAT(message(R"({"node_us": {"a": 1},
                          "run_us": {"gradient": 1, "update": 2, "gradient_sum": "x"}})"),
              HasSubstr("\"run_us\"'s \"gradient_sum\" must be a number >= 0"));
  EXPECT_THAT(message(R"({"node_us": {"a": 1},
                          "run_us": {"gradient": 1, "update": 2, "gradient_mean": -1}})"),
              HasSubstr("\"run_us\"'s \"gradient_mean\" must be a number >= 0"));
  EXPECT_THAT(message(R"({"node_us": {"a": 1}, "co_run_slowdown": 0.5})"),
              HasSubstr("\"co_run_slowdown\" must be a number >= 1"));
}

TEST(NodeTimesTest, StepNodesAreChargedToTheSourceNodeTheyWorkFor) {
  CostGraph g = Chain();
  absl::StatusOr<NodeTimes> times = NodeTimesFromJson(nlohmann::json::parse(kStepFile), "f");
  ASSERT_TRUE(times.ok()) << times.status();
  absl::StatusOr<CostSource> source = ApplyNodeTimes(*times, g);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_DOUBLE_EQ(g.compute_us(0, 0), 10 + 4 + 7);   // a: forward, grad/a, update/w
  EXPECT_DOUBLE_EQ(g.compute_us(1, 0), 20 + 1 + 30);  // b: forward, loss/x, grad/b
  EXPECT_EQ(source->measured_nodes, 2);
  // Ratios 2.1 (a) and 2.55 (b): c and d scaled by their mean.
  EXPECT_DOUBLE_EQ(source->scale, (2.1 + 2.55) / 2);
  EXPECT_DOUBLE_EQ(g.compute_us(2, 0), 40 * source->scale);
  // A name with neither a unit nor an origin is still an error.
  times->node_us.emplace_back("grad/zz", 1);
  CostGraph h = Chain();
  EXPECT_THAT(ApplyNodeTimes(*times, h).status().message(),
              HasSubstr("names 'grad/zz', which is not a node"));
}

TEST(NodeTimesTest, TheOneDeviceStepIsMGradientRunsAndOneUpdate) {
  absl::StatusOr<NodeTimes> times = NodeTimesFromJson(nlohmann::json::parse(kStepFile), "f");
  ASSERT_TRUE(times.ok()) << times.status();
  std::optional<TrainingStepTimes> step = TrainingStepFromNodeTimes(*times, 3);
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->microbatches, 3);
  EXPECT_DOUBLE_EQ(step->gradient_nodes_us, 10 + 20 + 1 + 30 + 4);
  EXPECT_DOUBLE_EQ(step->update_nodes_us, 7);
  EXPECT_DOUBLE_EQ(step->step_us, 3 * (65 + 100 + 6) + 9 + 7 + 50);
  EXPECT_EQ(TrainingStepTimesJson(*step).dump(),
            R"({"microbatches":3,"gradient_nodes_us":65.0,"gradient_run_us":100.0,)"
            R"("gradient_sum_us":6.0,"gradient_mean_us":9.0,)"
            R"("update_nodes_us":7.0,"update_run_us":50.0,"step_us":579.0})");
}

}  // namespace
}  // namespace autopar::costmodel
