// A placement given by hand (--placement FILE) instead of searched: either a
// plan.json written earlier (its "node_to_device" is used, so a plan can be
// edited and re-applied) or a JSON object mapping every node name to a device.
#ifndef AUTOPAR_TOOLS_ARTIFACTS_PLACEMENT_FILE_H_
#define AUTOPAR_TOOLS_ARTIFACTS_PLACEMENT_FILE_H_

#include <filesystem>

#include "absl/status/statusor.h"
#include "pipeline/planning.h"

namespace autopar::tools {

/// The file's node name → device pairs, in the file's order. Fails when the
/// file is unreadable, not JSON of either shape, or a device is not an
/// integer; pipeline::ResolveNamedPlacement checks the names and devices
/// against the model.
absl::StatusOr<pipeline::NamedPlacement> ReadPlacementFile(const std::filesystem::path& path);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_ARTIFACTS_PLACEMENT_FILE_H_
