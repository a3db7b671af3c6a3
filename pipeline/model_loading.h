// The front of every command: load the file, check it, build the IR and infer
// shapes, with the --dim / --input-shape flags mapped onto ShapeOptions.
#ifndef AUTOPAR_TOOLS_MODEL_LOADING_H_
#define AUTOPAR_TOOLS_MODEL_LOADING_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "onnx_io/model.h"
#include "passes/infer_shapes.h"
#include "tools/args.h"

namespace autopar::tools {

struct LoadedModel {
  onnx_io::Model model;
  ir::Graph graph;
};

/// The flags every model-reading command accepts.
std::vector<FlagSpec> ShapeFlagSpecs();

/// Maps --dim NAME=VALUE and --input-shape NAME=D0,D1,... onto ShapeOptions.
absl::StatusOr<passes::ShapeOptions> ShapeOptionsFromArgs(const ParsedArgs& args);

/// Load → check → IR → shapes. `load` carries the loading progress callback.
absl::StatusOr<LoadedModel> LoadAndAnalyze(const std::string& path,
                                           const passes::ShapeOptions& options,
                                           const onnx_io::LoadOptions& load = {});

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_MODEL_LOADING_H_
