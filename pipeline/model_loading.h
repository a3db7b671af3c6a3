// The front of every command that reads a model: load the file, check it,
// build the IR and infer shapes.
#ifndef AUTOPAR_PIPELINE_MODEL_LOADING_H_
#define AUTOPAR_PIPELINE_MODEL_LOADING_H_

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "onnx_io/model.h"
#include "passes/infer_shapes.h"

namespace autopar::pipeline {

/// Called as each step of the pipeline starts, with the step's name ("load",
/// "check (ONNX checker)", ...), so that a caller can time or report the
/// steps; may be empty.
using PhaseCallback = std::function<void(std::string_view phase)>;

struct LoadedModel {
  onnx_io::Model model;
  ir::Graph graph;
  /// Shapes that were estimated rather than known (Note [Shape estimates] in
  /// passes/infer_shapes.h).
  std::vector<passes::ShapeEstimate> estimates;
};

/// Load → check → IR → shapes. `load` carries the loading progress callback.
absl::StatusOr<LoadedModel> LoadAndAnalyze(const std::string& path,
                                           const passes::ShapeOptions& options,
                                           const onnx_io::LoadOptions& load = {},
                                           const PhaseCallback& on_phase = {});

}  // namespace autopar::pipeline

#endif  // AUTOPAR_PIPELINE_MODEL_LOADING_H_
