// The capped-chunk cutter that SGP's segments and interleaved node chunks
// share, on prefix sums written by hand.
#include "search/capped_chunks.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace autopar::search {
namespace {

using ::testing::ElementsAre;

/// Prefix sums of `work`: n + 1 values from 0.
std::vector<double> PrefixOf(const std::vector<double>& work) {
  std::vector<double> prefix(1, 0);
  for (double w : work) prefix.push_back(prefix.back() + w);
  return prefix;
}

TEST(CappedChunkerTest, FillTakesTheLongestRunWithinEachCap) {
  const std::vector<double> prefix = PrefixOf({1, 2, 3, 4});
  CappedChunker chunker(std::vector<ChunkDevice>(2, {.prefix_us = &prefix}));
  EXPECT_TRUE(chunker.Fill({.first_us = 6}));
  EXPECT_THAT(chunker.ends(), ElementsAre(3, 4));
  EXPECT_FALSE(chunker.Fill({.first_us = 3}));  // 1 + 2, then 3: the 4 is left
  EXPECT_THAT(chunker.ends(), ElementsAre(2, 3));
}

TEST(CappedChunkerTest, GrowingCapsGiveLaterChunksMore) {
  const std::vector<double> prefix = PrefixOf(std::vector<double>(9, 1));
  CappedChunker chunker(std::vector<ChunkDevice>(3, {.prefix_us = &prefix}));
  // Caps 2, 3 and 4 (growth 1: the last is twice the first).
  EXPECT_TRUE(chunker.Fill({.first_us = 2, .growth = 1}));
  EXPECT_THAT(chunker.ends(), ElementsAre(2, 5, 9));
}

TEST(CappedChunkerTest, AMemoryBoundEndsAChunkEarly) {
  const std::vector<double> prefix = PrefixOf({1, 1, 1, 1});
  // From any start, a chunk holds at most two positions.
  const std::vector<uint32_t> two_at_most = {2, 3, 4, 4};
  CappedChunker bounded(std::vector<ChunkDevice>(2, {&prefix, &two_at_most}));
  EXPECT_TRUE(bounded.Fill({.first_us = 100}));
  EXPECT_THAT(bounded.ends(), ElementsAre(2, 4));
  CappedChunker three(std::vector<ChunkDevice>(
      {{&prefix, &two_at_most}, {&prefix, &two_at_most}, {&prefix, &two_at_most}}));
  EXPECT_TRUE(three.Fill({.first_us = 100}));
  EXPECT_THAT(three.ends(), ElementsAre(2, 4, 4));  // after the last position: empty
}

TEST(CappedChunkerTest, AnEmptyChunkFailsOnlyWhenEveryChunkMustWork) {
  // The second position alone exceeds a cap of 2.
  const std::vector<double> prefix = PrefixOf({1, 3, 0.5});
  CappedChunker chunker(std::vector<ChunkDevice>(3, {.prefix_us = &prefix}));
  EXPECT_FALSE(chunker.Fill({.first_us = 2, .empty = EmptyChunk::kFails}));
  // Allowed: the second chunk stays empty, but nothing takes the 3 either.
  EXPECT_FALSE(chunker.Fill({.first_us = 2, .empty = EmptyChunk::kAllowed}));
  EXPECT_THAT(chunker.ends(), ElementsAre(1, 1, 1));
  // Growing caps (2, 2.8, 3.6): the third chunk takes what the second could
  // not, unless every chunk must work.
  EXPECT_TRUE(chunker.Fill({.first_us = 2, .growth = 0.8, .empty = EmptyChunk::kAllowed}));
  EXPECT_THAT(chunker.ends(), ElementsAre(1, 1, 3));
  EXPECT_FALSE(chunker.Fill({.first_us = 2, .growth = 0.8, .empty = EmptyChunk::kFails}));
}

TEST(CappedChunkerTest, BalanceFindsTheLeastBottleneck) {
  const std::vector<double> prefix = PrefixOf({2, 2, 2, 2, 2, 2});
  CappedChunker chunker(std::vector<ChunkDevice>(3, {.prefix_us = &prefix}));
  ASSERT_TRUE(chunker.Balance(/*growth=*/0, EmptyChunk::kFails));
  EXPECT_THAT(chunker.ends(), ElementsAre(2, 4, 6));
}

TEST(CappedChunkerTest, ATwiceAsFastDeviceGetsTwiceTheWork) {
  const std::vector<double> slow = PrefixOf(std::vector<double>(6, 2));
  const std::vector<double> fast = PrefixOf(std::vector<double>(6, 1));
  CappedChunker chunker(std::vector<ChunkDevice>({{.prefix_us = &fast}, {.prefix_us = &slow}}));
  ASSERT_TRUE(chunker.Balance(/*growth=*/0, EmptyChunk::kFails));
  EXPECT_THAT(chunker.ends(), ElementsAre(4, 6));  // 4 µs on each
}

TEST(CappedChunkerTest, BalanceFailsWhenTheMemoryBoundsDoNotAllowIt) {
  const std::vector<double> prefix = PrefixOf({1, 1, 1, 1, 1});
  const std::vector<uint32_t> two_at_most = {2, 3, 4, 5, 5};
  CappedChunker chunker(std::vector<ChunkDevice>(2, {&prefix, &two_at_most}));
  EXPECT_FALSE(chunker.Balance(/*growth=*/0, EmptyChunk::kFails));
  CappedChunker three(std::vector<ChunkDevice>(3, {&prefix, &two_at_most}));
  ASSERT_TRUE(three.Balance(/*growth=*/0, EmptyChunk::kFails));
  EXPECT_THAT(three.ends(), ElementsAre(2, 4, 5));
}

}  // namespace
}  // namespace autopar::search
