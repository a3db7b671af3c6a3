// The Baechi baselines' speed and quality: round-robin, m-TOPO,
// m-ETF and m-SCT — and SGP for reference — on every graph family at 1k, 10k
// and 100k units, on 4 devices, with loose memory and with a tight cap (0.6 ×
// the single-device peak per device). Prints a Markdown table: search time,
// the simulated step over the lower bound, the worst device's peak memory
// over its capacity, and whether the plan fits. A benchmark, not a test: it
// prints numbers and asserts nothing.
//
//   build/tools/bench/baseline_bench [--max-units 100000] [--devices 4]
//                                    [--algos round-robin,m-topo,m-etf,m-sct,sgp]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "costmodel/cluster.h"
#include "costmodel/lower_bound.h"
#include "costmodel/simulator.h"
#include "search/search.h"
#include "tools/bench/bench_setup.h"
#include "tools/bench/graph_families.h"

namespace autopar::bench {
namespace {

/// Graphs up to this size are placed this many times (the fastest counts).
constexpr uint32_t kRepeatUpToUnits = 10000;
constexpr int kRepeats = 3;

struct Flags {
  uint32_t max_units = 100000;
  int devices = 4;
  std::vector<std::string> algorithms = {"round-robin", "m-topo", "m-etf", "m-sct", "sgp"};
};

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--max-units") == 0) {
      flags.max_units = static_cast<uint32_t>(std::atol(argv[i + 1]));
    } else if (std::strcmp(argv[i], "--devices") == 0) {
      flags.devices = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--algos") == 0) {
      flags.algorithms = absl::StrSplit(argv[i + 1], ',');
    }
  }
  return flags;
}

// One table row: the algorithm on the graph and cluster.
void PrintRow(const std::string& family, const costmodel::CostGraph& graph,
              const costmodel::Cluster& cluster, const char* memory_name,
              const std::string& algorithm) {
  const int repeats = graph.num_units() <= kRepeatUpToUnits ? kRepeats : 1;
  double best_ms = 1e300;
  absl::StatusOr<costmodel::Placement> placement;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    placement = search::Place(algorithm, graph, cluster, search::SearchOptions{});
    best_ms = std::min(
        best_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::printf("| %s | %u | %d | %s | %s | %.2f | ", family.c_str(), graph.num_units(),
              cluster.num_devices(), memory_name, algorithm.c_str(), best_ms);
  if (!placement.ok()) {
    std::printf("— | — | no: %s |\n", std::string(placement.status().message()).c_str());
    std::fflush(stdout);
    return;
  }
  costmodel::Simulator simulator(graph, cluster);
  const costmodel::SimulationResult& sim = simulator.Run(*placement);
  const costmodel::LowerBound bound = costmodel::ComputeLowerBound(graph, cluster);
  double peak_over_cap = 0;
  for (int d = 0; d < cluster.num_devices(); ++d) {
    peak_over_cap =
        std::max(peak_over_cap, static_cast<double>(sim.devices[d].peak_memory_bytes) /
                                    static_cast<double>(cluster.device(d).memory_bytes));
  }
  std::printf("%.3f | %.3f | %s |\n", sim.step_time_us / bound.bound_us, peak_over_cap,
              sim.memory_overflow ? "NO" : "yes");
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  std::printf(
      "| family | units | devices | memory | algorithm | search ms | step / lower bound | "
      "peak / cap | feasible |\n");
  std::printf("|---|---:|---:|---|---|---:|---:|---:|---|\n");
  for (GraphFamily family : AllGraphFamilies()) {
    for (uint32_t units = 1000; units <= flags.max_units; units *= 10) {
      const costmodel::CostGraph graph = MakeGraph(family, units, /*seed=*/1);
      // The single-device peak, from a device with room for everything.
      const costmodel::Cluster roomy = BenchCluster(1, kLooseMemoryBytes);
      costmodel::Placement all_on_one;
      all_on_one.device.assign(graph.num_units(), 0);
      const int64_t single_peak_bytes =
          costmodel::Simulator(graph, roomy).Run(all_on_one).devices[0].peak_memory_bytes;
      for (bool tight : {false, true}) {
        const int64_t memory =
            tight ? static_cast<int64_t>(kTightFraction * static_cast<double>(single_peak_bytes))
                  : kLooseMemoryBytes;
        const costmodel::Cluster cluster = BenchCluster(flags.devices, memory);
        for (const std::string& algorithm : flags.algorithms) {
          PrintRow(GraphFamilyName(family), graph, cluster, tight ? "tight" : "loose", algorithm);
        }
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace autopar::bench

int main(int argc, char** argv) { return autopar::bench::Main(argc, argv); }
