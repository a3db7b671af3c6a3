#include "costmodel/device.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "costmodel/json_file.h"

namespace autopar::costmodel {
namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr int64_t kGiB = int64_t{1} << 30;

// Kernel launch + framework dispatch per node on a GPU (CUDA launch latency
// is ~3–5 µs; ONNX Runtime's CUDA EP adds its own bookkeeping).
constexpr double kGpuKernelOverheadUs = 5.0;

// Builds a GPU preset. Capacities: vendors' "GB" of HBM/GDDR are GiB
// (nvidia-smi shows 81920 MiB on an A100 80GB); bandwidths are decimal GB/s.
DeviceSpec Gpu(std::string name, std::string description, PeakFlops peak,
               double bandwidth_bytes_per_s, int64_t memory_bytes) {
  DeviceSpec d;
  d.name = std::move(name);
  d.description = std::move(description);
  d.peak_flops = peak;
  d.memory_bandwidth_bytes_per_s = bandwidth_bytes_per_s;
  d.memory_bytes = memory_bytes;
  d.kernel_overhead_us = kGpuKernelOverheadUs;
  d.efficiency = DefaultGpuEfficiency();
  d.memory_efficiency.fill(1.0);
  return d;
}

// Note [Preset figures]: dense (not 2:4-sparse) peaks from the vendors'
// datasheets. fp32 is the CUDA-core FP32 rate (not TF32): ONNX Runtime runs
// fp32 models in fp32 unless told otherwise — write a device file with the
// TF32 figure as "fp32" when TF32 is enabled. fp16 is the FP16/BF16
// tensor-core rate, int8 the INT8 tensor-core rate.
std::vector<DeviceSpec> GpuPresets() {
  return {
      // NVIDIA Tesla V100 SXM2 32GB datasheet: FP32 15.7 TFLOPS, Tensor
      // (FP16) 125 TFLOPS, HBM2 900 GB/s, 32 GB. No INT8 tensor cores: DP4A
      // runs 4 INT8 MACs per FP32 lane, 4 × 15.7 = 62.8 TOPS.
      Gpu("v100", "NVIDIA V100 SXM2 32GB", {15.7 * kTera, 125 * kTera, 62.8 * kTera}, 900 * kGiga,
          32 * kGiB),
      // NVIDIA A100 80GB SXM datasheet: FP32 19.5 TFLOPS, FP16/BF16 Tensor
      // 312 TFLOPS, INT8 Tensor 624 TOPS, HBM2e 2,039 GB/s, 80 GB.
      Gpu("a100-80gb", "NVIDIA A100 SXM 80GB", {19.5 * kTera, 312 * kTera, 624 * kTera},
          2039 * kGiga, 80 * kGiB),
      // NVIDIA H100 SXM5 datasheet: FP32 67 TFLOPS, FP16/BF16 Tensor 1,979
      // TFLOPS and INT8 3,958 TOPS with sparsity (989.5 / 1,979 dense),
      // HBM3 3.35 TB/s, 80 GB.
      Gpu("h100", "NVIDIA H100 SXM5 80GB", {67 * kTera, 989.5 * kTera, 1979 * kTera}, 3350 * kGiga,
          80 * kGiB),
      // NVIDIA H200 SXM datasheet: the H100's compute (FP32 67 TFLOPS,
      // FP16/BF16 989.5 dense, INT8 1,979 dense), HBM3e 4.8 TB/s, 141 GB.
      Gpu("h200", "NVIDIA H200 SXM 141GB", {67 * kTera, 989.5 * kTera, 1979 * kTera}, 4800 * kGiga,
          141 * kGiB),
      // NVIDIA T4 datasheet: FP32 8.1 TFLOPS, mixed FP16/FP32 65 TFLOPS,
      // INT8 130 TOPS, GDDR6 320 GB/s, 16 GB.
      Gpu("t4", "NVIDIA T4 16GB", {8.1 * kTera, 65 * kTera, 130 * kTera}, 320 * kGiga, 16 * kGiB),
      // NVIDIA L4 datasheet: FP32 30.3 TFLOPS, FP16/BF16 Tensor 242 TFLOPS and
      // INT8 485 TOPS with sparsity (121 / 242.5 dense), GDDR6 300 GB/s, 24 GB.
      Gpu("l4", "NVIDIA L4 24GB", {30.3 * kTera, 121 * kTera, 242.5 * kTera}, 300 * kGiga,
          24 * kGiB),
  };
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// --- JSON ------------------------------------------------------------------------

absl::Status FieldError(std::string_view context, std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(context), ": field '", std::string(field), "' ", std::string(what)));
}

absl::StatusOr<double> PositiveNumber(const nlohmann::json& value, std::string_view context,
                                      std::string_view field) {
  if (!value.is_number()) return FieldError(context, field, "must be a number");
  double number = value.get<double>();
  if (!std::isfinite(number) || number <= 0) {
    return FieldError(context, field, "must be a positive number");
  }
  return number;
}

absl::Status ReadClassTable(const nlohmann::json& value, std::string_view context,
                            std::string_view field, std::array<double, kNumOpClasses>& table) {
  if (!value.is_object()) {
    return FieldError(context, field, "must be an object of op class → number");
  }
  for (const auto& [key, entry] : value.items()) {
    std::string name = absl::StrCat(std::string(field), ".", key);
    std::optional<OpClass> op_class = OpClassFromName(key);
    if (!op_class) {
      std::vector<std::string> known;
      for (size_t i = 0; i < kNumOpClasses; ++i) {
        known.emplace_back(OpClassName(static_cast<OpClass>(i)));
      }
      return FieldError(context, name,
                        absl::StrCat("is not an op class (", absl::StrJoin(known, ", "), ")"));
    }
    absl::StatusOr<double> number = PositiveNumber(entry, context, name);
    if (!number.ok()) return number.status();
    table[static_cast<size_t>(*op_class)] = *number;
  }
  return absl::OkStatus();
}

}  // namespace

double PeakFlops::For(DTypeClass dtype_class) const {
  switch (dtype_class) {
    case DTypeClass::kFp32:
      return fp32;
    case DTypeClass::kFp16:
      return fp16;
    case DTypeClass::kInt8:
      return int8;
  }
  return fp32;
}

double PredictTimeUs(const NodeCost& cost, DTypeClass dtype_class, const DeviceSpec& device) {
  double peak = device.peak_flops.For(dtype_class);
  if (peak <= 0) peak = device.peak_flops.fp32;
  double compute_rate = peak * device.Efficiency(cost.op_class);
  double memory_rate = device.memory_bandwidth_bytes_per_s * device.MemoryEfficiency(cost.op_class);
  double compute_s =
      cost.flops > 0 && compute_rate > 0 ? static_cast<double>(cost.flops) / compute_rate : 0.0;
  double bytes = static_cast<double>(cost.bytes_read) + static_cast<double>(cost.bytes_written);
  double memory_s = bytes > 0 && memory_rate > 0 ? bytes / memory_rate : 0.0;
  return static_cast<double>(cost.kernels) * device.kernel_overhead_us +
         std::max(compute_s, memory_s) * 1e6;
}

double PredictTimeUs(const NodeCost& cost, const DeviceSpec& device) {
  return PredictTimeUs(cost, cost.dtype_class, device);
}

double TotalTimeUs(absl::Span<const NodeCost> costs, const DeviceSpec& device) {
  double total = 0;
  for (const NodeCost& cost : costs) total += PredictTimeUs(cost, device);
  return total;
}

// Note [Default efficiencies]: starting points, not measurements. GEMM-shaped
// work reaches a large fraction of peak (cuBLAS/cuDNN: 60–80% on large
// problems, less on the small ones inference graphs are full of); recurrent
// cells are chains of small GEMMs; the rest is memory-bound on GPUs, where
// the arithmetic side of the roofline rarely decides. "other" (sorting,
// gathers with computed indices, tree walks) is far from peak. A calibration
// (tools/) fits these to measured times and writes a device file.
std::array<double, kNumOpClasses> DefaultGpuEfficiency() {
  std::array<double, kNumOpClasses> e{};
  e[static_cast<size_t>(OpClass::kConv)] = 0.55;
  e[static_cast<size_t>(OpClass::kMatMul)] = 0.65;
  e[static_cast<size_t>(OpClass::kRecurrent)] = 0.25;
  e[static_cast<size_t>(OpClass::kNormalization)] = 0.25;
  e[static_cast<size_t>(OpClass::kPooling)] = 0.25;
  e[static_cast<size_t>(OpClass::kReduction)] = 0.25;
  e[static_cast<size_t>(OpClass::kElementwise)] = 0.25;
  e[static_cast<size_t>(OpClass::kDataMovement)] = 1.0;
  e[static_cast<size_t>(OpClass::kMetadata)] = 1.0;
  e[static_cast<size_t>(OpClass::kOther)] = 0.1;
  return e;
}

// CPU kernels (MLAS, Eigen): SGEMM-based conv and matmul reach about 60% of
// the FMA peak on the mid-sized problems of inference graphs; element-wise
// math and normalizations far less, pooling (MaxPool's compare chains) less
// still. Note [CPU calibration] has the measurements behind these numbers.
std::array<double, kNumOpClasses> DefaultCpuEfficiency() {
  std::array<double, kNumOpClasses> e{};
  e[static_cast<size_t>(OpClass::kConv)] = 0.6;
  e[static_cast<size_t>(OpClass::kMatMul)] = 0.6;
  e[static_cast<size_t>(OpClass::kRecurrent)] = 0.3;
  e[static_cast<size_t>(OpClass::kNormalization)] = 0.15;
  e[static_cast<size_t>(OpClass::kPooling)] = 0.05;
  e[static_cast<size_t>(OpClass::kReduction)] = 0.2;
  e[static_cast<size_t>(OpClass::kElementwise)] = 0.2;
  e[static_cast<size_t>(OpClass::kDataMovement)] = 1.0;
  e[static_cast<size_t>(OpClass::kMetadata)] = 1.0;
  e[static_cast<size_t>(OpClass::kOther)] = 0.05;
  return e;
}

// Note [CPU preset]: a generic x86-64 server/desktop core with AVX2 and two
// 256-bit FMA units at a sustained all-core 3.0 GHz: 2 FMA × 8 fp32 lanes ×
// 2 FLOPs × 3.0 GHz = 96 GFLOP/s per core. No native fp16 arithmetic (it is
// converted to fp32): fp16 peak = fp32 peak. int8 via AVX2 vpmaddubsw /
// vpmaddwd: about 2× the fp32 rate (AVX-512 VNNI reaches 4×). Memory: one
// dual-channel DDR4-3200 system (51.2 GB/s) per 8 cores, of which one core
// alone streams about 20 GB/s (its outstanding cache misses, not the DIMMs,
// limit it); 4 GiB per core. Kernel overhead: ONNX Runtime's per-node
// dispatch, ~5 µs. All of it is meant to be calibrated on the machine at
// hand (tools/fidelity/calibrate.mjs).
//
// Note [CPU calibration]: the efficiencies, the overhead and the per-core
// bandwidth above were checked against ONNX Runtime 1.30's CPU EP (one
// intra-op thread, graph optimizations off, per-node profiler times) on an
// AMD EPYC (Zen 3) core, tools/fidelity/calibrate.mjs fitted on ResNet-50,
// MobileNetV2 and a 4-layer transformer encoder: conv 0.62–0.66, matmul 0.60,
// element-wise 0.22, pooling 0.05, normalization 0.14, overhead 5–8 µs,
// memory side of element-wise/data-movement ops ~21–23 GB/s. Grouped and
// depthwise convolutions (MobileNet) run as im2col + one small GEMM per group
// and stream only ~2 GB/s per core, hence conv's memory efficiency of 0.1
// (dense convolutions are compute-bound and do not notice it). Multi-core
// scaling was not measured: with N cores the model assumes N × the per-core
// rates.
DeviceSpec CpuPreset(int cores) {
  cores = std::max(cores, 1);
  constexpr double kFlopsPerCore = 2 * 8 * 2 * 3.0e9;
  constexpr double kBandwidthPerCore = 20e9;
  DeviceSpec d;
  d.name = cores == kDefaultCpuCores ? "cpu" : absl::StrCat("cpu:", cores);
  d.description = absl::StrCat("generic x86-64 CPU, ", cores, " cores, AVX2 FMA at 3.0 GHz");
  d.peak_flops = {cores * kFlopsPerCore, cores * kFlopsPerCore, 2 * cores * kFlopsPerCore};
  d.memory_bandwidth_bytes_per_s =
      std::min(cores * kBandwidthPerCore, 51.2e9 * std::max(1.0, cores / 8.0));
  d.memory_bytes = int64_t{4} * kGiB * cores;
  d.kernel_overhead_us = 5.0;
  d.efficiency = DefaultCpuEfficiency();
  d.memory_efficiency.fill(1.0);
  d.memory_efficiency[static_cast<size_t>(OpClass::kConv)] = 0.1;
  return d;
}

std::vector<std::string> DevicePresetNames() {
  std::vector<std::string> names;
  for (const DeviceSpec& d : GpuPresets()) names.push_back(d.name);
  names.push_back("cpu");
  return names;
}

absl::StatusOr<DeviceSpec> LookupDevicePreset(std::string_view name) {
  std::string key = Lower(name);
  for (DeviceSpec& d : GpuPresets()) {
    if (d.name == key) return std::move(d);
  }
  if (key == "cpu") return CpuPreset(kDefaultCpuCores);
  if (key.rfind("cpu:", 0) == 0) {
    int cores = 0;
    if (!absl::SimpleAtoi(key.substr(4), &cores) || cores <= 0 || cores > 4096) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device '", std::string(name), "': cpu:N needs a core count N from 1 to 4096"));
    }
    return CpuPreset(cores);
  }
  return absl::NotFoundError(absl::StrCat("unknown device preset '", std::string(name),
                                          "' (presets: ", absl::StrJoin(DevicePresetNames(), ", "),
                                          ", cpu:N)"));
}

absl::StatusOr<DeviceSpec> DeviceSpecFromJson(const nlohmann::json& json,
                                              std::string_view context) {
  if (!json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(context), ": a device must be a JSON object"));
  }
  static constexpr std::string_view kFields[] = {"base",
                                                 "name",
                                                 "description",
                                                 "peak_flops",
                                                 "memory_bandwidth_bytes_per_s",
                                                 "memory_bytes",
                                                 "kernel_overhead_us",
                                                 "efficiency",
                                                 "memory_efficiency"};
  for (const auto& [key, value] : json.items()) {
    if (std::find(std::begin(kFields), std::end(kFields), key) == std::end(kFields)) {
      return FieldError(context, key, "is not a device field");
    }
  }

  DeviceSpec d;
  bool has_base = json.contains("base");
  if (has_base) {
    if (!json["base"].is_string()) return FieldError(context, "base", "must be a preset name");
    absl::StatusOr<DeviceSpec> base = LookupDevicePreset(json["base"].get<std::string>());
    if (!base.ok()) return FieldError(context, "base", std::string(base.status().message()));
    d = *std::move(base);
  } else {
    d.efficiency = DefaultGpuEfficiency();
    d.memory_efficiency.fill(1.0);
  }
  auto require = [&](std::string_view field) -> absl::Status {
    if (!has_base && !json.contains(std::string(field))) {
      return FieldError(context, field, "is required (or give a \"base\" preset)");
    }
    return absl::OkStatus();
  };

  if (absl::Status s = require("name"); !s.ok()) return s;
  if (json.contains("name")) {
    if (!json["name"].is_string() || json["name"].get<std::string>().empty()) {
      return FieldError(context, "name", "must be a non-empty string");
    }
    d.name = json["name"].get<std::string>();
  }
  if (json.contains("description")) {
    if (!json["description"].is_string()) {
      return FieldError(context, "description", "must be a string");
    }
    d.description = json["description"].get<std::string>();
  }

  if (absl::Status s = require("peak_flops"); !s.ok()) return s;
  if (json.contains("peak_flops")) {
    const nlohmann::json& peak = json["peak_flops"];
    if (!peak.is_object()) return FieldError(context, "peak_flops", "must be an object");
    for (const auto& [key, value] : peak.items()) {
      if (!DTypeClassFromName(key)) {
        return FieldError(context, absl::StrCat("peak_flops.", key),
                          "is not a dtype class (fp32, fp16, int8)");
      }
    }
    if (!has_base && !peak.contains("fp32")) {
      return FieldError(context, "peak_flops.fp32", "is required");
    }
    for (auto [key, slot] : {std::pair<const char*, double*>{"fp32", &d.peak_flops.fp32},
                             {"fp16", &d.peak_flops.fp16},
                             {"int8", &d.peak_flops.int8}}) {
      if (!peak.contains(key)) continue;
      absl::StatusOr<double> number =
          PositiveNumber(peak[key], context, absl::StrCat("peak_flops.", key));
      if (!number.ok()) return number.status();
      *slot = *number;
    }
    if (!has_base) {
      if (!peak.contains("fp16")) d.peak_flops.fp16 = d.peak_flops.fp32;
      if (!peak.contains("int8")) d.peak_flops.int8 = d.peak_flops.fp32;
    }
  }

  if (absl::Status s = require("memory_bandwidth_bytes_per_s"); !s.ok()) return s;
  if (json.contains("memory_bandwidth_bytes_per_s")) {
    absl::StatusOr<double> number = PositiveNumber(json["memory_bandwidth_bytes_per_s"], context,
                                                   "memory_bandwidth_bytes_per_s");
    if (!number.ok()) return number.status();
    d.memory_bandwidth_bytes_per_s = *number;
  }
  if (absl::Status s = require("memory_bytes"); !s.ok()) return s;
  if (json.contains("memory_bytes")) {
    absl::StatusOr<double> number = PositiveNumber(json["memory_bytes"], context, "memory_bytes");
    if (!number.ok()) return number.status();
    if (*number >= 9.2e18) return FieldError(context, "memory_bytes", "is too large");
    d.memory_bytes = static_cast<int64_t>(*number);
  }
  if (json.contains("kernel_overhead_us")) {
    const nlohmann::json& value = json["kernel_overhead_us"];
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) {
      return FieldError(context, "kernel_overhead_us", "must be a non-negative number");
    }
    d.kernel_overhead_us = value.get<double>();
  }
  if (json.contains("efficiency")) {
    if (absl::Status s = ReadClassTable(json["efficiency"], context, "efficiency", d.efficiency);
        !s.ok()) {
      return s;
    }
  }
  if (json.contains("memory_efficiency")) {
    if (absl::Status s = ReadClassTable(json["memory_efficiency"], context, "memory_efficiency",
                                        d.memory_efficiency);
        !s.ok()) {
      return s;
    }
  }
  return d;
}

absl::StatusOr<DeviceSpec> LoadDeviceSpec(const std::filesystem::path& path) {
  const std::string source = absl::StrCat("device file '", path.string(), "'");
  absl::StatusOr<nlohmann::json> json = ReadJsonFile(path.string(), source);
  if (!json.ok()) return json.status();
  return DeviceSpecFromJson(*json, source);
}

absl::StatusOr<DeviceSpec> ResolveDevice(std::string_view preset_or_path) {
  absl::StatusOr<DeviceSpec> preset = LookupDevicePreset(preset_or_path);
  if (preset.ok() || !absl::IsNotFound(preset.status())) return preset;
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(std::string(preset_or_path)), ec)) {
    return LoadDeviceSpec(std::string(preset_or_path));
  }
  return absl::NotFoundError(
      absl::StrCat("--device '", std::string(preset_or_path), "' is neither a preset (",
                   absl::StrJoin(DevicePresetNames(), ", "), ", cpu:N) nor a device file"));
}

nlohmann::ordered_json DeviceSpecToJson(const DeviceSpec& device) {
  nlohmann::ordered_json efficiency = nlohmann::ordered_json::object();
  nlohmann::ordered_json memory_efficiency = nlohmann::ordered_json::object();
  for (size_t i = 0; i < kNumOpClasses; ++i) {
    std::string name(OpClassName(static_cast<OpClass>(i)));
    efficiency[name] = device.efficiency[i];
    memory_efficiency[name] = device.memory_efficiency[i];
  }
  return {{"name", device.name},
          {"description", device.description},
          {"peak_flops",
           {{"fp32", device.peak_flops.fp32},
            {"fp16", device.peak_flops.fp16},
            {"int8", device.peak_flops.int8}}},
          {"memory_bandwidth_bytes_per_s", device.memory_bandwidth_bytes_per_s},
          {"memory_bytes", device.memory_bytes},
          {"kernel_overhead_us", device.kernel_overhead_us},
          {"efficiency", efficiency},
          {"memory_efficiency", memory_efficiency}};
}

}  // namespace autopar::costmodel
