#include "tools/artifacts/report_common.h"

#include "absl/strings/str_format.h"

namespace autopar::tools {

std::string FormatUs(double us) { return absl::StrFormat("%.1f&#160;&#181;s", us); }

void AppendTimeAxis(double extent_us, std::string& out) {
  out += "<div class=\"axis\">";
  constexpr int kTicks = 10;
  for (int t = 0; t <= kTicks; ++t) {
    absl::StrAppendFormat(&out, "<span style=\"left:%d%%%s\">%s</span>", t * 100 / kTicks,
                          t == 0        ? ";transform:none"
                          : t == kTicks ? ";transform:translateX(-100%)"
                                        : "",
                          FormatUs(extent_us * t / kTicks));
  }
  out += "</div>";
}

}  // namespace autopar::tools
