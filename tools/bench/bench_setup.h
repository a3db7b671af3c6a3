// The setting the synthetic-family benchmarks share, so that their numbers
// compare: a homogeneous cluster of "bench" devices on 100 GB/s, 5 µs links;
// "loose" memory that never binds and "tight" memory at 0.6× the
// single-device peak; and the clocks they time searches with.
#ifndef AUTOPAR_TOOLS_BENCH_BENCH_SETUP_H_
#define AUTOPAR_TOOLS_BENCH_BENCH_SETUP_H_

#include <time.h>

#include <chrono>
#include <cstdint>

#include "costmodel/cluster.h"
#include "costmodel/device.h"

namespace autopar::bench {

inline constexpr int64_t kLooseMemoryBytes = int64_t{1} << 50;
inline constexpr double kTightFraction = 0.6;
inline constexpr double kLinkBandwidthBytesPerS = 100e9;
inline constexpr double kLinkLatencyUs = 5;

/// `devices` bench devices with `memory_bytes` each.
inline costmodel::Cluster BenchCluster(int devices, int64_t memory_bytes) {
  costmodel::DeviceSpec device;
  device.name = "bench";
  device.memory_bytes = memory_bytes;
  return costmodel::MakeHomogeneousCluster(device, devices, memory_bytes, kLinkBandwidthBytesPerS,
                                           kLinkLatencyUs);
}

inline double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

/// This thread's CPU time: steadier than wall time on a shared machine.
inline double ThreadCpuMs() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

}  // namespace autopar::bench

#endif  // AUTOPAR_TOOLS_BENCH_BENCH_SETUP_H_
