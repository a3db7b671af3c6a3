#include "tools/split_summary_json.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace autopar::tools {

nlohmann::ordered_json SplitSummaryJson(const SplitSummary& summary) {
  const costmodel::SimulationResult& sim = *summary.simulation;
  const passes::Deployment& deployment = *summary.deployment;
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (int d = 0; d < summary.cluster->num_devices(); ++d) {
    const passes::DeviceModel& model = deployment.devices[d];
    devices.push_back({{"name", summary.cluster->device(d).name},
                       {"file", model.file},
                       {"nodes", model.num_nodes},
                       {"sends", model.num_sends},
                       {"recvs", model.num_recvs},
                       {"busy_us", sim.devices[d].busy_us},
                       {"peak_memory_bytes", sim.devices[d].peak_memory_bytes},
                       {"memory_capacity_bytes", summary.cluster->device(d).memory_bytes}});
  }
  const double speedup =
      sim.step_time_us > 0 ? summary.single_device_step_us / sim.step_time_us : 0.0;
  return {{"out_dir", summary.out_dir},
          {"algorithm", summary.algorithm},
          {"seed", summary.seed},
          {"search_time_ms", summary.search_time_ms},
          {"microbatches", summary.microbatches},
          {"step_time_us", sim.step_time_us},
          {"lower_bound_us", summary.lower_bound_us},
          {"single_device_step_us", summary.single_device_step_us},
          {"speedup", speedup},
          {"feasible", !sim.memory_overflow},
          {"comm_bytes", sim.comm_bytes},
          {"transfers", deployment.transfers.size()},
          {"stages", deployment.stages.size()},
          {"devices", devices},
          {"files", summary.files}};
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
