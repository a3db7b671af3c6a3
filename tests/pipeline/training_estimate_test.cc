// The fast training estimate (pipeline/training_estimate.h) against
// SplitTraining's prediction for the same placement, on exported CNN,
// transformer and recurrent models placed by round-robin (cuts everywhere)
// and SGP: within 25% of SplitTraining's step, and much faster (both times
// are printed; the speed is not asserted). The estimator is made once per
// problem (StepTimesBySourceNode builds the gradient model's costs once) and
// then judges placements without writing a model.
#include "pipeline/training_estimate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "onnx_io/model.h"
#include "pipeline/split.h"

namespace autopar::pipeline {
namespace {

namespace fs = std::filesystem;

struct Case {
  const char* model;
  const char* algorithm;
  costmodel::PipelineSchedule schedule;
};

class TrainingEstimateTest : public ::testing::TestWithParam<Case> {};

TEST_P(TrainingEstimateTest, WithinAQuarterOfTheSplitStep) {
  const Case& c = GetParam();
  const fs::path path = fs::path(AUTOPAR_MODELS_DIR) / (std::string(c.model) + ".onnx");
  ASSERT_TRUE(fs::exists(path)) << path << ": run tools/export_models.py";
  absl::StatusOr<onnx_io::Model> source = onnx_io::LoadModel(path);
  ASSERT_TRUE(source.ok()) << source.status();

  SplitRequest request;
  request.problem.model_path = path.string();
  request.problem.cluster.cluster = "cpu:2x1";
  request.problem.step.mode = costmodel::StepMode::kTraining;
  request.problem.step.optimizer = costmodel::Optimizer::kMomentum;
  request.algorithm = c.algorithm;
  request.search.microbatches = 8;
  request.policy.allow_slower_split = true;
  request.partition.stages = false;
  training::TrainingOptions options;
  options.loss = {.kind = training::LossKind::kMse,
                  .value = source->proto.graph().output(0).name(),
                  .labels_name = ""};
  options.optimizer = training::DefaultOptimizerOptions(costmodel::Optimizer::kMomentum);
  request.training = options;
  request.schedule = c.schedule;
  absl::StatusOr<SplitResult> result = Split(request);
  ASSERT_TRUE(result.ok()) << result.status();
  if (!result->training_split) GTEST_SKIP() << c.algorithm << " kept one device";
  const PlanningProblem& problem = result->problem;
  const std::vector<int32_t>& placement = result->plan.node_placement.device;

  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  absl::StatusOr<SplitTrainingStep> split =
      SplitTraining(*result->training_step, problem.model->graph, placement, problem.cluster,
                    problem.model->model.directory().string(),
                    {.schedule = c.schedule,
                     .microbatches = 8,
                     .node_times = nullptr,
                     .optimizer = options.optimizer});
  const double split_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  ASSERT_TRUE(split.ok()) << split.status();

  t0 = Clock::now();
  absl::StatusOr<SourceNodeTimes> times =
      StepTimesBySourceNode(*result->training_step, problem.model->graph, problem.cluster,
                            problem.model->model.directory().string(), nullptr);
  ASSERT_TRUE(times.ok()) << times.status();
  absl::StatusOr<TrainingStepEstimator> estimator =
      TrainingStepEstimator::Create(problem, {.schedule = c.schedule, .microbatches = 8}, &*times);
  ASSERT_TRUE(estimator.ok()) << estimator.status();
  const double create_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  // The fastest of a few runs: the machine may be shared.
  absl::StatusOr<costmodel::PipelineStepResult> estimate = absl::UnknownError("not run");
  double estimate_ms = 1e9;
  for (int run = 0; run < 5; ++run) {
    t0 = Clock::now();
    estimate = estimator->Estimate(placement);
    estimate_ms =
        std::min(estimate_ms, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    ASSERT_TRUE(estimate.ok()) << estimate.status();
  }

  const double want = split->predicted.step_us;
  const double got = estimate->step_us;
  std::printf(
      "%s %s %s: split %zu stages, %.0f us in %.1f ms; estimate %.0f us (%+.1f%%) in %.2f ms "
      "(+%.2f ms once)\n",
      c.model, c.algorithm, std::string(costmodel::PipelineScheduleName(c.schedule)).c_str(),
      split->stages.size(), want, split_ms, got, 100 * (got - want) / want, estimate_ms, create_ms);
  EXPECT_LE(std::abs(got - want), 0.25 * want);

  // The runner's gradient sums of a step measurement: every trained weight's
  // share is work after a backward stage, every share of the means is update
  // time; the step grows.
  SourceNodeTimes summing = *times;
  summing.gradient_sum_us = 10000;
  summing.gradient_mean_us = 4000;
  absl::StatusOr<TrainingStepEstimator> with_sums =
      TrainingStepEstimator::Create(problem, {.schedule = c.schedule, .microbatches = 8}, &summing);
  ASSERT_TRUE(with_sums.ok()) << with_sums.status();
  absl::StatusOr<costmodel::PipelineStepProblem> plain = estimator->BuildProblem(placement);
  absl::StatusOr<costmodel::PipelineStepProblem> summed = with_sums->BuildProblem(placement);
  ASSERT_TRUE(plain.ok() && summed.ok());
  double after_us = 0, update_us = 0;
  for (const costmodel::PipelineStage& stage : summed->stages) {
    if (stage.after_us > 0) {
      EXPECT_EQ(stage.kind, costmodel::StageKind::kBackward);
    }
    after_us += stage.after_us;
  }
  for (size_t d = 0; d < summed->update_us.size(); ++d)
    update_us += summed->update_us[d] - plain->update_us[d];
  EXPECT_NEAR(after_us, 10000, 1e-6);
  EXPECT_NEAR(update_us, 4000, 1e-6);
  EXPECT_GT(with_sums->StepUs(placement), got);
}

INSTANTIATE_TEST_SUITE_P(
    Models, TrainingEstimateTest,
    ::testing::Values(Case{"resnet18", "round-robin", costmodel::PipelineSchedule::k1F1B},
                      Case{"resnet18", "sgp", costmodel::PipelineSchedule::k1F1B},
                      Case{"resnet18", "sgp", costmodel::PipelineSchedule::kGPipe},
                      Case{"transformer_encoder", "round-robin",
                           costmodel::PipelineSchedule::k1F1B},
                      Case{"transformer_encoder", "sgp", costmodel::PipelineSchedule::k1F1B},
                      Case{"lstm", "round-robin", costmodel::PipelineSchedule::kGPipe},
                      Case{"lstm", "sgp", costmodel::PipelineSchedule::k1F1B}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string name = std::string(info.param.model) + "_" + info.param.algorithm + "_" +
                         std::string(costmodel::PipelineScheduleName(info.param.schedule));
      for (char& ch : name)
        if (ch == '-') ch = '_';
      return name;
    });

// Note [Training judge]: Split's training request over two devices judges the
// searched placement by the estimate — the plan's step is it, the one-device
// baseline is judged the same way, and a split predicted slower gives way to
// one device — and SplitTraining's prediction of the written plan agrees.
TEST(TrainingJudgeTest, PlanStepIsThePipelinedEstimate) {
  const fs::path path = fs::path(AUTOPAR_MODELS_DIR) / "resnet18.onnx";
  ASSERT_TRUE(fs::exists(path)) << path << ": run tools/export_models.py";
  absl::StatusOr<onnx_io::Model> source = onnx_io::LoadModel(path);
  ASSERT_TRUE(source.ok()) << source.status();
  for (const char* algorithm : {"sgp", "m-etf"}) {
    SplitRequest request;
    request.problem.model_path = path.string();
    request.problem.cluster.cluster = "cpu:2x1";
    request.problem.step.mode = costmodel::StepMode::kTraining;
    request.problem.step.optimizer = costmodel::Optimizer::kMomentum;
    request.algorithm = algorithm;
    request.search.microbatches = 8;
    request.partition.stages = false;
    training::TrainingOptions options;
    options.loss = {.kind = training::LossKind::kMse,
                    .value = source->proto.graph().output(0).name(),
                    .labels_name = ""};
    options.optimizer = training::DefaultOptimizerOptions(costmodel::Optimizer::kMomentum);
    request.training = options;
    absl::StatusOr<SplitResult> result = Split(request);
    ASSERT_TRUE(result.ok()) << result.status();
    const Plan& plan = result->plan;
    ASSERT_TRUE(plan.pipelined.has_value()) << algorithm;
    EXPECT_EQ(plan.simulation.step_time_us, plan.pipelined->step_us);
    // Never slower than one device by the estimate (Note [Do not split]).
    EXPECT_LE(plan.simulation.step_time_us, plan.single_device_step_us) << algorithm;
    ASSERT_TRUE(result->training_split.has_value());
    const double split_us = result->training_split->predicted.step_us;
    std::printf("%s: plan %.0f us (fused %.0f us), one device %.0f us, split %.0f us%s\n",
                algorithm, plan.simulation.step_time_us, plan.pipelined->fused_step_us,
                plan.single_device_step_us, split_us,
                plan.rejected_split ? " (split rejected)" : "");
    EXPECT_LE(std::abs(plan.simulation.step_time_us - split_us), 0.25 * split_us) << algorithm;
  }
}

}  // namespace
}  // namespace autopar::pipeline
