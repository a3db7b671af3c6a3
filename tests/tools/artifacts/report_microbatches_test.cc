// The "Micro-batches" section (tools/artifacts/report_microbatches.h): two
// charts and a row per count tried, in M order, the chosen one marked; a
// count without a plan is a cross and a row that says why (escaped); no
// section for a single count; every device up to kCurveDevices, the fullest
// beyond; the same input gives the same bytes. And the page of `size
// --report` (tools/artifacts/report_size.h) around it.
#include "tools/artifacts/report_microbatches.h"

#include <algorithm>
#include <string>
#include <vector>

#include "costmodel/cluster.h"
#include "costmodel/device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/capacity.h"
#include "pipeline/planning.h"
#include "tools/artifacts/report_size.h"

namespace autopar::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kMiB = int64_t{1} << 20;

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

pipeline::MicrobatchTrial Trial(int m, double per_sample_us, std::vector<int64_t> peaks,
                                bool feasible = true) {
  return {.microbatches = m,
          .step_time_us = per_sample_us * m,
          .time_per_sample_us = per_sample_us,
          .peak_memory_bytes = std::move(peaks),
          .feasible = feasible};
}

// Tried in the order auto tries them: powers, then the bisection.
pipeline::MicrobatchChoice Choice() {
  pipeline::MicrobatchChoice c;
  c.chosen = 6;
  c.max_microbatches = 8;
  c.tried = {Trial(1, 100, {10 * kMiB, 0}), Trial(2, 60, {8 * kMiB, 9 * kMiB}),
             Trial(4, 45, {9 * kMiB, 9 * kMiB}), Trial(6, 40, {11 * kMiB, 12 * kMiB}),
             Trial(3, 50, {9 * kMiB, 9 * kMiB})};
  c.tried.push_back({.microbatches = 8, .feasible = false, .error = "needs <more> memory"});
  return c;
}

std::string Render(const pipeline::MicrobatchChoice& c, std::vector<int64_t> capacities) {
  std::string out;
  WriteMicrobatchCurve(c, capacities, "Micro-batches", "lead", out);
  return out;
}

TEST(MicrobatchCurveTest, ChartsAndARowPerCountInOrder) {
  const std::string html = Render(Choice(), {16 * kMiB, 16 * kMiB});
  EXPECT_THAT(html, HasSubstr("<h2>Micro-batches</h2>"));
  EXPECT_EQ(Count(html, "<svg class=\"curve mb\""), 2);
  // Rows in M order: 1, 2, 3, 4, 6, 8; the chosen one bold and starred.
  std::vector<size_t> at;
  for (const char* row :
       {"<td>1</td>", "<td>2</td>", "<td>3</td>", "<td>4</td>", "<td>6 *</td>", "<td>8</td>"}) {
    at.push_back(html.find(std::string("<tr>") + row));
    if (std::string(row) == "<td>6 *</td>")
      at.back() = html.find("<tr class=\"best\"><td>6 *</td>");
    ASSERT_NE(at.back(), std::string::npos) << row;
  }
  EXPECT_TRUE(std::is_sorted(at.begin(), at.end()));
  EXPECT_EQ(Count(html, "class=\"best\""), 1);
  // Two devices: a line and a column each.
  EXPECT_THAT(html, HasSubstr("peak, device 1</th>"));
  EXPECT_THAT(html, HasSubstr("M=6, device 1: 12.0 MiB"));
  // The capacity is within reach of the peaks: drawn.
  EXPECT_THAT(html, HasSubstr("<title>capacity 16.0 MiB</title>"));
  // The count without a plan: a cross and a row, escaped.
  EXPECT_THAT(html, HasSubstr("M=8: no plan within memory"));
  EXPECT_THAT(html, HasSubstr("no plan within memory: needs &lt;more&gt; memory"));
  EXPECT_THAT(html, Not(HasSubstr("<more>")));
  EXPECT_EQ(Render(Choice(), {16 * kMiB, 16 * kMiB}), html);
}

TEST(MicrobatchCurveTest, NothingForOneCountAndFarCapacitiesAreNotDrawn) {
  pipeline::MicrobatchChoice one = Choice();
  one.tried.resize(1);
  one.chosen = 1;
  EXPECT_EQ(Render(one, {16 * kMiB, 16 * kMiB}), "");
  EXPECT_THAT(Render(Choice(), {kMiB << 10, kMiB << 10}), Not(HasSubstr("capacity")));
}

TEST(MicrobatchCurveTest, TheFullestDeviceBeyondEight) {
  pipeline::MicrobatchChoice c;
  c.chosen = 2;
  c.max_microbatches = 2;
  std::vector<int64_t> peaks(12, kMiB);
  peaks[7] = 5 * kMiB;
  c.tried = {Trial(1, 10, peaks), Trial(2, 8, peaks)};
  const std::string html = Render(c, std::vector<int64_t>(12, kMiB << 10));
  EXPECT_THAT(html, HasSubstr("peak, fullest device</th>"));
  EXPECT_THAT(html, Not(HasSubstr("peak, device 0")));
  EXPECT_THAT(html, HasSubstr("M=2, fullest device: 5.0 MiB"));
}

TEST(SizeReportTest, ARowPerCountTheAnswerAndTheCurves) {
  costmodel::DeviceSpec spec;
  spec.name = "test";
  spec.memory_bytes = 16 * kMiB;
  const costmodel::Cluster cluster = costmodel::MakeHomogeneousCluster(spec, 2, 16 * kMiB, 1e9, 0);
  pipeline::CapacityAnswer answer;
  answer.devices = 2;
  pipeline::CapacityRow one{.devices = 1, .error = "does not fit"};
  pipeline::CapacityRow two{.devices = 2,
                            .choice = Choice(),
                            .microbatches = 6,
                            .step_time_us = 240,
                            .time_per_sample_us = 40,
                            .samples_per_s = 25000,
                            .peak_memory_bytes = 12 * kMiB,
                            .memory_capacity_bytes = 16 * kMiB,
                            .fits = true,
                            .meets_target = true};
  answer.rows = {one, two};
  const std::string html = RenderSizeReport({.model = "m<1>.onnx",
                                             .devices = "1..2 x test",
                                             .step = "inference, sgp",
                                             .target = "none",
                                             .answer_line = "answer: 2 devices",
                                             .answer = &answer,
                                             .notes = {"no plan within memory", ""},
                                             .cluster = &cluster});
  EXPECT_THAT(html, ::testing::StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(html, HasSubstr("m&lt;1&gt;.onnx"));
  EXPECT_THAT(html, HasSubstr("<tr><td>1</td><td>-</td>"));
  EXPECT_THAT(html, HasSubstr("<tr class=\"best\"><td>2 *</td><td>240.0&#160;&#181;s</td>"
                              "<td>40.00&#160;&#181;s</td><td>25000.0</td>"));
  EXPECT_THAT(html, HasSubstr("12.0 MiB / 16.0 MiB</td><td>yes</td><td>6</td>"));
  EXPECT_THAT(html, HasSubstr("<p class=\"answer\"><b>answer: 2 devices</b></p>"));
  // The answer's curve, unfolded; the count without a plan has none.
  EXPECT_THAT(html, HasSubstr("<details class=\"count\" data-devices=\"2\" open>"));
  EXPECT_THAT(html, Not(HasSubstr("data-devices=\"1\"")));
  EXPECT_EQ(Count(html, "<svg class=\"curve mb\""), 2);
}

}  // namespace
}  // namespace autopar::tools
