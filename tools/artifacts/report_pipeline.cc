#include "tools/artifacts/report_pipeline.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/artifacts/human_numbers.h"
#include "tools/artifacts/report_common.h"
#include "tools/artifacts/report_html.h"

namespace autopar::tools {
namespace {

using costmodel::StageKind;
using costmodel::StageRun;

std::string Us(double us) { return FormatUs(us); }

/// What a run is: its CSS class, its kind's name and its box label.
struct RunKind {
  const char* css;
  const char* name;
  std::string label;
};

RunKind KindOf(const pipeline::SplitTrainingStep& split, const StageRun& run) {
  if (run.stage < 0) return {"upd", "update", "update"};
  const std::string at = absl::StrCat("s", run.stage, " ");
  const std::string mb = absl::StrCat(" m", run.microbatch);
  if (static_cast<size_t>(run.stage) >= split.stages.size()) return {"unk", "?", at + "?" + mb};
  if (split.stages[run.stage].kind == StageKind::kForward) return {"fwd", "forward", at + "F" + mb};
  return {"bwd", "backward", at + "B" + mb};
}

std::string Title(const RunKind& kind, const StageRun& run) {
  const std::string what = run.stage < 0 ? absl::StrCat("update of device ", run.device)
                                         : absl::StrCat("stage ", run.stage, " (", kind.name,
                                                        "), micro-batch ", run.microbatch);
  return absl::StrCat(what, ", start ", Us(run.start_us), ", duration ",
                      Us(run.end_us - run.start_us));
}

void WriteSummary(const pipeline::SplitTrainingStep& split, std::string& out) {
  int forward = 0;
  for (const pipeline::TrainingStage& s : split.stages)
    forward += s.kind == StageKind::kForward ? 1 : 0;
  const int backward = static_cast<int>(split.stages.size()) - forward;
  out += "<table class=\"summary pipesummary\">\n";
  auto row = [&](const char* name, const std::string& value) {
    absl::StrAppend(&out, "<tr><th class=\"l\">", name, "</th><td class=\"l\">", value,
                    "</td></tr>\n");
  };
  row("schedule", std::string(costmodel::PipelineScheduleName(split.schedule)));
  row("micro-batches (M)", absl::StrCat(split.microbatches));
  row("predicted step", Us(split.predicted.step_us));
  row("stages", absl::StrCat(forward, " forward, ", backward, " backward, ", split.updates.size(),
                             " update models"));
  row("runs", absl::StrCat(split.predicted.timeline.size(), " (stages x M, and one update per ",
                           "device)"));
  out += "</table>\n";
}

void WriteGantt(const pipeline::SplitTrainingStep& split, const costmodel::Cluster& cluster,
                const std::vector<int32_t>& devices, std::string& out) {
  const costmodel::PipelineStepResult& p = split.predicted;
  double extent = p.step_us;
  for (const StageRun& r : p.timeline) extent = std::max(extent, r.end_us);
  if (extent <= 0) extent = 1;
  absl::StrAppend(&out, "<div class=\"timeline pipeline\"><div class=\"legend\">",
                  "<span><i class=\"fwd\"></i>forward</span><span><i class=\"bwd\"></i>backward",
                  "</span><span><i class=\"upd\"></i>update</span> <button class=\"zin\">zoom in",
                  "</button><button class=\"zout\">zoom out</button><button class=\"zreset\">reset",
                  "</button> (box: s&lt;stage&gt; F|B m&lt;micro-batch&gt;; hover for details)",
                  "</div>\n<div class=\"tl\"><div class=\"labels\">");
  for (int32_t d : devices) {
    absl::StrAppend(&out, "<div class=\"pipelabel\">device ", d, " ",
                    HtmlEscape(cluster.device(d).name), "</div>");
  }
  absl::StrAppendFormat(&out,
                        "</div><div class=\"scroll\"><div class=\"zoomed\" style=\"width:%dpx\">"
                        "<div class=\"pipegantt\">\n",
                        kTimelineWidthPx);
  for (int32_t d : devices) {
    std::vector<const StageRun*> runs;
    for (const StageRun& r : p.timeline)
      if (r.device == d) runs.push_back(&r);
    std::stable_sort(runs.begin(), runs.end(), [](const StageRun* a, const StageRun* b) {
      return a->start_us < b->start_us;
    });
    absl::StrAppend(&out, "<div class=\"plane\" data-device=\"", d, "\">");
    for (const StageRun* r : runs) {
      const RunKind kind = KindOf(split, *r);
      absl::StrAppendFormat(&out,
                            "<div class=\"run %s\" style=\"left:%.3f%%;width:%.3f%%\" "
                            "title=\"%s\">%s</div>",
                            kind.css, 100 * r->start_us / extent,
                            100 * (r->end_us - r->start_us) / extent, Title(kind, *r), kind.label);
    }
    out += "</div>\n";
  }
  out += "</div>";
  AppendTimeAxis(extent, out);
  out += "</div></div></div></div>\n";
}

void WriteDevices(const pipeline::SplitTrainingStep& split, const costmodel::Cluster& cluster,
                  const std::vector<int32_t>& devices, std::string& out) {
  const costmodel::PipelineStepResult& p = split.predicted;
  const double step = p.step_us > 0 ? p.step_us : 1;
  out +=
      "<table class=\"pipedevices\"><tr><th>device</th><th class=\"l\">kind</th><th>runs</th>"
      "<th>busy</th><th class=\"l\">peak memory vs capacity</th><th>most micro-batches "
      "stashed at once</th></tr>\n";
  for (int32_t d : devices) {
    int runs = 0;
    double busy = 0;
    for (const StageRun& r : p.timeline) {
      if (r.device != d) continue;
      runs += r.stage >= 0 ? 1 : 0;
      busy += r.end_us - r.start_us;
    }
    const int64_t peak =
        d < static_cast<int>(p.peak_memory_bytes.size()) ? p.peak_memory_bytes[d] : 0;
    const int32_t stashes = d < static_cast<int>(p.max_stashes.size()) ? p.max_stashes[d] : 0;
    const int64_t capacity = cluster.device(d).memory_bytes;
    // Over capacity the bar spans the peak and the red mark shows capacity.
    const double scale = static_cast<double>(std::max<int64_t>({capacity, peak, 1}));
    absl::StrAppendFormat(
        &out,
        "<tr><td>%d</td><td class=\"l\">%s</td><td>%d</td><td>%s (%.1f%%)</td><td class=\"l\">"
        "<span class=\"bar\"><span style=\"left:0;width:%.2f%%;background:#76b7b2\"></span>"
        "<span class=\"cap\" style=\"left:%.2f%%\" title=\"capacity\"></span></span> %s of %s "
        "(%.1f%%)%s</td><td>%d</td></tr>\n",
        d, HtmlEscape(cluster.device(d).name), runs, Us(busy), 100 * busy / step,
        100 * peak / scale, 100 * std::min(capacity / scale, 1.0) - 0.5, FormatBytes(peak),
        FormatBytes(capacity), capacity > 0 ? 100.0 * peak / capacity : 0.0,
        peak > capacity ? " <b>over capacity</b>" : "", stashes);
  }
  out += "</table>\n";
}

}  // namespace

std::string PipelineStepStyle() {
  return absl::StrCat(
      ".pipegantt{position:relative}\n"
      ".plane{position:relative;height:22px}\n"
      ".run{position:absolute;top:2px;height:18px;min-width:1px;box-sizing:border-box;"
      "border-right:1px solid #fff;overflow:hidden;white-space:nowrap;font-size:11px;"
      "line-height:18px;padding-left:2px;color:#fff}\n"
      ".run.fwd,.legend i.fwd{background:",
      kForwardRunColour, "}\n.run.bwd,.legend i.bwd{background:", kBackwardRunColour,
      "}\n.run.upd,.legend i.upd{background:", kUpdateRunColour,
      "}\n.run.unk{background:#bab0ac}\n.pipedevices td{white-space:nowrap}\n");
}

void WritePipelineStep(const pipeline::SplitTrainingStep& split, const costmodel::Cluster& cluster,
                       std::string& out) {
  // The devices drawn: those that run stages, and any other the timeline names.
  std::set<int32_t> drawn(split.devices.begin(), split.devices.end());
  for (const StageRun& r : split.predicted.timeline) drawn.insert(r.device);
  std::vector<int32_t> devices;
  for (int32_t d : drawn)
    if (d >= 0 && d < cluster.num_devices()) devices.push_back(d);

  out +=
      "<section class=\"pipelinestep\"><h2>Pipeline step</h2>\n<p>The training step as it will "
      "run: each device runs its forward and backward stages for every micro-batch in the order "
      "plan.json gives the runner, then its update. Times are predicted by the stage-level "
      "schedule simulation; <code>node tools/runner/train.mjs OUT --json</code> measures the same "
      "runs. The Timeline section below is the node-level simulation the placement was chosen "
      "with.</p>\n";
  WriteSummary(split, out);
  WriteGantt(split, cluster, devices, out);
  WriteDevices(split, cluster, devices, out);
  out += "</section>\n";
}

}  // namespace autopar::tools
