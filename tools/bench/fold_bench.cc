// fold_bench: what constant folding adds to loading a model, as `info` loads
// it (load, check, build the IR, infer shapes). Runs the load with and
// without the folder, alternating, REPEATS times each, and prints each run's
// wall time and the ratio of the medians; then the time of one folding pass
// alone over the loaded graph (InferShapes runs up to three), which does not
// depend on how many inference rounds the folder saves. A benchmark, not a test: it prints
// numbers and asserts nothing.
//
//   build/tools/bench/fold_bench MODEL.onnx [REPEATS] [shape flags: --dim NAME=V ...]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "passes/fold_constants.h"
#include "pipeline/model_loading.h"

namespace autopar::bench {
namespace {

// Wall seconds of one LoadAndAnalyze; negative on failure (printed).
double TimedLoad(const std::string& path, const passes::ShapeOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<pipeline::LoadedModel> loaded = pipeline::LoadAndAnalyze(path, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!loaded.ok()) {
    std::fprintf(stderr, "fold_bench: %s\n", std::string(loaded.status().message()).c_str());
    return -1;
  }
  return seconds;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Run(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fold_bench MODEL.onnx [REPEATS] [--dim NAME=VALUE]...\n");
    return 1;
  }
  int repeats = 3;
  int next = 2;
  if (argc > 2 && absl::SimpleAtoi(argv[2], &repeats)) next = 3;
  passes::ShapeOptions with;
  with.require_static = false;  // as `info`
  for (int i = next; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    const size_t eq = value.find('=');
    int64_t n = 0;
    if (flag != "--dim" || eq == std::string::npos || !absl::SimpleAtoi(value.substr(eq + 1), &n)) {
      std::fprintf(stderr, "fold_bench: expected --dim NAME=VALUE, got %s %s\n", flag.c_str(),
                   value.c_str());
      return 1;
    }
    with.dim_values[value.substr(0, eq)] = n;
  }
  passes::ShapeOptions without = with;
  without.fold_constants = false;
  std::vector<double> folded;
  std::vector<double> unfolded;
  for (int r = 0; r < repeats; ++r) {
    const double a = TimedLoad(argv[1], without);
    const double b = TimedLoad(argv[1], with);
    if (a < 0 || b < 0) return 2;
    unfolded.push_back(a);
    folded.push_back(b);
    std::printf("run %d: without folding %.3f s, with folding %.3f s\n", r + 1, a, b);
  }
  const double ratio = Median(folded) / Median(unfolded);
  std::printf("median: without %.3f s, with %.3f s: folding adds %+.1f%%\n", Median(unfolded),
              Median(folded), (ratio - 1) * 100);

  absl::StatusOr<pipeline::LoadedModel> loaded = pipeline::LoadAndAnalyze(argv[1], with);
  if (!loaded.ok()) return 2;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<passes::FoldResult> pass =
      passes::FoldConstants(loaded->model, passes::FoldOptions{}, loaded->graph);
  const double pass_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!pass.ok()) return 2;
  std::printf("one folding pass: %.3f s (%lld nodes folded), %.1f%% of the median load without\n",
              pass_s, static_cast<long long>(pass->folded_nodes), 100 * pass_s / Median(unfolded));
  return 0;
}

}  // namespace
}  // namespace autopar::bench

int main(int argc, char** argv) { return autopar::bench::Run(argc, argv); }
