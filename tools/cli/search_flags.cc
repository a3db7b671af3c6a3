#include "tools/cli/search_flags.h"

#include <limits>

#include "absl/strings/numbers.h"
#include "tools/cli/quantities.h"

namespace autopar::tools {

std::vector<FlagSpec> SearchFlagSpecs() {
  std::vector<FlagSpec> specs;
  for (const char* name : {"algo", "seed", "time-budget", "max-generations", "threads",
                           "microbatches", "max-microbatches"}) {
    specs.push_back({name, true});
  }
  specs.push_back({"quiet", false});
  specs.push_back({"allow-slower-split", false});
  return specs;
}

absl::StatusOr<SearchFlags> SearchFlagsFromArgs(const ParsedArgs& args, bool always_auto) {
  SearchFlags flags;
  search::SearchOptions& options = flags.options;
  if (std::optional<std::string> algo = args.Get("algo")) flags.algorithm = *algo;
  std::optional<std::string> m = args.Get("microbatches");
  if (always_auto) m = "auto";
  if (m && *m == "auto") {
    int max = 32;
    if (std::optional<std::string> k = args.Get("max-microbatches")) {
      if (!absl::SimpleAtoi(*k, &max) || max < 1 || max > 4096) {
        return absl::InvalidArgumentError("--max-microbatches must be a number from 1 to 4096");
      }
    }
    flags.auto_microbatches = max;
  } else if (m) {
    if (!absl::SimpleAtoi(*m, &options.microbatches) || options.microbatches < 1) {
      return absl::InvalidArgumentError("--microbatches must be a positive number or auto");
    }
  }
  if (!flags.auto_microbatches && args.Has("max-microbatches"))
    return absl::InvalidArgumentError("--max-microbatches goes with --microbatches auto");
  if (std::optional<std::string> seed = args.Get("seed")) {
    if (!absl::SimpleAtoi(*seed, &options.seed)) {
      return absl::InvalidArgumentError("--seed must be a non-negative number");
    }
  }
  if (std::optional<std::string> threads = args.Get("threads")) {
    if (!absl::SimpleAtoi(*threads, &options.threads) || options.threads < 1 ||
        options.threads > 1024) {
      return absl::InvalidArgumentError("--threads must be a number from 1 to 1024");
    }
  }
  if (std::optional<std::string> budget = args.Get("time-budget")) {
    absl::StatusOr<double> seconds = ParseDurationSeconds(*budget);
    if (!seconds.ok()) return seconds.status();
    if (*seconds <= 0) return absl::InvalidArgumentError("--time-budget must be positive");
    options.time_budget_s = *seconds;
  }
  if (std::optional<std::string> generations = args.Get("max-generations")) {
    if (!absl::SimpleAtoi(*generations, &options.max_iterations) || options.max_iterations < 1) {
      return absl::InvalidArgumentError("--max-generations must be a positive number");
    }
    // Bounded by generations alone, a run is reproducible on any machine; a
    // default time budget would quietly cut it short on a slow one.
    if (!args.Has("time-budget")) options.time_budget_s = std::numeric_limits<double>::infinity();
  }
  flags.quiet = args.Has("quiet");
  flags.allow_slower_split = args.Has("allow-slower-split");
  return flags;
}

}  // namespace autopar::tools
