// The cpu:KxT cluster: its name, the host calibration file over the defaults,
// thread scaling, and the cluster it makes.
#include "costmodel/host_cpu.h"

#include "costmodel/device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace autopar::costmodel {
namespace {

using ::testing::HasSubstr;

TEST(HostCpuTest, ParsesCpuKxTAndLeavesOtherNamesAlone) {
  absl::StatusOr<std::optional<std::pair<int, int>>> name = ParseHostCpuClusterName("cpu:2x1");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(*name, (std::pair{2, 1}));
  EXPECT_EQ(*ParseHostCpuClusterName("CPU:4x8"), (std::pair{4, 8}));
  EXPECT_EQ(*ParseHostCpuClusterName("4xcpu"), std::nullopt);
  EXPECT_EQ(*ParseHostCpuClusterName("cpu:4"), std::nullopt);
  EXPECT_EQ(*ParseHostCpuClusterName("2xH200"), std::nullopt);
  for (const char* bad : {"cpu:0x1", "cpu:2x0", "cpu:x1", "cpu:2x", "cpu:65x1", "cpu:2xfast"}) {
    EXPECT_THAT(ParseHostCpuClusterName(bad).status().message(), HasSubstr("cpu:KxT")) << bad;
  }
}

TEST(HostCpuTest, CalibrationOverridesOnlyTheFieldsItHas) {
  absl::StatusOr<HostCalibration> c = HostCalibrationFromJson(
      nlohmann::json::parse(R"({"version": 1, "measured_at": "2026-12-04T15:00:00Z",
                                "load_avg_1m": 0.4, "cpu_share": 0.98,
                                "transfer": {"latency_us": 120.0, "bytes_per_s": 3.3e8},
                                "cut_us": 40.0, "cut_bytes_per_s": 2.5e9,
                                "hop_us": 55.0, "hop_busy_us": 0})"),
      "h");
  ASSERT_TRUE(c.ok()) << c.status();
  const HostCalibration defaults = DefaultHostCalibration();
  EXPECT_DOUBLE_EQ(c->transfer_latency_us, 120);
  EXPECT_DOUBLE_EQ(c->transfer_bytes_per_s, 3.3e8);
  EXPECT_DOUBLE_EQ(c->cut_us, 40);
  EXPECT_DOUBLE_EQ(c->cut_bytes_per_s, 2.5e9);
  EXPECT_DOUBLE_EQ(c->hop_us, 55);
  EXPECT_DOUBLE_EQ(c->hop_busy_us, 0);  // measured as none: not the default
  EXPECT_DOUBLE_EQ(c->stage_run_us, defaults.stage_run_us);
  EXPECT_EQ(c->thread_speedup, defaults.thread_speedup);
}

TEST(HostCpuTest, BadCalibrationFieldsAreNamed) {
  auto message = [](const char* text) {
    return std::string(HostCalibrationFromJson(nlohmann::json::parse(text), "host calibration 'h'")
                           .status()
                           .message());
  };
  EXPECT_THAT(message(R"({"transfer": {"bytes_per_s": 0}})"), HasSubstr("transfer.bytes_per_s"));
  EXPECT_THAT(message(R"({"stage_run_us": "slow"})"), HasSubstr("stage_run_us"));
  EXPECT_THAT(message(R"({"cut_us": -1})"), HasSubstr("cut_us"));
  EXPECT_THAT(message(R"({"cut_bytes_per_s": "fast"})"), HasSubstr("cut_bytes_per_s"));
  EXPECT_THAT(message(R"({"hop_us": -5})"), HasSubstr("hop_us"));
  EXPECT_THAT(message(R"({"hop_busy_us": null})"), HasSubstr("hop_busy_us"));
  EXPECT_THAT(message(R"({"thread_speedup": {"two": 1.7}})"), HasSubstr("thread_speedup.two"));
  EXPECT_THAT(message(R"({"thread_speedup": {"2": 0}})"), HasSubstr("thread_speedup.2"));
  EXPECT_THAT(message("[1]"), HasSubstr("host calibration 'h' must be a JSON object"));
}

TEST(HostCpuTest, ThreadSpeedupInterpolatesAndExtrapolates) {
  HostCalibration c;
  c.thread_speedup = {{1, 1.0}, {2, 1.6}, {4, 2.4}};
  EXPECT_DOUBLE_EQ(c.ThreadSpeedup(1), 1.0);
  EXPECT_DOUBLE_EQ(c.ThreadSpeedup(2), 1.6);
  EXPECT_DOUBLE_EQ(c.ThreadSpeedup(3), 2.0);  // halfway between 2 and 4
  EXPECT_DOUBLE_EQ(c.ThreadSpeedup(6), 3.2);  // 0.4 per thread, as from 2 to 4
  HostCalibration only_two;
  only_two.thread_speedup = {{2, 1.5}};
  EXPECT_DOUBLE_EQ(only_two.ThreadSpeedup(3), 2.0);  // from 1 thread = 1x through 2
  EXPECT_DOUBLE_EQ(HostCalibration{}.ThreadSpeedup(8), 1.0);
}

TEST(HostCpuTest, ClusterIsKDevicesOfTheCpuPresetForTThreadsRunningWholeStages) {
  HostCalibration c = DefaultHostCalibration();
  c.transfer_latency_us = 120;
  c.transfer_bytes_per_s = 3.3e8;
  c.stage_run_us = 150;
  c.cut_us = 40;
  c.cut_bytes_per_s = 2e9;
  c.hop_us = 50;
  c.hop_busy_us = 60;
  c.thread_speedup = {{1, 1.0}, {2, 1.7}, {4, 3.0}};
  const Cluster cluster = MakeHostCpuCluster(2, 2, c);
  ASSERT_TRUE(cluster.Validate().ok());
  ASSERT_EQ(cluster.num_devices(), 2);
  EXPECT_EQ(cluster.kinds[0].name, CpuPreset(2).name);
  EXPECT_DOUBLE_EQ(cluster.kinds[0].peak_flops.fp32, CpuPreset(2).peak_flops.fp32);
  EXPECT_EQ(cluster.device(1).name, "cpu1");
  EXPECT_DOUBLE_EQ(cluster.latency_us(0, 1), 120);
  EXPECT_DOUBLE_EQ(cluster.bandwidth_bytes_per_s(1, 0), 3.3e8);
  EXPECT_EQ(cluster.execution, (ExecutionModel{.whole_stages = true,
                                               .stage_run_us = 150,
                                               .cut_us = 40,
                                               .cut_bytes_per_s = 2e9,
                                               .hop_us = 50,
                                               .hop_busy_us = 60}));
  ASSERT_TRUE(cluster.host.has_value());
  EXPECT_DOUBLE_EQ(cluster.host->speedup_per_device, 1.7);
  EXPECT_DOUBLE_EQ(cluster.host->speedup_all_threads, 3.0);
}

}  // namespace
}  // namespace autopar::costmodel
