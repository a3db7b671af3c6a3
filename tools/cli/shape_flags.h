// The flags every model-reading command accepts to fix its shapes:
//   --dim NAME=VALUE               a symbolic dimension's value
//   --input-shape NAME=D0,D1,...   a graph input's whole shape
#ifndef AUTOPAR_TOOLS_CLI_SHAPE_FLAGS_H_
#define AUTOPAR_TOOLS_CLI_SHAPE_FLAGS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "passes/infer_shapes.h"
#include "tools/cli/args.h"

namespace autopar::tools {

std::vector<FlagSpec> ShapeFlagSpecs();

/// Maps --dim and --input-shape onto ShapeOptions; a malformed value is an
/// InvalidArgument naming the flag.
absl::StatusOr<passes::ShapeOptions> ShapeOptionsFromArgs(const ParsedArgs& args);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_SHAPE_FLAGS_H_
