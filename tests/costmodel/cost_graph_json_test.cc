#include "costmodel/cost_graph_json.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace autopar::costmodel {
namespace {

using ::testing::HasSubstr;

constexpr char kDocument[] = R"({
  "nodes": [
    {"id": 0, "name": "a", "op": "Conv", "compute_us": 10, "param_bytes": 100, "output_bytes": [4000]},
    {"id": 1, "name": "b", "op": "Relu", "compute_us": 2, "output_bytes": [4000]},
    {"id": 2, "name": "c", "op": "Relu", "compute_us": 3, "output_bytes": [4000]},
    {"id": 3, "name": "d", "op": "Add", "compute_us": 1, "output_bytes": [16], "temp_bytes": 8}
  ],
  "edges": [
    {"src": 0, "dst": 1, "bytes": 4000, "tensor": "x"},
    {"src": 0, "dst": 2, "bytes": 4000, "tensor": "x"},
    {"src": 1, "dst": 3, "bytes": 4000, "tensor": "y"},
    {"src": 2, "dst": 3, "bytes": 4000, "tensor": "z"}
  ],
  "devices": {"count": 2, "memory_bytes": [1000000, 2000000], "bandwidth_bytes_per_s": 1e9,
              "latency_us": 2}
})";

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<CostGraphDocument> doc = CostGraphFromJson(nlohmann::json::parse(text));
  EXPECT_FALSE(doc.ok()) << text;
  return doc.ok() ? "" : std::string(doc.status().message());
}

TEST(CostGraphJsonTest, ReadsNodesEdgesAndDevices) {
  absl::StatusOr<CostGraphDocument> doc = CostGraphFromJson(nlohmann::json::parse(kDocument));
  ASSERT_TRUE(doc.ok()) << doc.status();
  const CostGraph& g = doc->graph;
  EXPECT_EQ(g.num_units(), 4u);
  EXPECT_EQ(g.num_edges(), 4u);
  // "x" is one tensor read twice; d's 16 bytes are a graph output.
  EXPECT_EQ(g.num_tensors(), 4u);
  EXPECT_EQ(g.tensor_uses(g.edge_tensor(g.out_edges(0)[0])).size(), 2u);
  EXPECT_EQ(g.unit_param_bytes(0), 100);
  EXPECT_EQ(g.temp_bytes(3), 8);
  EXPECT_EQ(g.output_bytes(3), 16);
  ASSERT_TRUE(doc->cluster.has_value());
  EXPECT_EQ(doc->cluster->num_devices(), 2);
  EXPECT_EQ(doc->cluster->device(1).memory_bytes, 2000000);
  EXPECT_DOUBLE_EQ(doc->cluster->TransferUs(0, 1, 1000), 3);
}

TEST(CostGraphJsonTest, WritesWhatItReads) {
  absl::StatusOr<CostGraphDocument> doc = CostGraphFromJson(nlohmann::json::parse(kDocument));
  ASSERT_TRUE(doc.ok());
  nlohmann::ordered_json written = CostGraphToJson(doc->graph, &*doc->cluster);
  absl::StatusOr<CostGraphDocument> again =
      CostGraphFromJson(nlohmann::json::parse(written.dump()));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(CostGraphToJson(again->graph, &*again->cluster).dump(), written.dump());
}

TEST(CostGraphJsonTest, ErrorsNameTheField) {
  EXPECT_THAT(ErrorOf("[]"), HasSubstr("must be a JSON object"));
  EXPECT_THAT(ErrorOf(R"({"nodes": [{"id": 1, "compute_us": 1}]})"), HasSubstr("nodes[0].id"));
  EXPECT_THAT(ErrorOf(R"({"nodes": [{"id": 0, "compute_us": -1}]})"),
              HasSubstr("nodes[0].compute_us"));
  EXPECT_THAT(ErrorOf(R"({"nodes": [{"id": 0, "compute_us": 1}, {"id": 1, "compute_us": 1}],
                          "edges": [{"src": 1, "dst": 0, "bytes": 4}]})"),
              HasSubstr("edges[0]: src must come before dst"));
  EXPECT_THAT(ErrorOf(R"({"nodes": [{"id": 0, "compute_us": 1}],
                          "edges": [{"src": 0, "dst": 9, "bytes": 4}]})"),
              HasSubstr("edges[0].dst"));
  EXPECT_THAT(ErrorOf(R"({"nodes": [], "devices": {"count": 0}})"), HasSubstr("devices.count"));
  EXPECT_THAT(ErrorOf(R"({"nodes": [], "devices": {"count": 2, "memory_bytes": [1]}})"),
              HasSubstr("devices.memory_bytes"));
}

// Found by fuzz/cost_graph_fuzzer.cc: a name of another type threw from json::value.
TEST(CostGraphJsonTest, NamesOfAnotherTypeAreErrors) {
  EXPECT_THAT(ErrorOf(R"({"nodes": [{"id": 0, "compute_us": 1, "name": 2}]})"),
              HasSubstr("nodes[0].name: must be a string"));
  EXPECT_THAT(ErrorOf(R"({"nodes": [{"id": 0, "compute_us": 1, "op": null}]})"),
              HasSubstr("nodes[0].op: must be a string"));
  EXPECT_THAT(ErrorOf(R"({"nodes": [{"id": 0, "compute_us": 1}, {"id": 1, "compute_us": 1}],
                          "edges": [{"src": 0, "dst": 1, "bytes": 4, "tensor": []}]})"),
              HasSubstr("edges[0].tensor: must be a string"));
}

}  // namespace
}  // namespace autopar::costmodel
