// What every placer's tests check of a result: it is a valid placement and
// the simulator finds no device over its memory.
#ifndef AUTOPAR_TESTS_SEARCH_PLACER_CHECKS_H_
#define AUTOPAR_TESTS_SEARCH_PLACER_CHECKS_H_

#include "absl/status/statusor.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "gtest/gtest.h"

namespace autopar::search::testing {

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

}  // namespace autopar::search::testing

#endif  // AUTOPAR_TESTS_SEARCH_PLACER_CHECKS_H_
