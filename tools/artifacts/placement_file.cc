#include "tools/artifacts/placement_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace autopar::tools {

absl::StatusOr<pipeline::NamedPlacement> ReadPlacementFile(const std::filesystem::path& path) {
  pipeline::NamedPlacement placement;
  placement.source = absl::StrCat("placement file '", path.string(), "'");
  const std::string& where = placement.source;
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", where));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded())
    return absl::InvalidArgumentError(absl::StrCat(where, " is not valid JSON"));
  if (json.is_object() && json.contains("node_to_device")) json = json["node_to_device"];
  if (!json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " must be a JSON object of node name -> device, or a plan.json"));
  }
  for (const auto& [name, value] : json.items()) {
    if (!value.is_number_integer()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": node '", name, "' has device ",
                                                     value.dump(), "; devices are integers"));
    }
    placement.device_of_node.emplace_back(name, value.get<int64_t>());
  }
  return placement;
}

}  // namespace autopar::tools
