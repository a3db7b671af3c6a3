// --dot FILE: the graph a search placed, as GraphViz, for looking at a plan.
// One box per unit, filled with its device's colour; edges between
// units, bold and labelled with the bytes they carry where they cross devices
// (those are the transfers). Parallel edges between two units are drawn as one.
// The text depends only on the graph and the placement, so the same plan
// gives the same file; `dot -Tsvg plan.dot -o plan.svg` draws it.
#ifndef AUTOPAR_TOOLS_ARTIFACTS_DOT_EXPORT_H_
#define AUTOPAR_TOOLS_ARTIFACTS_DOT_EXPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"

namespace autopar::tools {

/// The fill colour of `device`'s units: a fixed palette (ColorBrewer "Set3",
/// light enough for black labels), repeating after twelve devices.
absl::string_view DeviceColor(int device);

/// `text` as the inside of a DOT quoted string: quotes and backslashes
/// escaped, line breaks as "\n", other control characters as spaces.
std::string DotEscape(absl::string_view text);

/// The DOT text of `graph` with unit u on device `device[u]`;
/// `device_names[d]` names device d in the legend. Fails when the placement
/// does not cover the graph or names a device outside `device_names`.
absl::StatusOr<std::string> PlacementToDot(const costmodel::CostGraph& graph,
                                           absl::Span<const int32_t> device,
                                           const std::vector<std::string>& device_names);

/// The cluster's device names, by device: the legend PlacementToDot takes.
std::vector<std::string> DeviceNames(const costmodel::Cluster& cluster);

/// NotFound, naming the file, when the folder `path` would be written into
/// does not exist: commands check it before a long search.
absl::Status CheckParentFolder(const std::string& path);

/// Writes `text` to `path`, with an error that names the file: NotFound when
/// its folder does not exist, PermissionDenied / DataLoss when writing fails.
absl::Status WriteTextFile(const std::string& path, absl::string_view text);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_ARTIFACTS_DOT_EXPORT_H_
