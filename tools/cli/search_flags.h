// The flags every command that runs a placement search shares (`place`,
// `compare` and the main command): which algorithm, its seed, time budget,
// generation limit and threads, the micro-batches the plan runs with, and
// whether to show progress.
#ifndef AUTOPAR_TOOLS_CLI_SEARCH_FLAGS_H_
#define AUTOPAR_TOOLS_CLI_SEARCH_FLAGS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "search/search.h"
#include "tools/cli/args.h"

namespace autopar::tools {

/// --algo, --seed, --time-budget, --max-generations, --threads,
/// --microbatches (a count or "auto"), --max-microbatches, --quiet,
/// --allow-slower-split. --max-generations without --time-budget lifts the
/// time budget: the search is then bounded by generations (and convergence)
/// only, and gives the same plan on every run and machine.
std::vector<FlagSpec> SearchFlagSpecs();

struct SearchFlags {
  /// --algo; "sgp" when not given.
  std::string algorithm = "sgp";
  search::SearchOptions options;
  /// --quiet: no progress output even on a terminal.
  bool quiet = false;
  /// --allow-slower-split: keep the searched split even when the whole model
  /// on one device is predicted faster (pipeline/planning.h, Note [Do not
  /// split]).
  bool allow_slower_split = false;
  /// --microbatches auto: the most micro-batches to try (--max-microbatches,
  /// default 32); unset for a fixed count (pipeline/planning.h, Note
  /// [Micro-batches auto]).
  std::optional<int> auto_microbatches;
};

/// Reads the flags of SearchFlagSpecs(); a malformed value is an
/// InvalidArgument naming the flag. The algorithm name is checked later, by
/// search::Place.
/// `always_auto`: the command always chooses the micro-batch count (`size`):
/// it takes no --microbatches, and --max-microbatches stands alone.
absl::StatusOr<SearchFlags> SearchFlagsFromArgs(const ParsedArgs& args, bool always_auto = false);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_SEARCH_FLAGS_H_
