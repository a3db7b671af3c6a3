// Which part of a cluster request changes what: each changes only what it
// names, over a cost graph's own devices as over the default cluster.
#include "pipeline/cluster_request.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace autopar::pipeline {
namespace {

using ::testing::HasSubstr;

// Three devices of one kind, 1.4 GB each, linked at 12 GB/s, except 0 -> 1
// (and back) at 40 GB/s: an input cluster whose links are not all alike.
costmodel::Cluster InputCluster() {
  costmodel::DeviceSpec kind;
  kind.name = "t4";
  kind.memory_bytes = int64_t{16} << 30;
  costmodel::Cluster cluster = costmodel::MakeHomogeneousCluster(kind, 3, 1'400'000'000, 12e9, 10);
  cluster.SetLink(0, 1, 40e9, 3);
  cluster.SetLink(1, 0, 40e9, 3);
  return cluster;
}

TEST(ClusterRequestTest, NothingRequestedIsTheInputsOwnClusterOrTheDefault) {
  absl::StatusOr<costmodel::Cluster> own = ResolveCluster({}, InputCluster());
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->num_devices(), 3);
  EXPECT_EQ(own->device(2).memory_bytes, 1'400'000'000);
  EXPECT_EQ(own->bandwidth_bytes_per_s(0, 1), 40e9);

  absl::StatusOr<costmodel::Cluster> fallback = ResolveCluster({}, std::nullopt);
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  EXPECT_EQ(fallback->num_devices(), kDefaultDeviceCount);
  EXPECT_EQ(fallback->kinds[0].name, "a100-80gb");
  EXPECT_EQ(fallback->bandwidth_bytes_per_s(0, 3), 300e9);
}

TEST(ClusterRequestTest, DevicesChangesTheCountAndKeepsTheInputsMemoryAndLinks) {
  absl::StatusOr<costmodel::Cluster> c = ResolveCluster({.devices = 5}, InputCluster());
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->num_devices(), 5);
  for (int d = 0; d < 5; ++d) {
    EXPECT_EQ(c->device(d).memory_bytes, 1'400'000'000) << d;
    EXPECT_EQ(c->kinds[c->device(d).kind].name, "t4") << d;
  }
  EXPECT_EQ(c->device(0).name, "dev0");
  EXPECT_EQ(c->device(4).name, "dev4");
  // Device 3 copies device 0 and device 4 copies device 1: the input's 0 <-> 1
  // link joins 3 and 4, 3 and 1, 0 and 4.
  EXPECT_EQ(c->bandwidth_bytes_per_s(3, 4), 40e9);
  EXPECT_EQ(c->bandwidth_bytes_per_s(3, 1), 40e9);
  EXPECT_EQ(c->latency_us(0, 4), 3);
  EXPECT_EQ(c->bandwidth_bytes_per_s(3, 2), 12e9);
  // Two copies of device 0: the slowest link device 0 has in the input.
  EXPECT_EQ(c->bandwidth_bytes_per_s(0, 3), 12e9);
  EXPECT_EQ(c->latency_us(3, 0), 10);
  EXPECT_TRUE(c->Validate().ok());

  absl::StatusOr<costmodel::Cluster> fewer = ResolveCluster({.devices = 2}, InputCluster());
  ASSERT_TRUE(fewer.ok()) << fewer.status();
  EXPECT_EQ(fewer->num_devices(), 2);
  EXPECT_EQ(fewer->bandwidth_bytes_per_s(1, 0), 40e9);
}

TEST(ClusterRequestTest, CopiesOfAOneDeviceInputUseTheKindsUsualLink) {
  costmodel::Cluster one = InputCluster();
  one = WithDeviceCount(one, 1);
  absl::StatusOr<costmodel::Cluster> c = ResolveCluster({.devices = 2}, one);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->bandwidth_bytes_per_s(0, 1), DefaultLink(c->kinds[0]).bandwidth_bytes_per_s);
}

TEST(ClusterRequestTest, MemoryPerDeviceChangesOnlyTheMemory) {
  absl::StatusOr<costmodel::Cluster> c =
      ResolveCluster({.memory_per_device_bytes = 8'000'000'000}, InputCluster());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_devices(), 3);
  EXPECT_EQ(c->device(1).memory_bytes, 8'000'000'000);
  EXPECT_EQ(c->bandwidth_bytes_per_s(1, 0), 40e9);
  EXPECT_EQ(c->bandwidth_bytes_per_s(1, 2), 12e9);

  absl::StatusOr<costmodel::Cluster> preset = ResolveCluster(
      {.cluster = "4xV100-nvlink", .memory_per_device_bytes = 1 << 30}, std::nullopt);
  ASSERT_TRUE(preset.ok()) << preset.status();
  absl::StatusOr<costmodel::Cluster> plain = costmodel::LookupClusterPreset("4xV100-nvlink");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(preset->num_devices(), plain->num_devices());
  EXPECT_EQ(preset->device(3).memory_bytes, 1 << 30);
  EXPECT_EQ(preset->bandwidth_bytes_per_s(0, 3), plain->bandwidth_bytes_per_s(0, 3));
}

TEST(ClusterRequestTest, DevicesAndDeviceBuildTheDefaultClusterOfThatKind) {
  absl::StatusOr<costmodel::Cluster> c =
      ResolveCluster({.devices = 8, .device = "V100"}, std::nullopt);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_devices(), 8);
  EXPECT_EQ(c->kinds[0].name, "v100");
  EXPECT_EQ(c->bandwidth_bytes_per_s(7, 0), 50e9);
}

TEST(ClusterRequestTest, ACombinationThatCannotWorkIsARequestConflict) {
  absl::StatusOr<costmodel::Cluster> device = ResolveCluster({.device = "V100"}, InputCluster());
  ASSERT_FALSE(device.ok());
  EXPECT_TRUE(IsRequestConflict(device.status()));
  EXPECT_THAT(std::string(device.status().message()), HasSubstr("--device"));

  absl::StatusOr<costmodel::Cluster> both =
      ResolveCluster({.cluster = "2xH200", .devices = 4}, std::nullopt);
  ASSERT_FALSE(both.ok());
  EXPECT_TRUE(IsRequestConflict(both.status()));

  // An unknown preset is a bad input, not a conflict.
  absl::StatusOr<costmodel::Cluster> unknown = ResolveCluster({.cluster = "nope"}, std::nullopt);
  ASSERT_FALSE(unknown.ok());
  EXPECT_FALSE(IsRequestConflict(unknown.status()));
}

}  // namespace
}  // namespace autopar::pipeline
