#include "search/feasibility.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace autopar::search {

using costmodel::Cluster;
using costmodel::CostGraph;

namespace {

// The device with the most memory (lowest index among equals): the kind the
// error messages speak of.
int LargestDevice(const Cluster& cluster) {
  int best = 0;
  for (int d = 1; d < cluster.num_devices(); ++d) {
    if (cluster.device(d).memory_bytes > cluster.device(best).memory_bytes) best = d;
  }
  return best;
}

std::string KindName(const Cluster& cluster, int device) {
  const std::string& name = cluster.kinds[cluster.device(device).kind].name;
  return name.empty() ? cluster.device(device).name : name;
}

}  // namespace

std::string FormatBytes(int64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrCat(bytes, " bytes");
  return absl::StrFormat("%.1f %s (%d bytes)", value, units[unit], bytes);
}

absl::Status CheckSearchInputs(const CostGraph& graph, const Cluster& cluster) {
  if (absl::Status s = cluster.Validate(); !s.ok()) return s;
  for (int d = 0; d < cluster.num_devices(); ++d) {
    if (cluster.device(d).kind >= graph.num_device_kinds()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device '", cluster.device(d).name, "' is of kind ", cluster.device(d).kind,
          " but the cost graph has compute times for ", graph.num_device_kinds(), " kind(s)"));
    }
  }
  return absl::OkStatus();
}

int64_t MinimumMemoryBytes(const CostGraph& graph) {
  return ComputeMemoryProfile(graph).peak_bytes();
}

int DevicesNeeded(const CostGraph& graph, const MemoryProfile& profile, int64_t memory_bytes) {
  const std::vector<uint32_t> ends = SegmentEnds(graph, profile, memory_bytes);
  int segments = 0;
  for (uint32_t a = 0; a < graph.num_units(); a = ends[a], ++segments) {
    if (ends[a] == a) return 0;
  }
  return segments;
}

int64_t UnitFootprintBytes(const CostGraph& graph, uint32_t unit) {
  int64_t inputs = 0;  // in-edges are distinct (tensor, reader) pairs
  for (uint32_t e : graph.in_edges(unit)) inputs += graph.edge_bytes(e);
  return graph.unit_param_bytes(unit) + graph.temp_bytes(unit) + inputs + graph.output_bytes(unit);
}

absl::Status CheckEveryUnitFits(const CostGraph& graph, const Cluster& cluster) {
  const int largest = LargestDevice(cluster);
  const int64_t memory = cluster.device(largest).memory_bytes;
  for (uint32_t u = 0; u < graph.num_units(); ++u) {
    const int64_t footprint = UnitFootprintBytes(graph, u);
    if (footprint <= memory) continue;
    return absl::ResourceExhaustedError(absl::StrCat(
        "unit '", graph.name(u), "' (", graph.op(u), ") alone needs ", FormatBytes(footprint),
        " (parameters ", graph.unit_param_bytes(u), ", workspace ", graph.temp_bytes(u),
        ", inputs and outputs ", footprint - graph.unit_param_bytes(u) - graph.temp_bytes(u),
        " bytes), more than the largest device '", cluster.device(largest).name, "' holds (",
        FormatBytes(memory), ")"));
  }
  return absl::OkStatus();
}

absl::Status InfeasibleError(const CostGraph& graph, const Cluster& cluster) {
  if (absl::Status s = CheckEveryUnitFits(graph, cluster); !s.ok()) return s;
  const MemoryProfile profile = ComputeMemoryProfile(graph);
  const int largest = LargestDevice(cluster);
  const int64_t memory = cluster.device(largest).memory_bytes;
  const int needed = DevicesNeeded(graph, profile, memory);
  std::string message = absl::StrCat(
      "the model does not fit the cluster: it needs ", FormatBytes(profile.peak_bytes()),
      " of memory (parameters ", profile.param_bytes, " bytes + peak activations ",
      profile.peak_activation_bytes, " bytes); the cluster has ", cluster.num_devices(),
      " device(s), the largest '", cluster.device(largest).name, "' (", KindName(cluster, largest),
      ") with ", FormatBytes(memory));
  if (needed == 0) {
    absl::StrAppend(&message, "; a segment of the graph fits no such device");
  } else if (needed > cluster.num_devices()) {
    absl::StrAppend(&message, "; about ", needed, " devices of kind '", KindName(cluster, largest),
                    "' would hold it");
  } else {
    absl::StrAppend(&message, "; ", needed, " devices of kind '", KindName(cluster, largest),
                    "' would hold it by the estimate, but no placement within every device's "
                    "memory was found (smaller devices, or activations beyond the estimate)");
  }
  return absl::ResourceExhaustedError(message);
}

}  // namespace autopar::search
