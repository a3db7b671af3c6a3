#include "tools/split_command.h"

#include <cstdio>
#include <filesystem>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "costmodel/lower_bound.h"
#include "costmodel/simulator.h"
#include "onnx_io/deployment_writer.h"
#include "passes/coarsen.h"
#include "passes/partition.h"
#include "passes/validate_deployment.h"
#include "tools/cli_output.h"
#include "tools/dot_export.h"
#include "tools/exit_codes.h"
#include "tools/placement_file.h"
#include "tools/plan_json.h"
#include "tools/planning.h"
#include "tools/problem_flags.h"
#include "tools/progress_reporter.h"
#include "tools/report_html.h"
#include "tools/search_flags.h"
#include "tools/sha256.h"
#include "tools/split_summary_json.h"

namespace autopar::tools {
namespace {

constexpr char kUsage[] =
    R"(usage: onnx-autopar MODEL.onnx -o OUT_DIR [--devices N] [--device PRESET|FILE]
                    [--memory-per-device SIZE] [--cluster PRESET|FILE]
                    [--algo NAME] [--seed N] [--time-budget 10s] [--max-generations N]
                    [--threads N] [--microbatches M] [--timings]
                    [--mode inference|training] [--optimizer adam|sgd|momentum]
                    [--placement FILE] [--stages] [--no-report] [--force] [--quiet]
                    [--json] [--dot FILE]
                    [--dim NAME=VALUE]... [--input-shape NAME=D,...]...

Splits the model across devices: searches a placement (SGP unless --algo says
otherwise), rewrites the model into one ONNX model per device joined by
com.microsoft Send/Recv nodes, and writes them with plan.json into OUT_DIR.

  -o, --output DIR     the output folder; written atomically, refused if it
                       exists unless --force
  --stages             also write stages/s<k>.onnx: each device's work cut at
                       its cross-device dependencies into plain ONNX models
                       that stock runtimes run (tools/runner runs these)
  --no-report          do not write report.html (the simulated step's
                       timeline, device load and memory, cut edges)
  --json               print one JSON summary object on stdout (out_dir,
                       algorithm, step time, memory per device, files...)
                       instead of the human summary
  --dot FILE           also write the placed graph as GraphViz: units
                       coloured by device, cut edges bold with their bytes
                       (`dot -Tsvg FILE -o plan.svg` draws it)
  --quiet              no progress bars (they show only on a terminal)
  --placement FILE     use this placement instead of searching: a plan.json
                       (its node_to_device) or a JSON object node -> device
  --algo NAME          the placement search: sgp (default), tga, m-etf, m-sct,
                       m-topo, heft, pipeline-dp, round-robin, single
                       (see `onnx-autopar place --help`)
  --max-generations N  stop TGA after N generations; without --time-budget
                       there is then no time limit, so the plan is the same
                       on every run and machine
  --timings            also write the measured search time (plan.json's
                       "search_time_ms", the report's summary)

Without cluster flags the model is split for 4 x A100-80GB over NVLink.
Same model, flags and seed give a byte-identical OUT_DIR, whatever --threads,
unless --timings is given. TGA stopped by --time-budget (10 s by default)
depends on how many generations fitted; bound it with --max-generations.

examples:
  onnx-autopar resnet50.onnx -o out --devices 4 --stages
  onnx-autopar bert.onnx -o out --cluster 2x4xA100-nvlink-pcie --microbatches 4
  onnx-autopar model.onnx -o out2 --placement out/plan.json --force
  onnx-autopar model.onnx -o out --json --dot out.dot
)";

/// The placement the deployment is made from, node by node.
struct NodePlacement {
  std::string algorithm;
  costmodel::Placement nodes;
  /// The searched placement of the coarsened graph's units (for --dot);
  /// absent for a given placement.
  std::optional<costmodel::Placement> units;
  double search_time_ms = 0;
  /// The search's progress per generation (TGA), for the report.
  std::vector<search::Progress> progress;
};

absl::StatusOr<NodePlacement> ChoosePlacement(const PlanningProblem& problem,
                                              const ParsedArgs& args, const SearchFlags& search) {
  const ir::Graph& graph = problem.model->graph;
  if (std::optional<std::string> file = args.Get("placement")) {
    absl::StatusOr<std::vector<int32_t>> devices =
        ReadPlacementFile(*file, graph, problem.cluster.num_devices());
    if (!devices.ok()) return devices.status();
    return NodePlacement{.algorithm = "given", .nodes = {.device = *std::move(devices)}};
  }
  absl::StatusOr<Plan> plan = MakePlan(problem, search.algorithm, search.options);
  if (!plan.ok()) return plan.status();
  return NodePlacement{.algorithm = plan->algorithm,
                       .nodes = passes::ExpandPlacement(*problem.coarsening, plan->placement),
                       .units = plan->placement,
                       .search_time_ms = plan->search_time_ms,
                       .progress = std::move(plan->progress)};
}

/// The first device over its memory, as an error.
absl::Status OverflowError(const costmodel::Cluster& cluster,
                           const costmodel::SimulationResult& sim, const std::string& algorithm) {
  for (int d = 0; d < cluster.num_devices(); ++d) {
    if (sim.devices[d].peak_memory_bytes > cluster.device(d).memory_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the ", algorithm, " placement needs ",
                       FormatBytes(sim.devices[d].peak_memory_bytes), " on device ", d, " (",
                       cluster.device(d).name, ", ", FormatBytes(cluster.device(d).memory_bytes),
                       "); use more devices or devices with more memory"));
    }
  }
  return absl::OkStatus();
}

std::string Summary(const std::string& out_dir, const PlanningProblem& problem,
                    const NodePlacement& placement, const passes::Deployment& deployment,
                    const costmodel::SimulationResult& sim, double lower_bound_us,
                    double single_device_us, bool report) {
  const costmodel::Cluster& cluster = problem.cluster;
  std::string text;
  absl::StrAppendFormat(
      &text, "wrote %s: %d device models%s, plan.json%s\n", out_dir, cluster.num_devices(),
      deployment.stages.empty() ? "" : absl::StrCat(", ", deployment.stages.size(), " stages"),
      report ? ", report.html" : "");
  absl::StrAppendFormat(&text, "placement  %s (%.1f ms search), %u nodes in %u units\n",
                        placement.algorithm, placement.search_time_ms,
                        problem.model->graph.num_nodes(), problem.units().num_units());
  absl::StrAppendFormat(
      &text, "predicted  %.1f us per step (lower bound %.1f us; %.2fx over one device)\n",
      sim.step_time_us, lower_bound_us,
      sim.step_time_us > 0 ? single_device_us / sim.step_time_us : 0.0);
  absl::StrAppendFormat(&text, "transfers  %d tensors, %s\n", deployment.transfers.size(),
                        FormatBytes(sim.comm_bytes));
  for (int d = 0; d < cluster.num_devices(); ++d) {
    const passes::DeviceModel& model = deployment.devices[d];
    absl::StrAppendFormat(&text, "  %-14s %-10s %6d nodes %4d sends %4d recvs  peak %s of %s\n",
                          model.file, cluster.device(d).name, model.num_nodes, model.num_sends,
                          model.num_recvs, FormatBytes(sim.devices[d].peak_memory_bytes),
                          FormatBytes(cluster.device(d).memory_bytes));
  }
  return text;
}

}  // namespace

int RunSplitCommand(const std::vector<std::string>& args) {
  std::vector<FlagSpec> specs = ProblemFlagSpecs(/*accept_cost_graph=*/false);
  for (const FlagSpec& s : SearchFlagSpecs()) specs.push_back(s);
  for (const char* name : {"output", "placement", "dot"}) specs.push_back({name, true});
  for (const char* name : {"stages", "no-report", "timings", "force", "json", "help"})
    specs.push_back({name, false});
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, specs);
  if (!parsed.ok()) return UsageError(parsed.status().message(), kUsage);
  if (parsed->Has("help")) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  std::optional<std::string> out_dir = parsed->Get("output");
  if (!out_dir || out_dir->empty())
    return UsageError("give the output folder with -o OUT_DIR", kUsage);
  const bool force = parsed->Has("force");
  // Refuse early, before a search that may take a while; WriteDeployment
  // checks again when it renames.
  if (!force && std::filesystem::exists(*out_dir)) {
    return ReportError(absl::AlreadyExistsError(absl::StrCat(
        "the output folder '", *out_dir, "' already exists (use --force to replace it)")));
  }
  if (std::optional<std::string> dot = parsed->Get("dot")) {
    if (absl::Status s = CheckParentFolder(*dot); !s.ok()) return ReportError(s);
  }
  absl::StatusOr<SearchFlags> search = SearchFlagsFromArgs(*parsed);
  if (!search.ok()) return UsageError(search.status().message(), kUsage);
  absl::StatusOr<ProblemRequest> request =
      ProblemRequestFromArgs(*parsed, /*accept_cost_graph=*/false);
  if (!request.ok()) return UsageError(request.status().message(), kUsage);
  const std::string& model_path = request->model_path;
  ProgressReporter progress(search->quiet);
  AttachProgress(progress, *request);
  absl::StatusOr<PlanningProblem> problem = PrepareProblem(*request);
  progress.Finish();
  if (!problem.ok()) return ReportError(problem.status());
  search->options.on_progress = progress.Callback(search->options.time_budget_s);
  absl::StatusOr<NodePlacement> placement = ChoosePlacement(*problem, *parsed, *search);
  progress.Finish();
  if (!placement.ok()) return ReportError(placement.status());

  // Values Send/Recv cannot carry stay on one device; the prediction is made
  // for the placement as written, node by node.
  const ir::Graph& graph = problem->model->graph;
  placement->nodes.device =
      passes::ColocateNonTensorValues(graph, std::move(placement->nodes.device));
  const costmodel::CostGraph& nodes = problem->nodes->graph;
  costmodel::Simulator simulator(nodes, problem->cluster);
  const costmodel::SimulationResult sim = simulator.Run(
      placement->nodes, {.microbatches = search->options.microbatches, .record_timeline = true});
  if (sim.memory_overflow) {
    absl::Status overflow = OverflowError(problem->cluster, sim, placement->algorithm);
    // A hand-made placement is the user's decision: written, with a warning.
    if (placement->algorithm != "given") return ReportError(overflow);
    std::fprintf(stderr, "onnx-autopar: warning: %s\n", std::string(overflow.message()).c_str());
  }
  const costmodel::Placement single{.device = std::vector<int32_t>(nodes.num_units(), 0)};
  const double single_device_us =
      simulator.Run(single, {.microbatches = search->options.microbatches}).step_time_us;
  const double lower_bound_us =
      costmodel::ComputeLowerBound(nodes, problem->cluster, search->options.microbatches).bound_us;

  const int num_devices = problem->cluster.num_devices();
  absl::StatusOr<passes::Deployment> deployment =
      passes::Partition(problem->model->model, graph, placement->nodes.device, num_devices,
                        {.stages = parsed->Has("stages")});
  if (!deployment.ok()) return ReportError(deployment.status());
  if (absl::Status valid = passes::ValidateDeployment(problem->model->model, graph,
                                                      placement->nodes.device, *deployment);
      !valid.ok()) {
    return ReportError(
        absl::InternalError(absl::StrCat("the rewritten models are invalid: ", valid.message())));
  }
  absl::StatusOr<std::string> sha256 = Sha256OfFile(model_path);
  if (!sha256.ok()) return ReportError(sha256.status());

  // Wall-clock time only on request: out_dir is deterministic otherwise.
  const std::optional<double> search_time_ms =
      parsed->Has("timings") ? std::optional<double>(placement->search_time_ms) : std::nullopt;
  const PlanRecord record{.source_path = model_path,
                          .source_sha256 = *sha256,
                          .algorithm = placement->algorithm,
                          .seed = search->options.seed,
                          .search_time_ms = search_time_ms,
                          .microbatches = search->options.microbatches,
                          .step = problem->step,
                          .cluster = &problem->cluster,
                          .graph = &graph,
                          .node_device = placement->nodes.device,
                          .node_costs = problem->nodes->costs,
                          .deployment = &*deployment,
                          .simulation = &sim,
                          .lower_bound_us = lower_bound_us,
                          .single_device_step_us = single_device_us};
  onnx_io::DeploymentFiles files = passes::DeploymentFilesOf(*deployment);
  files.extra_files["plan.json"] = PlanJson(record).dump(2) + "\n";
  const bool report = !parsed->Has("no-report");
  if (report) {
    files.extra_files["report.html"] = RenderReport({.model = model_path,
                                                     .algorithm = placement->algorithm,
                                                     .search_time_ms = search_time_ms,
                                                     .microbatches = search->options.microbatches,
                                                     .lower_bound_us = lower_bound_us,
                                                     .single_device_step_us = single_device_us,
                                                     .cluster = &problem->cluster,
                                                     .graph = &nodes,
                                                     .unit_costs = problem->nodes->costs,
                                                     .simulation = &sim,
                                                     .transfers = deployment->transfers,
                                                     .convergence = placement->progress});
  }
  absl::Status written = onnx_io::WriteDeployment(
      *out_dir, problem->model->model, files,
      {.force = force, .on_progress = progress.Task("writing weights", ProgressUnit::kBytes)});
  progress.Finish();
  if (!written.ok()) return ReportError(written);
  if (std::optional<std::string> dot_path = parsed->Get("dot")) {
    // The graph the search placed; a given placement is drawn node by node.
    absl::StatusOr<std::string> dot =
        placement->units
            ? PlacementToDot(problem->units(), placement->units->device,
                             DeviceNames(problem->cluster))
            : PlacementToDot(nodes, placement->nodes.device, DeviceNames(problem->cluster));
    if (!dot.ok()) return ReportError(dot.status());
    if (absl::Status s = WriteTextFile(*dot_path, *dot); !s.ok()) return ReportError(s);
  }
  if (parsed->Has("json")) {
    absl::StatusOr<std::vector<std::string>> listed = ListFiles(*out_dir);
    if (!listed.ok()) return ReportError(listed.status());
    PlanRecord timed = record;
    timed.search_time_ms = placement->search_time_ms;
    std::printf("%s\n", SplitSummaryJson(timed, *out_dir, *listed).dump(2).c_str());
    return kExitOk;
  }
  std::fputs(Summary(*out_dir, *problem, *placement, *deployment, sim, lower_bound_us,
                     single_device_us, report)
                 .c_str(),
             stdout);
  return kExitOk;
}

}  // namespace autopar::tools
