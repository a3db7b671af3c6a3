// `size --report FILE`: the capacity table of `onnx-autopar size`
// (pipeline/capacity.h) as a self-contained HTML page in report.html's style
// (report_html.h): what was sized, one row per device count — devices, step,
// time per sample, throughput, the fullest device's peak memory over its
// capacity (each device's peak in the row's tooltip), whether it fits, the
// micro-batch count M and the row's note — the answer line under the table,
// and per count the micro-batch curve its M was chosen from
// (report_microbatches.h), folded away but for the answer's (or, when no
// count meets the target, the closest count's). The row of the answer is marked `*` and bold.
// Output follows report_html.h's Note [Deterministic report].
#ifndef AUTOPAR_TOOLS_ARTIFACTS_REPORT_SIZE_H_
#define AUTOPAR_TOOLS_ARTIFACTS_REPORT_SIZE_H_

#include <string>
#include <vector>

#include "costmodel/cluster.h"
#include "pipeline/capacity.h"

namespace autopar::tools {

struct SizeReportInput {
  /// The model's path, as the user gave it.
  std::string model;
  /// The lines above `size`'s table, as it prints them: the devices, the
  /// step and the target.
  std::string devices;
  std::string step;
  std::string target;
  /// The answer line (or, when no count fits, what the model needs).
  std::string answer_line;
  /// Set: the sweep's rows and answer.
  const pipeline::CapacityAnswer* answer = nullptr;
  /// Per row of `answer`, its note (empty for none).
  std::vector<std::string> notes;
  /// Set: the template cluster the counts were planned on (count k on
  /// pipeline::WithDeviceCount(*cluster, k)).
  const costmodel::Cluster* cluster = nullptr;
};

/// The page as one HTML document.
std::string RenderSizeReport(const SizeReportInput& input);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_ARTIFACTS_REPORT_SIZE_H_
