// scale_bench: the main command's pipeline (pipeline::Split) on one model,
// phase by phase, in one process. For each phase it prints the wall time, the
// process CPU time, the resident set after it and the phase's own peak
// resident set: the kernel's high-water mark (VmHWM) is reset before each
// phase through /proc/self/clear_refs, so a phase's peak is its own and not
// an earlier one's. The last line is the whole run's peak. A benchmark, not a
// test: it prints numbers and asserts nothing.
//
//   build/tools/bench/scale_bench MODEL.onnx OUT_DIR [--no-report] [cluster flags]
//
// The cluster flags are the main command's (--devices, --device,
// --memory-per-device, --cluster; default 4 x A100-80GB over NVLink) and the
// search is SGP, as in `onnx-autopar MODEL.onnx -o OUT_DIR`.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "onnx_io/deployment_writer.h"
#include "passes/partition.h"
#include "pipeline/split.h"
#include "tools/artifacts/plan_json.h"
#include "tools/artifacts/report_html.h"
#include "tools/bench/bench_setup.h"
#include "tools/cli/args.h"
#include "tools/cli/cluster_flags.h"

namespace autopar::bench {
namespace {

constexpr char kUsage[] =
    "usage: scale_bench MODEL.onnx OUT_DIR [--no-report] [--devices N] [--device PRESET]\n"
    "                   [--memory-per-device SIZE] [--cluster PRESET|FILE]\n";

/// A field of /proc/self/status in kB ("VmRSS", "VmHWM"); -1 when absent.
int64_t ProcStatusKb(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (!line.starts_with(field + ":")) continue;
    int64_t kb = -1;
    std::string number = line.substr(field.size() + 1);
    number.erase(number.find_last_not_of(" \tkB") + 1);
    number.erase(0, number.find_first_not_of(" \t"));
    return absl::SimpleAtoi(number, &kb) ? kb : -1;
  }
  return -1;
}

double ProcessCpuMs() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3;
}

/// Resets VmHWM to the current RSS (Linux 4.0+); false where not allowed.
bool ResetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

// Times one phase at a time and prints a Markdown row for each.
class PhaseTimer {
 public:
  PhaseTimer() {
    std::printf("| phase | wall s | cpu s | RSS after MB | phase peak RSS MB |\n");
    std::printf("|---|---:|---:|---:|---:|\n");
    total_start_ = std::chrono::steady_clock::now();
    total_cpu_ms_ = ProcessCpuMs();
  }

  void Start(std::string name) {
    name_ = std::move(name);
    peak_is_own_ = ResetPeakRss();
    start_ = std::chrono::steady_clock::now();
    cpu_ms_ = ProcessCpuMs();
  }

  void Stop() {
    const double wall_s = MillisecondsSince(start_) / 1e3;
    const double cpu_s = (ProcessCpuMs() - cpu_ms_) / 1e3;
    const int64_t hwm_kb = ProcStatusKb("VmHWM");
    max_hwm_kb_ = std::max(max_hwm_kb_, hwm_kb);
    std::printf("| %s | %.2f | %.2f | %.0f | %.0f%s |\n", name_.c_str(), wall_s, cpu_s,
                static_cast<double>(ProcStatusKb("VmRSS")) / 1024,
                static_cast<double>(hwm_kb) / 1024, peak_is_own_ ? "" : " (process)");
    std::fflush(stdout);
  }

  void Total() const {
    std::printf("| **total** | %.2f | %.2f | %.0f | %.0f |\n",
                MillisecondsSince(total_start_) / 1e3, (ProcessCpuMs() - total_cpu_ms_) / 1e3,
                static_cast<double>(ProcStatusKb("VmRSS")) / 1024,
                static_cast<double>(max_hwm_kb_) / 1024);
  }

 private:
  std::string name_;
  bool peak_is_own_ = false;
  std::chrono::steady_clock::time_point start_, total_start_;
  double cpu_ms_ = 0, total_cpu_ms_ = 0;
  int64_t max_hwm_kb_ = 0;
};

template <typename T>
T OrDie(absl::StatusOr<T> value, const char* what) {
  if (!value.ok()) {
    std::fprintf(stderr, "scale_bench: %s: %s\n", what,
                 std::string(value.status().message()).c_str());
    std::exit(1);
  }
  return *std::move(value);
}

void OrDie(const absl::Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "scale_bench: %s: %s\n", what, std::string(status.message()).c_str());
    std::exit(1);
  }
}

int Main(int argc, char** argv) {
  std::vector<tools::FlagSpec> specs = tools::ClusterFlagSpecs();
  specs.push_back({"no-report", false});
  const tools::ParsedArgs args =
      OrDie(tools::ParseArgs(std::vector<std::string>(argv + 1, argv + argc), specs), "flags");
  if (args.positional().size() != 2) {
    std::fprintf(stderr, "%s", kUsage);
    return 1;
  }
  const std::string model_path = args.positional()[0];
  const std::string out_dir = args.positional()[1];
  const bool report = !args.Has("no-report");
  PhaseTimer timer;

  // The main command's pipeline, timed phase by phase: each phase ends where
  // the next one starts.
  pipeline::SplitRequest request;
  request.problem.model_path = model_path;
  request.problem.cluster = OrDie(tools::ClusterRequestFromArgs(args), "cluster");
  bool timing = false;
  request.problem.on_phase = [&timer, &timing](std::string_view phase) {
    if (timing) timer.Stop();
    timer.Start(std::string(phase));
    timing = true;
  };
  const pipeline::SplitResult result = OrDie(pipeline::Split(request), "split");
  timer.Stop();

  timer.Start("write (plan.json, report, models)");
  const pipeline::PlanningProblem& problem = result.problem;
  const pipeline::Plan& plan = result.plan;
  onnx_io::DeploymentFiles files = passes::DeploymentFilesOf(result.deployment);
  const tools::PlanRecord record{.source_path = model_path,
                                 .algorithm = plan.algorithm,
                                 .cluster = &problem.cluster,
                                 .graph = &problem.model->graph,
                                 .node_device = plan.node_placement.device,
                                 .node_costs = problem.nodes->costs,
                                 .deployment = &result.deployment,
                                 .simulation = &plan.simulation,
                                 .lower_bound_us = plan.lower_bound.bound_us,
                                 .single_device_step_us = plan.single_device_step_us};
  files.extra_files["plan.json"] = tools::PlanJson(record).dump(2) + "\n";
  if (report) {
    files.extra_files["report.html"] =
        tools::RenderReport({.model = model_path,
                             .algorithm = plan.algorithm,
                             .lower_bound_us = plan.lower_bound.bound_us,
                             .single_device_step_us = plan.single_device_step_us,
                             .cluster = &problem.cluster,
                             .graph = &problem.node_graph(),
                             .unit_costs = problem.nodes->costs,
                             .simulation = &plan.simulation,
                             .transfers = result.deployment.transfers});
  }
  OrDie(onnx_io::WriteDeployment(out_dir, problem.model->model, files, {.force = true}), "write");
  timer.Stop();
  timer.Total();
  std::printf("\n%zu nodes, %u units, %zu transfers, predicted step %.1f us\n",
              problem.model->graph.num_nodes(), problem.units().num_units(),
              result.deployment.transfers.size(), plan.simulation.step_time_us);
  return 0;
}

}  // namespace
}  // namespace autopar::bench

int main(int argc, char** argv) { return autopar::bench::Main(argc, argv); }
