// report.html: the plan drawn. One self-contained
// HTML file (inline SVG, CSS and a few lines of JS; no network) showing the
// summary numbers, for TGA its convergence curve, with `--microbatches auto`
// the curve of counts it tried (report_microbatches.h), a Gantt timeline of the
// simulated step with one lane per device and per busy link (hovering a box
// shows what it holds), per-device load and memory bars, the largest cut
// edges and the device x device transfer matrix. For a training step split
// over devices it first draws the step that will run, stage by stage
// (tools/artifacts/report_pipeline.h). `compare --report` writes
// the same sections for every algorithm that produced a plan, behind a
// selector, under the comparison table.
//
// Note [Deterministic report]: the document is a function of its input
// only — no clocks, no unordered iteration, numbers printed with fixed
// formats — so that the same plan gives the same bytes. The
// search time, a wall-clock measurement, is shown only when the caller sets
// it (`--timings`), and the convergence curve's x axis is the generation,
// not the time.
//
// Note [Timeline aggregation]: a 100k-node graph has far more boxes than the
// timeline has pixels. Boxes narrower than kMinBoxPx are merged per lane and
// per pixel column into one box (coloured by the op family with the most time
// in it, its tooltip counting what it holds), so each lane holds at most
// about two elements per pixel column and the file stays a few MB whatever
// the graph size.
#ifndef AUTOPAR_TOOLS_ARTIFACTS_REPORT_HTML_H_
#define AUTOPAR_TOOLS_ARTIFACTS_REPORT_HTML_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/node_cost.h"
#include "costmodel/node_times.h"
#include "costmodel/simulator.h"
#include "passes/partition.h"
#include "pipeline/planning.h"
#include "pipeline/training_split.h"
#include "search/search.h"

namespace autopar::tools {

/// Everything the report shows; the pointers must be set.
struct ReportInput {
  /// The source model's path, as the user gave it.
  std::string model;
  std::string algorithm;
  /// Shown when set (Note [Deterministic report]).
  std::optional<double> search_time_ms;
  int microbatches = 1;
  /// Whether the node times were measured (--node-times).
  costmodel::CostSource cost_source;
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
  /// An iterative search's progress, one entry per generation (TGA): drawn
  /// as the convergence curve when not empty. Only the generation, the best
  /// step time and its feasibility are used.
  absl::Span<const search::Progress> convergence;
  /// A training step split over devices: drawn as the "Pipeline step"
  /// section (report_pipeline.h) when set.
  const pipeline::SplitTrainingStep* training_split = nullptr;
  /// `--microbatches auto`'s curve: drawn as the "Micro-batches" section
  /// (report_microbatches.h) when set and more than one count was tried.
  const pipeline::MicrobatchChoice* microbatch_search = nullptr;
};

/// Width of the timeline drawing, px, at zoom 1.
inline constexpr int kTimelineWidthPx = 1200;
/// Boxes narrower than this are aggregated (Note [Timeline aggregation]).
inline constexpr double kMinBoxPx = 1.0;
/// How many cut edges the report lists.
inline constexpr int kTopCutEdges = 20;

/// The report as one HTML document.
std::string RenderReport(const ReportInput& input);

/// One row of `compare`: an algorithm and its plan, if it found one.
struct ComparedPlan {
  std::string algorithm;
  /// The plan drawn; unset when the algorithm found none.
  std::optional<ReportInput> report;
  /// Why there is no plan.
  std::string error;
  /// Edges of the unit graph whose ends are on different devices.
  int64_t cut_edges = 0;
  /// The fastest plan that fits.
  bool best = false;
};

/// `compare --report`: the comparison table, then (with `--microbatches
/// auto`, `microbatch_search` set) the curve that chose the M every
/// algorithm ran at, then every plan's sections (as RenderReport draws them)
/// behind a selector that shows one at a time, the best plan first.
std::string RenderComparisonReport(std::string_view model, absl::Span<const ComparedPlan> plans,
                                   const pipeline::MicrobatchChoice* microbatch_search = nullptr);

/// The document every report is written in: the <head> with the reports'
/// one style sheet and the <body>'s tooltip, then (the tail) the script
/// that drives tooltips, zoom and the selector, and the end of the document.
/// Other reports (report_size.h) write their sections between the two.
void AppendDocumentHead(std::string_view title, std::string& out);
void AppendDocumentTail(std::string& out);

/// The tensors that cross devices when `placement` places `graph`'s units, one
/// per (tensor, destination device), in tensor order: the cut edges of a
/// plan that was not rewritten (its dtype and shape unknown).
std::vector<passes::Transfer> UnitTransfers(const costmodel::CostGraph& graph,
                                            const costmodel::Placement& placement);

/// `text` with &, <, >, " and ' replaced by entities: safe in element text
/// and in quoted attribute values.
std::string HtmlEscape(std::string_view text);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_ARTIFACTS_REPORT_HTML_H_
