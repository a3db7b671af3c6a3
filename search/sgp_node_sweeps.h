// SGP's steps 7c–7e (sgp.cc lists them all): with micro-batches, the best
// plan of the nodes is improved by single moves, each judged by the
// node-level simulation — boundary runs shifted across a device change (7c),
// whole chains moved beside their neighbours (7d), blocks of two nodes and
// then single nodes moved to a device they exchange a tensor with (7e). The
// members live on sgp::Sgp (sgp_steps.h); this header shares the chain
// helpers that step 7b's spread candidate and memory repair use too.
#ifndef AUTOPAR_SEARCH_SGP_NODE_SWEEPS_H_
#define AUTOPAR_SEARCH_SGP_NODE_SWEEPS_H_

#include <cstdint>

#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"
#include "search/search.h"

namespace autopar::search::sgp {

/// Whether node v reads the node just before it in the node order: the next
/// link of a chain (a tower, an attention branch, a recurrent layer).
bool ReadsPrevious(const costmodel::CostGraph& nodes, uint32_t v);

/// The end of the chain that starts at `begin`: the nodes after it on its
/// device in `plan`, each reading the one before (see ReadsPrevious).
uint32_t ChainEnd(const costmodel::CostGraph& nodes, const costmodel::Placement& plan,
                  uint32_t begin);

/// Whether moving nodes [begin, end) of the node order would split a locked
/// unit, whose nodes must stay on one device.
bool SplitsLockedUnit(const NodeLevel& level, uint32_t begin, uint32_t end);

}  // namespace autopar::search::sgp

#endif  // AUTOPAR_SEARCH_SGP_NODE_SWEEPS_H_
