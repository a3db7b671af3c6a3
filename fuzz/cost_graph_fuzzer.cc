// Fuzz target: the bytes of a tool-neutral cost-graph file (costmodel/
// cost_graph_json.h) through what `place --cost-graph` does with it — JSON
// parse, validation, the cluster from its "devices" block (or two default
// devices when it has none), a placement and its simulation.
//
// The algorithm and the number of micro-batches are picked from the input's
// size, so the corpus covers every one-shot algorithm (TGA, time-bounded, is
// left out). Bad input must end in an error Status; a crash, a sanitizer
// report, a hang or an internal error is a finding; found inputs are kept in
// fuzz/regressions/cost_graph/.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph_json.h"
#include "costmodel/device.h"
#include "fuzz/fuzz_input_file.h"
#include "pipeline/planning.h"

namespace autopar::fuzz {
namespace {

constexpr const char* kAlgorithms[] = {"sgp",  "m-etf",       "m-sct",       "m-topo",
                                       "heft", "pipeline-dp", "round-robin", "single"};

absl::Status RunCostGraphPipeline(const std::filesystem::path& path, size_t size) {
  // A document without a "devices" block is placed on two CPUs.
  absl::StatusOr<costmodel::CostGraphDocument> doc = costmodel::LoadCostGraphFile(path.string());
  if (!doc.ok()) return doc.status();
  pipeline::ClusterRequest cluster;
  if (!doc->cluster) cluster = {.devices = 2, .device = "cpu"};
  absl::StatusOr<pipeline::PlanningProblem> problem =
      pipeline::PrepareCostGraph(path.string(), cluster);
  if (!problem.ok()) return problem.status();

  const std::string algorithm = kAlgorithms[size % std::size(kAlgorithms)];
  search::SearchOptions options;
  options.microbatches = static_cast<int>(size / std::size(kAlgorithms) % 3) + 1;
  absl::StatusOr<pipeline::Plan> plan = pipeline::MakePlan(*problem, algorithm, options);
  return plan.status();
}

}  // namespace
}  // namespace autopar::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One scratch file per process, removed at exit.
  static autopar::fuzz::FuzzInputFile file("graph.json");
  autopar::fuzz::AbortOnInternalError(
      autopar::fuzz::RunCostGraphPipeline(file.Write(data, size), size));
  return 0;
}
