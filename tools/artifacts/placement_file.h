// A placement given by hand (--placement FILE) instead of searched: either a
// plan.json written earlier (its "node_to_device" is used, so a plan can be
// edited and re-applied) or a JSON object mapping every node name to a device.
#ifndef AUTOPAR_TOOLS_PLACEMENT_FILE_H_
#define AUTOPAR_TOOLS_PLACEMENT_FILE_H_

#include <cstdint>
#include <filesystem>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace autopar::tools {

/// The device of each node of `graph`. Fails, naming the node, when a node is
/// missing, a name is not a node of the graph, or a device is not an integer
/// in [0, num_devices).
absl::StatusOr<std::vector<int32_t>> ReadPlacementFile(const std::filesystem::path& path,
                                                       const ir::Graph& graph, int num_devices);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_PLACEMENT_FILE_H_
