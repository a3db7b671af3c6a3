#include "tools/artifacts/dot_export.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tools/artifacts/human_numbers.h"

namespace autopar::tools {
namespace {

constexpr absl::string_view kPalette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072",
                                          "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
                                          "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"};

}  // namespace

absl::string_view DeviceColor(int device) {
  const int n = static_cast<int>(std::size(kPalette));
  return kPalette[((device % n) + n) % n];
}

std::string DotEscape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        // "\r" would mean "right-justify" to GraphViz; tabs and other control
        // bytes have no business in a label.
        out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    }
  }
  return out;
}

absl::StatusOr<std::string> PlacementToDot(const costmodel::CostGraph& graph,
                                           absl::Span<const int32_t> device,
                                           const std::vector<std::string>& device_names) {
  if (device.size() != graph.num_units()) {
    return absl::InvalidArgumentError(absl::StrCat("the placement has ", device.size(),
                                                   " entries for ", graph.num_units(), " units"));
  }
  const auto num_devices = static_cast<int32_t>(device_names.size());
  for (uint32_t u = 0; u < graph.num_units(); ++u) {
    if (device[u] < 0 || device[u] >= num_devices) {
      return absl::InvalidArgumentError(
          absl::StrCat("unit '", graph.name(u), "' is on device ", device[u], " of ", num_devices));
    }
  }
  // 1. Header and legend: one box per device, so the colours can be read.
  std::string dot =
      "digraph placement {\n"
      "  node [shape=box, style=filled, fontname=\"Helvetica\"];\n"
      "  edge [fontname=\"Helvetica\", fontsize=10];\n"
      "  subgraph cluster_legend {\n"
      "    label=\"devices\";\n";
  for (int32_t d = 0; d < num_devices; ++d) {
    absl::StrAppend(&dot, "    device", d, " [label=\"", d, ": ", DotEscape(device_names[d]),
                    "\", fillcolor=\"", DeviceColor(d), "\"];\n");
  }
  dot += "  }\n";
  // 2. Units, in the graph's (topological) order.
  for (uint32_t u = 0; u < graph.num_units(); ++u) {
    absl::StrAppend(&dot, "  u", u, " [label=\"", DotEscape(graph.name(u)), "\", fillcolor=\"",
                    DeviceColor(device[u]), "\"];\n");
  }
  // 3. Edges, one per ordered pair of units, with the bytes of the distinct
  //    tensors between them; an ordered map keeps the output stable.
  std::map<std::pair<uint32_t, uint32_t>, std::map<uint32_t, int64_t>> tensors_between;
  for (uint32_t e = 0; e < graph.num_edges(); ++e) {
    tensors_between[{graph.edge_src(e), graph.edge_dst(e)}][graph.edge_tensor(e)] =
        graph.edge_bytes(e);
  }
  for (const auto& [ends, tensors] : tensors_between) {
    const auto [src, dst] = ends;
    absl::StrAppend(&dot, "  u", src, " -> u", dst);
    if (device[src] != device[dst]) {
      int64_t bytes = 0;
      for (const auto& [tensor, tensor_bytes] : tensors) bytes += tensor_bytes;
      absl::StrAppend(&dot, " [style=bold, penwidth=3, label=\"", FormatBytes(bytes), "\"]");
    }
    dot += ";\n";
  }
  dot += "}\n";
  return dot;
}

std::vector<std::string> DeviceNames(const costmodel::Cluster& cluster) {
  std::vector<std::string> names;
  for (int d = 0; d < cluster.num_devices(); ++d) names.push_back(cluster.device(d).name);
  return names;
}

absl::Status CheckParentFolder(const std::string& path) {
  // A missing folder is the user's mistake (as for -o), not an I/O failure.
  const std::filesystem::path parent = std::filesystem::absolute(path).parent_path();
  if (std::error_code ec; !std::filesystem::is_directory(parent, ec)) {
    return absl::NotFoundError(absl::StrCat("cannot write '", path, "': the folder '",
                                            parent.string(), "' does not exist"));
  }
  return absl::OkStatus();
}

absl::Status WriteTextFile(const std::string& path, absl::string_view text) {
  if (absl::Status s = CheckParentFolder(path); !s.ok()) return s;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write '", path, "'"));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat("cannot write '", path, "'"));
  return absl::OkStatus();
}

}  // namespace autopar::tools
