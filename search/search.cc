#include "search/search.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "search/sgp.h"
#include "search/single_device.h"
#include "search/tga.h"

namespace autopar::search {

std::vector<std::string> AlgorithmNames() { return {"sgp", "single", "tga"}; }

absl::StatusOr<costmodel::Placement> Place(std::string_view algorithm,
                                           const costmodel::CostGraph& graph,
                                           const costmodel::Cluster& cluster,
                                           const SearchOptions& options) {
  if (algorithm == "sgp") return PlaceSgp(graph, cluster, options);
  if (algorithm == "single") return PlaceSingleDevice(graph, cluster, options);
  if (algorithm == "tga") return PlaceTga(graph, cluster, options);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown placement algorithm '", std::string(algorithm),
                   "' (known: ", absl::StrJoin(AlgorithmNames(), ", "), ")"));
}

}  // namespace autopar::search
