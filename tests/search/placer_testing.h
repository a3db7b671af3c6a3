// What the tests of the placers share: a graph of independent units, and the
// checks every placer's result must pass — a valid placement within every
// device's memory in the simulator, the same result on a second run, and the
// error when the model does not fit.
#ifndef AUTOPAR_TESTS_SEARCH_PLACER_TESTING_H_
#define AUTOPAR_TESTS_SEARCH_PLACER_TESTING_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/search.h"
#include "tests/search/test_graphs.h"

namespace autopar::search::testing {

/// A placer behind the common interface.
using PlaceFunction = absl::StatusOr<costmodel::Placement> (*)(const costmodel::CostGraph&,
                                                               const costmodel::Cluster&,
                                                               const SearchOptions&);

/// `count` independent units of 10 µs, each with `param_bytes` of weights.
inline GraphSpec Independent(int count, int64_t param_bytes = 0) {
  GraphSpec spec;
  spec.units.assign(count, {10, param_bytes});
  return spec;
}

/// Expects `placement` to be ok, valid and within every device's memory in
/// the simulator; returns the simulated step time (0 when it is not ok).
inline double ExpectFeasible(const costmodel::CostGraph& graph, const costmodel::Cluster& cluster,
                             const absl::StatusOr<costmodel::Placement>& placement) {
  EXPECT_TRUE(placement.ok()) << placement.status();
  if (!placement.ok()) return 0;
  EXPECT_TRUE(costmodel::CheckPlacement(graph, cluster, *placement).ok());
  costmodel::Simulator simulator(graph, cluster);
  const costmodel::SimulationResult& result = simulator.Run(*placement);
  EXPECT_FALSE(result.memory_overflow) << "over by " << result.overflow_bytes << " bytes";
  return result.step_time_us;
}

/// ExpectFeasible, and a second run places every unit alike.
inline void ExpectFeasibleAndDeterministic(const costmodel::CostGraph& graph,
                                           const costmodel::Cluster& cluster, PlaceFunction place) {
  const absl::StatusOr<costmodel::Placement> first = place(graph, cluster, {});
  ExpectFeasible(graph, cluster, first);
  const absl::StatusOr<costmodel::Placement> second = place(graph, cluster, {});
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->device, second->device);
  EXPECT_EQ(first->priority, second->priority);
}

/// The placer says the model does not fit (feasibility.h's InfeasibleError).
inline void ExpectDoesNotFit(const costmodel::CostGraph& graph, const costmodel::Cluster& cluster,
                             PlaceFunction place) {
  const absl::StatusOr<costmodel::Placement> placement = place(graph, cluster, {});
  ASSERT_EQ(placement.status().code(), absl::StatusCode::kResourceExhausted) << placement.status();
  EXPECT_THAT(placement.status().message(), ::testing::HasSubstr("does not fit"));
}

}  // namespace autopar::search::testing

#endif  // AUTOPAR_TESTS_SEARCH_PLACER_TESTING_H_
