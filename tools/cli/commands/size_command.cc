#include "tools/cli/commands/size_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "pipeline/capacity.h"
#include "search/search.h"
#include "tools/artifacts/dot_export.h"
#include "tools/artifacts/report_size.h"
#include "tools/cli/cli_output.h"
#include "tools/cli/exit_codes.h"
#include "tools/cli/mode_flags.h"
#include "tools/cli/problem_flags.h"
#include "tools/cli/progress_reporter.h"
#include "tools/cli/quantities.h"
#include "tools/cli/search_flags.h"
#include "tools/cli/shape_flags.h"

namespace autopar::tools {
namespace {

constexpr char kUsage[] =
    R"(usage: onnx-autopar size MODEL.onnx [--device PRESET|FILE | --cluster PRESET|FILE]
                         [--max-devices N] [--memory-per-device SIZE]
                         [--target-step TIME | --target-throughput SAMPLES_PER_S]
                         [--algo NAME] [--max-microbatches K] [--seed N] [--time-budget 10s]
                         [--threads N]
                         [--mode inference|training] [--optimizer sgd|momentum|adam|adamw]
                         [--node-times FILE] [--allow-slower-split] [--json | --format text|json]
                         [--report FILE.html] [--quiet] [--dim NAME=VALUE]... [--input-shape NAME=D,...]...
                         [--input-value NAME=V,...]... [--loop-trips N] [--strict-shapes]

How many devices does the model need? Plans it on 1, 2, ... N devices
(--max-devices, default 8) and prints, per count, the best plan: step time,
time per sample (step / (M x batch)), throughput, the fullest device's peak
memory over its capacity, whether it fits, and the micro-batch count M. Then
one line: the smallest count that meets the target, or that none does and
what comes closest.

Targets: --target-step TIME (e.g. 20ms, 1.5s: the step of M micro-batches
within that time), --target-throughput N (samples per second), or none: the
smallest count that fits.

Each count is planned as `place --devices k --microbatches auto` plans it,
with a shorter micro-batch search: SGP tries the powers of two up to K and K
(--max-microbatches, default 32; place also bisects around the best), the
lowest time per sample wins, and --algo (default sgp) plans that M. With --target-step the count is the
best whose step meets the target. A split predicted slower than one device
gives way to it (--allow-slower-split keeps it), and a count slower per sample
than fewer devices says so. An iterative --algo (tga) runs its --time-budget
at every count. --threads N (default: this machine's cores, at most 16)
plans that many device counts side by side; the plans do not depend on it.

The devices are --device's kind (default A100-80GB, linked by its usual
interconnect) with --memory-per-device, or copies of a --cluster file's or
preset's devices and links (device i a copy of device i mod n).

--report FILE.html also writes the table as a self-contained HTML page: what
was sized, a row per count (devices, step, time per sample, throughput, peak
memory over capacity, fits, M), the answer line, and per count the curve of
micro-batch counts its M was chosen from (time per sample and peak memory per
device against M).

Exit code 3 when no count up to N meets the target; when none fits, one line
says how much memory the model needs and about how much each of N devices
would need.

examples:
  onnx-autopar size resnet50.onnx --device V100
  onnx-autopar size gpt2.onnx --device V100 --memory-per-device 16GiB --max-devices 16
  onnx-autopar size bert.onnx --device A100-80GB --target-step 20ms --mode training
  onnx-autopar size resnet50.onnx --device T4 --target-throughput 2000 --json
  onnx-autopar size resnet50.onnx --device V100 --max-devices 16 --report size.html
)";

struct SizeFlags {
  int max_devices = 8;
  /// --cluster, the template the counts copy.
  std::optional<std::string> cluster;
  pipeline::CapacityTarget target;
  bool json = false;
  /// --report FILE.html.
  std::optional<std::string> report;
};

absl::StatusOr<SizeFlags> SizeFlagsFromArgs(const ParsedArgs& args) {
  SizeFlags flags;
  if (args.Has("devices")) {
    return absl::InvalidArgumentError(
        "size tries every device count: give --max-devices N, not --devices");
  }
  if (std::optional<std::string> cluster = args.Get("cluster");
      cluster && cluster->starts_with("cpu:")) {
    return absl::InvalidArgumentError(
        "size sweeps device counts; a cpu:KxT cluster is this host's fixed K (use place or "
        "compare)");
  }
  flags.cluster = args.Get("cluster");
  if (std::optional<std::string> text = args.Get("max-devices")) {
    if (!absl::SimpleAtoi(*text, &flags.max_devices) || flags.max_devices < 1 ||
        flags.max_devices > 64) {
      return absl::InvalidArgumentError(
          absl::StrCat("--max-devices must be a number from 1 to 64, not '", *text, "'"));
    }
  }
  if (args.Has("target-step") && args.Has("target-throughput"))
    return absl::InvalidArgumentError("give --target-step or --target-throughput, not both");
  if (std::optional<std::string> text = args.Get("target-step")) {
    absl::StatusOr<double> seconds = ParseDurationSeconds(*text);
    if (!seconds.ok() || *seconds <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--target-step must be a positive time (e.g. 20ms, 1.5s), not '", *text, "'"));
    }
    flags.target.step_us = *seconds * 1e6;
  }
  if (std::optional<std::string> text = args.Get("target-throughput")) {
    double rate = 0;
    if (!absl::SimpleAtod(*text, &rate) || !std::isfinite(rate) || rate <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--target-throughput must be a positive number of samples per second, not '",
                       *text, "'"));
    }
    flags.target.samples_per_s = rate;
  }
  const std::string format = args.Get("format").value_or(args.Has("json") ? "json" : "text");
  if (format != "text" && format != "json")
    return absl::InvalidArgumentError("--format must be text or json");
  if (args.Has("json") && format != "json")
    return absl::InvalidArgumentError("--json and --format text contradict each other");
  flags.json = format == "json";
  flags.report = args.Get("report");
  if (flags.report && flags.report->empty())
    return absl::InvalidArgumentError("--report needs a file name");
  return flags;
}

// "V100 (32.0 GiB each)" for devices of one kind and memory; else what the
// template lists.
std::string DevicesText(const costmodel::Cluster& cluster) {
  std::vector<std::string> parts;
  for (const costmodel::ClusterDevice& d : cluster.devices) {
    const std::string& kind = cluster.kinds[d.kind].name;
    parts.push_back(
        absl::StrCat(kind.empty() ? d.name : kind, " (", FormatBytes(d.memory_bytes), ")"));
  }
  bool same = true;
  for (const std::string& p : parts) same = same && p == parts.front();
  if (same) {
    const costmodel::ClusterDevice& d = cluster.device(0);
    const std::string& kind = cluster.kinds[d.kind].name;
    return absl::StrCat(kind.empty() ? d.name : kind, " (", FormatBytes(d.memory_bytes), " each)");
  }
  return absl::StrCat("copies of ", absl::StrJoin(parts, ", "));
}

std::string TargetText(const pipeline::CapacityTarget& target) {
  if (target.step_us) return absl::StrFormat("a step within %.1f us", *target.step_us);
  if (target.samples_per_s)
    return absl::StrFormat("at least %.1f samples/s", *target.samples_per_s);
  return "none (the fewest devices that fit)";
}

std::string Note(const pipeline::CapacityRow& row) {
  if (!row.choice) return "no plan within memory";
  std::vector<std::string> notes;
  if (const auto& rejected = row.choice->plan.rejected_split) {
    notes.push_back(absl::StrFormat("split over %d slower than one device", rejected->devices));
  }
  if (row.slower_than > 0) {
    notes.push_back(absl::StrFormat("slower per sample than %d device%s", row.slower_than,
                                    row.slower_than == 1 ? "" : "s"));
  }
  return absl::StrJoin(notes, "; ");
}

std::string Devices(int n) { return absl::StrCat(n, n == 1 ? " device" : " devices"); }

// The line that answers, when some count fits.
std::string AnswerText(const pipeline::CapacityAnswer& answer,
                       const pipeline::CapacityTarget& target, int max_devices) {
  if (answer.devices > 0) {
    const pipeline::CapacityRow& row = answer.rows[answer.devices - 1];
    const std::string figures =
        absl::StrFormat("step %.1f us at M=%d, %.1f samples/s, peak %s of %s", row.step_time_us,
                        row.microbatches, row.samples_per_s, FormatBytes(row.peak_memory_bytes),
                        FormatBytes(row.memory_capacity_bytes));
    if (!target.step_us && !target.samples_per_s)
      return absl::StrCat("answer: ", Devices(row.devices), ", the fewest that fit (", figures,
                          ")\n");
    return absl::StrCat("answer: ", Devices(row.devices), ", the fewest that fit with ",
                        TargetText(target), " (", figures, ")\n");
  }
  const pipeline::CapacityRow& best = answer.rows[answer.closest - 1];
  return absl::StrFormat(
      "answer: none: no count of 1..%d devices fits with %s; the closest, %s, reaches a step of "
      "%.1f us at M=%d, %.1f samples/s\n",
      max_devices, TargetText(target), Devices(best.devices), best.step_time_us, best.microbatches,
      best.samples_per_s);
}

std::string NoFitMessage(const pipeline::CapacityAnswer& answer, const costmodel::Cluster& cluster,
                         int max_devices) {
  return absl::StrCat("no count of 1..", max_devices, " devices of ", DevicesText(cluster),
                      " fits: the model needs ", FormatBytes(answer.memory_needed_bytes),
                      " on one device; ", max_devices, " devices would need about ",
                      FormatBytes(answer.memory_needed_per_device_bytes),
                      " each (--memory-per-device), or more devices (--max-devices)");
}

// The lines above the table: the devices swept and the step planned.
std::string SweptDevicesText(const pipeline::PlanningProblem& problem, const SizeFlags& flags) {
  return flags.cluster
             ? absl::StrFormat("1..%d of --cluster %s's devices and links: %s", flags.max_devices,
                               *flags.cluster, DevicesText(problem.cluster))
             : absl::StrFormat("1..%d x %s", flags.max_devices, DevicesText(problem.cluster));
}

std::string StepText(const pipeline::CapacityAnswer& answer,
                     const pipeline::PlanningProblem& problem, const std::string& algorithm,
                     int max_microbatches) {
  return absl::StrFormat("%s, %s; micro-batches 1..%d by time per sample, batch %d",
                         StepDescription(problem.step), algorithm, max_microbatches, answer.batch);
}

std::string SizeTable(const pipeline::CapacityAnswer& answer,
                      const pipeline::PlanningProblem& problem, const SizeFlags& flags,
                      const std::string& algorithm, int max_microbatches) {
  std::string text = absl::StrFormat(
      "devices   %s\nstep      %s\ntarget    %s\n", SweptDevicesText(problem, flags),
      StepText(answer, problem, algorithm, max_microbatches), TargetText(flags.target));
  absl::StrAppendFormat(&text, "%7s %12s %12s %12s %24s %5s %5s  %s\n", "devices", "step us",
                        "us/sample", "samples/s", "peak memory / capacity", "fits", "M", "note");
  for (const pipeline::CapacityRow& row : answer.rows) {
    const char mark = row.devices == answer.devices ? '*' : ' ';
    if (!row.choice) {
      absl::StrAppendFormat(&text, "%c%6d %12s %12s %12s %24s %5s %5s  %s\n", mark, row.devices,
                            "-", "-", "-", "-", "no", "-", Note(row));
      continue;
    }
    const std::string memory = absl::StrCat(FormatBytes(row.peak_memory_bytes), " / ",
                                            FormatBytes(row.memory_capacity_bytes));
    absl::StrAppendFormat(&text, "%c%6d %12.1f %12.2f %12.1f %24s %5s %5d  %s\n", mark, row.devices,
                          row.step_time_us, row.time_per_sample_us, row.samples_per_s, memory,
                          row.fits ? "yes" : "no", row.microbatches, Note(row));
  }
  return text;
}

nlohmann::ordered_json SizeJson(const pipeline::CapacityAnswer& answer,
                                const pipeline::PlanningProblem& problem, const SizeFlags& flags,
                                const std::string& algorithm, int max_microbatches) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const pipeline::CapacityRow& row : answer.rows) {
    nlohmann::ordered_json r = {
        {"devices", row.devices}, {"fits", row.fits}, {"meets_target", row.meets_target}};
    if (row.choice) {
      nlohmann::ordered_json rejected = nullptr;
      if (const auto& split = row.choice->plan.rejected_split) {
        rejected = {{"split_devices", split->devices}, {"split_step_time_us", split->step_time_us}};
      }
      r["microbatches"] = row.microbatches;
      r["step_time_us"] = row.step_time_us;
      r["time_per_sample_us"] = row.time_per_sample_us;
      r["samples_per_s"] = row.samples_per_s;
      r["peak_memory_bytes"] = row.peak_memory_bytes;
      r["memory_capacity_bytes"] = row.memory_capacity_bytes;
      r["split_predicted_slower"] = rejected;
      r["slower_than_devices"] =
          row.slower_than > 0 ? nlohmann::ordered_json(row.slower_than) : nullptr;
      r["error"] = nullptr;
    } else {
      for (const char* key : {"microbatches", "step_time_us", "time_per_sample_us", "samples_per_s",
                              "peak_memory_bytes", "memory_capacity_bytes",
                              "split_predicted_slower", "slower_than_devices"}) {
        r[key] = nullptr;
      }
      r["error"] = row.error;
    }
    rows.push_back(std::move(r));
  }
  const bool fits = answer.devices > 0 || answer.closest > 0;
  nlohmann::ordered_json result = {
      {"devices", answer.devices > 0 ? nlohmann::ordered_json(answer.devices) : nullptr},
      {"closest_devices", answer.closest > 0 ? nlohmann::ordered_json(answer.closest) : nullptr},
      {"memory_needed_bytes", fits ? nullptr : nlohmann::ordered_json(answer.memory_needed_bytes)},
      {"memory_needed_per_device_bytes",
       fits ? nullptr : nlohmann::ordered_json(answer.memory_needed_per_device_bytes)}};
  nlohmann::ordered_json target = {
      {"step_us", flags.target.step_us ? nlohmann::ordered_json(*flags.target.step_us) : nullptr},
      {"samples_per_s",
       flags.target.samples_per_s ? nlohmann::ordered_json(*flags.target.samples_per_s) : nullptr}};
  return {{"max_devices", flags.max_devices},
          {"device", DevicesText(problem.cluster)},
          {"cluster", flags.cluster ? nlohmann::ordered_json(*flags.cluster) : nullptr},
          {"mode", std::string(costmodel::StepModeName(problem.step.mode))},
          {"algorithm", algorithm},
          {"max_microbatches", max_microbatches},
          {"batch", answer.batch},
          {"target", target},
          {"rows", rows},
          {"answer", result}};
}

}  // namespace

int RunSizeCommand(const std::vector<std::string>& args) {
  std::vector<FlagSpec> specs = ProblemFlagSpecs(/*accept_cost_graph=*/false);
  for (const FlagSpec& s : SearchFlagSpecs()) {
    if (s.name != "microbatches") specs.push_back(s);
  }
  for (const char* name : {"max-devices", "target-step", "target-throughput", "format", "report"})
    specs.push_back({name, true});
  specs.push_back({"json", false});
  specs.push_back({"help", false});
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, specs);
  if (!parsed.ok()) return UsageError(parsed.status().message(), kUsage);
  if (parsed->Has("help")) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  absl::StatusOr<SizeFlags> flags = SizeFlagsFromArgs(*parsed);
  if (!flags.ok()) return UsageError(flags.status().message(), kUsage);
  absl::StatusOr<SearchFlags> search = SearchFlagsFromArgs(*parsed, /*always_auto=*/true);
  if (!search.ok()) return UsageError(search.status().message(), kUsage);
  // Device counts are planned side by side; the plans do not depend on the
  // threads.
  if (!parsed->Has("threads"))
    search->options.threads =
        static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
  const std::vector<std::string> algorithms = search::AlgorithmNames();
  if (std::find(algorithms.begin(), algorithms.end(), search->algorithm) == algorithms.end()) {
    return UsageError(absl::StrCat("--algo: unknown algorithm '", search->algorithm,
                                   "' (known: ", absl::StrJoin(algorithms, ", "), ")"),
                      kUsage);
  }
  absl::StatusOr<pipeline::ProblemRequest> request =
      ProblemRequestFromArgs(*parsed, /*accept_cost_graph=*/false);
  if (!request.ok()) return UsageError(request.status().message(), kUsage);
  if (flags->report) {
    // Before the sweep, which may take seconds.
    if (absl::Status s = CheckParentFolder(*flags->report); !s.ok()) return ReportError(s);
  }
  // Prepared for the largest count; each count plans on its first k devices
  // (pipeline/capacity.h, Note [Capacity sweep]).
  if (!request->cluster.cluster) request->cluster.devices = flags->max_devices;
  ProgressReporter progress(search->quiet);
  AttachProgress(progress, *request);
  absl::StatusOr<pipeline::PlanningProblem> problem = pipeline::PrepareProblem(*request);
  progress.Finish();
  if (!problem.ok()) return ReportError(problem.status());
  if (problem->model) PrintEstimates(problem->model->estimates);
  const pipeline::CapacityOptions options{
      .max_devices = flags->max_devices,
      .max_microbatches = *search->auto_microbatches,
      .algorithm = search->algorithm,
      .search = search->options,
      .policy = {.allow_slower_split = search->allow_slower_split},
      .target = flags->target,
      .on_count = progress.Task("device counts", ProgressUnit::kCount)};
  absl::StatusOr<pipeline::CapacityAnswer> answer = pipeline::PlanCapacity(*problem, options);
  progress.Finish();
  if (!answer.ok()) return ReportError(answer.status());
  const bool none_fits = answer->devices == 0 && answer->closest == 0;
  if (flags->json) {
    std::printf("%s\n",
                SizeJson(*answer, *problem, *flags, search->algorithm, *search->auto_microbatches)
                    .dump(2)
                    .c_str());
  } else {
    std::fputs(
        SizeTable(*answer, *problem, *flags, search->algorithm, *search->auto_microbatches).c_str(),
        stdout);
    if (!none_fits)
      std::fputs(AnswerText(*answer, flags->target, flags->max_devices).c_str(), stdout);
  }
  if (flags->report) {
    SizeReportInput report{
        .model = request->model_path,
        .devices = SweptDevicesText(*problem, *flags),
        .step = StepText(*answer, *problem, search->algorithm, *search->auto_microbatches),
        .target = TargetText(flags->target),
        .answer_line = none_fits
                           ? NoFitMessage(*answer, problem->cluster, flags->max_devices)
                           : std::string(absl::StripSuffix(
                                 AnswerText(*answer, flags->target, flags->max_devices), "\n")),
        .answer = &*answer,
        .cluster = &problem->cluster};
    for (const pipeline::CapacityRow& row : answer->rows) report.notes.push_back(Note(row));
    if (absl::Status s = WriteTextFile(*flags->report, RenderSizeReport(report)); !s.ok())
      return ReportError(s);
  }
  if (none_fits) {
    return ReportError(
        absl::ResourceExhaustedError(NoFitMessage(*answer, problem->cluster, flags->max_devices)));
  }
  return answer->devices > 0 ? kExitOk : kExitInfeasible;
}

}  // namespace autopar::tools
