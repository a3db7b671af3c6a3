// TGA against its SGP seed: every graph family at 1k and 10k units
// on 2, 4 and 8 devices, with loose memory and with a tight cap (0.6 × the
// single-device peak per device). Prints a Markdown table — SGP's and TGA's
// simulated step, their ratio, when TGA came within 1% of its final step,
// both search times and their ratio — and the geometric mean of TGA / SGP
// over the loose and the tight cases. A benchmark, not a test: it prints
// numbers and asserts nothing.
//
// The lower bound (costmodel/lower_bound.h) says how much room was left.
//
//   build/tools/bench/tga_bench [--max-units 10000] [--min-units 1000] [--time-budget 10]
//                               [--threads 1] [--microbatches 1] [--family NAME]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "costmodel/cluster.h"
#include "costmodel/lower_bound.h"
#include "costmodel/simulator.h"
#include "search/sgp.h"
#include "search/tga.h"
#include "tools/bench/bench_setup.h"
#include "tools/bench/graph_families.h"

namespace autopar::bench {
namespace {

/// "Within 1% of the final step".
constexpr double kQualityTolerance = 0.01;

struct GeometricMean {
  double log_sum = 0;
  int count = 0;
  void Add(double value) {
    log_sum += std::log(value);
    ++count;
  }
  double Value() const { return count > 0 ? std::exp(log_sum / count) : 0; }
};

int Main(int argc, char** argv) {
  uint32_t max_units = 10000, min_units = 1000;
  std::string only_family;
  search::SearchOptions options;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--max-units") == 0) {
      max_units = static_cast<uint32_t>(std::atol(argv[i + 1]));
    } else if (std::strcmp(argv[i], "--time-budget") == 0) {
      options.time_budget_s = std::atof(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--threads") == 0) {
      options.threads = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--microbatches") == 0) {
      options.microbatches = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--min-units") == 0) {
      min_units = static_cast<uint32_t>(std::atol(argv[i + 1]));
    } else if (std::strcmp(argv[i], "--family") == 0) {
      only_family = argv[i + 1];
    }
  }
  std::printf("TGA budget %.1f s, %d thread(s), %d micro-batch(es)\n", options.time_budget_s,
              options.threads, options.microbatches);
  if (options.microbatches > 1) {
    std::printf("(the bound is one micro-batch's: pipelined steps may go below it)\n");
  }
  std::printf("\n");
  std::printf(
      "| family | units | devices | memory | SGP step µs | TGA step µs | TGA / SGP | SGP / bound | "
      "TGA / bound | TGA within 1%% at s | SGP ms | TGA s | TGA / SGP time | generations | best "
      "seed |\n");
  std::printf("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
  GeometricMean loose_mean, tight_mean;
  for (GraphFamily family : AllGraphFamilies()) {
    if (!only_family.empty() && GraphFamilyName(family) != only_family) continue;
    for (uint32_t units = min_units; units <= max_units; units *= 10) {
      const costmodel::CostGraph graph = MakeGraph(family, units, /*seed=*/1);
      const costmodel::Cluster roomy = BenchCluster(1, kLooseMemoryBytes);
      costmodel::Simulator single(graph, roomy);
      costmodel::Placement all_on_one;
      all_on_one.device.assign(graph.num_units(), 0);
      const int64_t single_peak_bytes = single.Run(all_on_one).devices[0].peak_memory_bytes;

      for (int devices : {2, 4, 8}) {
        for (bool tight : {false, true}) {
          const int64_t memory =
              tight ? static_cast<int64_t>(kTightFraction * single_peak_bytes) : kLooseMemoryBytes;
          const costmodel::Cluster cluster = BenchCluster(devices, memory);
          const char* memory_name = tight ? "tight" : "loose";
          // The bound is for one micro-batch; M micro-batches overlap at best M-fold.
          const double bound_us = costmodel::ComputeLowerBound(graph, cluster).bound_us;
          const std::string family_name = GraphFamilyName(family);

          // SGP's best of three: its milliseconds are easily disturbed.
          double sgp_ms = 1e300;
          absl::StatusOr<search::SgpResult> sgp;
          for (int repeat = 0; repeat < 3; ++repeat) {
            auto sgp_start = std::chrono::steady_clock::now();
            sgp = search::RunSgp(graph, cluster, options);
            sgp_ms = std::min(sgp_ms, MillisecondsSince(sgp_start));
          }
          double sgp_step_us = 0;
          bool sgp_feasible = false;
          if (sgp.ok()) {
            costmodel::Simulator simulator(graph, cluster);
            const costmodel::SimulationResult& sim =
                simulator.Run(sgp->placement, {.microbatches = options.microbatches});
            sgp_step_us = sim.step_time_us;
            sgp_feasible = !sim.memory_overflow;
          }

          // TGA, recording its best-so-far for the time to quality.
          std::vector<search::Progress> trace;
          search::SearchOptions tga_options = options;
          tga_options.on_progress = [&](const search::Progress& p) { trace.push_back(p); };
          auto tga_start = std::chrono::steady_clock::now();
          absl::StatusOr<search::TgaResult> tga = search::RunTga(graph, cluster, tga_options);
          const double tga_s = MillisecondsSince(tga_start) / 1e3;
          if (!tga.ok()) {
            std::printf(
                "| %s | %u | %d | %s | %s | — | — | — | — | — | %.2f | %.2f | — | — | no: %s |\n",
                family_name.c_str(), graph.num_units(), devices, memory_name,
                sgp.ok() ? std::to_string(sgp_step_us).c_str() : "—", sgp_ms, tga_s,
                std::string(tga.status().message()).c_str());
            std::fflush(stdout);
            continue;
          }
          double within_s = 0;
          for (const search::Progress& p : trace) {
            if (p.feasible && p.best_step_time_us <= tga->step_us * (1 + kQualityTolerance)) {
              within_s = p.elapsed_s;
              break;
            }
          }
          const double ratio = sgp_feasible ? tga->step_us / sgp_step_us : 0;
          if (sgp_feasible) (tight ? tight_mean : loose_mean).Add(ratio);
          std::printf(
              "| %s | %u | %d | %s | %.1f%s | %.1f | %.3f | %.3f | %.3f | %.2f | %.2f | %.2f | "
              "%.0f× | "
              "%lld | %s |\n",
              family_name.c_str(), graph.num_units(), devices, memory_name, sgp_step_us,
              sgp_feasible ? "" : " (over memory)", tga->step_us, ratio, sgp_step_us / bound_us,
              tga->step_us / bound_us, within_s, sgp_ms, tga_s,
              sgp_ms > 0 ? tga_s * 1e3 / sgp_ms : 0, static_cast<long long>(tga->generations),
              tga->best_seed.c_str());
          std::fflush(stdout);
        }
      }
    }
  }
  std::printf("\ngeometric mean of TGA / SGP: loose %.3f (%d cases), tight %.3f (%d cases)\n",
              loose_mean.Value(), loose_mean.count, tight_mean.Value(), tight_mean.count);
  return 0;
}

}  // namespace
}  // namespace autopar::bench

int main(int argc, char** argv) { return autopar::bench::Main(argc, argv); }
