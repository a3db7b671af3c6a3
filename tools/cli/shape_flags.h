// The flags every model-reading command accepts to fix its shapes:
//   --dim NAME=VALUE               a symbolic dimension's value
//   --input-shape NAME=D0,D1,...   a graph input's whole shape
//   --input-value NAME=V[,V...]    a graph input's contents (a sample rate, a
//                                  max length): folded into shapes, and an If
//                                  on it is costed as its taken branch
//   --loop-trips N                 trip count of loops whose count is not a
//                                  constant
//   --strict-shapes                fail instead of estimating a shape
#include <string>

#ifndef AUTOPAR_TOOLS_CLI_SHAPE_FLAGS_H_
#define AUTOPAR_TOOLS_CLI_SHAPE_FLAGS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "passes/infer_shapes.h"
#include "tools/cli/args.h"

namespace autopar::tools {

std::vector<FlagSpec> ShapeFlagSpecs();

/// Maps the flags above onto ShapeOptions; a malformed value is an
/// InvalidArgument naming the flag.
absl::StatusOr<passes::ShapeOptions> ShapeOptionsFromArgs(const ParsedArgs& args);

/// The estimates of a shape report as lines for stderr, one per kind:
/// "estimated: 2 If branch shape(s) (the larger branch): 'a', 'b'; ...".
/// Empty when nothing was estimated.
std::vector<std::string> EstimateLines(const std::vector<passes::ShapeEstimate>& estimates);

/// Writes EstimateLines to stderr, each as "onnx-autopar: estimated ...".
void PrintEstimates(const std::vector<passes::ShapeEstimate>& estimates);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_SHAPE_FLAGS_H_
