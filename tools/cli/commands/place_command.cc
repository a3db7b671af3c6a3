#include "tools/cli/commands/place_command.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/artifacts/dot_export.h"
#include "tools/artifacts/placement_file.h"
#include "tools/cli/cli_output.h"
#include "tools/cli/cluster_flags.h"
#include "tools/cli/exit_codes.h"
#include "tools/cli/mode_flags.h"
#include "tools/cli/pipelined_plans.h"
#include "tools/cli/problem_flags.h"
#include "tools/cli/progress_reporter.h"
#include "tools/cli/search_flags.h"
#include "tools/cli/shape_flags.h"

namespace autopar::tools {
namespace {

constexpr char kUsage[] =
    R"(usage: onnx-autopar place MODEL.onnx [--devices N] [--device PRESET|FILE]
                          [--memory-per-device SIZE] [--cluster PRESET|FILE|cpu:KxT]
                          [--host-calibration FILE] [--node-times FILE]
                          [--algo NAME] [--microbatches M|auto] [--max-microbatches K] [--seed N] [--time-budget 10s]
                          [--threads N] [--quiet] [--allow-slower-split]
                          [--mode inference|training]
                          [--optimizer sgd|momentum|adam|adamw]
                          [--loss SPEC] [--schedule gpipe|1f1b] [--labels NAME] [--freeze REGEX]
                          [--learning-rate X] [--momentum X] [--betas B1,B2] [--eps X]
                          [--weight-decay X] [--placement FILE]
                          [--format text|json] [--dot FILE]
                          [--dim NAME=VALUE]... [--input-shape NAME=D,...]...
                          [--input-value NAME=V,...]... [--loop-trips N] [--strict-shapes]
       onnx-autopar place --costgraph GRAPH.json [--devices N --memory-per-device SIZE | --cluster ...]

Searches a device placement and reports the simulated step: per-device load
and memory against capacity, cut edges and bytes, predicted step time, the
lower bound and their ratio. Nothing is written.

When the searched split is predicted slower than the whole model on one
device that fits, the plan is that one device and the output says so:
splitting then pays only for memory. --allow-slower-split keeps the split.

--algo NAME picks the search: sgp (default), tga (genetic, anytime: runs up to
--time-budget, default 10s, and shows its progress on a terminal), m-etf,
m-sct, m-topo, heft, cpop, pipeline-dp, round-robin or single.

--mode training plans a training step: forward + backward + the optimizer's
update per unit, and per device the weights with their gradients and optimizer
state (--optimizer, default adam) and the activations kept for the backward
pass. That is the fused step: forward, backward and update of each unit in
one list schedule. With --loss SPEC (as the main command's: output:NAME,
cross-entropy:LOGITS or mse:OUTPUT) and several devices, the step is judged
as the pipeline the main command writes: the search optimises the pipelined
step's estimate under --schedule (1f1b, the default, or gpipe), and the plan's
step, peak memory and busy time per device are those of the split the main
command makes of the placement (plan.json's training.pipeline.predicted).
The other training flags (--freeze, --labels, the optimizer's) are the main
command's and need --loss.

--placement FILE judges this placement instead of searching one: a plan.json
(its node_to_device) or a JSON object node -> device; in training mode with
--loss, as a pipeline too.

--dot FILE also writes the placed (coarsened) graph as GraphViz: units
coloured by device, edges that cross devices bold with their bytes.

--cluster cpu:KxT plans for K devices of T threads on this host, linked and
run as --host-calibration FILE (tools/fidelity/calibrate_host.mjs) measured;
--node-times FILE replaces the predicted node times with measured ones
(tools/fidelity/measure.mjs output, or {"node": us}). --microbatches M runs
M micro-batches per step, each the model as given. --microbatches auto chooses
M in 1..K (--max-microbatches K, default 32) with the placement, by time per
sample (step / (M x batch)): SGP plans the powers of two, K, then bisects
around the best (the midpoints between it and its nearest tried counts, until
they are next to it), the chosen --algo plans the chosen M; the output shows
the curve (JSON: "microbatches_search").

Progress bars (loading, coarsening, TGA's generations) show only when stderr
is a terminal; --quiet turns them off.

Without cluster flags a model is planned for 4 x A100-80GB over NVLink, and a
cost graph for the "devices" block it contains. Each cluster flag changes only
what it names: over a cost graph's own devices, --devices N changes the count
(keeping their memory and links) and --memory-per-device the memory; --device
cannot replace them (--cluster replaces the whole cluster).

examples:
  onnx-autopar place resnet50.onnx --devices 4 --device V100
  onnx-autopar place bert.onnx --cluster 2x4xA100-nvlink-pcie --format json
  onnx-autopar place resnet50.onnx --devices 2 --device T4 --mode training
  onnx-autopar place resnet18.onnx --cluster cpu:2x1 --mode training --loss cross-entropy:191 --microbatches 8
  onnx-autopar place resnet50.onnx --devices 4 --dot plan.dot
  onnx-autopar place --costgraph graph.json --devices 8 --memory-per-device 16GiB
)";

double Ratio(double a, double b) { return b > 0 ? a / b : 0; }

}  // namespace

std::string OneDeviceVerdict(const pipeline::PlanningProblem& problem, const pipeline::Plan& plan) {
  if (!plan.rejected_split) return "";
  const pipeline::Plan::RejectedSplit& split = *plan.rejected_split;
  return absl::StrFormat(
      "one device is predicted fastest: %.1f us on %s against %.1f us for the %s split over %d "
      "devices, so the whole model stays on one device; splitting pays only for memory "
      "(--allow-slower-split keeps the split)",
      plan.simulation.step_time_us, problem.cluster.device(split.device).name, split.step_time_us,
      plan.algorithm, split.devices);
}

nlohmann::ordered_json OneDeviceVerdictJson(const pipeline::PlanningProblem& problem,
                                            const pipeline::Plan& plan) {
  if (!plan.rejected_split) return nullptr;
  const pipeline::Plan::RejectedSplit& split = *plan.rejected_split;
  return {{"split_devices", split.devices},
          {"split_step_time_us", split.step_time_us},
          {"one_device_step_time_us", plan.simulation.step_time_us},
          {"device", problem.cluster.device(split.device).name}};
}

std::string MicrobatchCurveText(const pipeline::MicrobatchChoice& choice) {
  std::vector<pipeline::MicrobatchTrial> tried = choice.tried;
  std::sort(tried.begin(), tried.end(),
            [](const auto& a, const auto& b) { return a.microbatches < b.microbatches; });
  std::string text = absl::StrFormat(
      "micro-batches %d chosen of 1..%d by time per sample (SGP at each count; batch %d):\n",
      choice.chosen, choice.max_microbatches, choice.batch);
  for (const pipeline::MicrobatchTrial& t : tried) {
    if (!t.error.empty()) {
      absl::StrAppendFormat(&text,
                            "    M=%-4d %12s              %12s        no plan within memory\n",
                            t.microbatches, "-", "-");
      continue;
    }
    int64_t peak = 0;
    for (int64_t p : t.peak_memory_bytes) peak = std::max(peak, p);
    absl::StrAppendFormat(&text, "  %s M=%-4d %12.2f us/sample %12.1f us/step  peak %s%s\n",
                          t.microbatches == choice.chosen ? "*" : " ", t.microbatches,
                          t.time_per_sample_us, t.step_time_us, FormatBytes(peak),
                          t.feasible ? "" : "  OVER CAPACITY");
  }
  return text;
}

nlohmann::ordered_json MicrobatchCurveJson(const pipeline::MicrobatchChoice& choice) {
  nlohmann::ordered_json tried = nlohmann::ordered_json::array();
  for (const pipeline::MicrobatchTrial& t : choice.tried) {
    if (!t.error.empty()) {
      tried.push_back({{"m", t.microbatches},
                       {"time_per_sample_us", nullptr},
                       {"step_time_us", nullptr},
                       {"peak_memory_bytes", nullptr},
                       {"feasible", false},
                       {"error", t.error}});
      continue;
    }
    tried.push_back({{"m", t.microbatches},
                     {"time_per_sample_us", t.time_per_sample_us},
                     {"step_time_us", t.step_time_us},
                     {"peak_memory_bytes", t.peak_memory_bytes},
                     {"feasible", t.feasible}});
  }
  return {{"chosen", choice.chosen},
          {"max", choice.max_microbatches},
          {"batch", choice.batch},
          {"tried", tried}};
}

nlohmann::ordered_json PlanJsonSummary(const pipeline::PlanningProblem& problem,
                                       const pipeline::Plan& plan,
                                       const std::optional<SplitStepView>& split) {
  const costmodel::SimulationResult& sim = plan.simulation;
  nlohmann::ordered_json peaks = nlohmann::ordered_json::array();
  nlohmann::ordered_json capacities = nlohmann::ordered_json::array();
  nlohmann::ordered_json busy = nlohmann::ordered_json::array();
  for (int d = 0; d < problem.cluster.num_devices(); ++d) {
    peaks.push_back(sim.devices[d].peak_memory_bytes);
    capacities.push_back(problem.cluster.device(d).memory_bytes);
    busy.push_back(sim.devices[d].busy_us);
  }
  nlohmann::ordered_json placement = nlohmann::ordered_json::object();
  const std::vector<int32_t>& node_device = plan.node_placement.device;
  if (problem.model) {
    const ir::Graph& graph = problem.model->graph;
    for (uint32_t i = 0; i < graph.num_nodes(); ++i)
      placement[graph.node(ir::NodeId(i)).name] = node_device[i];
  } else {
    for (uint32_t u = 0; u < node_device.size(); ++u) placement[absl::StrCat(u)] = node_device[u];
  }
  nlohmann::ordered_json json = {
      {"algorithm", plan.algorithm},
      {"mode", std::string(costmodel::StepModeName(problem.step.mode))},
      {"search_time_ms", plan.search_time_ms},
      {"step_time_us", sim.step_time_us},
      {"lower_bound_us", plan.lower_bound.bound_us},
      {"ratio_to_lower_bound", Ratio(sim.step_time_us, plan.lower_bound.bound_us)},
      {"single_device_step_us", plan.single_device_step_us},
      {"speedup", Ratio(plan.single_device_step_us, sim.step_time_us)},
      {"split_predicted_slower", OneDeviceVerdictJson(problem, plan)},
      {"feasible", !sim.memory_overflow},
      {"units", problem.units().num_units()},
      {"peak_memory_bytes", peaks},
      {"memory_capacity_bytes", capacities},
      {"busy_us", busy},
      {"cut_edges", plan.cut_edges},
      {"comm_bytes", sim.comm_bytes},
      {"microbatches", plan.microbatches},
      {"costs", costmodel::CostSourceJson(problem.cost_source)}};
  if (problem.step.mode == costmodel::StepMode::kTraining) {
    json["step_judged"] = split ? "pipeline" : "fused";
    json["pipeline"] = SplitStepJson(split);
  }
  json["placement"] = std::move(placement);
  return json;
}

std::string PlanText(const pipeline::PlanningProblem& problem, const pipeline::Plan& plan,
                     const std::optional<PipelinedTraining>& training,
                     const std::optional<SplitStepView>& split) {
  const costmodel::SimulationResult& sim = plan.simulation;
  std::string text;
  absl::StrAppendFormat(&text, "algorithm     %s (%.1f ms search, %u units)\n", plan.algorithm,
                        plan.search_time_ms, problem.units().num_units());
  absl::StrAppendFormat(&text, "step          %s\n", StepDescription(problem.step));
  if (problem.step.mode == costmodel::StepMode::kTraining) {
    absl::StrAppendFormat(
        &text, "judged        %s\n",
        TrainingStepLine(training, problem.cluster.num_devices(), plan.microbatches));
  }
  if (split) absl::StrAppendFormat(&text, "pipeline      %s\n", SplitStepText(*split));
  absl::StrAppendFormat(&text, "node times    %s\n", CostSourceText(problem.cost_source));
  absl::StrAppendFormat(
      &text, "step time     %.1f us  (lower bound %.1f us, ratio %.2f; %.2fx over one device)\n",
      sim.step_time_us, plan.lower_bound.bound_us,
      Ratio(sim.step_time_us, plan.lower_bound.bound_us),
      Ratio(plan.single_device_step_us, sim.step_time_us));
  if (plan.rejected_split)
    absl::StrAppendFormat(&text, "verdict       %s\n", OneDeviceVerdict(problem, plan));
  absl::StrAppendFormat(&text, "transfers     %d cut edges, %s in %d transfers\n", plan.cut_edges,
                        FormatBytes(sim.comm_bytes), sim.transfers);
  absl::StrAppendFormat(&text, "memory        %s\n",
                        sim.memory_overflow ? "OVER CAPACITY" : "fits");
  absl::StrAppendFormat(&text, "%-8s %8s %12s %6s %24s %6s\n", "device", "nodes", "busy us", "load",
                        "peak memory / capacity", "");
  for (int d = 0; d < problem.cluster.num_devices(); ++d) {
    const costmodel::DeviceUsage& u = sim.devices[d];
    const int64_t capacity = problem.cluster.device(d).memory_bytes;
    absl::StrAppendFormat(
        &text, "%-8s %8d %12.1f %5.0f%% %11s / %-10s %5.0f%%\n", problem.cluster.device(d).name,
        u.units, u.busy_us, 100 * Ratio(u.busy_us, sim.step_time_us),
        FormatBytes(u.peak_memory_bytes), FormatBytes(capacity),
        100 * Ratio(static_cast<double>(u.peak_memory_bytes), static_cast<double>(capacity)));
  }
  return text;
}

int RunPlaceCommand(const std::vector<std::string>& args) {
  std::vector<FlagSpec> specs = ProblemFlagSpecs(/*accept_cost_graph=*/true);
  for (const FlagSpec& s : SearchFlagSpecs()) specs.push_back(s);
  for (const FlagSpec& s : TrainingFlagSpecs()) specs.push_back(s);
  specs.push_back({"format", true});
  specs.push_back({"dot", true});
  specs.push_back({"placement", true});
  specs.push_back({"help", false});
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, specs);
  if (!parsed.ok()) return UsageError(parsed.status().message(), kUsage);
  if (parsed->Has("help")) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  const std::string format = parsed->Get("format").value_or("text");
  if (format != "text" && format != "json")
    return UsageError("--format must be text or json", kUsage);
  if (std::optional<std::string> dot = parsed->Get("dot")) {
    if (absl::Status s = CheckParentFolder(*dot); !s.ok()) return ReportError(s);
  }
  absl::StatusOr<SearchFlags> search = SearchFlagsFromArgs(*parsed);
  if (!search.ok()) return UsageError(search.status().message(), kUsage);
  absl::StatusOr<pipeline::ProblemRequest> request =
      ProblemRequestFromArgs(*parsed, /*accept_cost_graph=*/true);
  if (!request.ok()) return UsageError(request.status().message(), kUsage);
  absl::StatusOr<std::optional<PipelinedTraining>> training =
      PipelinedTrainingFromArgs(*parsed, request->step);
  if (!training.ok()) return UsageError(training.status().message(), kUsage);
  std::optional<pipeline::NamedPlacement> given;
  if (std::optional<std::string> file = parsed->Get("placement")) {
    if (request->cost_graph_path)
      return UsageError("--placement places a model's nodes; give a model, not --costgraph",
                        kUsage);
    if (search->auto_microbatches) {
      return UsageError(
          "--microbatches auto chooses the count with a searched placement; give --placement a "
          "fixed --microbatches M",
          kUsage);
    }
    absl::StatusOr<pipeline::NamedPlacement> read = ReadPlacementFile(*file);
    if (!read.ok()) return ReportError(read.status());
    given = *std::move(read);
  }
  ProgressReporter progress(search->quiet);
  AttachProgress(progress, *request);
  absl::StatusOr<pipeline::PlanningProblem> problem = pipeline::PrepareProblem(*request);
  progress.Finish();
  if (!problem.ok()) return ReportError(problem.status());
  if (problem->model) PrintEstimates(problem->model->estimates);
  // With --loss, plans are judged as the main command's split (Note
  // [Training plans] in pipeline/split.h).
  std::optional<PipelinedPlans> pipelined;
  if (*training) {
    absl::StatusOr<PipelinedPlans> created = PipelinedPlans::Create(*problem, **training);
    if (!created.ok()) return ReportError(created.status());
    pipelined = *std::move(created);
  }
  search->options.on_progress = progress.Callback(search->options.time_budget_s);
  pipeline::PlanPolicy policy{.allow_slower_split = search->allow_slower_split};
  if (pipelined) policy = pipelined->Policy(policy);
  std::optional<pipeline::MicrobatchChoice> choice;
  absl::StatusOr<pipeline::Plan> plan = absl::UnknownError("no plan");
  if (given) {
    plan = pipeline::JudgeGivenPlacement(*problem, *given, search->options.microbatches, policy);
  } else if (search->auto_microbatches) {
    absl::StatusOr<pipeline::MicrobatchChoice> chosen = pipeline::ChooseMicrobatches(
        *problem, search->algorithm, search->options, *search->auto_microbatches, policy);
    if (chosen.ok()) {
      plan = std::move(chosen->plan);
      choice = *std::move(chosen);
    } else {
      plan = chosen.status();
    }
  } else {
    plan = pipeline::MakePlan(*problem, search->algorithm, search->options, {}, nullptr, policy);
  }
  progress.Finish();
  if (!plan.ok()) return ReportError(plan.status());
  std::optional<SplitStepView> split;
  if (pipelined) {
    absl::StatusOr<std::optional<SplitStepView>> adopted = pipelined->Adopt(*plan);
    if (!adopted.ok()) return ReportError(adopted.status());
    split = *std::move(adopted);
  }
  if (std::optional<std::string> dot_path = parsed->Get("dot")) {
    // The graph the search placed; a given placement is drawn node by node.
    absl::StatusOr<std::string> dot =
        plan->unit_placement.device.empty()
            ? PlacementToDot(problem->node_graph(), plan->node_placement.device,
                             DeviceNames(problem->cluster))
            : PlacementToDot(problem->units(), plan->unit_placement.device,
                             DeviceNames(problem->cluster));
    if (!dot.ok()) return ReportError(dot.status());
    if (absl::Status s = WriteTextFile(*dot_path, *dot); !s.ok()) return ReportError(s);
  }
  if (format == "json") {
    nlohmann::ordered_json json = PlanJsonSummary(*problem, *plan, split);
    if (choice) json["microbatches_search"] = MicrobatchCurveJson(*choice);
    std::printf("%s\n", json.dump(2).c_str());
  } else {
    std::fputs(PlanText(*problem, *plan, *training, split).c_str(), stdout);
    if (choice) std::fputs(MicrobatchCurveText(*choice).c_str(), stdout);
  }
  return plan->simulation.memory_overflow ? kExitInfeasible : kExitOk;
}

}  // namespace autopar::tools
