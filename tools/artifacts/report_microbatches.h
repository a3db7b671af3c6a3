// The "Micro-batches" section of report.html, `compare --report` and `size
// --report`: the curve `--microbatches auto` tried (pipeline/planning.h,
// Note [Micro-batches auto]), so that a reader sees why M was chosen and
// what the neighbours cost.
//
// Two small inline SVG charts against the micro-batch counts tried, on a
// log2 axis (the counts tried are mostly powers of two): the time per sample
// (step ÷ (M × batch)), blue where the plan fits and red where it does not,
// a red cross on the axis for a count with no plan within memory; and each
// device's peak memory (the fullest device's alone beyond kCurveDevices
// devices), with the capacity drawn when it is within reach of the peaks.
// The chosen M is a dashed line and a ring on both. Under them, the numbers
// as a table, the chosen row in bold. Hovering a point shows its numbers
// (the report's tooltip script handles svg.curve). Nothing is written when
// a single count was tried: there is no curve to draw.
//
// Output follows report_html.h's Note [Deterministic report].
#ifndef AUTOPAR_TOOLS_ARTIFACTS_REPORT_MICROBATCHES_H_
#define AUTOPAR_TOOLS_ARTIFACTS_REPORT_MICROBATCHES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "costmodel/cluster.h"
#include "pipeline/planning.h"

namespace autopar::tools {

/// Up to this many devices, the memory chart and the table show every
/// device; beyond, the fullest device only.
inline constexpr int kCurveDevices = 8;

/// The section's CSS rules (the report's <style> holds them).
std::string MicrobatchCurveStyle();

/// Each device's memory capacity, in device order.
std::vector<int64_t> DeviceCapacities(const costmodel::Cluster& cluster);

/// Appends the "Micro-batches" section for `choice` (its `tried`, `chosen`,
/// `max_microbatches` and `batch`; its plan is not read), with
/// `capacity_bytes` the capacity of each device the trials' peaks are
/// listed for, and `lead` a sentence (HTML) said under the heading; appends
/// nothing when fewer than two counts were tried. `heading`: the <h2>, or
/// empty for none (a caller that titles the section itself).
void WriteMicrobatchCurve(const pipeline::MicrobatchChoice& choice,
                          absl::Span<const int64_t> capacity_bytes, std::string_view heading,
                          std::string_view lead, std::string& out);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_ARTIFACTS_REPORT_MICROBATCHES_H_
