// The device model: what one accelerator can do, and the
// roofline that turns a NodeCost into a predicted time on it.
//
//   time_us = kernels × kernel_overhead_us
//           + max(flops / (peak_flops[dtype class] × efficiency[op class]),
//                 bytes  / (memory_bandwidth × memory_efficiency[op class]))
//
// where bytes = bytes_read + bytes_written. `efficiency` is the fraction of
// the arithmetic peak an op class reaches; `memory_efficiency` (default 1,
// so the formula is the plain roofline) the fraction of the
// bandwidth, there so that a calibration against measured times can fit it.
//
// Built-in presets (LookupDevicePreset): v100, a100-80gb, h100, h200, t4, l4
// and cpu (cpu:N for N cores); device files (LoadDeviceSpec) describe others
// in this JSON schema, every field but the ones marked required optional:
//
//   {
//     "base": "cpu",                        // start from a preset (optional)
//     "name": "my-gpu",                     // required without "base"
//     "description": "free text",
//     "peak_flops": {"fp32": 1.95e13,       // FLOP/s; fp32 required without
//                    "fp16": 3.12e14,       //   "base"; fp16 and int8
//                    "int8": 6.24e14},      //   default to fp32
//     "memory_bandwidth_bytes_per_s": 2.039e12,  // required without "base"
//     "memory_bytes": 85899345920,               // required without "base"
//     "kernel_overhead_us": 5.0,                 // default 0
//     "efficiency": {"conv": 0.6, "matmul": 0.7, ...},   // per op class
//     "memory_efficiency": {"elementwise": 0.8, ...}     // per op class
//   }
//
// Op class names are those of OpClassName ("conv", "matmul", "recurrent",
// "normalization", "pooling", "reduction", "elementwise", "data_movement",
// "metadata", "other"); classes not listed keep the default (or base) value.
// Unknown keys, wrong types and non-positive numbers are errors naming the
// field.
#ifndef AUTOPAR_COSTMODEL_DEVICE_H_
#define AUTOPAR_COSTMODEL_DEVICE_H_

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "costmodel/node_cost.h"
#include "nlohmann/json.hpp"

namespace autopar::costmodel {

/// Arithmetic peaks, FLOP/s (dense: no structured-sparsity figures).
struct PeakFlops {
  double fp32 = 0;
  double fp16 = 0;  // fp16 and bf16
  double int8 = 0;  // integer ops/s

  double For(DTypeClass dtype_class) const;
};

struct DeviceSpec {
  std::string name;
  std::string description;
  PeakFlops peak_flops;
  double memory_bandwidth_bytes_per_s = 0;
  int64_t memory_bytes = 0;
  /// Fixed cost of one kernel launch (framework dispatch included).
  double kernel_overhead_us = 0;
  /// Fraction of the arithmetic peak each op class reaches.
  std::array<double, kNumOpClasses> efficiency{};
  /// Fraction of the memory bandwidth each op class reaches.
  std::array<double, kNumOpClasses> memory_efficiency{};

  double Efficiency(OpClass op_class) const { return efficiency[static_cast<size_t>(op_class)]; }
  double MemoryEfficiency(OpClass op_class) const {
    return memory_efficiency[static_cast<size_t>(op_class)];
  }
};

/// The roofline time of `cost` on `device` with its arithmetic at the peak of
/// `dtype_class` (see the file comment).
double PredictTimeUs(const NodeCost& cost, DTypeClass dtype_class, const DeviceSpec& device);
/// The same at the node's own dtype class (cost.dtype_class).
double PredictTimeUs(const NodeCost& cost, const DeviceSpec& device);

/// The sum of the nodes' predicted times: one device running them in turn.
double TotalTimeUs(absl::Span<const NodeCost> costs, const DeviceSpec& device);

/// Default efficiencies of GPU presets, by op class (see device.cc).
std::array<double, kNumOpClasses> DefaultGpuEfficiency();
/// Default efficiencies of the cpu preset, by op class (see device.cc).
std::array<double, kNumOpClasses> DefaultCpuEfficiency();

/// Cores of the plain `cpu` preset.
inline constexpr int kDefaultCpuCores = 8;

/// A generic x86 CPU with `cores` cores (see device.cc for the assumptions).
DeviceSpec CpuPreset(int cores);

/// Preset names, in the order `--help` lists them.
std::vector<std::string> DevicePresetNames();

/// A built-in preset by name (case-insensitive); "cpu:N" is the cpu preset
/// with N cores. NotFound naming the known presets otherwise.
absl::StatusOr<DeviceSpec> LookupDevicePreset(std::string_view name);

/// A device from JSON (schema in the file comment); `context` prefixes error
/// messages (the file name).
absl::StatusOr<DeviceSpec> DeviceSpecFromJson(const nlohmann::json& json,
                                              std::string_view context = "device");

/// A device file (schema in the file comment).
absl::StatusOr<DeviceSpec> LoadDeviceSpec(const std::filesystem::path& path);

/// A preset name, or else a device file path — what `--device` takes.
absl::StatusOr<DeviceSpec> ResolveDevice(std::string_view preset_or_path);

/// The full JSON of `device` (no "base"), loadable by DeviceSpecFromJson:
/// what a calibration writes.
nlohmann::ordered_json DeviceSpecToJson(const DeviceSpec& device);

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_DEVICE_H_
