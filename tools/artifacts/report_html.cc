#include "tools/artifacts/report_html.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/artifacts/human_numbers.h"
#include "tools/artifacts/report_common.h"
#include "tools/artifacts/report_microbatches.h"
#include "tools/artifacts/report_pipeline.h"

namespace autopar::tools {
namespace {

using costmodel::OpClass;
using costmodel::TimelineEntry;

constexpr int kLaneHeightPx = 22;
constexpr int kBoxHeightPx = 18;
// Colour index of transfers, after the op classes.
constexpr size_t kTransferColour = costmodel::kNumOpClasses;
constexpr std::array<const char*, costmodel::kNumOpClasses + 1> kColours = {
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#17becf"};

std::string Us(double us) { return FormatUs(us); }

std::string Percent(double fraction) { return absl::StrFormat("%.1f%%", 100 * fraction); }

/// One lane of the timeline: a device's compute or a directed link.
struct Lane {
  std::string label;
  std::vector<const TimelineEntry*> entries;
};

/// The timeline's lanes: every device, then every link that carried data.
std::vector<Lane> Lanes(const ReportInput& in) {
  const int num_devices = in.cluster->num_devices();
  std::vector<Lane> lanes(num_devices);
  for (int d = 0; d < num_devices; ++d)
    lanes[d].label = absl::StrCat("device ", d, " ", HtmlEscape(in.cluster->device(d).name));
  std::vector<std::vector<const TimelineEntry*>> links(static_cast<size_t>(num_devices) *
                                                       num_devices);
  for (const TimelineEntry& e : in.simulation->timeline) {
    if (e.kind == TimelineEntry::Kind::kCompute) {
      if (e.device >= 0 && e.device < num_devices) lanes[e.device].entries.push_back(&e);
    } else if (e.device >= 0 && e.device < num_devices && e.dst >= 0 && e.dst < num_devices) {
      links[static_cast<size_t>(e.device) * num_devices + e.dst].push_back(&e);
    }
  }
  for (size_t l = 0; l < links.size(); ++l) {
    if (links[l].empty()) continue;
    lanes.push_back({.label = absl::StrCat("link ", l / num_devices, "&#8594;", l % num_devices),
                     .entries = std::move(links[l])});
  }
  for (Lane& lane : lanes) {
    std::stable_sort(
        lane.entries.begin(), lane.entries.end(),
        [](const TimelineEntry* a, const TimelineEntry* b) { return a->start_us < b->start_us; });
  }
  return lanes;
}

class TimelineWriter {
 public:
  TimelineWriter(const ReportInput& in, double step_us, std::string& out)
      : in_(in), scale_(kTimelineWidthPx / step_us), out_(out) {}

  /// Appends the lane's boxes (Note [Timeline aggregation]).
  void WriteLane(const Lane& lane, int index) {
    absl::StrAppend(&out_, "<g class=\"lane\" data-lane=\"", index, "\" transform=\"translate(0,",
                    index * kLaneHeightPx + 2, ")\">");
    bucket_ = {};
    for (const TimelineEntry* e : lane.entries) {
      const double x0 = e->start_us * scale_;
      const double width = (e->end_us - e->start_us) * scale_;
      if (width >= kMinBoxPx) {
        Flush();
        Box(x0, width, ColourOf(*e), Title(*e));
        continue;
      }
      const int64_t column = static_cast<int64_t>(std::floor(x0));
      if (column != bucket_.column) Flush();
      bucket_.column = column;
      if (bucket_.count++ == 0) bucket_.first = e;
      const double us = e->end_us - e->start_us;
      bucket_.us += us;
      bucket_.colour_us[ColourOf(*e)] += us;
    }
    Flush();
    out_ += "</g>\n";
  }

 private:
  struct Bucket {
    int64_t column = -1;
    int count = 0;
    const TimelineEntry* first = nullptr;
    double us = 0;
    std::array<double, kColours.size()> colour_us{};
  };

  size_t ColourOf(const TimelineEntry& e) const {
    if (e.kind == TimelineEntry::Kind::kTransfer) return kTransferColour;
    if (e.unit >= in_.unit_costs.size()) return static_cast<size_t>(OpClass::kOther);
    return static_cast<size_t>(in_.unit_costs[e.unit].op_class);
  }

  std::string Title(const TimelineEntry& e) const {
    const costmodel::CostGraph& g = *in_.graph;
    const std::string microbatch =
        in_.microbatches > 1 ? absl::StrCat(", micro-batch ", e.microbatch) : "";
    const std::string when = absl::StrCat(Us(e.end_us - e.start_us), " (", Us(e.start_us),
                                          " &#8594; ", Us(e.end_us), microbatch, ")");
    if (e.kind == TimelineEntry::Kind::kTransfer) {
      const std::string tensor = e.tensor < g.num_tensors() ? g.tensor_name(e.tensor) : "?";
      const int64_t bytes = e.tensor < g.num_tensors() ? g.tensor_bytes(e.tensor) : 0;
      return absl::StrCat(HtmlEscape(tensor), " ", e.device, "&#8594;", e.dst, ", ",
                          FormatBytes(bytes), ", ", when);
    }
    if (e.unit >= g.num_units()) return when;
    return absl::StrCat(HtmlEscape(g.name(e.unit)), " (", HtmlEscape(g.op(e.unit)), "), ", when);
  }

  void Flush() {
    if (bucket_.count == 0) return;
    if (bucket_.count == 1) {
      Box(static_cast<double>(bucket_.column), kMinBoxPx, ColourOf(*bucket_.first),
          Title(*bucket_.first));
    } else {
      const size_t colour =
          static_cast<size_t>(std::max_element(bucket_.colour_us.begin(), bucket_.colour_us.end()) -
                              bucket_.colour_us.begin());
      Box(static_cast<double>(bucket_.column), kMinBoxPx, colour,
          absl::StrCat(bucket_.count, " ops, ", Us(bucket_.us), " (first: ", Title(*bucket_.first),
                       ")"));
    }
    bucket_ = {};
  }

  void Box(double x, double width, size_t colour, const std::string& title) {
    absl::StrAppendFormat(&out_,
                          "<rect class=\"c%d\" x=\"%.2f\" width=\"%.2f\" height=\"%d\"><title>%s"
                          "</title></rect>",
                          colour, x, width, kBoxHeightPx, title);
  }

  const ReportInput& in_;
  double scale_;  // px per µs
  std::string& out_;
  Bucket bucket_;
};

void WriteStyle(std::string& out) {
  out += R"(<style>
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}
.tl{display:flex;border:1px solid #ccc}
.labels{flex:none;font-size:12px}
.labels div{height:22px;line-height:22px;padding:0 6px;white-space:nowrap}
.scroll{overflow-x:auto;flex:auto}
.axis{position:relative;height:16px;font-size:11px;color:#555}
.axis span{position:absolute;transform:translateX(-50%);white-space:nowrap}
.bar{position:relative;width:400px;height:14px;background:#eee;display:inline-block;vertical-align:middle}
.bar span{position:absolute;top:0;height:14px}
.cap{width:2px;background:#d00}
.legend span{display:inline-block;margin-right:12px;font-size:12px}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
#tip{position:fixed;max-width:520px;padding:3px 6px;font-size:12px;background:#222;color:#fff;
border-radius:3px;pointer-events:none;z-index:10}
svg.curve text{font-size:11px;fill:#555}
.curve .pf{fill:#4e79a7}.curve .pi{fill:#e15759}
tr.best td{font-weight:bold}
.devices td{white-space:nowrap}
.overview{display:flex;flex-wrap:wrap;gap:0 4em;align-items:flex-start}
)";
  for (size_t c = 0; c < kColours.size(); ++c)
    absl::StrAppend(&out, ".c", c, "{fill:", kColours[c], "}.k", c, "{background:", kColours[c],
                    "}\n");
  out += PipelineStepStyle();
  out += MicrobatchCurveStyle();
  out += "</style>\n";
}

void WriteSummary(const ReportInput& in, std::string& out) {
  const costmodel::SimulationResult& sim = *in.simulation;
  const double step = sim.step_time_us;
  out += "<h2>Summary</h2>\n<table class=\"summary\">\n";
  auto row = [&](const char* name, const std::string& value) {
    absl::StrAppend(&out, "<tr><th class=\"l\">", name, "</th><td class=\"l\">", value,
                    "</td></tr>\n");
  };
  row("model", HtmlEscape(in.model));
  row("algorithm", HtmlEscape(in.algorithm));
  if (in.search_time_ms) row("search time", absl::StrFormat("%.1f ms", *in.search_time_ms));
  if (!in.convergence.empty()) row("generations", absl::StrCat(in.convergence.back().iteration));
  row("predicted step time", Us(step));
  row("lower bound", Us(in.lower_bound_us));
  row("step / lower bound",
      in.lower_bound_us > 0 ? absl::StrFormat("%.2f", step / in.lower_bound_us) : "-");
  row("speed-up over one device",
      step > 0 ? absl::StrFormat("%.2fx (one device: %s)", in.single_device_step_us / step,
                                 Us(in.single_device_step_us))
               : "-");
  row("devices", absl::StrCat(in.cluster->num_devices()));
  row("micro-batches", absl::StrCat(in.microbatches, " per step (the model is one micro-batch)"));
  row("node times", HtmlEscape(CostSourceText(in.cost_source)));
  row("transfers",
      absl::StrCat(in.transfers.size(), " tensors, ", FormatBytes(sim.comm_bytes), " per step"));
  out += "</table>\n";
}

// The best step time so far against the generation: a staircase, blue while
// the best plan fits, red while it does not. Only the generations where the
// best changed (and the last) are drawn: the rest add nothing to the curve;
// of several changes within one pixel column only the last is kept, so a
// long run draws at most a point per column.
void WriteConvergence(const ReportInput& in, std::string& out) {
  if (in.convergence.empty()) return;
  constexpr int kWidth = 640, kHeight = 200, kLeft = 90, kRight = 10, kTop = 10, kBottom = 34;
  const search::Progress& last = in.convergence.back();
  const double generations = static_cast<double>(std::max<int64_t>(last.iteration, 1));
  auto x = [&](int64_t g) {
    return kLeft + (kWidth - kLeft - kRight) * static_cast<double>(g) / generations;
  };
  // Step 1: the points where the curve changes, one per pixel column.
  std::vector<const search::Progress*> points;
  for (const search::Progress& p : in.convergence) {
    if (!points.empty() && p.best_step_time_us == points.back()->best_step_time_us &&
        p.feasible == points.back()->feasible) {
      continue;
    }
    if (points.size() > 1 &&
        std::floor(x(p.iteration)) == std::floor(x(points.back()->iteration))) {
      points.back() = &p;
    } else {
      points.push_back(&p);
    }
  }
  if (points.back() != &last) points.push_back(&last);
  // Step 2: scales; a flat curve gets a band around its value.
  double lo = points.front()->best_step_time_us, hi = lo;
  for (const search::Progress* p : points) {
    lo = std::min(lo, p->best_step_time_us);
    hi = std::max(hi, p->best_step_time_us);
  }
  const double pad = std::max((hi - lo) * 0.05, std::max(std::abs(hi), 1.0) * 0.01);
  lo -= pad;
  hi += pad;
  auto y = [&](double us) { return kTop + (kHeight - kTop - kBottom) * (hi - us) / (hi - lo); };
  // Step 3: the staircase, one path per feasibility, and a marker per change.
  std::string feasible_path, infeasible_path, markers;
  for (size_t i = 0; i < points.size(); ++i) {
    const search::Progress& p = *points[i];
    if (i + 1 < points.size()) {
      const search::Progress& next = *points[i + 1];
      absl::StrAppendFormat(p.feasible ? &feasible_path : &infeasible_path, "M%.1f %.1fH%.1fV%.1f",
                            x(p.iteration), y(p.best_step_time_us), x(next.iteration),
                            y(next.best_step_time_us));
    }
    absl::StrAppendFormat(&markers,
                          "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\"><title>generation "
                          "%d: %s%s</title></circle>",
                          p.feasible ? "pf" : "pi", x(p.iteration), y(p.best_step_time_us),
                          p.iteration, Us(p.best_step_time_us), p.feasible ? "" : ", over memory");
  }
  absl::StrAppendFormat(
      &out,
      "<div><h2>Convergence</h2>\n<p>The best plan's simulated step per generation, as the "
      "search saw it<br>on its placement units (blue: fits in memory; red: does not).</p>\n"
      "<svg class=\"curve\" "
      "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">",
      kWidth, kHeight, kWidth, kHeight);
  absl::StrAppendFormat(&out, "<path d=\"M%d %dV%dH%d\" stroke=\"#999\" fill=\"none\"/>", kLeft,
                        kTop, kHeight - kBottom, kWidth - kRight);
  absl::StrAppendFormat(&out,
                        "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>"
                        "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>",
                        kLeft - 4, kTop + 8, Us(hi), kLeft - 4, kHeight - kBottom, Us(lo));
  absl::StrAppendFormat(&out,
                        "<text x=\"%d\" y=\"%d\">0</text><text x=\"%d\" y=\"%d\" "
                        "text-anchor=\"end\">%d</text><text x=\"%d\" y=\"%d\" "
                        "text-anchor=\"middle\">generation</text>",
                        kLeft, kHeight - kBottom + 14, kWidth - kRight, kHeight - kBottom + 14,
                        last.iteration, (kLeft + kWidth) / 2, kHeight - 4);
  if (!infeasible_path.empty())
    absl::StrAppend(&out, "<path d=\"", infeasible_path,
                    "\" stroke=\"#e15759\" stroke-width=\"2\" fill=\"none\"/>");
  if (!feasible_path.empty())
    absl::StrAppend(&out, "<path d=\"", feasible_path,
                    "\" stroke=\"#4e79a7\" stroke-width=\"2\" fill=\"none\"/>");
  absl::StrAppend(&out, markers, "</svg></div>\n");
}

void WriteTimeline(const ReportInput& in, std::string& out) {
  const costmodel::SimulationResult& sim = *in.simulation;
  double step_us = sim.step_time_us;
  for (const TimelineEntry& e : sim.timeline) step_us = std::max(step_us, e.end_us);
  if (step_us <= 0) step_us = 1;
  const std::vector<Lane> lanes = Lanes(in);
  const int height = static_cast<int>(lanes.size()) * kLaneHeightPx + 4;

  out += "<h2>Timeline</h2>\n<div class=\"timeline\"><div class=\"legend\">";
  for (size_t c = 0; c < costmodel::kNumOpClasses; ++c)
    absl::StrAppend(&out, "<span><i class=\"k", c, "\"></i>",
                    std::string(costmodel::OpClassName(static_cast<OpClass>(c))), "</span>");
  absl::StrAppend(&out, "<span><i class=\"k", kTransferColour,
                  "\"></i>transfer</span> <button class=\"zin\">zoom in</button>"
                  "<button class=\"zout\">zoom out</button><button class=\"zreset\">reset</button>"
                  " (or Ctrl+wheel; hover a box for details)</div>\n");
  out += "<div class=\"tl\"><div class=\"labels\">";
  for (const Lane& lane : lanes)
    absl::StrAppend(&out, "<div class=\"lanelabel\">", lane.label, "</div>");
  // The boxes stretch with the zoom (preserveAspectRatio="none"); the axis
  // labels are positioned in percent so they stay legible at any zoom.
  absl::StrAppendFormat(&out,
                        "</div><div class=\"scroll\"><div class=\"zoomed\" style=\"width:%dpx\">"
                        "<svg class=\"gantt\" width=\"100%%\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                        "preserveAspectRatio=\"none\">\n",
                        kTimelineWidthPx, height, kTimelineWidthPx, height);
  TimelineWriter writer(in, step_us, out);
  for (size_t l = 0; l < lanes.size(); ++l) writer.WriteLane(lanes[l], static_cast<int>(l));
  out += "</svg>";
  AppendTimeAxis(step_us, out);
  out += "</div></div></div></div>\n";
}

/// A bar of `parts` (fraction, colour, tooltip) with an optional capacity mark.
std::string Bar(const std::vector<std::tuple<double, std::string, std::string>>& parts,
                double capacity_fraction) {
  std::string bar = "<span class=\"bar\">";
  double left = 0;
  for (const auto& [fraction, colour, title] : parts) {
    absl::StrAppendFormat(&bar,
                          "<span style=\"left:%.2f%%;width:%.2f%%;background:%s\" title=\"%s\">"
                          "</span>",
                          100 * left, 100 * fraction, colour, title);
    left += fraction;
  }
  if (capacity_fraction >= 0)
    absl::StrAppendFormat(&bar,
                          "<span class=\"cap\" style=\"left:%.2f%%\" title=\"capacity\"></span>",
                          100 * std::min(capacity_fraction, 1.0) - 0.5);
  return bar + "</span>";
}

void WriteDevices(const ReportInput& in, std::string& out) {
  const costmodel::SimulationResult& sim = *in.simulation;
  const double step = sim.step_time_us > 0 ? sim.step_time_us : 1;
  out +=
      "<h2>Devices</h2>\n<table class=\"devices\"><tr><th>device</th><th class=\"l\">kind</th>"
      "<th>units</th><th class=\"l\">compute load (busy / step)</th><th class=\"l\">peak memory "
      "(parameters + activations) vs capacity</th></tr>\n";
  for (int d = 0; d < in.cluster->num_devices() && d < static_cast<int>(sim.devices.size()); ++d) {
    const costmodel::DeviceUsage& u = sim.devices[d];
    const int64_t capacity = in.cluster->device(d).memory_bytes;
    const double load = std::min(1.0, u.busy_us / step);
    // Over capacity, the bar spans the peak and the red mark shows capacity.
    const double scale = static_cast<double>(std::max<int64_t>({capacity, u.peak_memory_bytes, 1}));
    const std::string params = absl::StrCat("parameters ", FormatBytes(u.param_bytes));
    const std::string acts = absl::StrCat("activations ", FormatBytes(u.peak_activation_bytes));
    absl::StrAppend(
        &out, "<tr><td>", d, "</td><td class=\"l\">", HtmlEscape(in.cluster->device(d).name),
        "</td><td>", u.units == 0 ? "0 (unused)" : absl::StrCat(u.units), "</td><td class=\"l\">",
        Bar({{load, "#4e79a7", Us(u.busy_us)}}, -1), " ", Percent(u.busy_us / step), " (",
        Us(u.busy_us), ")</td><td class=\"l\">",
        Bar({{u.param_bytes / scale, "#9c755f", params},
             {u.peak_activation_bytes / scale, "#f28e2b", acts}},
            capacity / scale),
        " ", FormatBytes(u.peak_memory_bytes), " of ", FormatBytes(capacity), " (", params, ", ",
        acts, ")", u.peak_memory_bytes > capacity ? " <b>over capacity</b>" : "", "</td></tr>\n");
  }
  out += "</table>\n";
}

void WriteTransfers(const ReportInput& in, std::string& out) {
  const int num_devices = in.cluster->num_devices();
  std::vector<const passes::Transfer*> sorted;
  std::vector<int64_t> matrix(static_cast<size_t>(num_devices) * num_devices, 0);
  for (const passes::Transfer& t : in.transfers) {
    sorted.push_back(&t);
    if (t.src >= 0 && t.src < num_devices && t.dst >= 0 && t.dst < num_devices)
      matrix[static_cast<size_t>(t.src) * num_devices + t.dst] += t.bytes;
  }
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const passes::Transfer* a, const passes::Transfer* b) { return a->bytes > b->bytes; });
  if (sorted.size() > static_cast<size_t>(kTopCutEdges)) sorted.resize(kTopCutEdges);

  absl::StrAppend(&out, "<h2>Largest cut edges</h2>\n<p>", in.transfers.size(),
                  " tensors cross devices; the ", sorted.size(), " largest:</p>\n",
                  "<table class=\"cuts\"><tr><th class=\"l\">tensor</th><th>from</th><th>to</th>"
                  "<th>bytes</th><th class=\"l\">shape</th></tr>\n");
  for (const passes::Transfer* t : sorted) {
    std::string shape;
    for (size_t i = 0; i < t->shape.size(); ++i)
      absl::StrAppend(&shape, i ? "&#215;" : "", t->shape[i] < 0 ? "?" : absl::StrCat(t->shape[i]));
    absl::StrAppend(&out, "<tr><td class=\"l\">", HtmlEscape(t->tensor), "</td><td>", t->src,
                    "</td><td>", t->dst, "</td><td>", FormatBytes(t->bytes),
                    "</td><td class=\"l\">[", shape, "]</td></tr>\n");
  }
  out +=
      "</table>\n<h2>Transfer matrix</h2>\n<p>Bytes sent per step, row = source, column = "
      "destination.</p>\n<table class=\"matrix\"><tr><th></th>";
  for (int d = 0; d < num_devices; ++d) absl::StrAppend(&out, "<th>", d, "</th>");
  out += "</tr>\n";
  for (int s = 0; s < num_devices; ++s) {
    absl::StrAppend(&out, "<tr><th>", s, "</th>");
    for (int d = 0; d < num_devices; ++d) {
      const int64_t bytes = matrix[static_cast<size_t>(s) * num_devices + d];
      absl::StrAppend(&out, "<td>", s == d ? "" : bytes ? FormatBytes(bytes) : "0", "</td>");
    }
    out += "</tr>\n";
  }
  out += "</table>\n";
}

// Per timeline, zoom widens its container (the SVG stretches with it). One
// tooltip for the document shows what the hovered box holds; the box's
// <title> (or, for the pipeline step's HTML boxes, its title attribute:
// the tooltip without script) is moved into data-tip on first
// hover so the browser's own slow tooltip does not appear as well. The
// selector of `compare --report` shows one plan at a time.
constexpr char kScript[] = R"(<script>
(function(){
document.querySelectorAll('.timeline').forEach(function(t){
var box=t.querySelector('.zoomed'),w=parseInt(box.style.width),z=1;
function set(v){z=Math.min(Math.max(v,1),256);box.style.width=(w*z)+'px';}
t.querySelector('.zin').onclick=function(){set(z*2);};
t.querySelector('.zout').onclick=function(){set(z/2);};
t.querySelector('.zreset').onclick=function(){set(1);};
box.parentNode.addEventListener('wheel',function(e){if(!e.ctrlKey)return;e.preventDefault();
set(e.deltaY<0?z*1.25:z/1.25);},{passive:false});});
var tip=document.getElementById('tip');
document.addEventListener('mouseover',function(e){var r=e.target;
if(!r.closest||!r.closest('svg.gantt,svg.curve,.pipegantt')){tip.hidden=true;return;}
var t=r.querySelector('title');if(t){r.setAttribute('data-tip',t.textContent);t.remove();}
if(r.hasAttribute('title')){r.setAttribute('data-tip',r.getAttribute('title'));r.removeAttribute('title');}
var text=r.getAttribute('data-tip');tip.hidden=!text;if(text)tip.textContent=text;
tip.style.left=(e.clientX+12)+'px';tip.style.top=(e.clientY+12)+'px';});
document.addEventListener('mousemove',function(e){if(tip.hidden)return;
tip.style.left=(e.clientX+12)+'px';tip.style.top=(e.clientY+12)+'px';});
var sel=document.getElementById('algo');
if(sel)sel.onchange=function(){document.querySelectorAll('section.plan').forEach(function(s){
s.hidden=s.getAttribute('data-algorithm')!==sel.value;});};})();
</script>
)";

/// One plan's sections, in a <section> the compare selector can hide.
void WritePlan(const ReportInput& in, bool shown, std::string& out) {
  absl::StrAppend(&out, "<section class=\"plan\" data-algorithm=\"", HtmlEscape(in.algorithm), "\"",
                  shown ? "" : " hidden", ">\n");
  // The summary and the curve side by side, where the page is wide enough.
  out += "<div class=\"overview\"><div>";
  WriteSummary(in, out);
  out += "</div>";
  WriteConvergence(in, out);
  out += "</div>\n";
  if (in.microbatch_search != nullptr) {
    const pipeline::MicrobatchChoice& c = *in.microbatch_search;
    WriteMicrobatchCurve(
        c, DeviceCapacities(*in.cluster), "Micro-batches",
        absl::StrFormat("<code>--microbatches auto</code> chose M=%d of 1..%d by the lowest time "
                        "per sample (step &#247; (M &#215; batch), batch %d) among the plans that "
                        "fit, SGP planning each count tried; the plan shown is %s's at M=%d.",
                        c.chosen, c.max_microbatches, c.batch, HtmlEscape(in.algorithm),
                        in.microbatches),
        out);
  }
  if (in.training_split != nullptr) WritePipelineStep(*in.training_split, *in.cluster, out);
  WriteTimeline(in, out);
  WriteDevices(in, out);
  WriteTransfers(in, out);
  out += "</section>\n";
}

/// The fullest device's peak memory over its capacity.
double PeakOverCapacity(const ReportInput& in) {
  double fullest = 0;
  for (int d = 0;
       d < in.cluster->num_devices() && d < static_cast<int>(in.simulation->devices.size()); ++d) {
    const int64_t capacity = std::max<int64_t>(in.cluster->device(d).memory_bytes, 1);
    fullest = std::max(fullest, static_cast<double>(in.simulation->devices[d].peak_memory_bytes) /
                                    static_cast<double>(capacity));
  }
  return fullest;
}

void WriteComparisonTable(absl::Span<const ComparedPlan> plans, std::string& out) {
  out +=
      "<h2>Comparison</h2>\n<table class=\"comparison\"><tr><th class=\"l\">algorithm</th>"
      "<th>step</th><th>/ lower bound</th><th>speed-up</th><th>peak / capacity</th><th>fits</th>"
      "<th>cut edges</th><th>bytes sent</th><th>search time</th><th class=\"l\">note</th></tr>\n";
  for (const ComparedPlan& p : plans) {
    absl::StrAppend(&out, p.best ? "<tr class=\"best\">" : "<tr>", "<td class=\"l\">",
                    HtmlEscape(p.algorithm), p.best ? " *" : "", "</td>");
    if (!p.report) {
      absl::StrAppend(&out, "<td>-</td><td>-</td><td>-</td><td>-</td><td>no</td><td>-</td>",
                      "<td>-</td><td>-</td><td class=\"l\">", HtmlEscape(p.error), "</td></tr>\n");
      continue;
    }
    const ReportInput& r = *p.report;
    const double step = r.simulation->step_time_us;
    const double peak = PeakOverCapacity(r);
    absl::StrAppend(
        &out, "<td>", Us(step), "</td><td>",
        r.lower_bound_us > 0 ? absl::StrFormat("%.2f", step / r.lower_bound_us) : "-", "</td><td>",
        step > 0 ? absl::StrFormat("%.2fx", r.single_device_step_us / step) : "-", "</td><td>",
        Percent(peak), "</td><td>", peak <= 1 ? "yes" : "<b>no</b>", "</td><td>", p.cut_edges,
        "</td><td>", FormatBytes(r.simulation->comm_bytes), "</td><td>",
        r.search_time_ms ? absl::StrFormat("%.2f ms", *r.search_time_ms) : "-",
        "</td><td class=\"l\"></td></tr>\n");
  }
  out += "</table>\n<p>* the fastest plan that fits.</p>\n";
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      case '\'':
        escaped += "&#39;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

void AppendDocumentHead(std::string_view title, std::string& out) {
  absl::StrAppend(&out,
                  "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<title>onnx-autopar ",
                  HtmlEscape(title), "</title>\n");
  WriteStyle(out);
  out += "</head><body>\n<div id=\"tip\" hidden></div>\n";
}

void AppendDocumentTail(std::string& out) {
  out += kScript;
  out += "</body></html>\n";
}

std::string RenderReport(const ReportInput& in) {
  std::string out;
  out.reserve(1 << 20);
  AppendDocumentHead(absl::StrCat("report: ", in.model), out);
  absl::StrAppend(&out, "<h1>onnx-autopar plan for ", HtmlEscape(in.model), "</h1>\n");
  WritePlan(in, /*shown=*/true, out);
  AppendDocumentTail(out);
  return out;
}

std::string RenderComparisonReport(std::string_view model, absl::Span<const ComparedPlan> plans,
                                   const pipeline::MicrobatchChoice* microbatch_search) {
  std::string out;
  out.reserve(1 << 20);
  AppendDocumentHead(absl::StrCat("comparison: ", std::string(model)), out);
  absl::StrAppend(&out, "<h1>onnx-autopar comparison for ", HtmlEscape(model), "</h1>\n");
  WriteComparisonTable(plans, out);
  if (microbatch_search != nullptr) {
    // Every plan runs on the same cluster: the first one's capacities.
    std::vector<int64_t> capacities;
    for (const ComparedPlan& p : plans) {
      if (p.report) {
        capacities = DeviceCapacities(*p.report->cluster);
        break;
      }
    }
    const pipeline::MicrobatchChoice& c = *microbatch_search;
    WriteMicrobatchCurve(
        c, capacities, "Micro-batches",
        absl::StrFormat("<code>--microbatches auto</code>: SGP's curve chose M=%d of 1..%d by the "
                        "lowest time per sample (step &#247; (M &#215; batch), batch %d) among "
                        "the plans that fit; every algorithm above is compared at M=%d.",
                        c.chosen, c.max_microbatches, c.batch, c.chosen),
        out);
  }
  // The plan shown first: the best, else the first that exists.
  const ComparedPlan* shown = nullptr;
  for (const ComparedPlan& p : plans) {
    if (p.report && (shown == nullptr || (p.best && !shown->best))) shown = &p;
  }
  if (shown != nullptr) {
    out += "<p><label>plan shown: <select id=\"algo\">";
    for (const ComparedPlan& p : plans) {
      if (!p.report) continue;
      absl::StrAppend(&out, "<option value=\"", HtmlEscape(p.algorithm), "\"",
                      &p == shown ? " selected" : "", ">", HtmlEscape(p.algorithm), "</option>");
    }
    out += "</select></label></p>\n";
  }
  for (const ComparedPlan& p : plans) {
    if (p.report) WritePlan(*p.report, /*shown=*/&p == shown, out);
  }
  AppendDocumentTail(out);
  return out;
}

std::vector<passes::Transfer> UnitTransfers(const costmodel::CostGraph& graph,
                                            const costmodel::Placement& placement) {
  std::vector<passes::Transfer> transfers;
  std::vector<int32_t> destinations;
  for (uint32_t t = 0; t < graph.num_tensors(); ++t) {
    const int32_t src = placement.device[graph.tensor_producer(t)];
    destinations.clear();
    for (uint32_t e : graph.tensor_uses(t)) {
      const int32_t dst = placement.device[graph.edge_dst(e)];
      if (dst != src) destinations.push_back(dst);
    }
    std::sort(destinations.begin(), destinations.end());
    destinations.erase(std::unique(destinations.begin(), destinations.end()), destinations.end());
    for (int32_t dst : destinations) {
      transfers.push_back({.tag = static_cast<int64_t>(transfers.size()),
                           .tensor = graph.tensor_name(t),
                           .src = src,
                           .dst = dst,
                           .bytes = graph.tensor_bytes(t)});
    }
  }
  return transfers;
}

}  // namespace autopar::tools
