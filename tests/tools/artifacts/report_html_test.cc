// report.html (tools/artifacts/report_html.h): the document's structure (a lane per
// device and per busy link, the summary numbers, the device and transfer
// tables, TGA's convergence curve), the comparison page of `compare
// --report`, that no node, tensor or device name can inject markup, that the
// same input gives the same bytes, and that the timeline of a 100k-node graph
// is aggregated into a few MB, and the "Pipeline step" section of a training
// step split over devices (tools/artifacts/report_pipeline.h): a box per run,
// the kinds coloured apart. (tests/e2e/report_browser.test.mjs opens the
// reports in a browser.)
#include "tools/artifacts/report_html.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/device.h"
#include "costmodel/pipeline_schedule.h"
#include "costmodel/simulator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/training_split.h"
#include "tools/artifacts/human_numbers.h"
#include "tools/artifacts/report_pipeline.h"

namespace autopar::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr char kEvilName[] = R"(<script>alert("x")</script>&'a)";
constexpr char kEvilEscaped[] = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;a";

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

costmodel::Cluster TestCluster(int devices) {
  costmodel::DeviceSpec spec;
  spec.name = "test";
  spec.memory_bytes = kGiB;
  // 1 byte per ns: 1,000 bytes take 1 µs.
  return costmodel::MakeHomogeneousCluster(spec, devices, kGiB, 1e9, 0);
}

// Units (compute µs) in a chain, each feeding the next with `bytes`.
costmodel::CostGraph Chain(const std::vector<std::string>& names, double compute_us,
                           int64_t bytes) {
  costmodel::CostGraph::Builder b(1);
  for (size_t u = 0; u < names.size(); ++u) {
    b.AddUnit({.name = names[u], .op = u == 0 ? "Conv" : "Relu", .compute_us = {compute_us}});
    if (u > 0) {
      const uint32_t t = b.AddTensor({.name = names[u - 1] + ":out",
                                      .producer = static_cast<uint32_t>(u - 1),
                                      .bytes = bytes});
      b.AddUse(t, static_cast<uint32_t>(u));
    }
  }
  absl::StatusOr<costmodel::CostGraph> g = std::move(b).Build();
  EXPECT_TRUE(g.ok()) << g.status();
  return *std::move(g);
}

TEST(HtmlEscapeTest, EscapesMarkupAndQuotes) {
  EXPECT_EQ(HtmlEscape(kEvilName), kEvilEscaped);
  EXPECT_EQ(HtmlEscape("conv1/weight"), "conv1/weight");
}

class ReportTest : public ::testing::Test {
 protected:
  // conv (device 0) -> evil (device 1) -> relu (device 0): a transfer each way.
  void SetUp() override {
    cluster_ = TestCluster(3);
    cluster_.devices[2].name = kEvilName;
    graph_ = Chain({"conv", kEvilName, "relu"}, 100, 50'000);
    costs_.resize(3);
    costs_[0].op_class = costmodel::OpClass::kConv;
    costs_[1].op_class = costmodel::OpClass::kElementwise;
    costs_[2].op_class = costmodel::OpClass::kElementwise;
    costmodel::Simulator simulator(graph_, cluster_);
    sim_ = simulator.Run({.device = {0, 1, 0}}, {.record_timeline = true});
    transfers_ = {{.tag = 0, .tensor = "conv:out", .src = 0, .dst = 1, .bytes = 50'000},
                  {.tag = 1, .tensor = kEvilName, .src = 1, .dst = 0, .bytes = 70'000}};
  }

  ReportInput Input() const {
    return {.model = "model<1>.onnx",
            .algorithm = "sgp",
            .search_time_ms = 12.5,
            .lower_bound_us = 250,
            .single_device_step_us = 300,
            .cluster = &cluster_,
            .graph = &graph_,
            .unit_costs = costs_,
            .simulation = &sim_,
            .transfers = transfers_};
  }

  std::string Render() { return RenderReport(Input()); }

  costmodel::Cluster cluster_;
  costmodel::CostGraph graph_;
  std::vector<costmodel::NodeCost> costs_;
  costmodel::SimulationResult sim_;
  std::vector<passes::Transfer> transfers_;
};

TEST_F(ReportTest, IsOneSelfContainedDocument) {
  const std::string html = Render();
  EXPECT_THAT(html, ::testing::StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(html, ::testing::EndsWith("</html>\n"));
  EXPECT_THAT(html, Not(HasSubstr("http://")));
  EXPECT_THAT(html, Not(HasSubstr("https://")));
  EXPECT_THAT(html, Not(HasSubstr(" src=")));
  EXPECT_EQ(Count(html, "<script"), 1);
  EXPECT_EQ(Count(html, "<svg"), 1);  // no convergence curve without progress
  // The hover tooltip, filled by the script from the boxes' titles.
  EXPECT_EQ(Count(html, "<div id=\"tip\" hidden>"), 1);
}

TEST_F(ReportTest, HasALanePerDeviceAndPerBusyLink) {
  const std::string html = Render();
  // Three devices (the idle one too), then links 0->1 and 1->0; 0->2 etc. carried nothing.
  EXPECT_EQ(Count(html, "class=\"lanelabel\""), 5);
  EXPECT_THAT(html, HasSubstr("class=\"lanelabel\">device 0 dev0<"));
  EXPECT_THAT(html, HasSubstr("class=\"lanelabel\">device 1 dev1<"));
  EXPECT_THAT(html, HasSubstr("class=\"lanelabel\">link 0&#8594;1<"));
  EXPECT_THAT(html, HasSubstr("class=\"lanelabel\">link 1&#8594;0<"));
  EXPECT_THAT(html, Not(HasSubstr(">link 0&#8594;2<")));
  for (int lane = 0; lane < 5; ++lane)
    EXPECT_THAT(html, HasSubstr(absl::StrCat("data-lane=\"", lane, "\""))) << lane;
  // Each 100 µs unit is wide enough to be its own box, with its name and op.
  EXPECT_THAT(html, HasSubstr("<title>conv (Conv), 100.0&#160;&#181;s"));
  EXPECT_THAT(html, HasSubstr("<title>relu (Relu), 100.0&#160;&#181;s"));
  EXPECT_THAT(html, HasSubstr("class=\"c0\""));   // conv
  EXPECT_THAT(html, HasSubstr("class=\"c10\""));  // transfers
  EXPECT_THAT(html, HasSubstr("<title>conv:out 0&#8594;1, 48.8 KiB"));
}

TEST_F(ReportTest, TheDeviceTableMarksADeviceWithoutUnitsUnused) {
  const std::string html = Render();
  const size_t devices = html.find("class=\"devices\"");
  ASSERT_NE(devices, std::string::npos);
  const std::string table = html.substr(devices, html.find("</table>", devices) - devices);
  // Device 2 (the last row) holds nothing; devices 0 and 1 hold units.
  EXPECT_EQ(Count(table, "(unused)"), 1);
  EXPECT_LT(table.find("<tr><td>2</td>"), table.find("<td>0 (unused)</td>"));
}

TEST_F(ReportTest, ShowsTheSummaryNumbers) {
  const std::string html = Render();
  ASSERT_GT(sim_.step_time_us, 0);
  EXPECT_THAT(html, HasSubstr(absl::StrFormat(">%.1f&#160;&#181;s<", sim_.step_time_us)));
  EXPECT_THAT(html, HasSubstr(">250.0&#160;&#181;s<"));  // lower bound
  EXPECT_THAT(html, HasSubstr(absl::StrFormat(">%.2f<", sim_.step_time_us / 250)));
  EXPECT_THAT(html,
              HasSubstr(absl::StrFormat(">%.2fx (one device: 300.0", 300 / sim_.step_time_us)));
  EXPECT_THAT(html, HasSubstr(">12.5 ms<"));
  EXPECT_THAT(html, HasSubstr(">sgp<"));
  EXPECT_THAT(html, HasSubstr("model&lt;1&gt;.onnx"));
}

TEST_F(ReportTest, ListsCutEdgesByBytesAndTheTransferMatrix) {
  const std::string html = Render();
  // The 70,000-byte edge comes first.
  const size_t evil = html.find(absl::StrCat("<tr><td class=\"l\">", kEvilEscaped));
  const size_t conv = html.find("<tr><td class=\"l\">conv:out</td>");
  ASSERT_NE(evil, std::string::npos);
  ASSERT_NE(conv, std::string::npos);
  EXPECT_LT(evil, conv);
  const size_t matrix = html.find("class=\"matrix\"");
  ASSERT_NE(matrix, std::string::npos);
  // Row 0: -, 48.8 KiB, 0; row 1: 68.4 KiB, -, 0.
  EXPECT_NE(html.find("<tr><th>0</th><td></td><td>48.8 KiB</td><td>0</td></tr>", matrix),
            std::string::npos);
  EXPECT_NE(html.find("<tr><th>1</th><td>68.4 KiB</td><td></td><td>0</td></tr>", matrix),
            std::string::npos);
  // Load and memory bars, one row per device.
  const size_t devices = html.find("class=\"devices\"");
  ASSERT_NE(devices, std::string::npos);
  EXPECT_EQ(Count(html.substr(devices, matrix - devices), "class=\"cap\""), 3);
}

TEST_F(ReportTest, ShowsTheSearchTimeOnlyWhenGiven) {
  ReportInput input = Input();
  input.search_time_ms.reset();
  const std::string html = RenderReport(input);
  EXPECT_THAT(html, Not(HasSubstr("search time")));
  EXPECT_THAT(html, Not(HasSubstr(" ms<")));
  // Nothing else in the document depends on the run: the same input, the same bytes.
  EXPECT_EQ(html, RenderReport(input));
}

TEST_F(ReportTest, DrawsTheConvergenceCurvePerGeneration) {
  // Infeasible for two generations, then a feasible plan that improves once
  // and stays: five changes of the curve, and the last generation.
  const std::vector<search::Progress> progress = {
      {.iteration = 0, .best_step_time_us = 200, .feasible = false, .elapsed_s = 0.1},
      {.iteration = 1, .best_step_time_us = 180, .feasible = false, .elapsed_s = 0.2},
      {.iteration = 2, .best_step_time_us = 260, .feasible = true, .elapsed_s = 0.3},
      {.iteration = 3, .best_step_time_us = 260, .feasible = true, .elapsed_s = 0.4},
      {.iteration = 4, .best_step_time_us = 240, .feasible = true, .elapsed_s = 0.5},
      {.iteration = 5, .best_step_time_us = 240, .feasible = true, .elapsed_s = 0.6},
      {.iteration = 9, .best_step_time_us = 240, .feasible = true, .elapsed_s = 7.5}};
  ReportInput input = Input();
  input.algorithm = "tga";
  input.convergence = progress;
  const std::string html = RenderReport(input);
  EXPECT_EQ(Count(html, "<svg"), 2);
  EXPECT_THAT(html, HasSubstr("<h2>Convergence</h2>"));
  EXPECT_THAT(html, HasSubstr("<tr><th class=\"l\">generations</th><td class=\"l\">9</td>"));
  EXPECT_EQ(Count(html, "<circle class=\"pi\""), 2);
  EXPECT_EQ(Count(html, "<circle class=\"pf\""), 3);
  EXPECT_THAT(html, HasSubstr("<title>generation 1: 180.0&#160;&#181;s, over memory</title>"));
  EXPECT_THAT(html, HasSubstr("<title>generation 4: 240.0&#160;&#181;s</title>"));
  EXPECT_THAT(html, HasSubstr("<title>generation 9: 240.0&#160;&#181;s</title>"));
  EXPECT_THAT(html, Not(HasSubstr("generation 3:")));
  // Both colours of the staircase are drawn; the x axis ends at generation 9.
  EXPECT_THAT(html, HasSubstr("stroke=\"#e15759\""));
  EXPECT_THAT(html, HasSubstr("stroke=\"#4e79a7\""));
  EXPECT_THAT(html, HasSubstr("text-anchor=\"end\">9</text>"));
  // The curve is drawn against generations, never against the clock.
  std::vector<search::Progress> slower = progress;
  for (search::Progress& p : slower) p.elapsed_s *= 3;
  input.convergence = slower;
  EXPECT_EQ(RenderReport(input), html);
}

TEST_F(ReportTest, ComparisonShowsTheTableAndOnePlanAtATime) {
  costmodel::SimulationResult other =
      costmodel::Simulator(graph_, cluster_).Run({.device = {0, 0, 0}}, {.record_timeline = true});
  ReportInput sgp = Input();
  ReportInput single = Input();
  single.algorithm = "single";
  single.simulation = &other;
  single.transfers = {};
  const std::vector<ComparedPlan> plans = {
      {.algorithm = "single", .report = single, .cut_edges = 0},
      {.algorithm = "heft", .error = "no <plan> within memory"},
      {.algorithm = "sgp", .report = sgp, .cut_edges = 2, .best = true}};
  const std::string html = RenderComparisonReport("model<1>.onnx", plans);
  EXPECT_THAT(html, ::testing::StartsWith("<!DOCTYPE html>"));
  EXPECT_EQ(Count(html, "<script"), 1);
  EXPECT_EQ(Count(html, "<div id=\"tip\""), 1);
  // The table: a row per algorithm, the best marked, the failure explained.
  const size_t table = html.find("class=\"comparison\"");
  ASSERT_NE(table, std::string::npos);
  EXPECT_THAT(html, HasSubstr("<tr class=\"best\"><td class=\"l\">sgp *</td>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"l\">heft</td><td>-</td>"));
  EXPECT_THAT(html, HasSubstr("no &lt;plan&gt; within memory"));
  // The selector lists the plans that exist, the best selected; only its
  // section is shown, each section has its own timeline.
  EXPECT_THAT(html, HasSubstr("<select id=\"algo\"><option value=\"single\">single</option>"
                              "<option value=\"sgp\" selected>sgp</option></select>"));
  EXPECT_THAT(html, HasSubstr("<section class=\"plan\" data-algorithm=\"single\" hidden>"));
  EXPECT_THAT(html, HasSubstr("<section class=\"plan\" data-algorithm=\"sgp\">"));
  EXPECT_THAT(html, Not(HasSubstr("data-algorithm=\"heft\"")));
  EXPECT_EQ(Count(html, "<svg class=\"gantt\""), 2);
  // sgp: 3 devices and 2 links; single: 3 devices.
  EXPECT_EQ(Count(html, "class=\"lanelabel\""), 8);
  EXPECT_THAT(html, Not(HasSubstr("model<1>")));
}

// A split training step on devices 0 and 2 (the one with the evil name):
// forward s0 (device 0) -> forward s1 (device 2) -> backward s2 (device 2) ->
// backward s3 (device 0), M = 3 under GPipe, simulated by the stage-level
// simulator the split uses.
pipeline::SplitTrainingStep SplitStep(const costmodel::Cluster& cluster) {
  using costmodel::StageKind;
  costmodel::PipelineStepProblem problem;
  problem.stages = {
      {.device = 0, .kind = StageKind::kForward, .compute_us = 100, .stash_bytes = 1000},
      {.device = 2,
       .kind = StageKind::kForward,
       .compute_us = 120,
       .inputs = {{.stage = 0, .bytes = 4000}},
       .stash_bytes = 2000},
      {.device = 2,
       .kind = StageKind::kBackward,
       .compute_us = 200,
       .inputs = {{.stage = 1, .bytes = 10}}},
      {.device = 0,
       .kind = StageKind::kBackward,
       .compute_us = 180,
       .inputs = {{.stage = 2, .bytes = 4000}}}};
  problem.fixed_bytes = {5000, 0, 7000};
  problem.update_us = {30, 0, 40};
  problem.microbatches = 3;
  problem.schedule = costmodel::PipelineSchedule::kGPipe;
  absl::StatusOr<costmodel::PipelineStepResult> predicted =
      costmodel::SimulatePipelineStep(problem, cluster);
  EXPECT_TRUE(predicted.ok()) << predicted.status();
  pipeline::SplitTrainingStep split;
  for (const costmodel::PipelineStage& s : problem.stages) {
    pipeline::TrainingStage stage;
    stage.kind = s.kind;
    stage.compute_us = s.compute_us;
    split.stages.push_back(std::move(stage));
  }
  split.updates.resize(2);
  split.devices = {0, 2};
  split.schedule = problem.schedule;
  split.microbatches = problem.microbatches;
  split.predicted = *std::move(predicted);
  return split;
}

TEST_F(ReportTest, DrawsASplitTrainingStepRunByRun) {
  const pipeline::SplitTrainingStep split = SplitStep(cluster_);
  const costmodel::PipelineStepResult& p = split.predicted;
  // 4 stages x 3 micro-batches, and the two devices' updates.
  ASSERT_EQ(p.timeline.size(), 14u);
  EXPECT_THAT(Render(), Not(HasSubstr("Pipeline step")));
  ReportInput input = Input();
  input.training_split = &split;
  const std::string html = RenderReport(input);
  // The section comes before the node-level timeline, which stays.
  const size_t section = html.find("<h2>Pipeline step</h2>");
  ASSERT_NE(section, std::string::npos);
  EXPECT_LT(section, html.find("<h2>Timeline</h2>"));
  EXPECT_THAT(html, HasSubstr("<h2>Devices</h2>"));
  EXPECT_THAT(html, HasSubstr("<h2>Transfer matrix</h2>"));
  EXPECT_EQ(Count(html, "<script"), 1);
  // The summary: schedule, M and the predicted step.
  EXPECT_THAT(html, HasSubstr("<th class=\"l\">schedule</th><td class=\"l\">gpipe</td>"));
  EXPECT_THAT(html, HasSubstr("<th class=\"l\">micro-batches (M)</th><td class=\"l\">3</td>"));
  EXPECT_THAT(html, HasSubstr(absl::StrFormat(
                        "<th class=\"l\">predicted step</th><td class=\"l\">%.1f&#160;&#181;s<",
                        p.step_us)));
  // A lane per device that runs stages; the evil name escaped.
  EXPECT_EQ(Count(html, "class=\"pipelabel\""), 2);
  EXPECT_THAT(html, HasSubstr("class=\"pipelabel\">device 0 dev0<"));
  EXPECT_THAT(html, HasSubstr(absl::StrCat("class=\"pipelabel\">device 2 ", kEvilEscaped, "<")));
  EXPECT_THAT(html, Not(HasSubstr(kEvilName)));
  // A box per run, the three kinds in their own classes and colours.
  EXPECT_EQ(Count(html, "<div class=\"run "), 14);
  EXPECT_EQ(Count(html, "<div class=\"run fwd\""), 6);
  EXPECT_EQ(Count(html, "<div class=\"run bwd\""), 6);
  EXPECT_EQ(Count(html, "<div class=\"run upd\""), 2);
  EXPECT_STRNE(kForwardRunColour, kBackwardRunColour);
  EXPECT_STRNE(kForwardRunColour, kUpdateRunColour);
  EXPECT_STRNE(kBackwardRunColour, kUpdateRunColour);
  EXPECT_THAT(
      html, HasSubstr(absl::StrCat(".run.fwd,.legend i.fwd{background:", kForwardRunColour, "}")));
  EXPECT_THAT(
      html, HasSubstr(absl::StrCat(".run.bwd,.legend i.bwd{background:", kBackwardRunColour, "}")));
  // Each box: its label and a tooltip with stage, kind, micro-batch, start
  // and duration, placed in percent of the step.
  for (const costmodel::StageRun& r : p.timeline) {
    if (r.stage < 0) {
      EXPECT_THAT(html, HasSubstr(absl::StrFormat(
                            "title=\"update of device %d, start %.1f&#160;&#181;s, duration "
                            "%.1f&#160;&#181;s\">update</div>",
                            r.device, r.start_us, r.end_us - r.start_us)));
      continue;
    }
    const bool forward = r.stage < 2;
    EXPECT_THAT(
        html, HasSubstr(absl::StrFormat(
                  "<div class=\"run %s\" style=\"left:%.3f%%;width:%.3f%%\" title=\"stage %d "
                  "(%s), micro-batch %d, start %.1f&#160;&#181;s, duration %.1f&#160;&#181;s\">"
                  "s%d %s m%d</div>",
                  forward ? "fwd" : "bwd", 100 * r.start_us / p.step_us,
                  100 * (r.end_us - r.start_us) / p.step_us, r.stage,
                  forward ? "forward" : "backward", r.microbatch, r.start_us, r.end_us - r.start_us,
                  r.stage, forward ? "F" : "B", r.microbatch)))
        << r.stage << " " << r.microbatch;
  }
  // Per device: peak memory of its capacity and the most micro-batches
  // stashed (GPipe: all 3 on both).
  const size_t devices = html.find("class=\"pipedevices\"");
  ASSERT_NE(devices, std::string::npos);
  const std::string table = html.substr(devices, html.find("</table>", devices) - devices);
  EXPECT_EQ(p.max_stashes[0], 3);
  for (int d : {0, 2}) {
    EXPECT_THAT(table, HasSubstr(absl::StrCat("<tr><td>", d, "</td>")));
    EXPECT_THAT(table, HasSubstr(absl::StrCat(FormatBytes(p.peak_memory_bytes[d]), " of 1.0 GiB")));
    EXPECT_THAT(table, HasSubstr(absl::StrCat("<td>", p.max_stashes[d], "</td></tr>")));
  }
  EXPECT_THAT(table, Not(HasSubstr("<tr><td>1</td>")));
  // The same step, the same bytes.
  EXPECT_EQ(html, RenderReport(input));
}

TEST(UnitTransfersTest, OnePerTensorAndDestinationDevice) {
  // t0 (unit 0) is read by units 1, 2 and 3; t1 (unit 1) by unit 3.
  costmodel::CostGraph::Builder b(1);
  for (int u = 0; u < 4; ++u) b.AddUnit({.name = absl::StrCat("u", u), .compute_us = {1}});
  const uint32_t t0 = b.AddTensor({.name = "t0", .producer = 0, .bytes = 100});
  for (uint32_t u : {1u, 2u, 3u}) b.AddUse(t0, u);
  const uint32_t t1 = b.AddTensor({.name = "t1", .producer = 1, .bytes = 7});
  b.AddUse(t1, 3);
  absl::StatusOr<costmodel::CostGraph> g = std::move(b).Build();
  ASSERT_TRUE(g.ok()) << g.status();
  // Units 1 and 3 on device 2, unit 2 with its producer: t0 crosses once to
  // device 2; t1 stays on device 2.
  std::vector<passes::Transfer> transfers = UnitTransfers(*g, {.device = {0, 2, 0, 2}});
  ASSERT_EQ(transfers.size(), 1u);
  EXPECT_EQ(transfers[0].tensor, "t0");
  EXPECT_EQ(transfers[0].src, 0);
  EXPECT_EQ(transfers[0].dst, 2);
  EXPECT_EQ(transfers[0].bytes, 100);
  // Spread over three devices: t0 to devices 1 and 2 (in that order), t1 to 2.
  transfers = UnitTransfers(*g, {.device = {0, 2, 1, 2}});
  ASSERT_EQ(transfers.size(), 2u);
  EXPECT_EQ(transfers[0].dst, 1);
  EXPECT_EQ(transfers[1].dst, 2);
  transfers = UnitTransfers(*g, {.device = {0, 1, 2, 3}});
  ASSERT_EQ(transfers.size(), 4u);
  EXPECT_EQ(transfers[3].tensor, "t1");
  EXPECT_EQ(transfers[3].tag, 3);
}

TEST_F(ReportTest, NamesCannotInjectMarkup) {
  const std::string html = Render();
  EXPECT_THAT(html, Not(HasSubstr(kEvilName)));
  EXPECT_THAT(html, Not(HasSubstr("alert(\"")));
  EXPECT_THAT(html, HasSubstr(kEvilEscaped));
  EXPECT_THAT(html, Not(HasSubstr("model<1>")));
}

TEST_F(ReportTest, ALongConvergenceCurveKeepsAPointPerPixelColumn) {
  // 100,000 generations, each a little better than the one before.
  std::vector<search::Progress> progress;
  for (int g = 0; g <= 100'000; ++g)
    progress.push_back({.iteration = g, .best_step_time_us = 1e6 - g, .feasible = true});
  ReportInput input = Input();
  input.convergence = progress;
  const std::string without = Render();
  const std::string html = RenderReport(input);
  const int points = Count(html, "<circle");
  // The plot is 540 px wide: a point per column, and the first and the last.
  EXPECT_GE(points, 500);
  EXPECT_LE(points, 542);
  EXPECT_THAT(html, HasSubstr("<title>generation 0: "));
  EXPECT_THAT(html, HasSubstr("<title>generation 100000: 900000.0&#160;&#181;s</title>"));
  EXPECT_LT(html.size() - without.size(), size_t{200'000});
  std::printf("100,000-generation curve: %d points, %zu bytes\n", points,
              html.size() - without.size());
}

TEST(ReportSizeTest, AHundredThousandNodeTimelineStaysSmall) {
  constexpr int kDevices = 4;
  constexpr int kUnits = 100'000;
  std::vector<std::string> names;
  for (int u = 0; u < kUnits; ++u) names.push_back(absl::StrCat("layer", u, "/block/op"));
  costmodel::Cluster cluster = TestCluster(kDevices);
  costmodel::CostGraph graph = Chain(names, 1, 4096);
  // A synthetic timeline: devices work side by side, each on a quarter of the
  // units back to back, 1 µs each, with every 1000th unit a wide 500 µs box;
  // each unit's output then crosses to the next device in 0.5 µs.
  costmodel::SimulationResult sim;
  std::vector<double> now(kDevices, 0);
  for (uint32_t u = 0; u < kUnits; ++u) {
    const int d = static_cast<int>(u % kDevices);
    const double us = u % 1000 == 0 ? 500 : 1;
    sim.timeline.push_back({.unit = u, .device = d, .start_us = now[d], .end_us = now[d] + us});
    now[d] += us;
    if (u + 1 < kUnits) {
      sim.timeline.push_back({.kind = costmodel::TimelineEntry::Kind::kTransfer,
                              .unit = u,
                              .tensor = u,
                              .device = d,
                              .dst = (d + 1) % kDevices,
                              .start_us = now[d],
                              .end_us = now[d] + 0.5});
    }
  }
  sim.step_time_us = now[0];
  sim.devices.resize(kDevices);
  const std::string html = RenderReport({.model = "big.onnx",
                                         .algorithm = "m-etf",
                                         .cluster = &cluster,
                                         .graph = &graph,
                                         .simulation = &sim});
  EXPECT_LT(html.size(), size_t{3} << 20);
  // A lane per device and per link d -> d+1.
  EXPECT_EQ(Count(html, "class=\"lanelabel\""), 2 * kDevices);
  const int boxes = Count(html, "<rect");
  // At most one box per pixel column per lane, plus the wide boxes.
  EXPECT_LE(boxes, 2 * kDevices * (kTimelineWidthPx + 1) + kUnits / 1000);
  EXPECT_GE(boxes, kUnits / 1000);
  EXPECT_THAT(html, HasSubstr(" ops, "));
  EXPECT_THAT(html, HasSubstr("<title>layer1000/block/op (Relu), 500.0&#160;&#181;s"));
  std::printf("100k-node report: %zu bytes, %d boxes\n", html.size(), boxes);
}

}  // namespace
}  // namespace autopar::tools
