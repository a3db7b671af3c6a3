// Simulator speed: one simulated step of each graph family at 1k, 10k, 100k
// and 1M units on 8 devices (contiguous blocks of the topological order).
// A benchmark, not a test: it prints numbers and asserts nothing.
//
//   build/tools/bench/simulator_bench [--max-units 1000000]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "costmodel/cluster.h"
#include "costmodel/simulator.h"
#include "tools/bench/graph_families.h"

namespace autopar::bench {
namespace {

constexpr int kDevices = 8;

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

int Main(int argc, char** argv) {
  uint32_t max_units = 1000000;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--max-units") == 0) max_units = static_cast<uint32_t>(std::atol(argv[i + 1]));
  }
  costmodel::DeviceSpec device;
  device.name = "bench";
  device.memory_bytes = int64_t{1} << 40;
  costmodel::Cluster cluster = costmodel::MakeHomogeneousCluster(device, kDevices, 0, 100e9, 5);

  std::printf("| family | units | edges | first run ms | steady run ms | step time µs |\n");
  std::printf("|---|---:|---:|---:|---:|---:|\n");
  for (GraphFamily family : AllGraphFamilies()) {
    for (uint32_t units = 1000; units <= max_units; units *= 10) {
      costmodel::CostGraph graph = MakeGraph(family, units, /*seed=*/1);
      costmodel::Placement placement;
      for (uint32_t u = 0; u < graph.num_units(); ++u) {
        placement.device.push_back(static_cast<int32_t>(uint64_t{u} * kDevices / graph.num_units()));
      }
      costmodel::Simulator simulator(graph, cluster);
      auto start = std::chrono::steady_clock::now();
      simulator.Run(placement);
      const double first_ms = MillisecondsSince(start);
      const int repeats = units <= 10000 ? 20 : 3;
      start = std::chrono::steady_clock::now();
      double step = 0;
      for (int r = 0; r < repeats; ++r) step = simulator.Run(placement).step_time_us;
      const double steady_ms = MillisecondsSince(start) / repeats;
      std::printf("| %s | %u | %u | %.2f | %.2f | %.0f |\n", GraphFamilyName(family).c_str(),
                  graph.num_units(), graph.num_edges(), first_ms, steady_ms, step);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace autopar::bench

int main(int argc, char** argv) { return autopar::bench::Main(argc, argv); }
