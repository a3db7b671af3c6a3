// The placement search interface: every algorithm — SGP, TGA
// and the baselines — takes the frozen CostGraph and the Cluster and returns
// a Placement (a device, and a priority, per unit). Each algorithm lives in
// its own .h/.cc pair; Place() dispatches by name.
#ifndef AUTOPAR_SEARCH_SEARCH_H_
#define AUTOPAR_SEARCH_SEARCH_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"

namespace autopar::search {

/// What an iterative search reports while it runs.
struct Progress {
  int64_t iteration = 0;
  double best_step_time_us = 0;
  bool feasible = false;
  double elapsed_s = 0;
};

/// The node graph a unit graph was coarsened from, for searches that refine
/// below the units (TGA). Unset (graph null) when the units are all there is.
struct NodeLevel {
  /// Must outlive the search.
  const costmodel::CostGraph* graph = nullptr;
  /// Node → its unit; the units' graph is the one the search is given.
  const std::vector<uint32_t>* unit_of_node = nullptr;
  /// Per unit, 1 when its nodes must stay on one device (values Send/Recv
  /// cannot carry join some of them); empty: no unit is locked.
  std::vector<uint8_t> locked_units;
  /// The node graph's lower bound (costmodel::ComputeLowerBound) at the
  /// options' micro-batches, when the caller has it; unset: a search that
  /// needs it computes it (tens of ms on 10k nodes).
  std::optional<double> lower_bound_us;
  /// As SearchOptions::objective, for a placement of these nodes.
  std::function<double(absl::Span<const int32_t> node_device)> objective;
};

struct SearchOptions {
  uint64_t seed = 1;
  /// Wall-clock budget of iterative searches (TGA); one-shot ones ignore it.
  double time_budget_s = 10;
  /// Iterations (TGA: generations) after which iterative searches stop; 0:
  /// no limit. Unlike the time budget, it bounds a run the same way on every
  /// machine, so the result is reproducible.
  int64_t max_iterations = 0;
  /// Worker threads of searches that evaluate in parallel. Results never
  /// depend on it.
  int threads = 1;
  /// Micro-batches the placement will run with (the simulator's setting).
  int microbatches = 1;
  /// Called now and then by iterative searches; may be empty.
  std::function<void(const Progress&)> on_progress;
  /// Set to let a search refine below the units (TGA does).
  NodeLevel nodes;
  /// The lower bound of the graph the search is given, at `microbatches`,
  /// when the caller has it; unset: a search that needs it computes it.
  std::optional<double> lower_bound_us;
  /// Set: the step time that searches which compare whole placements
  /// minimise, for a placement of the given graph's units, instead of the
  /// node-level simulator's (memory still comes from the simulator). It
  /// must be safe to call from several threads at once. The planner sets it
  /// for a training step that runs as a pipeline (pipeline/planning.h, Note
  /// [Training judge]); search/ stays below pipeline/.
  std::function<double(absl::Span<const int32_t> unit_device)> objective;
};

/// What Place() found.
struct SearchResult {
  /// A device (and maybe priorities) per unit.
  costmodel::Placement units;
  /// A device (and priorities) per node of options.nodes.graph when the search
  /// refined below the units; empty otherwise (then each node goes where its
  /// unit went).
  costmodel::Placement nodes;
};

/// Names Place() accepts, in the order `compare` lists them.
std::vector<std::string> AlgorithmNames();

/// Runs the named algorithm. Fails with ResourceExhausted when it finds no
/// placement within the devices' memory (the message says how much memory
/// the model needs and how many devices would do), and InvalidArgument for an
/// unknown name.
absl::StatusOr<costmodel::Placement> Place(std::string_view algorithm,
                                           const costmodel::CostGraph& graph,
                                           const costmodel::Cluster& cluster,
                                           const SearchOptions& options);

/// Place(), with the node-level placement of a search that went below the
/// units (options.nodes: TGA refines there, SGP schedules the nodes).
absl::StatusOr<SearchResult> PlaceDetailed(std::string_view algorithm,
                                           const costmodel::CostGraph& graph,
                                           const costmodel::Cluster& cluster,
                                           const SearchOptions& options);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_SEARCH_H_
