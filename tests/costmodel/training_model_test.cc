// The training step on a real model: ResNet-50 (torchvision, batch 1, as
// tools/export_models.py exports it) planned on one A100 for inference and
// for training with Adam, through the whole preparation (costs, coarsening)
// and the simulator. Its peak memory and step time must grow by the factors
// costmodel/training.h documents.
//
// Models are read from $AUTOPAR_MODELS_DIR when set, else from the build's
// models folder (the exported_models fixture).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "costmodel/device.h"
#include "gtest/gtest.h"
#include "pipeline/planning.h"

namespace autopar::costmodel {
namespace {

namespace fs = std::filesystem;

fs::path ModelsDir() {
  const char* env = std::getenv("AUTOPAR_MODELS_DIR");
  return env != nullptr && *env != '\0' ? fs::path(env) : fs::path(AUTOPAR_MODELS_DIR);
}

struct Step {
  pipeline::PlanningProblem problem;
  SimulationResult single_device;
};

Step PlanOnOneDevice(const fs::path& model, const StepOptions& step) {
  absl::StatusOr<DeviceSpec> a100 = LookupDevicePreset("a100-80gb");
  EXPECT_TRUE(a100.ok());
  Cluster cluster = MakeHomogeneousCluster(*a100, 1, a100->memory_bytes, 300e9, 5);
  absl::StatusOr<pipeline::PlanningProblem> problem =
      pipeline::PrepareModel(model.string(), {}, std::move(cluster), {}, {}, step);
  EXPECT_TRUE(problem.ok()) << problem.status();
  Step out{*std::move(problem), {}};
  Simulator simulator(out.problem.units(), out.problem.cluster);
  out.single_device =
      simulator.Run({.device = std::vector<int32_t>(out.problem.units().num_units(), 0)});
  return out;
}

TEST(TrainingModelTest, ResNet50TrainingPeakAndStepGrowByTheDocumentedFactors) {
  fs::path model = ModelsDir() / "resnet50.onnx";
  if (!fs::exists(model)) FAIL() << model << ": run tools/export_models.py";
  Step inference = PlanOnOneDevice(model, {});
  Step training = PlanOnOneDevice(model, {.mode = StepMode::kTraining});
  ASSERT_TRUE(training.problem.nodes->training.has_value());
  const TrainingCosts& t = *training.problem.nodes->training;
  const DeviceUsage& inf = inference.single_device.devices[0];
  const DeviceUsage& tr = training.single_device.devices[0];

  // 1. Parameters. The export folds BatchNorm into the convolutions, so every
  //    weight is trainable: Adam holds weight + gradient + two fp32 moments,
  //    4 × the inference weights.
  EXPECT_EQ(t.trainable_param_bytes, inf.param_bytes);
  EXPECT_EQ(t.gradient_bytes, inf.param_bytes);
  EXPECT_EQ(t.optimizer_state_bytes, 2 * inf.param_bytes);
  EXPECT_EQ(tr.param_bytes, 4 * inf.param_bytes);

  // 2. Activations: the saved ones stay for the whole step on top of what is
  //    transient. The simulated peak lies between "all saved" and "all saved
  //    + inference's activation peak + the largest gradient workspace".
  int64_t max_gradient_workspace = 0;
  for (const NodeTrainingCost& node : t.nodes) {
    max_gradient_workspace = std::max(max_gradient_workspace, node.gradient_workspace_bytes);
  }
  EXPECT_GE(tr.peak_activation_bytes, t.saved_activation_bytes);
  EXPECT_LE(tr.peak_activation_bytes,
            t.saved_activation_bytes + inf.peak_activation_bytes + max_gradient_workspace);
  // Convolution inputs and ReLU outputs are what ResNet's backward reads:
  // several times inference's peak of live activations.
  EXPECT_GT(t.saved_activation_bytes, 2 * inf.peak_activation_bytes);

  // 3. Peak memory: 4 × weights + saved activations over inference's
  //    weights + transient activations.
  const double memory_ratio =
      static_cast<double>(tr.peak_memory_bytes) / static_cast<double>(inf.peak_memory_bytes);
  EXPECT_GT(memory_ratio, 3.5);
  EXPECT_LT(memory_ratio, 4.5);

  // 4. Compute: backward ≈ 2 × forward (the stem convolution, whose input is
  //    the image, only 1 ×), plus the memory-bound Adam update.
  const double time_ratio =
      training.single_device.step_time_us / inference.single_device.step_time_us;
  EXPECT_GT(time_ratio, 2.5);
  EXPECT_LT(time_ratio, 3.5);
  int64_t forward_flops = 0;
  for (const NodeCost& cost : training.problem.nodes->costs) forward_flops += cost.flops;
  const double flops_ratio =
      static_cast<double>(t.backward_flops) / static_cast<double>(forward_flops);
  EXPECT_GT(flops_ratio, 1.9);
  EXPECT_LE(flops_ratio, 2.0);

  std::printf(
      "resnet50 on 1 x a100: inference peak %.1f MiB (weights %.1f, activations %.1f), step "
      "%.1f us\n"
      "          training (adam) peak %.1f MiB (weights+grads+state %.1f, activations %.1f of "
      "which saved %.1f), step %.1f us: x%.2f memory, x%.2f time, backward %.3f x forward "
      "FLOPs\n",
      inf.peak_memory_bytes / 1048576.0, inf.param_bytes / 1048576.0,
      inf.peak_activation_bytes / 1048576.0, inference.single_device.step_time_us,
      tr.peak_memory_bytes / 1048576.0, tr.param_bytes / 1048576.0,
      tr.peak_activation_bytes / 1048576.0, t.saved_activation_bytes / 1048576.0,
      training.single_device.step_time_us, memory_ratio, time_ratio, flops_ratio);
}

}  // namespace
}  // namespace autopar::costmodel
