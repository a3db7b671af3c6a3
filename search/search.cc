#include "search/search.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "search/cpop.h"
#include "search/heft.h"
#include "search/m_etf.h"
#include "search/m_sct.h"
#include "search/m_topo.h"
#include "search/pipeline_dp.h"
#include "search/round_robin.h"
#include "search/sgp.h"
#include "search/single_device.h"
#include "search/tga.h"

namespace autopar::search {

std::vector<std::string> AlgorithmNames() {
  return {
      "sgp",  "tga",  "m-etf",       "m-sct",       "m-topo",
      "heft", "cpop", "pipeline-dp", "round-robin", "single",
  };
}

absl::StatusOr<SearchResult> PlaceDetailed(std::string_view algorithm,
                                           const costmodel::CostGraph& graph,
                                           const costmodel::Cluster& cluster,
                                           const SearchOptions& options) {
  if (algorithm == "tga" && options.nodes.graph != nullptr) {
    absl::StatusOr<TgaResult> tga = RunTga(graph, cluster, options, TgaOptionsFor(options));
    if (!tga.ok()) return tga.status();
    return SearchResult{.units = std::move(tga->placement),
                        .nodes = std::move(tga->node_placement)};
  }
  if (algorithm == "sgp" && options.nodes.graph != nullptr) {
    absl::StatusOr<SgpResult> sgp = RunSgp(graph, cluster, options);
    if (!sgp.ok()) return sgp.status();
    return SearchResult{.units = std::move(sgp->placement),
                        .nodes = std::move(sgp->node_placement)};
  }
  absl::StatusOr<costmodel::Placement> units = Place(algorithm, graph, cluster, options);
  if (!units.ok()) return units.status();
  return SearchResult{.units = *std::move(units)};
}

absl::StatusOr<costmodel::Placement> Place(std::string_view algorithm,
                                           const costmodel::CostGraph& graph,
                                           const costmodel::Cluster& cluster,
                                           const SearchOptions& options) {
  if (algorithm == "sgp") return PlaceSgp(graph, cluster, options);
  if (algorithm == "single") return PlaceSingleDevice(graph, cluster, options);
  if (algorithm == "round-robin") return PlaceRoundRobin(graph, cluster, options);
  if (algorithm == "m-topo") return PlaceMTopo(graph, cluster, options);
  if (algorithm == "m-etf") return PlaceMEtf(graph, cluster, options);
  if (algorithm == "m-sct") return PlaceMSct(graph, cluster, options);
  if (algorithm == "heft") return PlaceHeft(graph, cluster, options);
  if (algorithm == "cpop") return PlaceCpop(graph, cluster, options);
  if (algorithm == "pipeline-dp") return PlacePipelineDp(graph, cluster, options);
  if (algorithm == "tga") return PlaceTga(graph, cluster, options);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown placement algorithm '", std::string(algorithm),
                   "' (known: ", absl::StrJoin(AlgorithmNames(), ", "), ")"));
}

}  // namespace autopar::search
