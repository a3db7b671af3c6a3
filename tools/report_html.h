// report.html: the plan drawn (DESIGN.md §8, issue 9). One self-contained
// HTML file (inline SVG, CSS and a few lines of JS; no network) showing the
// summary numbers, a Gantt timeline of the simulated step with one lane per
// device and per busy link, per-device load and memory bars, the largest cut
// edges and the device x device transfer matrix.
//
// Note [Timeline aggregation]: a 100k-node graph has far more boxes than the
// timeline has pixels. Boxes narrower than kMinBoxPx are merged per lane and
// per pixel column into one box (coloured by the op family with the most time
// in it, its tooltip counting what it holds), so each lane holds at most
// about two elements per pixel column and the file stays a few MB whatever
// the graph size.
#ifndef AUTOPAR_TOOLS_REPORT_HTML_H_
#define AUTOPAR_TOOLS_REPORT_HTML_H_

#include <string>
#include <string_view>

#include "absl/types/span.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/node_cost.h"
#include "costmodel/simulator.h"
#include "passes/partition.h"

namespace autopar::tools {

/// Everything the report shows; the pointers must be set.
struct ReportInput {
  /// The source model's path, as the user gave it.
  std::string model;
  std::string algorithm;
  double search_time_ms = 0;
  int microbatches = 1;
  double lower_bound_us = 0;
  double single_device_step_us = 0;
  const costmodel::Cluster* cluster = nullptr;
  /// The simulated units (for the main command: one per node).
  const costmodel::CostGraph* graph = nullptr;
  /// Per unit of `graph`, its costs (for the op family); empty: all "other".
  absl::Span<const costmodel::NodeCost> unit_costs;
  /// A simulation of `graph` run with record_timeline = true.
  const costmodel::SimulationResult* simulation = nullptr;
  /// The deployment's cut edges.
  absl::Span<const passes::Transfer> transfers;
};

/// Width of the timeline drawing, px, at zoom 1.
inline constexpr int kTimelineWidthPx = 1200;
/// Boxes narrower than this are aggregated (Note [Timeline aggregation]).
inline constexpr double kMinBoxPx = 1.0;
/// How many cut edges the report lists.
inline constexpr int kTopCutEdges = 20;

/// The report as one HTML document.
std::string RenderReport(const ReportInput& input);

/// `text` with &, <, >, " and ' replaced by entities: safe in element text
/// and in quoted attribute values.
std::string HtmlEscape(std::string_view text);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_REPORT_HTML_H_
