#include "tools/cli/quantities.h"

#include "gtest/gtest.h"

namespace autopar::tools {
namespace {

TEST(QuantitiesTest, ByteSizes) {
  EXPECT_EQ(*ParseByteSize("16GiB"), int64_t{16} << 30);
  EXPECT_EQ(*ParseByteSize("512MB"), 512000000);
  EXPECT_EQ(*ParseByteSize("1.5kib"), 1536);
  EXPECT_EQ(*ParseByteSize("4096"), 4096);
  EXPECT_EQ(*ParseByteSize("2e9"), 2000000000);
  EXPECT_EQ(*ParseByteSize("16 GiB"), int64_t{16} << 30);
  EXPECT_FALSE(ParseByteSize("").ok());
  EXPECT_FALSE(ParseByteSize("GiB").ok());
  EXPECT_FALSE(ParseByteSize("16 parsecs").ok());
  EXPECT_FALSE(ParseByteSize("-1GB").ok());
  EXPECT_FALSE(ParseByteSize("0").ok());
  EXPECT_FALSE(ParseByteSize("1e30").ok());
}

TEST(QuantitiesTest, Durations) {
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("10s"), 10);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("2m"), 120);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("250ms"), 0.25);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("3"), 3);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("2 m"), 120);
  EXPECT_FALSE(ParseDurationSeconds("soon").ok());
  EXPECT_FALSE(ParseDurationSeconds("-1s").ok());
  EXPECT_FALSE(ParseDurationSeconds("5 fortnights").ok());
}

}  // namespace
}  // namespace autopar::tools
