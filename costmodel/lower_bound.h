// A lower bound on the step time of any placement, reported
// beside every simulated step time so users see how far a plan is from ideal.
#ifndef AUTOPAR_COSTMODEL_LOWER_BOUND_H_
#define AUTOPAR_COSTMODEL_LOWER_BOUND_H_

#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"

namespace autopar::costmodel {

struct LowerBound {
  /// Longest path through the graph, each unit at its fastest kind's time,
  /// transfers free: one micro-batch can finish no sooner, and so neither can
  /// the step (Note [Micro-batches] in costmodel/simulator.h). With whole
  /// stages, plus one stage run (Note [Stage execution]).
  double critical_path_us = 0;
  /// All M micro-batches' work spread perfectly over all devices:
  /// M / Σ_d (1 / W_kind(d)) where W_k is the total compute of one
  /// micro-batch on kind k (with whole stages, plus one stage run). Exact when
  /// the kinds' speed ratio is the same for every unit; otherwise an
  /// approximation.
  double balanced_work_us = 0;
  /// max(critical_path_us, balanced_work_us).
  double bound_us = 0;
};

/// The bound for a step of `microbatches` pipelined micro-batches (the
/// simulator's SimulationOptions::microbatches).
LowerBound ComputeLowerBound(const CostGraph& graph, const Cluster& cluster, int microbatches = 1);

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_LOWER_BOUND_H_
