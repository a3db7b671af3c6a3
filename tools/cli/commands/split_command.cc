#include "tools/cli/commands/split_command.h"

#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "onnx_io/deployment_writer.h"
#include "passes/partition.h"
#include "pipeline/split.h"
#include "tools/artifacts/dot_export.h"
#include "tools/artifacts/file_sha256.h"
#include "tools/artifacts/placement_file.h"
#include "tools/artifacts/plan_json.h"
#include "tools/artifacts/report_html.h"
#include "tools/artifacts/split_summary_json.h"
#include "tools/artifacts/training_json.h"
#include "tools/artifacts/triton/triton_repository.h"
#include "tools/cli/cli_output.h"
#include "tools/cli/commands/place_command.h"
#include "tools/cli/exit_codes.h"
#include "tools/cli/mode_flags.h"
#include "tools/cli/problem_flags.h"
#include "tools/cli/progress_reporter.h"
#include "tools/cli/search_flags.h"
#include "tools/cli/shape_flags.h"
#include "tools/cli/triton_flags.h"

namespace autopar::tools {
namespace {

constexpr char kUsage[] =
    R"(usage: onnx-autopar MODEL.onnx -o OUT_DIR [--devices N] [--device PRESET|FILE]
                    [--memory-per-device SIZE] [--cluster PRESET|FILE|cpu:KxT]
                    [--host-calibration FILE] [--node-times FILE]
                    [--algo NAME] [--seed N] [--time-budget 10s] [--max-generations N]
                    [--threads N] [--microbatches M|auto] [--max-microbatches K] [--timings]
                    [--mode inference|training] [--optimizer sgd|momentum|adam|adamw]
                    [--loss SPEC] [--labels NAME] [--learning-rate X] [--momentum X]
                    [--betas B1,B2] [--eps X] [--weight-decay X] [--freeze REGEX]
                    [--placement FILE] [--stages] [--triton] [--triton-gpus 0,1,...]
                    [--triton-max-batch N] [--no-report] [--force] [--quiet]
                    [--allow-slower-split]
                    [--json] [--dot FILE]
                    [--dim NAME=VALUE]... [--input-shape NAME=D,...]...
                    [--input-value NAME=V,...]... [--loop-trips N] [--strict-shapes]

Splits the model across devices: searches a placement (SGP unless --algo says
otherwise), rewrites the model into one ONNX model per device joined by
com.microsoft Send/Recv nodes, and writes them with plan.json into OUT_DIR.

  -o, --output DIR     the output folder; written atomically, refused if it
                       exists unless --force
  --stages             also write stages/s<k>.onnx: each device's work cut at
                       its cross-device dependencies into plain ONNX models
                       that stock runtimes run (tools/runner runs these)
  --triton             with --stages, also write OUT_DIR/triton/: a Triton
                       Inference Server model repository, one ONNX Runtime
                       model per stage on its device's GPU and an ensemble
                       named after the model file that wires them
                       (tritonserver --model-repository=OUT_DIR/triton)
  --triton-gpus LIST   the GPU of each device, e.g. 0,1,2,3: device k runs on
                       the k-th listed GPU (default: device k on GPU k)
  --triton-max-batch N when dim 0 of every stage's inputs and outputs is one
                       symbolic dim (a batch kept by the split), the configs
                       say max_batch_size: N without that dim and the stages
                       use dynamic_batching (default 8; 0: never batch)
  --no-report          do not write report.html (the simulated step's
                       timeline, device load and memory, cut edges, the
                       micro-batch curve with --microbatches auto)
  --json               print one JSON summary object on stdout (out_dir,
                       algorithm, step time, memory per device, files...)
                       instead of the human summary
  --dot FILE           also write the placed graph as GraphViz: units
                       coloured by device, cut edges bold with their bytes
                       (`dot -Tsvg FILE -o plan.svg` draws it)
  --quiet              no progress bars (they show only on a terminal)
  --placement FILE     use this placement instead of searching: a plan.json
                       (its node_to_device) or a JSON object node -> device;
                       a training step's is judged as its pipeline, as a
                       searched one
  --algo NAME          the placement search: sgp (default), tga, m-etf, m-sct,
                       m-topo, heft, cpop, pipeline-dp, round-robin, single
                       (see `onnx-autopar place --help`)
  --max-generations N  stop TGA after N generations; without --time-budget
                       there is then no time limit, so the plan is the same
                       on every run and machine
  --allow-slower-split keep the searched split even when the whole model on
                       one device (that fits) is predicted faster; without
                       it that one device is written and the summary says
                       so (plan.json: "split_predicted_slower")
  --microbatches auto  choose the micro-batch count in 1..K
                       (--max-microbatches K, default 32) with the placement,
                       by time per sample; the summary shows the curve,
                       plan.json keeps "microbatches" (the chosen count) and
                       adds "microbatches_search" {chosen, max, batch, tried},
                       report.html draws the curve (time per sample and
                       peak memory per device against M) and its table
  --timings            also write the measured search time (plan.json's
                       "search_time_ms", the report's summary)

Training (--mode training): instead of the forward models, writes the
training step as standard ONNX models that any runtime runs:
step/init.onnx (the trained weights' initial values), step/gradient.onnx
(forward, loss and backward pass: the loss and one gradient per trained
weight) and step/update.onnx (the optimizer). Over several devices it also
writes the step's split: stages/s<k>.onnx, forward and backward stages (each
backward node on its forward node's device), and step/update_d<k>.onnx, one
update model per device; plan.json's "training"."pipeline" says what runs
where and in which order. node tools/runner/train.mjs OUT_DIR trains with
them (split or not).
  --loss SPEC          output:NAME (a scalar output is the loss),
                       cross-entropy:LOGITS (torch's CrossEntropyLoss, mean;
                       adds an int64 input 'labels') or mse:OUTPUT (MSELoss,
                       mean; adds an input 'target'); required
  --labels NAME        the name of the input cross-entropy or mse adds
  --optimizer NAME     sgd, momentum, adam (default) or adamw, as torch.optim
  --learning-rate X    default 0.01 (sgd, momentum), 0.001 (adam, adamw)
  --momentum X         momentum's μ, default 0.9
  --betas B1,B2        adam's and adamw's, default 0.9,0.999
  --eps X              adam's and adamw's ε, default 1e-8
  --weight-decay X     L2 (sgd, momentum, adam) or decoupled (adamw, default
                       0.01); default 0
  --freeze REGEX       do not train initializers whose names match
  --schedule NAME      a split step's pipeline schedule: 1f1b (default;
                       PipeDream-flush: device i holds at most S - i
                       micro-batches' activations) or gpipe (all forwards,
                       then all backwards)

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

// The graph inputs whose contents --input-value gives.
std::set<std::string> GivenInputs(const pipeline::SplitRequest& request) {
  std::set<std::string> names;
  for (const auto& [name, values] : request.problem.shapes.input_values) names.insert(name);
  return names;
}

// "1 stage", "4 stages".
std::string Counted(size_t n, const char* noun) {
  return absl::StrCat(n, " ", noun, n == 1 ? "" : "s");
}

// "2 device models (6 of 8 devices unused)", or "2 device models" when every
// device holds something.
std::string DeviceModelsText(const passes::Deployment& deployment) {
  const int used = passes::CountUsedDevices(deployment);
  const auto all = static_cast<int>(deployment.devices.size());
  std::string text = Counted(used, "device model");
  if (used < all) absl::StrAppend(&text, " (", all - used, " of ", all, " devices unused)");
  return text;
}

std::string Summary(const std::string& out_dir, const pipeline::SplitResult& result, bool report,
                    int plan_microbatches, const TritonRepository* triton_repo) {
  const pipeline::PlanningProblem& problem = result.problem;
  const pipeline::Plan& plan = result.plan;
  const costmodel::SimulationResult& sim = plan.simulation;
  const passes::Deployment& deployment = result.deployment;
  const costmodel::Cluster& cluster = problem.cluster;
  std::string text;
  absl::StrAppendFormat(
      &text, "wrote %s: %s%s, plan.json%s%s\n", out_dir, DeviceModelsText(deployment),
      deployment.stages.empty() ? ""
                                : absl::StrCat(", ", Counted(deployment.stages.size(), "stage")),
      report ? ", report.html" : "",
      triton_repo == nullptr
          ? ""
          : absl::StrCat(", triton/ (ensemble '", triton_repo->models.back().config.name(), "' of ",
                         Counted(triton_repo->models.size() - 1, "stage model"), ")"));
  absl::StrAppendFormat(&text, "placement  %s (%.1f ms search), %u nodes in %u units\n",
                        plan.algorithm, plan.search_time_ms, problem.model->graph.num_nodes(),
                        problem.units().num_units());
  absl::StrAppendFormat(
      &text, "predicted  %.1f us per step (lower bound %.1f us; %.2fx over one device)\n",
      sim.step_time_us, plan.lower_bound.bound_us,
      sim.step_time_us > 0 ? plan.single_device_step_us / sim.step_time_us : 0.0);
  if (plan.rejected_split)
    absl::StrAppendFormat(&text, "verdict    %s\n", OneDeviceVerdict(problem, plan));
  absl::StrAppendFormat(&text, "transfers  %d tensors, %s\n", deployment.transfers.size(),
                        FormatBytes(sim.comm_bytes));
  if (problem.model) {
    // Whether the written models serve other values of the bound symbols
    // (passes/symbolic_dims.h).
    const nlohmann::ordered_json sym = SymbolicDimsJson(problem.model->graph, deployment);
    if (!sym.is_null()) {
      std::vector<std::string> bound;
      for (const auto& [name, value] : sym["symbols"].items())
        bound.push_back(absl::StrCat(name, " (planned at ", value.get<int64_t>(), ")"));
      const nlohmann::ordered_json& unnamed = sym["unnamed"];
      absl::StrAppendFormat(
          &text, "symbolic   %s kept in the written models%s\n", absl::StrJoin(bound, ", "),
          unnamed.empty() ? "; every boundary tensor derived from it keeps its name"
                          : absl::StrCat("; ", unnamed.size(),
                                         " boundary dim(s) derived from it have no name "
                                         "(written without a value; plan.json "
                                         "symbolic_dims.unnamed)"));
      for (size_t i = 0; i < unnamed.size() && i < 3; ++i) {
        absl::StrAppendFormat(&text, "           %s dim %d (planned %d): %s\n",
                              unnamed[i]["tensor"].get<std::string>(), unnamed[i]["dim"].get<int>(),
                              unnamed[i]["planned"].get<int64_t>(),
                              unnamed[i]["why"].get<std::string>());
      }
    }
  }
  if (triton_repo != nullptr) {
    if (triton_repo->max_batch_size > 0) {
      absl::StrAppendFormat(&text,
                            "triton     max_batch_size %d over '%s', dynamic batching on every "
                            "stage model\n",
                            triton_repo->max_batch_size, triton_repo->batch_dim);
    } else {
      absl::StrAppendFormat(&text, "triton     max_batch_size 0 (no batching): %s\n",
                            triton_repo->unbatched_reason);
    }
  }
  absl::StrAppendFormat(
      &text, "step       %d micro-batch%s of the model as given; node times: %s\n",
      plan_microbatches, plan_microbatches == 1 ? "" : "es", CostSourceText(problem.cost_source));
  if (cluster.host) {
    // The alternative a user would pick: no split, all the threads on one
    // device (costmodel/host_cpu.h).
    const double all_threads_us = cluster.host->AllThreadsStepUs(plan.single_device_step_us);
    if (all_threads_us < sim.step_time_us) {
      absl::StrAppendFormat(
          &text,
          "note       one device with all %d threads is predicted faster than this split: %.1f us "
          "per step (the split is written anyway)\n",
          cluster.host->devices * cluster.host->threads_per_device, all_threads_us);
    }
  }
  std::vector<std::string> unused;
  for (int d = 0; d < cluster.num_devices(); ++d) {
    const passes::DeviceModel& model = deployment.devices[d];
    if (model.unused) {
      unused.push_back(cluster.device(d).name);
      continue;
    }
    absl::StrAppendFormat(&text, "  %-14s %-10s %6d nodes %4d sends %4d recvs  peak %s of %s\n",
                          model.file, cluster.device(d).name, model.num_nodes, model.num_sends,
                          model.num_recvs, FormatBytes(sim.devices[d].peak_memory_bytes),
                          FormatBytes(cluster.device(d).memory_bytes));
  }
  if (!unused.empty()) {
    absl::StrAppendFormat(&text, "  %-14s %s (the placement puts nothing there; no model)\n",
                          "unused", absl::StrJoin(unused, ", "));
  }
  return text;
}

// The summary of a training step's models.
std::string TrainingSummary(const std::string& out_dir, const pipeline::SplitResult& result,
                            const training::TrainingOptions& options, bool report) {
  const training::TrainingStep& step = *result.training_step;
  const pipeline::Plan& plan = result.plan;
  auto cluster_name = [&result](int32_t d) { return result.problem.cluster.device(d).name; };
  std::string text;
  absl::StrAppendFormat(&text, "wrote %s: training step (%s, %s, %s), plan.json%s\n", out_dir,
                        kInitModelPath, kGradientModelPath, kUpdateModelPath,
                        report ? ", report.html" : "");
  std::string loss = absl::StrCat("loss       ", training::LossSpecText(options.loss));
  if (!step.loss_input.empty()) absl::StrAppend(&loss, " against input '", step.loss_input, "'");
  absl::StrAppendFormat(&text, "%s; optimizer %s, learning rate %g\n", loss,
                        std::string(costmodel::OptimizerName(options.optimizer.kind)),
                        options.optimizer.learning_rate);
  int64_t bytes = 0;
  for (const training::TrainedWeight& w : step.weights) bytes += w.bytes;
  absl::StrAppendFormat(&text, "weights    %d trained (%s), %d frozen\n", step.weights.size(),
                        FormatBytes(bytes), step.frozen.size());
  const int64_t all_nodes = step.gradient_model.graph().node_size();
  absl::StrAppendFormat(
      &text,
      "gradient   %d forward nodes, %d backward nodes written (%d forward nodes differentiated)\n",
      all_nodes - step.backward_nodes, step.backward_nodes, step.differentiated_nodes);
  if (result.training_split) {
    const pipeline::SplitTrainingStep& split = *result.training_split;
    const costmodel::PipelineStepResult& p = split.predicted;
    int forward = 0;
    for (const pipeline::TrainingStage& t : split.stages)
      forward += t.kind == costmodel::StageKind::kForward ? 1 : 0;
    absl::StrAppendFormat(
        &text,
        "pipeline   %s, %d micro-batches, %d devices: %d forward and %d backward stages "
        "(stages/), %d update models\n",
        std::string(costmodel::PipelineScheduleName(split.schedule)), split.microbatches,
        split.devices.size(), forward, split.stages.size() - forward, split.updates.size());
    for (int32_t d : split.devices) {
      absl::StrAppendFormat(&text, "  %-10s peak %s of %s, at most %d micro-batch%s stashed\n",
                            cluster_name(d), FormatBytes(p.peak_memory_bytes[d]),
                            FormatBytes(result.problem.cluster.device(d).memory_bytes),
                            p.max_stashes[d], p.max_stashes[d] == 1 ? "" : "es");
    }
    absl::StrAppendFormat(&text, "predicted  %.1f us per step (%d micro-batches); node times: %s\n",
                          p.step_us, split.microbatches,
                          CostSourceText(result.problem.cost_source));
  } else if (const std::optional<costmodel::TrainingStepTimes>& m = result.measured_step) {
    absl::StrAppendFormat(&text,
                          "predicted  %.1f us per step: %d x (gradient model %.1f + run %.1f + "
                          "gradient sum %.1f us) + gradient mean %.1f + update model %.1f + run "
                          "%.1f us; node times: the step's models, measured\n",
                          m->step_us, m->microbatches, m->gradient_nodes_us, m->gradient_run_us,
                          m->gradient_sum_us, m->gradient_mean_us, m->update_nodes_us,
                          m->update_run_us);
  } else {
    absl::StrAppendFormat(
        &text, "predicted  %.1f us per step (forward, backward, update); node times: %s\n",
        plan.simulation.step_time_us, CostSourceText(result.problem.cost_source));
  }
  absl::StrAppendFormat(&text, "train      node tools/runner/train.mjs %s --steps 10\n", out_dir);
  return text;
}

}  // namespace

int RunSplitCommand(const std::vector<std::string>& args) {
  std::vector<FlagSpec> specs = ProblemFlagSpecs(/*accept_cost_graph=*/false);
  for (const FlagSpec& s : SearchFlagSpecs()) specs.push_back(s);
  for (const FlagSpec& s : TritonFlagSpecs()) specs.push_back(s);
  for (const FlagSpec& s : TrainingFlagSpecs()) specs.push_back(s);
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
  absl::StatusOr<pipeline::ProblemRequest> problem_request =
      ProblemRequestFromArgs(*parsed, /*accept_cost_graph=*/false);
  if (!problem_request.ok()) return UsageError(problem_request.status().message(), kUsage);
  absl::StatusOr<TritonFlags> triton_flags = TritonFlagsFromArgs(*parsed);
  if (!triton_flags.ok()) return UsageError(triton_flags.status().message(), kUsage);
  if (!triton_flags->gpus.empty()) {
    // The device count is known before the search (a model brings no cluster
    // of its own); a cluster that cannot be made is reported by the split.
    absl::StatusOr<costmodel::Cluster> cluster =
        pipeline::ResolveCluster(problem_request->cluster, std::nullopt);
    if (cluster.ok()) {
      if (absl::Status s = CheckTritonGpus(*triton_flags, cluster->num_devices()); !s.ok())
        return UsageError(s.message(), kUsage);
    }
  }
  absl::StatusOr<std::optional<training::TrainingOptions>> training =
      TrainingOptionsFromArgs(*parsed, problem_request->step);
  if (!training.ok()) return UsageError(training.status().message(), kUsage);
  absl::StatusOr<costmodel::PipelineSchedule> schedule = PipelineScheduleFromArgs(*parsed);
  if (!schedule.ok()) return UsageError(schedule.status().message(), kUsage);
  if (*training && (parsed->Has("stages") || triton_flags->write)) {
    return UsageError(
        "--stages and --triton split the forward pass; a training step is written "
        "as step models, and over several devices as its stages (--mode training)",
        kUsage);
  }
  pipeline::SplitRequest request{.problem = *std::move(problem_request),
                                 .algorithm = search->algorithm,
                                 .search = search->options,
                                 .policy = {.allow_slower_split = search->allow_slower_split},
                                 .auto_microbatches = search->auto_microbatches,
                                 .partition = {.stages = parsed->Has("stages")},
                                 .training = *std::move(training),
                                 .schedule = *schedule};
  if (parsed->Has("placement") && search->auto_microbatches) {
    return UsageError(
        "--microbatches auto chooses the count with a searched placement; give --placement a "
        "fixed --microbatches M",
        kUsage);
  }
  if (std::optional<std::string> file = parsed->Get("placement")) {
    absl::StatusOr<pipeline::NamedPlacement> given = ReadPlacementFile(*file);
    if (!given.ok()) return ReportError(given.status());
    request.given_placement = *std::move(given);
  }
  const std::string& model_path = request.problem.model_path;
  ProgressReporter progress(search->quiet);
  AttachProgress(progress, request.problem);
  // The search's progress bar starts when the search does; the loading and
  // coarsening bars end there.
  request.problem.on_phase = [&progress](std::string_view phase) {
    if (phase.starts_with("placement")) progress.Finish();
  };
  request.search.on_progress = progress.Callback(search->options.time_budget_s);
  absl::StatusOr<pipeline::SplitResult> result = pipeline::Split(request);
  progress.Finish();
  if (!result.ok()) return ReportError(result.status());
  for (const std::string& warning : result->warnings)
    std::fprintf(stderr, "onnx-autopar: warning: %s\n", warning.c_str());
  const pipeline::PlanningProblem& problem = result->problem;
  if (problem.model) PrintEstimates(problem.model->estimates);
  const pipeline::Plan& plan = result->plan;
  absl::StatusOr<std::string> sha256 = Sha256OfFile(model_path);
  if (!sha256.ok()) return ReportError(sha256.status());

  // Wall-clock time only on request: out_dir is deterministic otherwise.
  const std::optional<double> search_time_ms =
      parsed->Has("timings") ? std::optional<double>(plan.search_time_ms) : std::nullopt;
  const PlanRecord record{
      .source_path = model_path,
      .source_sha256 = *sha256,
      .algorithm = plan.algorithm,
      .seed = search->options.seed,
      .search_time_ms = search_time_ms,
      .microbatches = plan.microbatches,
      .cost_source = problem.cost_source,
      .step = problem.step,
      .cluster = &problem.cluster,
      .graph = &problem.model->graph,
      .node_device = plan.node_placement.device,
      .node_costs = problem.nodes->costs,
      .deployment = &result->deployment,
      .simulation = &plan.simulation,
      .lower_bound_us = plan.lower_bound.bound_us,
      .single_device_step_us =
          result->measured_step ? result->measured_step->step_us : plan.single_device_step_us,
      .estimates = problem.model->estimates,
      .training_step = result->training_step ? &*result->training_step : nullptr,
      .training_options = request.training ? &*request.training : nullptr,
      .training_split = result->training_split ? &*result->training_split : nullptr,
      .measured_step = result->measured_step ? &*result->measured_step : nullptr,
      .slower_split =
          plan.rejected_split
              ? std::optional<PlanRecord::SlowerSplit>(
                    {.devices = plan.rejected_split->devices,
                     .step_time_us = plan.rejected_split->step_time_us,
                     .device = problem.cluster.device(plan.rejected_split->device).name})
              : std::nullopt};
  onnx_io::DeploymentFiles files = passes::DeploymentFilesOf(result->deployment);
  if (result->training_step) {
    files.models.push_back({kInitModelPath, &result->training_step->init_model});
    files.models.push_back({kGradientModelPath, &result->training_step->gradient_model});
    files.models.push_back({kUpdateModelPath, &result->training_step->update.proto});
  }
  if (result->training_split) {
    for (const pipeline::TrainingStage& t : result->training_split->stages)
      files.models.push_back({t.stage.file, &t.stage.proto});
    for (const pipeline::DeviceUpdate& u : result->training_split->updates)
      files.models.push_back({u.file, &u.proto});
  }
  nlohmann::ordered_json plan_json = PlanJson(record);
  // "microbatches" stays the count the runner reads; the curve beside it.
  if (result->microbatches)
    plan_json["microbatches_search"] = MicrobatchCurveJson(*result->microbatches);
  files.extra_files["plan.json"] = plan_json.dump(2) + "\n";
  std::optional<TritonRepository> triton_repository;
  if (triton_flags->write) {
    if (absl::Status s = CheckTritonGpus(*triton_flags, problem.cluster.num_devices()); !s.ok())
      return UsageError(s.message(), kUsage);
    const std::string stem = std::filesystem::path(model_path).stem().string();
    absl::StatusOr<TritonRepository> repository =
        BuildTritonRepository(result->deployment, {.model_name = TritonModelName(stem),
                                                   .gpus = triton_flags->gpus,
                                                   .graph = &problem.model->graph,
                                                   .given_inputs = GivenInputs(request),
                                                   .max_batch_size = triton_flags->max_batch_size});
    if (!repository.ok()) {
      return ReportError(absl::Status(
          repository.status().code(),
          absl::StrCat("cannot write the Triton repository: ", repository.status().message())));
    }
    triton_repository = *std::move(repository);
    AddTritonRepositoryFiles(*triton_repository, "triton", files);
  }
  const bool report = !parsed->Has("no-report");
  if (report) {
    files.extra_files["report.html"] = RenderReport(
        {.model = model_path,
         .algorithm = plan.algorithm,
         .search_time_ms = search_time_ms,
         .microbatches = plan.microbatches,
         .cost_source = problem.cost_source,
         .lower_bound_us = plan.lower_bound.bound_us,
         .single_device_step_us = plan.single_device_step_us,
         .cluster = &problem.cluster,
         .graph = &problem.node_graph(),
         .unit_costs = problem.nodes->costs,
         .simulation = &plan.simulation,
         .transfers = result->deployment.transfers,
         .convergence = plan.progress,
         .training_split = result->training_split ? &*result->training_split : nullptr,
         .microbatch_search = result->microbatches ? &*result->microbatches : nullptr});
  }
  absl::Status written = onnx_io::WriteDeployment(
      *out_dir, problem.model->model, files,
      {.force = force, .on_progress = progress.Task("writing weights", ProgressUnit::kBytes)});
  progress.Finish();
  if (!written.ok()) return ReportError(written);
  if (std::optional<std::string> dot_path = parsed->Get("dot")) {
    // The graph the search placed; a given placement is drawn node by node.
    absl::StatusOr<std::string> dot =
        plan.unit_placement.device.empty()
            ? PlacementToDot(problem.node_graph(), plan.node_placement.device,
                             DeviceNames(problem.cluster))
            : PlacementToDot(problem.units(), plan.unit_placement.device,
                             DeviceNames(problem.cluster));
    if (!dot.ok()) return ReportError(dot.status());
    if (absl::Status s = WriteTextFile(*dot_path, *dot); !s.ok()) return ReportError(s);
  }
  if (parsed->Has("json")) {
    absl::StatusOr<std::vector<std::string>> listed = ListFiles(*out_dir);
    if (!listed.ok()) return ReportError(listed.status());
    PlanRecord timed = record;
    timed.search_time_ms = plan.search_time_ms;
    nlohmann::ordered_json summary = SplitSummaryJson(timed, *out_dir, *listed);
    if (result->microbatches)
      summary["microbatches_search"] = MicrobatchCurveJson(*result->microbatches);
    if (triton_repository) {
      // Whether the repository batches, and if not, why.
      summary["triton"] = {
          {"max_batch_size", triton_repository->max_batch_size},
          {"batch_dim", triton_repository->max_batch_size > 0
                            ? nlohmann::ordered_json(triton_repository->batch_dim)
                            : nlohmann::ordered_json()},
          {"unbatched_reason", triton_repository->max_batch_size > 0
                                   ? nlohmann::ordered_json()
                                   : nlohmann::ordered_json(triton_repository->unbatched_reason)}};
    }
    std::printf("%s\n", summary.dump(2).c_str());
    return kExitOk;
  }
  const std::string summary = result->training_step
                                  ? TrainingSummary(*out_dir, *result, *request.training, report)
                                  : Summary(*out_dir, *result, report, plan.microbatches,
                                            triton_repository ? &*triton_repository : nullptr);
  std::fputs(summary.c_str(), stdout);
  if (result->microbatches) std::fputs(MicrobatchCurveText(*result->microbatches).c_str(), stdout);
  return kExitOk;
}

}  // namespace autopar::tools
