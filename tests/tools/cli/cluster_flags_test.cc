// The cluster flags as a user meets them: each changes only what it names,
// over a cost graph's own "devices" block as over the default cluster, and a
// combination that cannot work is a usage error (pipeline/cluster_request.h).
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/cli_expectations.h"
#include "tests/testing/cli_json.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace autopar {
namespace {

using testing::CommandResult;
using testing::ExpectCleanError;
using testing::RunCommand;
using testing::RunJson;
using testing::TempDir;

constexpr int kExitUsage = 1;
constexpr int64_t kGraphMemory = 1'400'000'000;

// A chain of four 100 µs nodes with 1 MB tensors, on the graph's own three
// devices of 1.4 GB linked at 12 GB/s.
std::string Chain() {
  nlohmann::json nodes = nlohmann::json::array(), edges = nlohmann::json::array();
  for (int i = 0; i < 4; ++i) {
    nodes.push_back({{"id", i},
                     {"name", "n" + std::to_string(i)},
                     {"op", "MatMul"},
                     {"compute_us", 100},
                     {"param_bytes", 1000},
                     {"output_bytes", {1'000'000}},
                     {"temp_bytes", 0}});
    if (i > 0) edges.push_back({{"src", i - 1}, {"dst", i}, {"bytes", 1'000'000}});
  }
  return nlohmann::json{{"nodes", nodes},
                        {"edges", edges},
                        {"devices",
                         {{"count", 3},
                          {"memory_bytes", {kGraphMemory, kGraphMemory, kGraphMemory}},
                          {"bandwidth_bytes_per_s", 12e9},
                          {"latency_us", 10}}}}
      .dump();
}

nlohmann::json Place(const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {AUTOPAR_CLI, "place", "--format", "json"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return RunJson(argv, 60);
}

TEST(ClusterFlagsTest, DevicesOverACostGraphKeepsItsMemory) {
  TempDir dir;
  const std::string graph = dir.Write("chain.json", Chain());
  // The default search (TGA) bounded by generations, not its 10 s budget: the
  // memory is what is checked here, not the plan.
  const nlohmann::json own = Place({"--costgraph", graph, "--max-generations", "20"});
  ASSERT_FALSE(own.is_discarded());
  EXPECT_EQ(own["memory_capacity_bytes"].size(), 3u);

  const nlohmann::json more =
      Place({"--costgraph", graph, "--devices", "5", "--max-generations", "20"});
  ASSERT_FALSE(more.is_discarded());
  ASSERT_EQ(more["memory_capacity_bytes"].size(), 5u);
  for (const nlohmann::json& bytes : more["memory_capacity_bytes"])
    EXPECT_EQ(bytes.get<int64_t>(), kGraphMemory);
}

TEST(ClusterFlagsTest, DevicesOverACostGraphKeepsItsLinks) {
  TempDir dir;
  const std::string graph = dir.Write("chain.json", Chain());
  // Round-robin puts each node on the next device: three 1 MB transfers at
  // the graph's 12 GB/s (83.3 µs each) and 10 µs latency, not NVLink's;
  // kept although one device is faster (the links are what is checked).
  const nlohmann::json rr = Place(
      {"--costgraph", graph, "--devices", "4", "--algo", "round-robin", "--allow-slower-split"});
  ASSERT_FALSE(rr.is_discarded());
  EXPECT_EQ(rr["cut_edges"], 3);
  EXPECT_NEAR(rr["step_time_us"].get<double>(), 4 * 100 + 3 * (10 + 1e6 / 12e9 * 1e6), 0.5);
}

TEST(ClusterFlagsTest, MemoryPerDeviceChangesOnlyTheMemory) {
  TempDir dir;
  const std::string graph = dir.Write("chain.json", Chain());
  const nlohmann::json r = Place({"--costgraph", graph, "--memory-per-device", "2GB", "--algo",
                                  "round-robin", "--allow-slower-split"});
  ASSERT_FALSE(r.is_discarded());
  ASSERT_EQ(r["memory_capacity_bytes"].size(), 3u);
  EXPECT_EQ(r["memory_capacity_bytes"][0], 2'000'000'000);
  EXPECT_NEAR(r["step_time_us"].get<double>(), 4 * 100 + 3 * (10 + 1e6 / 12e9 * 1e6), 0.5);
}

TEST(ClusterFlagsTest, CombinationsThatCannotWorkAreUsageErrors) {
  TempDir dir;
  const std::string graph = dir.Write("chain.json", Chain());
  ExpectCleanError(RunCommand({AUTOPAR_CLI, "place", "--costgraph", graph, "--device", "V100"}, 60),
                   kExitUsage, "--device");
  ExpectCleanError(
      RunCommand({AUTOPAR_CLI, "compare", "--costgraph", graph, "--device", "V100"}, 60),
      kExitUsage, "--cluster");
  ExpectCleanError(RunCommand({AUTOPAR_CLI, "place", "--costgraph", graph, "--cluster", "2xH200",
                               "--devices", "4"},
                              60),
                   kExitUsage, "--cluster cannot be combined");
}

}  // namespace
}  // namespace autopar
