#include "tools/placement_file.h"

#include <fstream>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace autopar::tools {

absl::StatusOr<std::vector<int32_t>> ReadPlacementFile(const std::filesystem::path& path,
                                                       const ir::Graph& graph, int num_devices) {
  const std::string where = absl::StrCat("placement file '", path.string(), "'");
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
  absl::flat_hash_map<std::string, uint32_t> node_by_name;
  for (uint32_t i = 0; i < graph.num_nodes(); ++i) node_by_name[graph.node(ir::NodeId(i)).name] = i;
  std::vector<int32_t> device(graph.num_nodes(), -1);
  for (const auto& [name, value] : json.items()) {
    auto it = node_by_name.find(name);
    if (it == node_by_name.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " names '", name, "', which is not a node of the model"));
    }
    if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
        value.get<int64_t>() >= num_devices) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": node '", name, "' has device ",
                                                     value.dump(), "; devices are 0..",
                                                     num_devices - 1));
    }
    device[it->second] = value.get<int32_t>();
  }
  for (uint32_t i = 0; i < graph.num_nodes(); ++i) {
    if (device[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " gives no device for node '", graph.node(ir::NodeId(i)).name, "'"));
    }
  }
  return device;
}

}  // namespace autopar::tools
