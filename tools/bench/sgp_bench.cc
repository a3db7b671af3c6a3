// SGP's speed and quality: every graph family at 1k, 10k, 100k and
// 1M units on 2, 4 and 8 devices, with loose memory and with a tight cap
// (0.6 × the single-device peak per device). Prints a Markdown table: search
// time, the simulated step over the lower bound, the speed-up over one
// device, the worst device's peak memory over its capacity, and whether the
// plan fits. A benchmark, not a test: it prints numbers and asserts nothing.
//
//   build/tools/bench/sgp_bench [--max-units 1000000]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "costmodel/cluster.h"
#include "costmodel/lower_bound.h"
#include "costmodel/simulator.h"
#include "search/sgp.h"
#include "tools/bench/bench_setup.h"
#include "tools/bench/graph_families.h"

namespace autopar::bench {
namespace {

int Main(int argc, char** argv) {
  uint32_t max_units = 1000000;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--max-units") == 0) {
      max_units = static_cast<uint32_t>(std::atol(argv[i + 1]));
    }
  }
  std::printf(
      "| family | units | devices | memory | search ms | search cpu ms | plan | step / lower bound "
      "| speed-up "
      "over one device | peak / cap | feasible |\n");
  std::printf("|---|---:|---:|---|---:|---:|---|---:|---:|---:|---|\n");
  for (GraphFamily family : AllGraphFamilies()) {
    for (uint32_t units = 1000; units <= max_units; units *= 10) {
      const costmodel::CostGraph graph = MakeGraph(family, units, /*seed=*/1);
      // One device with room for everything: the baseline step and peak.
      const costmodel::Cluster roomy = BenchCluster(1, kLooseMemoryBytes);
      costmodel::Simulator single(graph, roomy);
      costmodel::Placement all_on_one;
      all_on_one.device.assign(graph.num_units(), 0);
      const costmodel::SimulationResult& alone = single.Run(all_on_one);
      const double single_step_us = alone.step_time_us;
      const int64_t single_peak_bytes = alone.devices[0].peak_memory_bytes;

      for (int devices : {2, 4, 8}) {
        for (bool tight : {false, true}) {
          const int64_t memory =
              tight ? static_cast<int64_t>(kTightFraction * single_peak_bytes) : kLooseMemoryBytes;
          const costmodel::Cluster cluster = BenchCluster(devices, memory);
          const int repeats = graph.num_units() <= 10000 ? 5 : 1;
          double best_ms = 1e300, best_cpu_ms = 1e300;
          absl::StatusOr<search::SgpResult> result;
          for (int r = 0; r < repeats; ++r) {
            const auto start = std::chrono::steady_clock::now();
            const double start_cpu_ms = ThreadCpuMs();
            result = search::RunSgp(graph, cluster, search::SearchOptions{});
            best_cpu_ms = std::min(best_cpu_ms, ThreadCpuMs() - start_cpu_ms);
            best_ms = std::min(best_ms, MillisecondsSince(start));
          }
          const char* memory_name = tight ? "tight" : "loose";
          if (!result.ok()) {
            std::printf("| %s | %u | %d | %s | %.2f | %.2f | — | — | — | — | no: %s |\n",
                        GraphFamilyName(family).c_str(), graph.num_units(), devices, memory_name,
                        best_ms, best_cpu_ms, std::string(result.status().message()).c_str());
            std::fflush(stdout);
            continue;
          }
          costmodel::Simulator simulator(graph, cluster);
          const costmodel::SimulationResult& sim = simulator.Run(result->placement);
          const costmodel::LowerBound bound = costmodel::ComputeLowerBound(graph, cluster);
          double peak_over_cap = 0;
          for (int d = 0; d < devices; ++d) {
            peak_over_cap =
                std::max(peak_over_cap, static_cast<double>(sim.devices[d].peak_memory_bytes) /
                                            static_cast<double>(cluster.device(d).memory_bytes));
          }
          std::printf("| %s | %u | %d | %s | %.2f | %.2f | %s ×%d%s | %.3f | %.2f | %s | %s |\n",
                      GraphFamilyName(family).c_str(), graph.num_units(), devices, memory_name,
                      best_ms, best_cpu_ms, result->strategy.c_str(), result->devices_used,
                      result->simulations > 0 ? " (sim)" : "", sim.step_time_us / bound.bound_us,
                      single_step_us / sim.step_time_us,
                      tight ? std::to_string(peak_over_cap).substr(0, 5).c_str() : "≈0",
                      sim.memory_overflow ? "NO" : "yes");
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace autopar::bench

int main(int argc, char** argv) { return autopar::bench::Main(argc, argv); }
