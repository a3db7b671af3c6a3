// The device model: presets, device files (and their errors), the roofline.
#include "costmodel/device.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace autopar::costmodel {
namespace {

using ::testing::HasSubstr;

TEST(DevicePresetTest, EveryPresetIsComplete) {
  std::vector<std::string> names = DevicePresetNames();
  for (const char* expected : {"v100", "a100-80gb", "h100", "h200", "t4", "l4", "cpu"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const std::string& name : names) {
    absl::StatusOr<DeviceSpec> d = LookupDevicePreset(name);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->name, name);
    EXPECT_GT(d->peak_flops.fp32, 0);
    EXPECT_GE(d->peak_flops.fp16, d->peak_flops.fp32) << name;
    EXPECT_GT(d->peak_flops.int8, 0);
    EXPECT_GT(d->memory_bandwidth_bytes_per_s, 0);
    EXPECT_GT(d->memory_bytes, 0);
    for (size_t i = 0; i < kNumOpClasses; ++i) {
      EXPECT_GT(d->efficiency[i], 0) << name << " " << OpClassName(static_cast<OpClass>(i));
      EXPECT_GT(d->memory_efficiency[i], 0);
    }
  }
}

TEST(DevicePresetTest, DatasheetFigures) {
  DeviceSpec a100 = *LookupDevicePreset("A100-80GB");  // case-insensitive
  EXPECT_DOUBLE_EQ(a100.peak_flops.fp16, 312e12);
  EXPECT_DOUBLE_EQ(a100.memory_bandwidth_bytes_per_s, 2039e9);
  EXPECT_EQ(a100.memory_bytes, int64_t{80} << 30);
  DeviceSpec h200 = *LookupDevicePreset("h200");
  EXPECT_DOUBLE_EQ(h200.memory_bandwidth_bytes_per_s, 4.8e12);
  EXPECT_EQ(h200.memory_bytes, int64_t{141} << 30);
}

TEST(DevicePresetTest, CpuCoreCount) {
  DeviceSpec cpu = *LookupDevicePreset("cpu");
  DeviceSpec four = *LookupDevicePreset("cpu:4");
  EXPECT_EQ(four.name, "cpu:4");
  EXPECT_DOUBLE_EQ(cpu.peak_flops.fp32, kDefaultCpuCores * 96e9);
  EXPECT_DOUBLE_EQ(four.peak_flops.fp32, 4 * 96e9);
  EXPECT_FALSE(LookupDevicePreset("cpu:0").ok());
  absl::StatusOr<DeviceSpec> unknown = LookupDevicePreset("tpu");
  EXPECT_TRUE(absl::IsNotFound(unknown.status()));
  EXPECT_THAT(unknown.status().message(), HasSubstr("a100-80gb"));
}

// --- The roofline ---------------------------------------------------------------

DeviceSpec Simple() {
  DeviceSpec d;
  d.name = "simple";
  d.peak_flops = {1e12, 4e12, 8e12};
  d.memory_bandwidth_bytes_per_s = 1e11;
  d.memory_bytes = 1 << 30;
  d.kernel_overhead_us = 3;
  d.efficiency.fill(0.5);
  d.memory_efficiency.fill(1.0);
  return d;
}

TEST(PredictTimeTest, ComputeBoundMemoryBoundAndOverhead) {
  NodeCost compute;
  compute.flops = 1'000'000'000;  // 1e9 / (1e12 · 0.5) = 2000 µs
  compute.bytes_read = 1000;
  compute.op_class = OpClass::kMatMul;
  EXPECT_DOUBLE_EQ(PredictTimeUs(compute, DTypeClass::kFp32, Simple()), 3 + 2000);
  EXPECT_DOUBLE_EQ(PredictTimeUs(compute, DTypeClass::kFp16, Simple()), 3 + 500);
  EXPECT_DOUBLE_EQ(PredictTimeUs(compute, DTypeClass::kInt8, Simple()), 3 + 250);

  NodeCost memory;
  memory.flops = 10;
  memory.bytes_read = 50'000'000;  // 1e8 bytes / 1e11 B/s = 1000 µs
  memory.bytes_written = 50'000'000;
  EXPECT_DOUBLE_EQ(PredictTimeUs(memory, Simple()), 3 + 1000);
  DeviceSpec slow_memory = Simple();
  slow_memory.memory_efficiency[static_cast<size_t>(memory.op_class)] = 0.5;
  EXPECT_DOUBLE_EQ(PredictTimeUs(memory, slow_memory), 3 + 2000);

  NodeCost folded;  // a Constant: no kernel
  folded.kernels = 0;
  EXPECT_DOUBLE_EQ(PredictTimeUs(folded, Simple()), 0);
  NodeCost loop = compute;
  loop.kernels = 11;
  EXPECT_DOUBLE_EQ(PredictTimeUs(loop, DTypeClass::kFp32, Simple()), 11 * 3 + 2000);
  EXPECT_DOUBLE_EQ(TotalTimeUs({compute, memory}, Simple()), 3 + 2000 + 3 + 1000);
}

TEST(PredictTimeTest, SaturatedCountsStayFinite) {
  NodeCost huge;
  huge.flops = kSaturatedCount;
  huge.bytes_read = kSaturatedCount;
  double t = PredictTimeUs(huge, Simple());
  EXPECT_TRUE(std::isfinite(t));
  EXPECT_GT(t, 1e9);
}

// --- Device files ---------------------------------------------------------------------

absl::StatusOr<DeviceSpec> FromText(const std::string& text) {
  return DeviceSpecFromJson(nlohmann::json::parse(text), "dev.json");
}

TEST(DeviceFileTest, FullSpecAndDefaults) {
  absl::StatusOr<DeviceSpec> d = FromText(R"({
    "name": "my-gpu", "peak_flops": {"fp32": 1e13},
    "memory_bandwidth_bytes_per_s": 1e12, "memory_bytes": 17179869184,
    "kernel_overhead_us": 4, "efficiency": {"conv": 0.8}})");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->name, "my-gpu");
  EXPECT_DOUBLE_EQ(d->peak_flops.fp16, 1e13);  // defaults to fp32
  EXPECT_DOUBLE_EQ(d->peak_flops.int8, 1e13);
  EXPECT_EQ(d->memory_bytes, int64_t{16} << 30);
  EXPECT_DOUBLE_EQ(d->Efficiency(OpClass::kConv), 0.8);
  EXPECT_DOUBLE_EQ(d->Efficiency(OpClass::kMatMul), DefaultGpuEfficiency()[1]);
  EXPECT_DOUBLE_EQ(d->MemoryEfficiency(OpClass::kConv), 1.0);
}

TEST(DeviceFileTest, BaseOverridesOnlyWhatIsGiven) {
  // What a calibration of the cpu preset writes.
  absl::StatusOr<DeviceSpec> d = FromText(R"({
    "base": "cpu:2", "name": "this-machine",
    "efficiency": {"matmul": 0.9, "elementwise": 0.05},
    "memory_efficiency": {"data_movement": 0.4}})");
  ASSERT_TRUE(d.ok()) << d.status();
  DeviceSpec cpu2 = *LookupDevicePreset("cpu:2");
  EXPECT_EQ(d->name, "this-machine");
  EXPECT_DOUBLE_EQ(d->peak_flops.fp32, cpu2.peak_flops.fp32);
  EXPECT_DOUBLE_EQ(d->Efficiency(OpClass::kMatMul), 0.9);
  EXPECT_DOUBLE_EQ(d->Efficiency(OpClass::kElementwise), 0.05);
  EXPECT_DOUBLE_EQ(d->Efficiency(OpClass::kConv), cpu2.Efficiency(OpClass::kConv));
  EXPECT_DOUBLE_EQ(d->MemoryEfficiency(OpClass::kDataMovement), 0.4);
}

TEST(DeviceFileTest, RoundTripsThroughJson) {
  for (const std::string& name : DevicePresetNames()) {
    DeviceSpec preset = *LookupDevicePreset(name);
    nlohmann::json json = nlohmann::json::parse(DeviceSpecToJson(preset).dump());
    absl::StatusOr<DeviceSpec> back = DeviceSpecFromJson(json);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->name, preset.name);
    EXPECT_EQ(back->description, preset.description);
    EXPECT_DOUBLE_EQ(back->peak_flops.int8, preset.peak_flops.int8);
    EXPECT_EQ(back->memory_bytes, preset.memory_bytes);
    EXPECT_DOUBLE_EQ(back->kernel_overhead_us, preset.kernel_overhead_us);
    EXPECT_EQ(back->efficiency, preset.efficiency);
    EXPECT_EQ(back->memory_efficiency, preset.memory_efficiency);
  }
}

TEST(DeviceFileTest, BadFieldsAreNamed) {
  struct Case {
    const char* json;
    const char* field;
  };
  const Case kCases[] = {
      {R"({"peak_flops": {"fp32": 1}, "memory_bandwidth_bytes_per_s": 1, "memory_bytes": 1})",
       "'name'"},
      {R"({"name": "x", "memory_bandwidth_bytes_per_s": 1, "memory_bytes": 1})", "'peak_flops'"},
      {R"({"name": "x", "peak_flops": {"fp16": 1}, "memory_bandwidth_bytes_per_s": 1,
           "memory_bytes": 1})",
       "'peak_flops.fp32'"},
      {R"({"base": "cpu", "peak_flops": {"fp16": "fast"}})", "'peak_flops.fp16'"},
      {R"({"base": "cpu", "peak_flops": {"bf16": 1}})", "'peak_flops.bf16'"},
      {R"({"base": "cpu", "memory_bytes": -5})", "'memory_bytes'"},
      {R"({"base": "cpu", "memory_bandwidth_bytes_per_s": 0})", "'memory_bandwidth_bytes_per_s'"},
      {R"({"base": "cpu", "kernel_overhead_us": -1})", "'kernel_overhead_us'"},
      {R"({"base": "cpu", "efficiency": {"convolution": 0.5}})", "'efficiency.convolution'"},
      {R"({"base": "cpu", "efficiency": {"conv": 0}})", "'efficiency.conv'"},
      {R"({"base": "cpu", "efficiency": [0.5]})", "'efficiency'"},
      {R"({"base": "cpu", "bandwidth": 5})", "'bandwidth'"},
      {R"({"base": "tpu"})", "'base'"},
      {R"({"base": "cpu", "name": 7})", "'name'"},
  };
  for (const Case& c : kCases) {
    absl::StatusOr<DeviceSpec> d = FromText(c.json);
    ASSERT_FALSE(d.ok()) << c.json;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << c.json;
    EXPECT_THAT(d.status().message(), HasSubstr(c.field)) << c.json;
    EXPECT_THAT(d.status().message(), HasSubstr("dev.json")) << c.json;
  }
  EXPECT_FALSE(DeviceSpecFromJson(nlohmann::json::array()).ok());
}

TEST(DeviceFileTest, LoadAndResolve) {
  autopar::testing::TempDir dir;
  std::filesystem::path good = dir.Write("good.json", R"({"base": "t4", "name": "my-t4"})");
  absl::StatusOr<DeviceSpec> d = LoadDeviceSpec(good);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->name, "my-t4");
  EXPECT_EQ(ResolveDevice(good.string())->name, "my-t4");
  EXPECT_EQ(ResolveDevice("l4")->name, "l4");

  absl::StatusOr<DeviceSpec> broken = LoadDeviceSpec(dir.Write("broken.json", "{\"name\": "));
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(broken.status().message(), HasSubstr("device file '"));
  EXPECT_THAT(broken.status().message(), HasSubstr("is not valid JSON"));
  absl::StatusOr<DeviceSpec> missing = LoadDeviceSpec(dir / "missing.json");
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_THAT(missing.status().message(), HasSubstr("cannot open device file '"));
  absl::StatusOr<DeviceSpec> neither = ResolveDevice("no-such-device");
  EXPECT_TRUE(absl::IsNotFound(neither.status()));
  EXPECT_THAT(neither.status().message(), HasSubstr("neither a preset"));
}

}  // namespace
}  // namespace autopar::costmodel
