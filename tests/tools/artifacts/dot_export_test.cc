// --dot's GraphViz text, read back line by line: every unit coloured by its
// device, exactly the edges that cross devices bold and labelled with their
// bytes, labels escaped, the same text for the same plan.
#include "tools/artifacts/dot_export.h"

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace autopar::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// a → b, a → c, b → d, c → d, with a second tensor a → c; a's name holds a
// quote, a backslash and a line break.
costmodel::CostGraph Diamond() {
  costmodel::CostGraph::Builder b(1);
  const std::vector<std::string> names = {"a \"quoted\" C:\\dir\nsecond line", "b", "c", "d"};
  for (const std::string& name : names) b.AddUnit({.name = name, .op = "Op", .compute_us = {1}});
  const uint32_t a1 = b.AddTensor({.name = "a1", .producer = 0, .bytes = 1024});
  const uint32_t a2 = b.AddTensor({.name = "a2", .producer = 0, .bytes = 2048});
  const uint32_t bt = b.AddTensor({.name = "b", .producer = 1, .bytes = 100});
  const uint32_t ct = b.AddTensor({.name = "c", .producer = 2, .bytes = 200});
  b.AddUse(a1, 1);
  b.AddUse(a1, 2);
  b.AddUse(a2, 2);
  b.AddUse(bt, 3);
  b.AddUse(ct, 3);
  absl::StatusOr<costmodel::CostGraph> graph = std::move(b).Build();
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *std::move(graph);
}

struct ParsedDot {
  std::map<std::string, std::string> node_color;  // "u0" → "#8dd3c7"
  std::map<std::string, std::string> node_label;
  /// (src, dst) → the attribute list, empty for a plain edge.
  std::map<std::pair<std::string, std::string>, std::string> edges;
};

// Reads the statements PlacementToDot writes, one per line.
ParsedDot Parse(const std::string& dot) {
  ParsedDot parsed;
  std::istringstream lines(dot);
  static const std::regex kNode(
      R"re(\s*(\w+) \[label="((?:[^"\\]|\\.)*)", fillcolor="([^"]*)"\];)re");
  static const std::regex kEdge(R"re(\s*(\w+) -> (\w+)(?: \[(.*)\])?;)re");
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, kNode)) {
      parsed.node_color[m[1]] = m[3];
      parsed.node_label[m[1]] = m[2];
    } else if (std::regex_match(line, m, kEdge)) {
      parsed.edges[{m[1], m[2]}] = m[3];
    }
  }
  return parsed;
}

TEST(DotExportTest, ColoursUnitsByDeviceAndBoldsExactlyTheCutEdges) {
  const costmodel::CostGraph graph = Diamond();
  const std::vector<int32_t> device = {0, 0, 1, 1};
  absl::StatusOr<std::string> dot = PlacementToDot(graph, device, {"gpu0", "gpu1"});
  ASSERT_TRUE(dot.ok()) << dot.status();
  EXPECT_THAT(*dot, StartsWith("digraph placement {\n"));
  const ParsedDot parsed = Parse(*dot);

  // Units and the legend, each in its device's colour; the two colours differ.
  ASSERT_NE(DeviceColor(0), DeviceColor(1));
  for (uint32_t u = 0; u < 4; ++u) {
    EXPECT_EQ(parsed.node_color.at("u" + std::to_string(u)), DeviceColor(device[u])) << u;
  }
  EXPECT_EQ(parsed.node_color.at("device0"), DeviceColor(0));
  EXPECT_EQ(parsed.node_color.at("device1"), DeviceColor(1));
  EXPECT_EQ(parsed.node_label.at("device1"), "1: gpu1");

  // One edge per pair; bold exactly where the devices differ (a → c, b → d),
  // labelled with the bytes of all tensors between the pair.
  using Edge = std::pair<std::string, std::string>;
  EXPECT_EQ(parsed.edges.size(), 4u);
  EXPECT_EQ(parsed.edges.at(Edge{"u0", "u1"}), "");
  EXPECT_EQ(parsed.edges.at(Edge{"u2", "u3"}), "");
  EXPECT_EQ(parsed.edges.at(Edge{"u0", "u2"}), "style=bold, penwidth=3, label=\"3.0 KiB\"");
  EXPECT_EQ(parsed.edges.at(Edge{"u1", "u3"}), "style=bold, penwidth=3, label=\"100 B\"");
}

TEST(DotExportTest, EscapesLabels) {
  EXPECT_EQ(DotEscape("say \"hi\""), "say \\\"hi\\\"");
  EXPECT_EQ(DotEscape("C:\\dir"), "C:\\\\dir");
  EXPECT_EQ(DotEscape("one\ntwo\rthree\tfour"), "one\\ntwo three four");
  absl::StatusOr<std::string> dot = PlacementToDot(Diamond(), {0, 0, 0, 0}, {"say \"x\""});
  ASSERT_TRUE(dot.ok()) << dot.status();
  const ParsedDot parsed = Parse(*dot);
  EXPECT_EQ(parsed.node_label.at("u0"), "a \\\"quoted\\\" C:\\\\dir\\nsecond line");
  EXPECT_EQ(parsed.node_label.at("device0"), "0: say \\\"x\\\"");
  // Nothing is cut on one device.
  EXPECT_THAT(*dot, ::testing::Not(HasSubstr("bold")));
  // No raw line break inside a statement: every line is a whole statement.
  EXPECT_EQ(parsed.node_label.size(), 5u);
}

TEST(DotExportTest, SamePlanSameText) {
  const costmodel::CostGraph graph = Diamond();
  absl::StatusOr<std::string> first = PlacementToDot(graph, {0, 1, 0, 1}, {"a", "b"});
  absl::StatusOr<std::string> second = PlacementToDot(graph, {0, 1, 0, 1}, {"a", "b"});
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, *second);
}

TEST(DotExportTest, RejectsAPlacementThatDoesNotFit) {
  const costmodel::CostGraph graph = Diamond();
  EXPECT_THAT(PlacementToDot(graph, {0, 0}, {"a"}).status().message(), HasSubstr("2 entries"));
  EXPECT_THAT(PlacementToDot(graph, {0, 0, 2, 0}, {"a", "b"}).status().message(),
              HasSubstr("device 2"));
}

TEST(DotExportTest, PaletteRepeatsAfterTwelveDevices) {
  std::set<std::string> colors;
  for (int d = 0; d < 12; ++d) colors.insert(std::string(DeviceColor(d)));
  EXPECT_EQ(colors.size(), 12u);
  EXPECT_EQ(DeviceColor(12), DeviceColor(0));
}

}  // namespace
}  // namespace autopar::tools
