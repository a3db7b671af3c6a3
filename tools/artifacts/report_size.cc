#include "tools/artifacts/report_size.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pipeline/cluster_request.h"
#include "tools/artifacts/human_numbers.h"
#include "tools/artifacts/report_common.h"
#include "tools/artifacts/report_html.h"
#include "tools/artifacts/report_microbatches.h"

namespace autopar::tools {
namespace {

void WriteHeader(const SizeReportInput& in, std::string& out) {
  out += "<table class=\"summary\">\n";
  auto row = [&](const char* name, const std::string& value) {
    absl::StrAppend(&out, "<tr><th class=\"l\">", name, "</th><td class=\"l\">", HtmlEscape(value),
                    "</td></tr>\n");
  };
  row("model", in.model);
  row("devices", in.devices);
  row("step", in.step);
  row("target", in.target);
  out += "</table>\n";
}

// Each device's peak, for the row's tooltip.
std::string PeaksTitle(const pipeline::CapacityRow& row) {
  if (!row.choice) return "";
  std::string title;
  const costmodel::SimulationResult& sim = row.choice->plan.simulation;
  for (size_t d = 0; d < sim.devices.size(); ++d)
    absl::StrAppend(&title, d ? ", " : "", "device ", d, ": ",
                    FormatBytes(sim.devices[d].peak_memory_bytes));
  return title;
}

void WriteTable(const SizeReportInput& in, std::string& out) {
  const pipeline::CapacityAnswer& answer = *in.answer;
  out +=
      "<h2>Device counts</h2>\n<table class=\"size\"><tr><th>devices</th><th>step</th>"
      "<th>time per sample</th><th>samples/s</th><th>peak memory / capacity (fullest "
      "device)</th><th>fits</th><th>M</th><th class=\"l\">note</th></tr>\n";
  for (size_t i = 0; i < answer.rows.size(); ++i) {
    const pipeline::CapacityRow& row = answer.rows[i];
    const bool marked = row.devices == answer.devices;
    const std::string note = i < in.notes.size() ? HtmlEscape(in.notes[i]) : "";
    absl::StrAppend(&out, marked ? "<tr class=\"best\">" : "<tr>", "<td>", row.devices,
                    marked ? " *" : "", "</td>");
    if (!row.choice) {
      absl::StrAppend(&out, "<td>-</td><td>-</td><td>-</td><td>-</td><td>no</td><td>-</td>",
                      "<td class=\"l\">", note, "</td></tr>\n");
      continue;
    }
    absl::StrAppend(&out, "<td>", FormatUs(row.step_time_us), "</td><td>",
                    absl::StrFormat("%.2f&#160;&#181;s", row.time_per_sample_us), "</td><td>",
                    absl::StrFormat("%.1f", row.samples_per_s), "</td><td title=\"",
                    PeaksTitle(row), "\">", FormatBytes(row.peak_memory_bytes), " / ",
                    FormatBytes(row.memory_capacity_bytes), "</td><td>",
                    row.fits ? "yes" : "<b>no</b>", "</td><td>", row.microbatches,
                    "</td><td class=\"l\">", note, "</td></tr>\n");
  }
  absl::StrAppend(&out, "</table>\n<p class=\"answer\"><b>", HtmlEscape(in.answer_line),
                  "</b></p>\n");
}

// Per count, its micro-batch curve, folded away.
void WriteCurves(const SizeReportInput& in, std::string& out) {
  const pipeline::CapacityAnswer& answer = *in.answer;
  bool any = false;
  for (const pipeline::CapacityRow& row : answer.rows)
    any = any || (row.choice && row.choice->tried.size() > 1);
  if (!any) return;
  out +=
      "<h2>Micro-batches per count</h2>\n<p>How each count's M was chosen: SGP planned each "
      "count of micro-batches tried, the lowest time per sample (step &#247; (M &#215; batch)) "
      "among the plans that fit won (with a step target: among those whose step meets it).</p>\n";
  for (const pipeline::CapacityRow& row : answer.rows) {
    if (!row.choice || row.choice->tried.size() < 2) continue;
    const costmodel::Cluster cluster = pipeline::WithDeviceCount(*in.cluster, row.devices);
    // The answer's curve (or the closest count's) is unfolded.
    const bool open = row.devices == (answer.devices > 0 ? answer.devices : answer.closest);
    absl::StrAppendFormat(&out,
                          "<details class=\"count\" data-devices=\"%d\"%s><summary>%d device%s: "
                          "M=%d</summary>\n",
                          row.devices, open ? " open" : "", row.devices,
                          row.devices == 1 ? "" : "s", row.microbatches);
    WriteMicrobatchCurve(*row.choice, DeviceCapacities(cluster), "", "", out);
    out += "</details>\n";
  }
}

}  // namespace

std::string RenderSizeReport(const SizeReportInput& in) {
  std::string out;
  AppendDocumentHead(absl::StrCat("size: ", in.model), out);
  absl::StrAppend(&out, "<h1>onnx-autopar size for ", HtmlEscape(in.model), "</h1>\n");
  WriteHeader(in, out);
  WriteTable(in, out);
  WriteCurves(in, out);
  AppendDocumentTail(out);
  return out;
}

}  // namespace autopar::tools
