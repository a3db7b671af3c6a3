#include "tools/artifacts/split_summary_json.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace autopar::tools {

nlohmann::ordered_json SplitSummaryJson(const PlanRecord& record, const std::string& out_dir,
                                        const std::vector<std::string>& files) {
  const costmodel::SimulationResult& sim = *record.simulation;
  const passes::Deployment& deployment = *record.deployment;
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (int d = 0; d < record.cluster->num_devices(); ++d) {
    const passes::DeviceModel& model = passes::DeviceModelOrUnused(deployment, d);
    devices.push_back(
        {{"name", record.cluster->device(d).name},
         {"file", model.unused ? nlohmann::ordered_json() : nlohmann::ordered_json(model.file)},
         {"nodes", model.num_nodes},
         {"sends", model.num_sends},
         {"recvs", model.num_recvs},
         {"busy_us", sim.devices[d].busy_us},
         {"peak_memory_bytes", sim.devices[d].peak_memory_bytes},
         {"memory_capacity_bytes", record.cluster->device(d).memory_bytes}});
  }
  const double step_us = PredictedStepUs(record);
  const double speedup = step_us > 0 ? record.single_device_step_us / step_us : 0.0;
  nlohmann::ordered_json summary = {{"out_dir", out_dir},
                                    {"algorithm", record.algorithm},
                                    {"seed", record.seed},
                                    {"search_time_ms", record.search_time_ms.value_or(0.0)},
                                    {"microbatches", record.microbatches},
                                    {"costs", costmodel::CostSourceJson(record.cost_source)},
                                    {"step_time_us", step_us},
                                    {"lower_bound_us", record.lower_bound_us},
                                    {"single_device_step_us", record.single_device_step_us},
                                    {"speedup", speedup},
                                    {"split_predicted_slower", SlowerSplitJson(record)},
                                    {"feasible", !sim.memory_overflow},
                                    {"comm_bytes", sim.comm_bytes},
                                    {"transfers", deployment.transfers.size()},
                                    {"stages", deployment.stages.size()},
                                    {"devices", devices},
                                    {"files", files}};
  if (nlohmann::ordered_json symbolic = SymbolicDimsJson(*record.graph, deployment);
      !symbolic.is_null()) {
    summary["symbolic_dims"] = std::move(symbolic);
  }
  return summary;
}

absl::StatusOr<std::vector<std::string>> ListFiles(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> files;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file()) files.push_back(fs::relative(it->path(), dir).generic_string());
  }
  if (ec) return absl::InternalError(absl::StrCat("cannot list '", dir, "': ", ec.message()));
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace autopar::tools
