#include "tools/cli/commands/compare_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "costmodel/lower_bound.h"
#include "nlohmann/json.hpp"
#include "pipeline/planning.h"
#include "search/feasibility.h"
#include "tools/artifacts/report_html.h"
#include "tools/cli/cli_output.h"
#include "tools/cli/cluster_flags.h"
#include "tools/cli/commands/place_command.h"
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
    R"(usage: onnx-autopar compare MODEL.onnx [--devices N] [--device PRESET|FILE]
                            [--memory-per-device SIZE] [--cluster PRESET|FILE|cpu:KxT]
                            [--host-calibration FILE] [--node-times FILE]
                            [--algos NAME,NAME,...|all] [--format table|json|csv]
                            [--report FILE.html] [--microbatches M|auto] [--max-microbatches K] [--seed N]
                            [--time-budget 10s] [--max-generations N] [--threads N] [--quiet]
                            [--mode inference|training] [--optimizer sgd|momentum|adam|adamw]
                            [--loss SPEC] [--schedule gpipe|1f1b] [--freeze REGEX] ...
                            [--dim NAME=VALUE]... [--input-shape NAME=D,...]...
                            [--input-value NAME=V,...]... [--loop-trips N] [--strict-shapes]
       onnx-autopar compare --costgraph GRAPH.json [--devices N --memory-per-device SIZE | --cluster ...]

Runs several placement algorithms on the same model and cluster and compares
how the simulator judges their plans: step time, its ratio to the lower bound,
speed-up over one device (every unit on device 0, memory ignored), the fullest
device's peak memory over its capacity, whether the plan fits, cut edges, bytes
sent and search time. The best row (the fastest plan that fits) is marked '*'.
An algorithm that finds no plan gets a row that says why. Exit code 3 when no
algorithm found a plan that fits.

Each row is the algorithm's own plan, even a split predicted slower than one
device (which `place` and the main command replace by that device).

--algos all (the default) runs every algorithm; "single" (the whole model on
one device) only when one device holds the model — otherwise every other row
already says how much faster it is than one device, and its own row could only
say that it does not fit. Name it in --algos to see that row anyway.
--microbatches auto chooses M in 1..K (--max-microbatches, default 32) by
SGP's time per sample, prints that curve, and compares every algorithm at
that M (JSON: "microbatches_search").
--seed, --time-budget, --max-generations and --threads apply to every
algorithm (iterative ones use the budget; one-shot ones ignore it).

--mode training compares plans of a training step. Without --loss the step
is the fused one: forward, backward and update of each unit in one list
schedule. With --loss SPEC (as the main command's) and several devices, each
row is judged as the pipeline the main command writes: the search optimises
the pipelined step's estimate under --schedule (1f1b, the default, or gpipe),
and the row's step and peak memory are those of the split the main command
makes of its placement (plan.json's training.pipeline.predicted); the JSON
rows add each device's peak and the split's stages, estimate and fused step.

--report FILE.html also writes the comparison as a self-contained HTML page:
the table, with --microbatches auto the micro-batch curve (charts of time per
sample and peak memory per device against M, and its table), and below them
the plan of a selected algorithm (the best at first) drawn as the main
command's report.html draws it.

Without cluster flags a model is planned for 4 x A100-80GB over NVLink, and a
cost graph for the "devices" block it contains. Each cluster flag changes only
what it names: over a cost graph's own devices, --devices N changes the count
(keeping their memory and links) and --memory-per-device the memory; --device
cannot replace them (--cluster replaces the whole cluster).

examples:
  onnx-autopar compare resnet50.onnx --devices 4 --device V100
  onnx-autopar compare bert.onnx --cluster 2x4xA100-nvlink-pcie --algos sgp,heft --format json
  onnx-autopar compare --costgraph graph.json --devices 8 --memory-per-device 16GiB --format csv
  onnx-autopar compare resnet50.onnx --algos sgp,tga,heft --max-generations 50 --report cmp.html
  onnx-autopar compare resnet18.onnx --cluster cpu:2x1 --mode training --loss cross-entropy:191 --microbatches 8
)";

/// One algorithm's outcome.
struct Row {
  std::string algorithm;
  /// Set when the algorithm returned a placement.
  std::optional<pipeline::Plan> plan;
  /// Why it did not (the algorithm's error), else empty.
  std::string error;
  bool infeasible = false;  // the error is "no plan within memory"
  double search_time_ms = 0;
  bool best = false;
  /// With --loss over several devices: the plan's split, which its step and
  /// memory are (tools/cli/pipelined_plans.h).
  std::optional<SplitStepView> split;

  bool feasible() const { return plan && !plan->simulation.memory_overflow; }
};

double Ratio(double a, double b) { return b > 0 ? a / b : 0; }

// On a cpu:KxT cluster, the alternative a user would pick instead of a split:
// the unsplit model on one device with all K x T threads. Its step is the
// one-device step (T threads) times the measured thread speed-up of T over
// that of K x T (costmodel/host_cpu.h).
constexpr char kAllThreadsName[] = "single-all-threads";

struct AllThreadsRow {
  int threads = 0;
  double step_time_us = 0;
  double single_device_step_us = 0;
  /// Faster than every split that fits.
  bool beats_every_split = false;
};

std::optional<AllThreadsRow> SingleAllThreads(const pipeline::PlanningProblem& problem,
                                              const std::vector<Row>& rows) {
  if (!problem.cluster.host) return std::nullopt;
  const costmodel::HostThreads& host = *problem.cluster.host;
  const auto any = std::find_if(rows.begin(), rows.end(), [](const Row& r) { return r.plan; });
  if (any == rows.end()) return std::nullopt;
  AllThreadsRow row;
  row.threads = host.devices * host.threads_per_device;
  row.single_device_step_us = any->plan->single_device_step_us;
  row.step_time_us = host.AllThreadsStepUs(row.single_device_step_us);
  row.beats_every_split = true;
  for (const Row& r : rows) {
    if (r.feasible() && r.algorithm != "single" &&
        r.plan->simulation.step_time_us <= row.step_time_us) {
      row.beats_every_split = false;
    }
  }
  return row;
}

// The fullest device: its peak memory and capacity.
std::pair<int64_t, int64_t> FullestDevice(const pipeline::PlanningProblem& problem,
                                          const pipeline::Plan& plan) {
  int fullest = 0;
  double fullest_ratio = -1;
  for (int d = 0; d < problem.cluster.num_devices(); ++d) {
    const double ratio = Ratio(static_cast<double>(plan.simulation.devices[d].peak_memory_bytes),
                               static_cast<double>(problem.cluster.device(d).memory_bytes));
    if (ratio > fullest_ratio) {
      fullest = d;
      fullest_ratio = ratio;
    }
  }
  return {plan.simulation.devices[fullest].peak_memory_bytes,
          problem.cluster.device(fullest).memory_bytes};
}

// --algos: known names, in the order given, each once. "all" stands for
// every algorithm, "single" among them only when `single_fits` (see kUsage).
absl::StatusOr<std::vector<std::string>> AlgorithmsFromFlag(const std::string& value,
                                                            bool single_fits) {
  const std::vector<std::string> known = search::AlgorithmNames();
  std::vector<std::string> names;
  auto add = [&](const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  for (absl::string_view piece : absl::StrSplit(value, ',')) {
    const std::string name(absl::StripAsciiWhitespace(piece));
    if (name.empty()) continue;
    if (name == "all") {
      for (const std::string& k : known) {
        if (k != "single" || single_fits) add(k);
      }
      continue;
    }
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat("--algos: unknown algorithm '", name,
                                                     "' (known: ", absl::StrJoin(known, ", "),
                                                     ", all)"));
    }
    add(name);
  }
  if (names.empty()) return absl::InvalidArgumentError("--algos names no algorithm");
  return names;
}

// Whether one device of the cluster holds the whole model.
bool OneDeviceHoldsIt(const pipeline::PlanningProblem& problem) {
  int64_t largest = 0;
  for (const costmodel::ClusterDevice& d : problem.cluster.devices) {
    largest = std::max(largest, d.memory_bytes);
  }
  return search::MinimumMemoryBytes(problem.units()) <= largest;
}

std::vector<Row> RunAll(const pipeline::PlanningProblem& problem,
                        const std::vector<std::string>& algorithms,
                        const search::SearchOptions& options, const costmodel::LowerBound& bound,
                        PipelinedPlans* pipelined) {
  pipeline::PlanPolicy policy{.allow_slower_split = true};
  if (pipelined) policy = pipelined->Policy(policy);
  std::vector<Row> rows;
  for (const std::string& algorithm : algorithms) {
    Row row;
    row.algorithm = algorithm;
    const auto start = std::chrono::steady_clock::now();
    // Each algorithm's own plan, even a split slower than one device: this
    // compares the algorithms, and the "single" row and the speed-up column
    // show what one device would do (pipeline/planning.h, Note [Do not
    // split]).
    absl::StatusOr<pipeline::Plan> plan =
        pipeline::MakePlan(problem, algorithm, options, {}, &bound, policy);
    // With --loss, the plan as the main command writes it: its split.
    if (plan.ok() && pipelined) {
      absl::StatusOr<std::optional<SplitStepView>> split = pipelined->Adopt(*plan);
      if (split.ok()) {
        row.split = *std::move(split);
      } else {
        plan = split.status();
      }
    }
    if (plan.ok()) {
      row.search_time_ms = plan->search_time_ms;
      row.plan = *std::move(plan);
    } else {
      row.search_time_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      row.error = std::string(plan.status().message());
      row.infeasible = plan.status().code() == absl::StatusCode::kResourceExhausted;
    }
    rows.push_back(std::move(row));
  }
  // The best row: the fastest plan that fits, the first listed among equals.
  Row* best = nullptr;
  for (Row& row : rows) {
    if (!row.feasible()) continue;
    if (best == nullptr ||
        row.plan->simulation.step_time_us < best->plan->simulation.step_time_us) {
      best = &row;
    }
  }
  if (best != nullptr) best->best = true;
  return rows;
}

std::string Status(const Row& row) {
  if (row.plan) return "ok";
  return row.infeasible ? "infeasible" : "error";
}

nlohmann::ordered_json CompareJson(const pipeline::PlanningProblem& problem,
                                   const std::vector<Row>& rows, int microbatches,
                                   const costmodel::LowerBound& bound,
                                   const std::optional<PipelinedTraining>& training) {
  const costmodel::CostGraph& units = problem.units();
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  nlohmann::ordered_json best = nullptr, single_device_step_us = nullptr;
  for (const Row& row : rows) {
    nlohmann::ordered_json r = {{"algorithm", row.algorithm}, {"status", Status(row)}};
    if (row.plan) {
      const pipeline::Plan& plan = *row.plan;
      const auto [peak, capacity] = FullestDevice(problem, plan);
      r["step_time_us"] = plan.simulation.step_time_us;
      r["ratio_to_lower_bound"] = Ratio(plan.simulation.step_time_us, plan.lower_bound.bound_us);
      r["speedup"] = Ratio(plan.single_device_step_us, plan.simulation.step_time_us);
      r["peak_memory_bytes"] = peak;
      r["memory_capacity_bytes"] = capacity;
      r["peak_memory_over_capacity"] =
          Ratio(static_cast<double>(peak), static_cast<double>(capacity));
      r["feasible"] = row.feasible();
      r["cut_edges"] = plan.cut_edges;
      r["comm_bytes"] = plan.simulation.comm_bytes;
      if (problem.step.mode == costmodel::StepMode::kTraining) {
        nlohmann::ordered_json peaks = nlohmann::ordered_json::array();
        for (const costmodel::DeviceUsage& u : plan.simulation.devices)
          peaks.push_back(u.peak_memory_bytes);
        r["device_peak_memory_bytes"] = std::move(peaks);
        r["pipeline"] = SplitStepJson(row.split);
      }
      single_device_step_us = plan.single_device_step_us;
    } else {
      for (const char* key :
           {"step_time_us", "ratio_to_lower_bound", "speedup", "peak_memory_bytes",
            "memory_capacity_bytes", "peak_memory_over_capacity"}) {
        r[key] = nullptr;
      }
      r["feasible"] = false;
      r["cut_edges"] = nullptr;
      r["comm_bytes"] = nullptr;
      r["error"] = row.error;
    }
    r["search_time_ms"] = row.search_time_ms;
    r["best"] = row.best;
    if (row.best) best = row.algorithm;
    results.push_back(std::move(r));
  }
  if (std::optional<AllThreadsRow> all = SingleAllThreads(problem, rows)) {
    results.push_back({{"algorithm", kAllThreadsName},
                       {"status", "ok"},
                       {"threads", all->threads},
                       {"step_time_us", all->step_time_us},
                       {"speedup", Ratio(all->single_device_step_us, all->step_time_us)},
                       {"beats_every_split", all->beats_every_split},
                       {"best", false}});
  }
  nlohmann::ordered_json json = {{"units", units.num_units()},
                                 {"devices", problem.cluster.num_devices()},
                                 {"microbatches", microbatches},
                                 {"costs", costmodel::CostSourceJson(problem.cost_source)}};
  if (problem.step.mode == costmodel::StepMode::kTraining) {
    const bool split = training && problem.cluster.num_devices() > 1;
    json["step_judged"] = split ? "pipeline" : "fused";
    json["schedule"] = split ? nlohmann::ordered_json(
                                   std::string(costmodel::PipelineScheduleName(training->schedule)))
                             : nlohmann::ordered_json();
  }
  json["lower_bound_us"] = bound.bound_us;
  json["single_device_step_us"] = single_device_step_us;
  json["best"] = best;
  json["results"] = std::move(results);
  return json;
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string CompareCsv(const pipeline::PlanningProblem& problem, const std::vector<Row>& rows) {
  std::string text =
      "algorithm,status,step_time_us,ratio_to_lower_bound,speedup,peak_memory_over_capacity,"
      "feasible,cut_edges,comm_bytes,search_time_ms,best,error\n";
  for (const Row& row : rows) {
    std::string numbers = ",,,";
    if (row.plan) {
      const pipeline::Plan& plan = *row.plan;
      const auto [peak, capacity] = FullestDevice(problem, plan);
      numbers = absl::StrFormat("%.3f,%.4f,%.4f,%.4f", plan.simulation.step_time_us,
                                Ratio(plan.simulation.step_time_us, plan.lower_bound.bound_us),
                                Ratio(plan.single_device_step_us, plan.simulation.step_time_us),
                                Ratio(static_cast<double>(peak), static_cast<double>(capacity)));
    }
    absl::StrAppend(&text, row.algorithm, ",", Status(row), ",", numbers, ",",
                    row.feasible() ? "true" : "false", ",",
                    row.plan ? absl::StrCat(row.plan->cut_edges) : "", ",",
                    row.plan ? absl::StrCat(row.plan->simulation.comm_bytes) : "", ",",
                    absl::StrFormat("%.3f", row.search_time_ms), ",", row.best ? "true" : "false",
                    ",", CsvField(row.error), "\n");
  }
  if (std::optional<AllThreadsRow> all = SingleAllThreads(problem, rows)) {
    absl::StrAppendFormat(&text, "%s,ok,%.3f,,%.4f,,true,0,0,0.000,false,\n", kAllThreadsName,
                          all->step_time_us, Ratio(all->single_device_step_us, all->step_time_us));
  }
  return text;
}

std::string CompareTable(const pipeline::PlanningProblem& problem, const std::vector<Row>& rows,
                         int microbatches, const costmodel::LowerBound& bound,
                         const std::optional<PipelinedTraining>& training) {
  const costmodel::CostGraph& units = problem.units();
  std::string text =
      absl::StrFormat("%u units on %d devices; lower bound %.1f us\n", units.num_units(),
                      problem.cluster.num_devices(), bound.bound_us);
  absl::StrAppendFormat(&text, "  %-18s %12s %8s %9s %9s %5s %9s %11s %10s\n", "algorithm",
                        "step us", "/ bound", "speed-up", "peak/cap", "fits", "cut edges", "comm",
                        "search ms");
  // Why rows have no plan; algorithms that failed alike share a line.
  std::vector<std::pair<std::string, std::string>> notes;  // (algorithms, error)
  for (const Row& row : rows) {
    const char* mark = row.best ? "*" : " ";
    if (!row.plan) {
      absl::StrAppendFormat(&text, "%s %-18s %12s %8s %9s %9s %5s %9s %11s %10.2f\n", mark,
                            row.algorithm, "-", "-", "-", "-", "no", "-", "-", row.search_time_ms);
      auto same = std::find_if(notes.begin(), notes.end(),
                               [&](const auto& note) { return note.second == row.error; });
      if (same == notes.end()) {
        notes.emplace_back(row.algorithm, row.error);
      } else {
        absl::StrAppend(&same->first, ", ", row.algorithm);
      }
      continue;
    }
    const pipeline::Plan& plan = *row.plan;
    const auto [peak, capacity] = FullestDevice(problem, plan);
    absl::StrAppendFormat(&text, "%s %-18s %12.1f %8.2f %8.2fx %8.0f%% %5s %9d %11s %10.2f\n", mark,
                          row.algorithm, plan.simulation.step_time_us,
                          Ratio(plan.simulation.step_time_us, plan.lower_bound.bound_us),
                          Ratio(plan.single_device_step_us, plan.simulation.step_time_us),
                          100 * Ratio(static_cast<double>(peak), static_cast<double>(capacity)),
                          row.feasible() ? "yes" : "NO", plan.cut_edges,
                          FormatBytes(plan.simulation.comm_bytes), row.search_time_ms);
  }
  const std::optional<AllThreadsRow> all = SingleAllThreads(problem, rows);
  if (all) {
    absl::StrAppendFormat(&text, "  %-18s %12.1f %8s %8.2fx %9s %5s %9s %11s %10s\n",
                          kAllThreadsName, all->step_time_us, "-",
                          Ratio(all->single_device_step_us, all->step_time_us), "-", "yes", "-",
                          "-", "-");
  }
  const bool any_best = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.best; });
  absl::StrAppend(
      &text, any_best ? "* the fastest plan that fits\n" : "no algorithm found a plan that fits\n");
  if (all) {
    absl::StrAppendFormat(&text,
                          "%s: the unsplit model on one device with all %d threads (measured "
                          "thread speed-up)%s\n",
                          kAllThreadsName, all->threads,
                          all->beats_every_split ? "; it beats every split" : "");
  }
  absl::StrAppendFormat(&text, "node times: %s; %d %s per step\n",
                        CostSourceText(problem.cost_source), microbatches,
                        microbatches == 1 ? "micro-batch" : "micro-batches");
  if (problem.step.mode == costmodel::StepMode::kTraining) {
    absl::StrAppend(&text, TrainingStepLine(training, problem.cluster.num_devices(), microbatches),
                    "\n");
  }
  if (!notes.empty()) absl::StrAppend(&text, "no plan:\n");
  for (const auto& [algorithms, error] : notes)
    absl::StrAppend(&text, "  ", algorithms, ": ", error, "\n");
  return text;
}

// --report: every row's plan drawn (tools/artifacts/report_html.h).
absl::Status WriteReport(const std::string& path, const std::string& model,
                         const pipeline::PlanningProblem& problem, const std::vector<Row>& rows,
                         int microbatches, const pipeline::MicrobatchChoice* microbatch_search) {
  // Drawn node by node, as judged (Note [One judgement] in pipeline/planning.h);
  // cost graph files carry no op families, so their nodes are coloured "other".
  const std::vector<costmodel::NodeCost> no_costs;
  const std::vector<costmodel::NodeCost>& node_costs =
      problem.nodes ? problem.nodes->costs : no_costs;
  std::vector<std::vector<passes::Transfer>> transfers(rows.size());
  std::vector<ComparedPlan> plans;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    ComparedPlan& compared = plans.emplace_back(
        ComparedPlan{.algorithm = row.algorithm, .error = row.error, .best = row.best});
    if (!row.plan) continue;
    const pipeline::Plan& plan = *row.plan;
    transfers[i] = UnitTransfers(problem.node_graph(), plan.node_placement);
    compared.cut_edges = plan.cut_edges;
    compared.report = ReportInput{.model = model,
                                  .algorithm = row.algorithm,
                                  .search_time_ms = row.search_time_ms,
                                  .microbatches = microbatches,
                                  .cost_source = problem.cost_source,
                                  .lower_bound_us = plan.lower_bound.bound_us,
                                  .single_device_step_us = plan.single_device_step_us,
                                  .cluster = &problem.cluster,
                                  .graph = &problem.node_graph(),
                                  .unit_costs = node_costs,
                                  .simulation = &plan.simulation,
                                  .transfers = transfers[i],
                                  .convergence = plan.progress,
                                  .training_split = row.split ? row.split->split : nullptr};
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << RenderComparisonReport(model, plans, microbatch_search);
  out.close();
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write '", path, "'"));
  return absl::OkStatus();
}

}  // namespace

int RunCompareCommand(const std::vector<std::string>& args) {
  std::vector<FlagSpec> specs = ProblemFlagSpecs(/*accept_cost_graph=*/true);
  // Every search flag but --algo: compare takes --algos.
  for (const FlagSpec& s : SearchFlagSpecs()) {
    // compare always shows each algorithm's own plan (below, RunAll).
    if (s.name != "algo" && s.name != "allow-slower-split") specs.push_back(s);
  }
  for (const FlagSpec& s : TrainingFlagSpecs()) specs.push_back(s);
  for (const char* name : {"algos", "format", "report"}) specs.push_back({name, true});
  specs.push_back({"help", false});
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, specs);
  if (!parsed.ok()) return UsageError(parsed.status().message(), kUsage);
  if (parsed->Has("help")) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  const std::string format = parsed->Get("format").value_or("table");
  if (format != "table" && format != "json" && format != "csv") {
    return UsageError("--format must be table, json or csv", kUsage);
  }
  const std::string algos_flag = parsed->Get("algos").value_or("all");
  // Names are checked before the (possibly slow) model preparation.
  if (absl::Status s = AlgorithmsFromFlag(algos_flag, /*single_fits=*/true).status(); !s.ok()) {
    return UsageError(s.message(), kUsage);
  }
  absl::StatusOr<SearchFlags> search = SearchFlagsFromArgs(*parsed);
  if (!search.ok()) return UsageError(search.status().message(), kUsage);
  absl::StatusOr<pipeline::ProblemRequest> request =
      ProblemRequestFromArgs(*parsed, /*accept_cost_graph=*/true);
  if (!request.ok()) return UsageError(request.status().message(), kUsage);
  absl::StatusOr<std::optional<PipelinedTraining>> training =
      PipelinedTrainingFromArgs(*parsed, request->step);
  if (!training.ok()) return UsageError(training.status().message(), kUsage);
  ProgressReporter progress(search->quiet);
  AttachProgress(progress, *request);
  absl::StatusOr<pipeline::PlanningProblem> problem = pipeline::PrepareProblem(*request);
  progress.Finish();
  if (!problem.ok()) return ReportError(problem.status());
  if (problem->model) PrintEstimates(problem->model->estimates);
  const std::vector<std::string> algorithms =
      *AlgorithmsFromFlag(algos_flag, OneDeviceHoldsIt(*problem));
  // With --loss, every plan is judged as the main command's split (Note
  // [Training plans] in pipeline/split.h).
  std::optional<PipelinedPlans> pipelined;
  if (*training) {
    absl::StatusOr<PipelinedPlans> created = PipelinedPlans::Create(*problem, **training);
    if (!created.ok()) return ReportError(created.status());
    pipelined = *std::move(created);
  }
  pipeline::PlanPolicy auto_policy{.allow_slower_split = true};
  if (pipelined) auto_policy = pipelined->Policy(auto_policy);

  // --microbatches auto: SGP's curve chooses M once, and every algorithm is
  // compared at that M (pipeline/planning.h, Note [Micro-batches auto]).
  std::optional<pipeline::MicrobatchChoice> choice;
  if (search->auto_microbatches) {
    absl::StatusOr<pipeline::MicrobatchChoice> chosen = pipeline::ChooseMicrobatches(
        *problem, "sgp", search->options, *search->auto_microbatches, auto_policy);
    if (!chosen.ok()) return ReportError(chosen.status());
    chosen->plan = {};
    choice = *std::move(chosen);
    search->options.microbatches = choice->chosen;
  }
  search->options.on_progress = progress.Callback(search->options.time_budget_s);
  // One bound for every row and the summary: it takes tens of ms on 10k nodes.
  const costmodel::LowerBound bound = costmodel::ComputeLowerBound(
      problem->node_graph(), problem->cluster, search->options.microbatches);
  const std::vector<Row> rows =
      RunAll(*problem, algorithms, search->options, bound, pipelined ? &*pipelined : nullptr);
  progress.Finish();
  if (format == "json") {
    nlohmann::ordered_json json =
        CompareJson(*problem, rows, search->options.microbatches, bound, *training);
    if (choice) json["microbatches_search"] = MicrobatchCurveJson(*choice);
    std::printf("%s\n", json.dump(2).c_str());
  } else if (format == "csv") {
    std::fputs(CompareCsv(*problem, rows).c_str(), stdout);
  } else {
    std::fputs(CompareTable(*problem, rows, search->options.microbatches, bound, *training).c_str(),
               stdout);
    if (choice) std::fputs(MicrobatchCurveText(*choice).c_str(), stdout);
  }
  if (std::optional<std::string> report = parsed->Get("report")) {
    if (absl::Status written =
            WriteReport(*report, request->cost_graph_path.value_or(request->model_path), *problem,
                        rows, search->options.microbatches, choice ? &*choice : nullptr);
        !written.ok()) {
      return ReportError(written);
    }
  }
  const bool any_feasible =
      std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.feasible(); });
  return any_feasible ? kExitOk : kExitInfeasible;
}

}  // namespace autopar::tools
