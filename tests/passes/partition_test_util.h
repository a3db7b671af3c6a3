// Helpers shared by the rewriter's tests: models from ONNX text or files with
// their IR and shapes, and random placements.
#ifndef AUTOPAR_TESTS_PASSES_PARTITION_TEST_UTIL_H_
#define AUTOPAR_TESTS_PASSES_PARTITION_TEST_UTIL_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "onnx_io/import.h"
#include "onnx_io/model.h"
#include "onnx_io/text_format.h"
#include "passes/infer_shapes.h"

namespace autopar::passes::testing {

struct Loaded {
  onnx_io::Model model;
  ir::Graph graph;
};

inline absl::StatusOr<Loaded> Analyze(onnx_io::Model model, bool require_static = true) {
  absl::StatusOr<ir::Graph> graph = onnx_io::BuildGraph(model);
  if (!graph.ok()) return graph.status();
  ShapeOptions options;
  options.require_static = require_static;
  if (absl::Status s = InferShapes(model, options, *graph); !s.ok()) return s;
  return Loaded{std::move(model), *std::move(graph)};
}

inline absl::StatusOr<Loaded> FromText(bool require_static, const std::string& text) {
  absl::StatusOr<onnx::ModelProto> proto = onnx_io::ParseModelText(text);
  if (!proto.ok()) return proto.status();
  absl::StatusOr<onnx_io::Model> model = onnx_io::ModelFromProto(*std::move(proto));
  if (!model.ok()) return model.status();
  return Analyze(*std::move(model), require_static);
}

inline absl::StatusOr<Loaded> FromText(const std::string& text) { return FromText(true, text); }

inline absl::StatusOr<Loaded> FromFile(const std::filesystem::path& path,
                                       bool require_static = true) {
  absl::StatusOr<onnx_io::Model> model = onnx_io::LoadModel(path);
  if (!model.ok()) return model.status();
  return Analyze(*std::move(model), require_static);
}

/// Each node on a device drawn uniformly: many interleaved cuts.
inline std::vector<int32_t> RandomPlacement(size_t num_nodes, int num_devices, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, num_devices - 1);
  std::vector<int32_t> device(num_nodes);
  for (int32_t& d : device) d = pick(rng);
  return device;
}

/// Contiguous runs of the topological order, each on a random device: what
/// pipeline-style placements look like, with devices revisited.
inline std::vector<int32_t> RandomSegments(size_t num_nodes, int num_devices, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, num_devices - 1);
  std::uniform_int_distribution<size_t> run(1, std::max<size_t>(1, num_nodes / 8));
  std::vector<int32_t> device(num_nodes);
  for (size_t i = 0; i < num_nodes;) {
    const int32_t d = pick(rng);
    for (size_t end = std::min(num_nodes, i + run(rng)); i < end; ++i) device[i] = d;
  }
  return device;
}

/// The index of the node producing value `output`; num_nodes() when none.
inline size_t ProducerIndex(const ir::Graph& graph, const std::string& output) {
  std::optional<ir::ValueId> v = graph.FindValue(output);
  if (!v || !graph.value(*v).producer.valid()) return graph.num_nodes();
  return graph.value(*v).producer.index();
}

/// A placement given as "the node producing this value" → device; the other
/// nodes go to device 0.
inline std::vector<int32_t> PlaceByOutput(
    const ir::Graph& graph, const std::vector<std::pair<std::string, int32_t>>& where) {
  std::vector<int32_t> device(graph.num_nodes(), 0);
  for (const auto& [output, d] : where) device.at(ProducerIndex(graph, output)) = d;
  return device;
}

}  // namespace autopar::passes::testing

#endif  // AUTOPAR_TESTS_PASSES_PARTITION_TEST_UTIL_H_
