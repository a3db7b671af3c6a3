// Pieces report.html's sections share (report_html.cc, report_pipeline.cc):
// how a time is printed, and the time axis under a Gantt timeline. Output
// follows report_html.h's Note [Deterministic report].
#ifndef AUTOPAR_TOOLS_ARTIFACTS_REPORT_COMMON_H_
#define AUTOPAR_TOOLS_ARTIFACTS_REPORT_COMMON_H_

#include <string>

namespace autopar::tools {

/// "12.3 µs" (HTML entities, one decimal).
std::string FormatUs(double us);

/// Appends a timeline's axis: ten ticks from 0 to `extent_us`, the end
/// labels aligned inwards so that the scroller does not clip them (opens and
/// closes its own <div class="axis">).
void AppendTimeAxis(double extent_us, std::string& out);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_ARTIFACTS_REPORT_COMMON_H_
