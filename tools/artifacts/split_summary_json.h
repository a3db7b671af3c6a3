// The main command's --json output: one object on stdout that scripts read
// instead of the human summary, e.g.
//   {"out_dir": "out", "algorithm": "sgp", "seed": 1, "step_time_us": ...,
//    "devices": [{"name": "A100-80GB", "file": "device_0.onnx", ...}], ...,
//    "files": ["device_0.onnx", ..., "plan.json"]}
// It is made from the same record as plan.json, so the two always agree.
#ifndef AUTOPAR_TOOLS_ARTIFACTS_SPLIT_SUMMARY_JSON_H_
#define AUTOPAR_TOOLS_ARTIFACTS_SPLIT_SUMMARY_JSON_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tools/artifacts/plan_json.h"

namespace autopar::tools {

/// The summary of a split written into `out_dir`; `files` are the paths
/// written, relative to it (ListFiles). Unlike plan.json it always carries
/// the search time: stdout need not be reproducible.
nlohmann::ordered_json SplitSummaryJson(const PlanRecord& record, const std::string& out_dir,
                                        const std::vector<std::string>& files);

/// Every regular file under `dir`, as sorted paths relative to it.
absl::StatusOr<std::vector<std::string>> ListFiles(const std::string& dir);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_ARTIFACTS_SPLIT_SUMMARY_JSON_H_
