// Fuzz target: the bytes of a model file through everything the main command
// does with it (DESIGN.md §1) — load, ONNX checker, IR import, shape
// inference, costs, coarsening, an SGP placement and its simulation, the
// rewrite into device and stage models, and their validation — all in memory.
//
// Bad input must end in an error Status. A crash, a sanitizer report, a hang,
// an uncaught exception or an internal error (a broken invariant) is a
// finding; found inputs are kept in fuzz/regressions/model_loader/.
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "costmodel/cluster.h"
#include "fuzz/fuzz_input_file.h"
#include "passes/coarsen.h"
#include "passes/partition.h"
#include "passes/validate_deployment.h"
#include "tools/planning.h"

namespace autopar::fuzz {
namespace {

absl::Status RunModelPipeline(const std::filesystem::path& path) {
  absl::StatusOr<costmodel::Cluster> cluster = costmodel::LookupClusterPreset("2xH200");
  if (!cluster.ok()) return absl::InternalError(cluster.status().message());
  absl::StatusOr<tools::PlanningProblem> problem =
      tools::PrepareModel(path.string(), passes::ShapeOptions{}, *std::move(cluster));
  if (!problem.ok()) return problem.status();

  absl::StatusOr<tools::Plan> plan = tools::MakePlan(*problem, "sgp", search::SearchOptions{});
  if (!plan.ok()) return plan.status();

  // The rewrite, as the main command makes it (tools/split_command.cc).
  const ir::Graph& graph = problem->model->graph;
  std::vector<int32_t> node_device = passes::ColocateNonTensorValues(
      graph, passes::ExpandPlacement(*problem->coarsening, plan->placement).device);
  const int num_devices = problem->cluster.num_devices();
  absl::StatusOr<passes::Deployment> deployment =
      passes::Partition(problem->model->model, graph, node_device, num_devices, {.stages = true});
  if (!deployment.ok()) return deployment.status();
  if (absl::Status valid =
          passes::ValidateDeployment(problem->model->model, graph, node_device, *deployment);
      !valid.ok()) {
    return absl::InternalError(absl::StrCat("the rewritten models are invalid: ", valid.message()));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace autopar::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One scratch file per process, removed at exit.
  static autopar::fuzz::FuzzInputFile file("model.onnx");
  autopar::fuzz::AbortOnInternalError(autopar::fuzz::RunModelPipeline(file.Write(data, size)));
  return 0;
}
