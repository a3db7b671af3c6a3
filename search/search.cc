#include "search/search.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "search/heft.h"
#include "search/pipeline_dp.h"
#include "search/sgp.h"
#include "search/single_device.h"

namespace autopar::search {

std::vector<std::string> AlgorithmNames() {
  // One name a line, so that each placer's registration is a line of its own.
  return {
      "sgp",
      "single",
      "heft",
      "pipeline-dp",
  };
}

absl::StatusOr<costmodel::Placement> Place(std::string_view algorithm,
                                           const costmodel::CostGraph& graph,
                                           const costmodel::Cluster& cluster,
                                           const SearchOptions& options) {
  if (algorithm == "sgp") return PlaceSgp(graph, cluster, options);
  if (algorithm == "single") return PlaceSingleDevice(graph, cluster, options);
  if (algorithm == "heft") return PlaceHeft(graph, cluster, options);
  if (algorithm == "pipeline-dp") return PlacePipelineDp(graph, cluster, options);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown placement algorithm '", std::string(algorithm),
                   "' (known: ", absl::StrJoin(AlgorithmNames(), ", "), ")"));
}

}  // namespace autopar::search
