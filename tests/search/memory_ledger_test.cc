// The memory ledger's two modes on a chain computed by hand, and
// PlaceWithinMemory's promise on random graphs.
#include "search/memory_ledger.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/feasibility.h"
#include "tests/search/placer_testing.h"
#include "tests/search/test_graphs.h"

namespace autopar::search {
namespace {

using costmodel::Cluster;
using costmodel::CostGraph;
using costmodel::Placement;
using testing::BuildGraph;
using testing::Chain;
using testing::TestCluster;

constexpr int64_t kGiB = int64_t{1} << 30;

// u0 → u1 → u2 → u3: 1,000 parameter bytes each, 100-byte tensors.
CostGraph ChainOfFour() { return BuildGraph(Chain({100, 100, 100}, 10, 1000)); }

TEST(MemoryLedgerTest, InOrderFreesATensorOnceItsReadersArePlaced) {
  CostGraph g = ChainOfFour();
  MemoryLedger ledger(g, TestCluster(1, kGiB), LedgerMode::kInOrder);
  EXPECT_EQ(ledger.BytesWith(0, 0), 1000 + 100);
  ledger.Place(0, 0);
  EXPECT_EQ(ledger.BytesWith(1, 0), 2000 + 200);  // t0 and t1 live while u1 runs
  ledger.Place(1, 0);
  EXPECT_EQ(ledger.freed_count(0), 1u);  // t0
  ledger.Place(2, 0);
  EXPECT_EQ(ledger.BytesWith(3, 0), 4000 + 200);  // the peak stays 200
  ledger.Place(3, 0);
  EXPECT_EQ(ledger.BytesOn(0), 4200);
}

TEST(MemoryLedgerTest, ProvableKeepsEveryTensor) {
  CostGraph g = ChainOfFour();
  MemoryLedger ledger(g, TestCluster(1, kGiB), LedgerMode::kProvable);
  for (uint32_t u = 0; u < 3; ++u) ledger.Place(u, 0);
  EXPECT_EQ(ledger.BytesWith(3, 0), 4000 + 300);
  ledger.Place(3, 0);
  EXPECT_EQ(ledger.BytesOn(0), 4300);
  EXPECT_EQ(ledger.freed_count(0), 0u);
}

TEST(MemoryLedgerTest, AReceivedTensorCountsOnTheReader) {
  CostGraph g = ChainOfFour();
  MemoryLedger ledger(g, TestCluster(2, kGiB), LedgerMode::kInOrder);
  ledger.Place(0, 0);
  EXPECT_EQ(ledger.BytesWith(1, 1), 1000 + 100 + 100);
  ledger.Place(1, 1);
  EXPECT_EQ(ledger.freed_count(0), 1u);  // t0 left device 0 …
  EXPECT_EQ(ledger.freed_count(1), 1u);  // … and its copy device 1
}

TEST(MemoryLedgerTest, HeldBackMemoryAndUnitsThatNeverFit) {
  CostGraph g = ChainOfFour();
  const std::vector<int64_t> held_back = {900};  // 2,100 bytes left
  MemoryLedger ledger(g, TestCluster(1, 3000), LedgerMode::kInOrder, held_back);
  EXPECT_TRUE(ledger.Fits(0, 0));  // 1,100
  ledger.Place(0, 0);
  EXPECT_FALSE(ledger.Fits(1, 0));  // 2,200
  EXPECT_TRUE(
      ledger.NeverFits(1, 0));  // no freeing can help: it is all parameters and u1's tensors
}

TEST(MemoryLedgerTest, AnOverflowOnlyTheSimulatorSeesIsRepaired) {
  // p (device 0) sends t (1,000 bytes) to r; x (100 µs, 1,000 bytes of
  // workspace) runs first on device 1. In placement order device 1 never
  // holds both, but t arrives at 12 µs while x still runs: 2,000 bytes of
  // 1,500. The repair holds memory back on device 1, where x then fits no
  // longer; the provable ledger puts r beside p.
  costmodel::CostGraph::Builder b(1);
  const uint32_t p = b.AddUnit({.name = "p", .op = "Op", .compute_us = {10}});
  const uint32_t x = b.AddUnit({.name = "x", .op = "Op", .compute_us = {100}, .temp_bytes = 1000});
  const uint32_t r = b.AddUnit({.name = "r", .op = "Op", .compute_us = {10}});
  b.AddUse(b.AddTensor({.name = "t", .producer = p, .bytes = 1000}), r);
  absl::StatusOr<CostGraph> g = std::move(b).Build();
  ASSERT_TRUE(g.ok()) << g.status();
  Cluster c = TestCluster(2, 1500);
  const std::vector<std::vector<int>> preferred = {{0}, {1}, {1, 0}};  // per unit
  int tries = 0;
  absl::StatusOr<Placement> placement =
      PlaceWithinMemory(*g, c, {}, [&](MemoryLedger& ledger) -> std::optional<Placement> {
        ++tries;
        Placement result;
        for (uint32_t u : {p, x, r}) {
          auto fits = [&](int d) { return ledger.Fits(u, d); };
          auto it = std::find_if(preferred[u].begin(), preferred[u].end(), fits);
          if (it == preferred[u].end()) return std::nullopt;
          ledger.Place(u, *it);
          result.device.push_back(*it);
        }
        return result;
      });
  testing::ExpectFeasible(*g, c, placement);
  EXPECT_EQ(tries, 3);  // in order, repaired in order, provable
  EXPECT_THAT(placement->device, ::testing::ElementsAre(0, 1, 0));
}

TEST(MemoryLedgerTest, PlaceWithinMemoryNeverReturnsAnOverflow) {
  // A placer that puts every unit on the first device it fits by the ledger.
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    CostGraph g = BuildGraph(testing::RandomDag(200, seed, /*window=*/20));
    Cluster c = TestCluster(3, MinimumMemoryBytes(g) / 2);
    absl::StatusOr<Placement> p =
        PlaceWithinMemory(g, c, {}, [&](MemoryLedger& ledger) -> std::optional<Placement> {
          Placement placement;
          for (uint32_t u = 0; u < g.num_units(); ++u) {
            int d = 0;
            while (d < c.num_devices() && !ledger.Fits(u, d)) ++d;
            if (d == c.num_devices()) return std::nullopt;
            ledger.Place(u, d);
            placement.device.push_back(d);
          }
          return placement;
        });
    testing::ExpectFeasible(g, c, p);
  }
}

}  // namespace
}  // namespace autopar::search
