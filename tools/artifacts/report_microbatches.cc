#include "tools/artifacts/report_microbatches.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/artifacts/human_numbers.h"
#include "tools/artifacts/report_common.h"
#include "tools/artifacts/report_html.h"

namespace autopar::tools {
namespace {

using pipeline::MicrobatchTrial;

constexpr int kWidth = 420, kHeight = 210, kLeft = 84, kRight = 14, kTop = 12, kBottom = 36;
// Tick labels closer than this to one already drawn are left out.
constexpr double kMinLabelGapPx = 18;
constexpr std::array<const char*, kCurveDevices> kDeviceColours = {
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7"};
constexpr char kFullestColour[] = "#4e79a7";

std::string PerSample(double us) { return absl::StrFormat("%.2f&#160;&#181;s", us); }

int64_t Fullest(const MicrobatchTrial& t) {
  int64_t peak = 0;
  for (int64_t p : t.peak_memory_bytes) peak = std::max(peak, p);
  return peak;
}

// One chart's frame: the M axis (log2, 1..max) and a linear value axis.
class Frame {
 public:
  Frame(int max_microbatches, double lo, double hi)
      : log_max_(std::log2(std::max(max_microbatches, 2))), lo_(lo), hi_(hi > lo ? hi : lo + 1) {}

  double X(int m) const {
    return kLeft + (kWidth - kLeft - kRight) * std::log2(std::max(m, 1)) / log_max_;
  }
  double Y(double v) const { return kTop + (kHeight - kTop - kBottom) * (hi_ - v) / (hi_ - lo_); }

  /// Opens the <svg>, draws the axes, the value labels, the tick labels of
  /// the counts tried (the chosen one always, in bold) and the chosen line.
  void Open(const std::vector<const MicrobatchTrial*>& trials, int chosen,
            const std::string& top_label, const std::string& bottom_label, std::string_view title,
            std::string& out) const {
    absl::StrAppendFormat(&out,
                          "<svg class=\"curve mb\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d "
                          "%d\"><text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>",
                          kWidth, kHeight, kWidth, kHeight, (kLeft + kWidth - kRight) / 2, kTop - 2,
                          title);
    absl::StrAppendFormat(&out, "<path d=\"M%d %dV%dH%d\" stroke=\"#999\" fill=\"none\"/>", kLeft,
                          kTop, kHeight - kBottom, kWidth - kRight);
    absl::StrAppendFormat(&out,
                          "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>"
                          "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>",
                          kLeft - 4, kTop + 8, top_label, kLeft - 4, kHeight - kBottom,
                          bottom_label);
    // Tick labels: the chosen count first, then the others where they do
    // not overlap one already drawn.
    std::vector<double> drawn;
    auto label = [&](int m, bool bold) {
      const double x = X(m);
      for (double d : drawn) {
        if (std::abs(d - x) < kMinLabelGapPx) return;
      }
      drawn.push_back(x);
      absl::StrAppendFormat(&out,
                            "<path d=\"M%.1f %dv4\" stroke=\"#999\"/><text x=\"%.1f\" y=\"%d\" "
                            "text-anchor=\"middle\"%s>%d</text>",
                            x, kHeight - kBottom, x, kHeight - kBottom + 15,
                            bold ? " font-weight=\"bold\"" : "", m);
    };
    label(chosen, true);
    for (const MicrobatchTrial* t : trials) label(t->microbatches, false);
    absl::StrAppendFormat(&out,
                          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">micro-batches M (log "
                          "scale)</text>",
                          (kLeft + kWidth - kRight) / 2, kHeight - 4);
    absl::StrAppendFormat(&out,
                          "<path d=\"M%.1f %dV%d\" stroke=\"#555\" stroke-dasharray=\"4 3\" "
                          "fill=\"none\"/>",
                          X(chosen), kTop, kHeight - kBottom);
  }

 private:
  double log_max_;
  double lo_, hi_;
};

// A band around [lo, hi] so that a flat curve is not drawn on an edge.
std::pair<double, double> Padded(double lo, double hi) {
  const double pad = std::max((hi - lo) * 0.06, std::max(std::abs(hi), 1.0) * 0.01);
  return {lo - pad, hi + pad};
}

void WriteTimeChart(const pipeline::MicrobatchChoice& choice,
                    const std::vector<const MicrobatchTrial*>& trials, std::string& out) {
  double lo = 0, hi = 0;
  bool any = false;
  for (const MicrobatchTrial* t : trials) {
    if (!t->error.empty()) continue;
    lo = any ? std::min(lo, t->time_per_sample_us) : t->time_per_sample_us;
    hi = any ? std::max(hi, t->time_per_sample_us) : t->time_per_sample_us;
    any = true;
  }
  const auto [plo, phi] = Padded(lo, hi);
  const Frame frame(choice.max_microbatches, plo, phi);
  frame.Open(trials, choice.chosen, PerSample(phi), PerSample(plo), "time per sample", out);
  std::string line, points;
  for (const MicrobatchTrial* t : trials) {
    const double x = frame.X(t->microbatches);
    if (!t->error.empty()) {
      const double y = kHeight - kBottom;
      absl::StrAppendFormat(&points,
                            "<path class=\"mx\" d=\"M%.1f %.1fl8 8m0 -8l-8 8\"><title>M=%d: no "
                            "plan within memory</title></path>",
                            x - 4, y - 4, t->microbatches);
      continue;
    }
    const double y = frame.Y(t->time_per_sample_us);
    absl::StrAppendFormat(&line, "%s%.1f %.1f", line.empty() ? "M" : "L", x, y);
    if (t->microbatches == choice.chosen)
      absl::StrAppendFormat(&points, "<circle class=\"ring\" cx=\"%.1f\" cy=\"%.1f\" r=\"7\"/>", x,
                            y);
    absl::StrAppendFormat(&points,
                          "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\"><title>M=%d%s: "
                          "%s per sample, step %s%s</title></circle>",
                          t->feasible ? "pf" : "pi", x, y, t->microbatches,
                          t->microbatches == choice.chosen ? " (chosen)" : "",
                          PerSample(t->time_per_sample_us), FormatUs(t->step_time_us),
                          t->feasible ? "" : ", over memory");
  }
  if (!line.empty())
    absl::StrAppend(&out, "<path d=\"", line, "\" stroke=\"#4e79a7\" stroke-width=\"1.5\" ",
                    "fill=\"none\"/>");
  absl::StrAppend(&out, points, "</svg>");
}

void WriteMemoryChart(const pipeline::MicrobatchChoice& choice,
                      const std::vector<const MicrobatchTrial*>& trials,
                      absl::Span<const int64_t> capacity_bytes, int devices, std::string& out) {
  const bool each = devices <= kCurveDevices;
  int64_t top = 1;
  for (const MicrobatchTrial* t : trials) top = std::max(top, Fullest(*t));
  // Capacities within reach of the peaks are drawn; far above them (a GPU's
  // gigabytes against a few MiB) they would flatten the curve.
  std::set<int64_t> capacities;
  for (int64_t c : capacity_bytes) {
    if (c > 0 && static_cast<double>(c) <= 1.5 * static_cast<double>(top)) capacities.insert(c);
  }
  double hi = static_cast<double>(top);
  if (!capacities.empty()) hi = std::max(hi, static_cast<double>(*capacities.rbegin()));
  hi *= 1.06;
  const Frame frame(choice.max_microbatches, 0, hi);
  frame.Open(trials, choice.chosen, FormatBytes(static_cast<int64_t>(hi)), "0",
             each ? "peak memory per device" : "peak memory, fullest device", out);
  for (int64_t c : capacities) {
    absl::StrAppendFormat(&out,
                          "<path class=\"capline\" d=\"M%d %.1fH%d\"><title>capacity %s</title>"
                          "</path>",
                          kLeft, frame.Y(static_cast<double>(c)), kWidth - kRight, FormatBytes(c));
  }
  const int lines = each ? devices : 1;
  for (int d = 0; d < lines; ++d) {
    const char* colour = each ? kDeviceColours[d] : kFullestColour;
    std::string line, points;
    for (const MicrobatchTrial* t : trials) {
      if (!t->error.empty()) continue;
      int64_t peak = 0;
      if (!each) {
        peak = Fullest(*t);
      } else if (d < static_cast<int>(t->peak_memory_bytes.size())) {
        peak = t->peak_memory_bytes[d];
      } else {
        continue;
      }
      const double x = frame.X(t->microbatches);
      const double y = frame.Y(static_cast<double>(peak));
      absl::StrAppendFormat(&line, "%s%.1f %.1f", line.empty() ? "M" : "L", x, y);
      absl::StrAppendFormat(&points,
                            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>M=%d, %s: "
                            "%s</title></circle>",
                            x, y, colour, t->microbatches,
                            each ? absl::StrCat("device ", d) : "fullest device",
                            FormatBytes(peak));
    }
    if (!line.empty())
      absl::StrAppendFormat(
          &out, "<path d=\"%s\" stroke=\"%s\" stroke-width=\"1.5\" fill=\"none\"/>", line, colour);
    out += points;
  }
  out += "</svg>";
}

void WriteTable(const pipeline::MicrobatchChoice& choice,
                const std::vector<const MicrobatchTrial*>& trials, int devices, std::string& out) {
  const bool each = devices <= kCurveDevices;
  out +=
      "<table class=\"mbtable\"><tr><th>M</th><th>step</th><th>time per sample</th>"
      "<th>samples/s</th>";
  if (each) {
    for (int d = 0; d < devices; ++d)
      absl::StrAppendFormat(&out,
                            "<th><i class=\"dot\" style=\"background:%s\"></i>peak, device "
                            "%d</th>",
                            kDeviceColours[d], d);
  } else {
    out += "<th>peak, fullest device</th>";
  }
  out += "<th>fits</th><th class=\"l\">note</th></tr>\n";
  for (const MicrobatchTrial* t : trials) {
    const bool chosen = t->microbatches == choice.chosen;
    absl::StrAppend(&out, chosen ? "<tr class=\"best\">" : "<tr>", "<td>", t->microbatches,
                    chosen ? " *" : "", "</td>");
    if (!t->error.empty()) {
      absl::StrAppend(&out, "<td>-</td><td>-</td><td>-</td>");
      for (int d = 0; d < (each ? devices : 1); ++d) out += "<td>-</td>";
      absl::StrAppend(&out,
                      "<td>no</td><td class=\"l\">no plan within memory: ", HtmlEscape(t->error),
                      "</td></tr>\n");
      continue;
    }
    absl::StrAppend(&out, "<td>", FormatUs(t->step_time_us), "</td><td>",
                    PerSample(t->time_per_sample_us), "</td><td>",
                    t->time_per_sample_us > 0 ? absl::StrFormat("%.1f", 1e6 / t->time_per_sample_us)
                                              : std::string("-"),
                    "</td>");
    if (each) {
      for (int d = 0; d < devices; ++d) {
        absl::StrAppend(&out, "<td>",
                        d < static_cast<int>(t->peak_memory_bytes.size())
                            ? FormatBytes(t->peak_memory_bytes[d])
                            : std::string("-"),
                        "</td>");
      }
    } else {
      absl::StrAppend(&out, "<td>", FormatBytes(Fullest(*t)), "</td>");
    }
    absl::StrAppend(&out, "<td>", t->feasible ? "yes" : "<b>no</b>", "</td><td class=\"l\">",
                    chosen ? "chosen" : "", "</td></tr>\n");
  }
  out += "</table>\n";
}

}  // namespace

std::string MicrobatchCurveStyle() {
  return ".mbcharts{display:flex;flex-wrap:wrap;gap:0 2em}\n"
         ".curve .mx{stroke:#e15759;stroke-width:2;fill:none}\n"
         ".curve .ring{fill:none;stroke:#222;stroke-width:1.5}\n"
         ".curve .capline{stroke:#d00;stroke-dasharray:6 3;fill:none}\n"
         "i.dot{display:inline-block;width:9px;height:9px;margin-right:4px;border-radius:50%}\n";
}

std::vector<int64_t> DeviceCapacities(const costmodel::Cluster& cluster) {
  std::vector<int64_t> capacities;
  for (int d = 0; d < cluster.num_devices(); ++d)
    capacities.push_back(cluster.device(d).memory_bytes);
  return capacities;
}

void WriteMicrobatchCurve(const pipeline::MicrobatchChoice& choice,
                          absl::Span<const int64_t> capacity_bytes, std::string_view heading,
                          std::string_view lead, std::string& out) {
  if (choice.tried.size() < 2) return;
  std::vector<const MicrobatchTrial*> trials;
  int devices = 0;
  for (const MicrobatchTrial& t : choice.tried) {
    trials.push_back(&t);
    devices = std::max(devices, static_cast<int>(t.peak_memory_bytes.size()));
  }
  std::stable_sort(trials.begin(), trials.end(),
                   [](const MicrobatchTrial* a, const MicrobatchTrial* b) {
                     return a->microbatches < b->microbatches;
                   });
  out += "<div class=\"microbatches\">";
  if (!heading.empty()) absl::StrAppend(&out, "<h2>", std::string(heading), "</h2>\n");
  if (!lead.empty()) absl::StrAppend(&out, "<p>", std::string(lead), "</p>\n");
  out += "<div class=\"mbcharts\">";
  WriteTimeChart(choice, trials, out);
  WriteMemoryChart(choice, trials, capacity_bytes, devices, out);
  out += "</div>\n";
  if (devices > 1 && devices <= kCurveDevices) {
    out += "<div class=\"legend\">";
    for (int d = 0; d < devices; ++d)
      absl::StrAppendFormat(&out, "<span><i style=\"background:%s\"></i>device %d</span>",
                            kDeviceColours[d], d);
    out += "</div>\n";
  }
  WriteTable(choice, trials, devices, out);
  out += "</div>\n";
}

}  // namespace autopar::tools
