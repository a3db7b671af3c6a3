// The split search of one series phase: hand-checked spans, the step limit,
// and a repeated phase searched once.
#include "costmodel/phase_partitions.h"

#include <optional>

#include "gtest/gtest.h"

namespace autopar::costmodel {
namespace {

// Entry cut → `width` units of `time_us` side by side → exit cut, every
// tensor `transfer_us` between devices.
PhaseGraph Fan(int width, double time_us, double transfer_us) {
  PhaseGraph phase;
  phase.time_us.assign(width + 2, time_us);
  const auto exit = static_cast<uint32_t>(width + 1);
  for (uint32_t u = 1; u < exit; ++u) {
    phase.edges.push_back({0, u, transfer_us});
    phase.edges.push_back({u, exit, transfer_us});
  }
  return phase;
}

TEST(PhasePartitionsTest, EqualUnitsShareTheDevicesEvenly) {
  // Three 10 µs units on two devices: one device runs two of them.
  EXPECT_EQ(LeastPhaseSpanUs(Fan(3, 10, 0), 2, 1000), std::optional<double>(20));
  EXPECT_EQ(LeastPhaseSpanUs(Fan(3, 10, 0), 3, 1000), std::optional<double>(10));
  EXPECT_EQ(LeastPhaseSpanUs(Fan(3, 10, 0), 1, 1000), std::optional<double>(30));
}

TEST(PhasePartitionsTest, TransfersKeepUnitsTogether) {
  // Apart, a unit pays 100 µs in and out: all three on one device is best.
  EXPECT_EQ(LeastPhaseSpanUs(Fan(3, 10, 100), 4, 1000), std::optional<double>(30));
  // At 5 µs each way a unit apart ends at 20, as two units together do.
  EXPECT_EQ(LeastPhaseSpanUs(Fan(3, 10, 5), 2, 1000), std::optional<double>(20));
  EXPECT_EQ(LeastPhaseSpanUs(Fan(3, 10, 5), 3, 1000), std::optional<double>(20));
}

TEST(PhasePartitionsTest, AChainBesideABranchPaysOneTransfer) {
  // entry → a (30) → b (30) → exit and entry → c (40) → exit, 10 µs apart:
  // c beside the chain pays 10 in and 10 out but ends at 60, as the chain.
  PhaseGraph phase;
  phase.time_us = {0, 30, 30, 40, 0};
  phase.edges = {{0, 1, 10}, {1, 2, 10}, {2, 4, 10}, {0, 3, 10}, {3, 4, 10}};
  EXPECT_EQ(LeastPhaseSpanUs(phase, 2, 1000), std::optional<double>(60));
  // At 20 µs each c apart ends at 80, still before all three together (100).
  for (PhaseGraph::Edge& e : phase.edges) e.transfer_us = 20;
  EXPECT_EQ(LeastPhaseSpanUs(phase, 2, 1000), std::optional<double>(80));
}

TEST(PhasePartitionsTest, ASearchCutShortProvesNothing) {
  EXPECT_EQ(LeastPhaseSpanUs(Fan(6, 10, 1), 4, 3), std::nullopt);
  EXPECT_NE(LeastPhaseSpanUs(Fan(6, 10, 1), 4, 100000), std::nullopt);
}

TEST(PhasePartitionsTest, ARepeatedPhaseIsSearchedOnce) {
  // Enough steps for one search of this phase, not for two.
  const PhaseGraph phase = Fan(6, 10, 1);
  int64_t one_search = 1;
  while (!LeastPhaseSpanUs(phase, 4, one_search)) ++one_search;
  PhaseSpanCache cache(4, 100000, one_search);
  const std::optional<double> first = cache.LeastSpanUs(phase);
  ASSERT_NE(first, std::nullopt);
  EXPECT_EQ(cache.LeastSpanUs(phase), first);
  EXPECT_EQ(cache.LeastSpanUs(Fan(5, 10, 1)), std::nullopt);  // the steps are spent
}

}  // namespace
}  // namespace autopar::costmodel
