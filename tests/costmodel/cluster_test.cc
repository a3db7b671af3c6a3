#include "costmodel/cluster.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace autopar::costmodel {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(const char* json_text) {
  absl::StatusOr<Cluster> c = ClusterFromJson(nlohmann::json::parse(json_text));
  EXPECT_FALSE(c.ok()) << json_text;
  return c.ok() ? "" : std::string(c.status().message());
}

TEST(ClusterTest, EveryPresetIsValid) {
  for (const std::string& name : ClusterPresetNames()) {
    absl::StatusOr<Cluster> c = LookupClusterPreset(name);
    ASSERT_TRUE(c.ok()) << name << ": " << c.status();
    EXPECT_TRUE(c->Validate().ok()) << name;
  }
  EXPECT_THAT(std::string(LookupClusterPreset("9xFoo").status().message()),
              HasSubstr("unknown cluster preset '9xFoo'"));
}

TEST(ClusterTest, IslandsAreSlowerBetweenThanWithin) {
  absl::StatusOr<Cluster> c = LookupClusterPreset("2x4xA100-nvlink-pcie");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->num_devices(), 8);
  EXPECT_GT(c->bandwidth_bytes_per_s(0, 3), c->bandwidth_bytes_per_s(0, 4) * 5);
  EXPECT_LT(c->TransferUs(1, 2, 1 << 20), c->TransferUs(1, 6, 1 << 20));
  EXPECT_EQ(c->TransferUs(3, 3, 1 << 20), 0);
}

TEST(ClusterTest, TransferTimeIsLatencyPlusBytesOverBandwidth) {
  DeviceSpec d;
  d.name = "x";
  d.memory_bytes = 1000;
  Cluster c = MakeHomogeneousCluster(d, 2, 0, /*bandwidth=*/1e9, /*latency=*/3);
  EXPECT_DOUBLE_EQ(c.TransferUs(0, 1, 2000), 5);
  EXPECT_EQ(c.device(1).memory_bytes, 1000);
  EXPECT_EQ(c.TotalMemoryBytes(), 2000);
}

TEST(ClusterTest, ReadsJsonWithPresetsOverridesAndMatrices) {
  absl::StatusOr<Cluster> c = ClusterFromJson(nlohmann::json::parse(R"({
    "devices": [
      {"name": "fast", "device": "A100-80GB"},
      {"name": "small", "device": "A100-80GB", "memory_bytes": 1000000},
      {"device": "T4"}
    ],
    "bandwidth_matrix_bytes_per_s": [[0, 3e11, 1e10], [3e11, 0, 1e10], [1e10, 1e10, 0]],
    "latency_matrix_us": [[0, 5, 10], [5, 0, 10], [10, 10, 0]]
  })"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kinds.size(), 2u);
  EXPECT_EQ(c->device(0).kind, c->device(1).kind);
  EXPECT_NE(c->device(0).kind, c->device(2).kind);
  EXPECT_EQ(c->device(1).memory_bytes, 1000000);
  EXPECT_EQ(c->device(2).name, "dev2");
  EXPECT_DOUBLE_EQ(c->bandwidth_bytes_per_s(2, 0), 1e10);
  EXPECT_DOUBLE_EQ(c->latency_us(0, 2), 10);

  // Written back, it reads the same.
  absl::StatusOr<Cluster> again = ClusterFromJson(nlohmann::json::parse(ClusterToJson(*c).dump()));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_DOUBLE_EQ(again->bandwidth_bytes_per_s(1, 2), 1e10);
}

TEST(ClusterTest, BadJsonNamesTheField) {
  EXPECT_THAT(ErrorOf("[]"), HasSubstr("must be a JSON object"));
  EXPECT_THAT(ErrorOf(R"({"devices": []})"), HasSubstr("devices: must be a non-empty array"));
  EXPECT_THAT(ErrorOf(R"({"devices": [{"device": "Nope"}], "link": {"bandwidth_bytes_per_s": 1}})"),
              HasSubstr("devices[0].device"));
  EXPECT_THAT(ErrorOf(R"({"devices": [{"device": "T4", "memory_bytes": -4}],
                         "link": {"bandwidth_bytes_per_s": 1}})"),
              HasSubstr("devices[0].memory_bytes"));
  EXPECT_THAT(ErrorOf(R"({"devices": [{"device": "T4"}, {"device": "T4"}]})"), HasSubstr("link"));
  EXPECT_THAT(ErrorOf(R"({"devices": [{"device": "T4"}, {"device": "T4"}],
                         "link": {"bandwidth_bytes_per_s": 0}})"),
              HasSubstr("link.bandwidth_bytes_per_s"));
  EXPECT_THAT(ErrorOf(R"({"devices": [{"device": "T4"}, {"device": "T4"}],
                         "bandwidth_matrix_bytes_per_s": [[0, 1]]})"),
              HasSubstr("bandwidth_matrix_bytes_per_s"));
  EXPECT_THAT(ErrorOf(R"({"devices": [{"device": "T4"}, {"device": "T4"}],
                         "bandwidth_matrix_bytes_per_s": [[0, 1], [-1, 0]]})"),
              HasSubstr("bandwidth_matrix_bytes_per_s[1][0]"));
  // A wrongly typed field is an error naming it, not a JSON exception.
  EXPECT_THAT(ErrorOf(R"({"devices": [{"device": "T4", "name": 2}],
                         "link": {"bandwidth_bytes_per_s": 1}})"),
              HasSubstr("devices[0].name: must be a string"));
}

}  // namespace
}  // namespace autopar::costmodel
