#include "tools/cli/mode_flags.h"

#include <cmath>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace autopar::tools {

std::vector<FlagSpec> ModeFlagSpecs() { return {{"mode", true}, {"optimizer", true}}; }

absl::StatusOr<costmodel::StepOptions> StepOptionsFromArgs(const ParsedArgs& args) {
  costmodel::StepOptions step;
  if (std::optional<std::string> mode = args.Get("mode")) {
    std::optional<costmodel::StepMode> parsed = costmodel::StepModeFromName(*mode);
    if (!parsed) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mode must be inference or training, not '", *mode, "'"));
    }
    step.mode = *parsed;
  }
  if (std::optional<std::string> optimizer = args.Get("optimizer")) {
    if (step.mode != costmodel::StepMode::kTraining) {
      return absl::InvalidArgumentError("--optimizer applies to --mode training only");
    }
    std::optional<costmodel::Optimizer> parsed = costmodel::OptimizerFromName(*optimizer);
    if (!parsed) {
      return absl::InvalidArgumentError(
          absl::StrCat("--optimizer must be sgd, momentum, adam or adamw, not '", *optimizer, "'"));
    }
    step.optimizer = *parsed;
  }
  return step;
}

std::vector<FlagSpec> TrainingFlagSpecs() {
  return {{"loss", true},         {"labels", true}, {"learning-rate", true},
          {"momentum", true},     {"betas", true},  {"eps", true},
          {"weight-decay", true}, {"freeze", true}, {"schedule", true}};
}

absl::StatusOr<costmodel::PipelineSchedule> PipelineScheduleFromArgs(const ParsedArgs& args) {
  std::optional<std::string> text = args.Get("schedule");
  if (!text) return costmodel::PipelineSchedule::k1F1B;
  std::optional<costmodel::PipelineSchedule> schedule = costmodel::ParsePipelineSchedule(*text);
  if (!schedule) {
    return absl::InvalidArgumentError(
        absl::StrCat("--schedule must be gpipe or 1f1b, not '", *text, "'"));
  }
  return *schedule;
}

namespace {

// `--flag X` as a finite number in [low, high), into `out` when given.
absl::Status ReadNumber(const ParsedArgs& args, std::string_view flag, double low, double high,
                        double& out) {
  std::optional<std::string> text = args.Get(flag);
  if (!text) return absl::OkStatus();
  double v = 0;
  if (!absl::SimpleAtod(*text, &v) || !std::isfinite(v) || v < low || v >= high) {
    return absl::InvalidArgumentError(absl::StrCat("--", std::string(flag),
                                                   " must be a number in [", low, ", ", high,
                                                   "), not '", *text, "'"));
  }
  out = v;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<training::TrainingOptions>> TrainingOptionsFromArgs(
    const ParsedArgs& args, const costmodel::StepOptions& step) {
  if (step.mode != costmodel::StepMode::kTraining) {
    for (const FlagSpec& spec : TrainingFlagSpecs()) {
      if (args.Has(spec.name)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", spec.name, " applies to --mode training only"));
      }
    }
    return std::nullopt;
  }
  std::optional<std::string> loss_text = args.Get("loss");
  if (!loss_text) {
    return absl::InvalidArgumentError(
        "--mode training needs --loss output:NAME, cross-entropy:LOGITS or mse:OUTPUT");
  }
  training::TrainingOptions options;
  absl::StatusOr<training::LossSpec> loss = training::ParseLossSpec(*loss_text);
  if (!loss.ok()) return loss.status();
  options.loss = *std::move(loss);
  if (std::optional<std::string> labels = args.Get("labels")) {
    if (options.loss.kind == training::LossKind::kOutput || labels->empty()) {
      return absl::InvalidArgumentError(
          "--labels names the input of --loss cross-entropy or mse (not empty)");
    }
    options.loss.labels_name = *labels;
  }
  training::OptimizerOptions& o = options.optimizer;
  o = training::DefaultOptimizerOptions(step.optimizer);
  constexpr double kHuge = 1e30;
  for (absl::Status s :
       {ReadNumber(args, "learning-rate", 0, kHuge, o.learning_rate),
        ReadNumber(args, "momentum", 0, 1, o.momentum), ReadNumber(args, "eps", 0, 1, o.eps),
        ReadNumber(args, "weight-decay", 0, kHuge, o.weight_decay)}) {
    if (!s.ok()) return s;
  }
  if (args.Has("momentum") && step.optimizer != costmodel::Optimizer::kMomentum) {
    return absl::InvalidArgumentError("--momentum applies to --optimizer momentum only");
  }
  if (std::optional<std::string> betas = args.Get("betas")) {
    std::vector<std::string> parts = absl::StrSplit(*betas, ',');
    double b1 = 0, b2 = 0;
    if (parts.size() != 2 || !absl::SimpleAtod(parts[0], &b1) || !absl::SimpleAtod(parts[1], &b2) ||
        !(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--betas must be two numbers in [0, 1) as B1,B2, not '", *betas, "'"));
    }
    if (step.optimizer != costmodel::Optimizer::kAdam &&
        step.optimizer != costmodel::Optimizer::kAdamW) {
      return absl::InvalidArgumentError("--betas applies to --optimizer adam or adamw only");
    }
    o.beta1 = b1;
    o.beta2 = b2;
  }
  if (std::optional<std::string> freeze = args.Get("freeze")) options.freeze = *freeze;
  return options;
}

absl::StatusOr<std::optional<PipelinedTraining>> PipelinedTrainingFromArgs(
    const ParsedArgs& args, const costmodel::StepOptions& step) {
  if (step.mode == costmodel::StepMode::kTraining && !args.Has("loss")) {
    for (const FlagSpec& spec : TrainingFlagSpecs()) {
      if (args.Has(spec.name)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", spec.name,
            " needs --loss: without it a training step is judged fused, not as a pipeline"));
      }
    }
    return std::nullopt;
  }
  absl::StatusOr<std::optional<training::TrainingOptions>> options =
      TrainingOptionsFromArgs(args, step);
  if (!options.ok()) return options.status();
  if (!*options) return std::nullopt;
  absl::StatusOr<costmodel::PipelineSchedule> schedule = PipelineScheduleFromArgs(args);
  if (!schedule.ok()) return schedule.status();
  return PipelinedTraining{.options = **std::move(options), .schedule = *schedule};
}

std::string StepDescription(const costmodel::StepOptions& step) {
  if (step.mode == costmodel::StepMode::kInference) return "inference";
  return absl::StrCat("training (", std::string(costmodel::OptimizerName(step.optimizer)), ")");
}

}  // namespace autopar::tools
