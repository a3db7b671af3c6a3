// The main command's --json output: one object on stdout that scripts read
// instead of the human summary (issue 9), e.g.
//   {"out_dir": "out", "algorithm": "sgp", "seed": 1, "step_time_us": ...,
//    "devices": [{"name": "A100-80GB", "file": "device_0.onnx", ...}], ...,
//    "files": ["device_0.onnx", ..., "plan.json"]}
#ifndef AUTOPAR_TOOLS_SPLIT_SUMMARY_JSON_H_
#define AUTOPAR_TOOLS_SPLIT_SUMMARY_JSON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/simulator.h"
#include "nlohmann/json.hpp"
#include "passes/partition.h"

namespace autopar::tools {

/// What the main command did; the pointers must be set.
struct SplitSummary {
  std::string out_dir;
  std::string algorithm;
  uint64_t seed = 0;
  double search_time_ms = 0;
  int microbatches = 1;
  double lower_bound_us = 0;
  double single_device_step_us = 0;
  const costmodel::Cluster* cluster = nullptr;
  const passes::Deployment* deployment = nullptr;
  const costmodel::SimulationResult* simulation = nullptr;
  /// Paths relative to out_dir, sorted.
  std::vector<std::string> files;
};

nlohmann::ordered_json SplitSummaryJson(const SplitSummary& summary);

/// Every regular file under `dir`, as sorted paths relative to it.
absl::StatusOr<std::vector<std::string>> ListFiles(const std::string& dir);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_SPLIT_SUMMARY_JSON_H_
