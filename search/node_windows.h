// Exact windows of a node plan: the node refinement's large-neighbourhood
// step (search/node_refinement.h). A series phase of the node graph (the
// nodes between two cuts, Note [Series phases] in costmodel/lower_bound.h)
// runs, with one micro-batch, after everything before its entry cut and
// before everything after its exit cut, so its span depends on its own
// nodes' devices only. A window is up to k consecutive nodes of one phase;
// every assignment of the window's nodes to devices is simulated on the
// phase alone (a graph of a few dozen nodes: microseconds) and the best one
// that shortens the phase is a move.
//
// Identical devices (one kind, one memory size, one link everywhere) are
// interchangeable: assignments that differ by renaming devices unused
// outside the window are tried once (restricted growth: a window node takes
// a device already in the phase or the next unused one), and the exit cut
// joins the window — moving it renames the devices of everything after it,
// which leaves every later phase's span as it was. Otherwise every device is
// tried and the exit stays.
//
// Exact for one micro-batch and node-by-node execution (not whole stages);
// the caller judges every move with the full simulation anyway (memory, and
// ties the phase alone may break otherwise).
#ifndef AUTOPAR_SEARCH_NODE_WINDOWS_H_
#define AUTOPAR_SEARCH_NODE_WINDOWS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "costmodel/cluster.h"
#include "costmodel/cost_graph.h"
#include "costmodel/simulator.h"

namespace autopar::search {

class NodeWindows {
 public:
  /// A better assignment of one window.
  struct Move {
    uint32_t phase = 0;
    /// (node, device) for the window's nodes.
    std::vector<std::pair<uint32_t, int32_t>> assign;
    /// With the exit cut in the window and moved: every node after it swaps
    /// these two devices (else both -1).
    int32_t swap_from = -1, swap_to = -1;
    /// From SweepOrders: (node, priority) for the phase's nodes.
    std::vector<std::pair<uint32_t, double>> priority;
    /// The phase's span before and after, µs.
    double before_us = 0, after_us = 0;
  };

  /// `fixed[v]`: node v never moves (nodes of a locked unit). Phases of more
  /// than max_phase_nodes nodes are left alone.
  NodeWindows(const costmodel::CostGraph& graph, const costmodel::Cluster& cluster,
              const std::vector<uint8_t>& fixed, uint32_t max_phase_nodes = 64);
  ~NodeWindows();
  NodeWindows(const NodeWindows&) = delete;
  NodeWindows& operator=(const NodeWindows&) = delete;

  /// Phases with a node that may move.
  size_t num_phases() const { return phases_.size(); }
  /// The largest window that still grows some phase's neighbourhood.
  uint32_t max_window() const { return max_window_; }
  /// Simulations of phases so far.
  int64_t simulations() const { return simulations_; }

  /// One sweep with windows of `k` nodes over the phases not yet swept at k
  /// or more since they last changed, those furthest above their own bound
  /// first: the best move of each phase that has one. `priority` is the
  /// plan's (one per node; empty: the simulator's default). Stops early, with
  /// the moves found so far, when stop() says so.
  std::vector<Move> Sweep(const std::vector<int32_t>& device, const std::vector<double>& priority,
                          uint32_t k, const std::function<bool()>& stop);

  /// Per phase, the best of `orders` (node priorities, each as `priority`)
  /// for its nodes, with windows of k under each: a move where one beats the
  /// plan's own. With one micro-batch a node only waits for nodes of its own
  /// phase, so phases may take their orders from different schedules. A
  /// sweep stopped early goes on, next time, from the phase it stopped at.
  std::vector<Move> SweepOrders(const std::vector<int32_t>& device,
                                const std::vector<double>& priority,
                                const std::vector<std::vector<double>>& orders, uint32_t k,
                                const std::function<bool()>& stop);

  /// SweepOrders' sweeps that went over every phase.
  int64_t orders_passes() const { return orders_passes_; }

  /// Shifts, for when windows and orders have nothing left: in each phase
  /// above its bound, one node taken out of the plan's order (`priority`, as
  /// in Sweep) and put back at every other place, the assignment re-solved
  /// under each new order with windows of k (0: kept as it is). Of a
  /// device's ready nodes the simulator runs the first in that order, which
  /// decides when each output is sent and so which transfer waits for a
  /// link. The best order and assignment that shortens the phase is a move
  /// (with Move::priority). Phases shifted at k or more as they are now are
  /// skipped, so a sweep stopped early goes on, next time, where it stopped,
  /// and a phase a move changed is shifted again.
  std::vector<Move> SweepShifts(const std::vector<int32_t>& device,
                                const std::vector<double>& priority, uint32_t k,
                                const std::function<bool()>& stop);

  /// True when every phase has been shifted at k or more as it is in
  /// `device` and `priority`.
  bool ShiftsDone(const std::vector<int32_t>& device, const std::vector<double>& priority,
                  uint32_t k) const;

  /// The simulator's default priorities of the graph.
  const std::vector<double>& default_priority() const { return default_priority_; }

  /// True when every phase has been swept at k or more as it is in `device`.
  bool Done(const std::vector<int32_t>& device, uint32_t k) const;

  /// The plan `device` turned `move` down: its phase is not tried again at
  /// this size until it changes.
  void Rejected(const Move& move, const std::vector<int32_t>& device);

  /// Applies moves found on one plan together (later phases first, so that
  /// an earlier exit's renaming carries the later moves along).
  /// With `priority`, the moves' priorities too.
  void Apply(std::vector<Move> moves, std::vector<int32_t>& device,
             std::vector<double>* priority = nullptr) const;

 private:
  struct Phase;
  struct Search;
  void Optimise(Phase& phase, std::vector<int32_t>& local, double& span, uint32_t begin, uint32_t k,
                Search& search);
  void SolveWindows(Phase& phase, std::vector<int32_t>& local, double& span, uint32_t k,
                    Search& search);
  void SetPriority(Phase& phase, const std::vector<double>& priority) const;
  std::vector<int32_t> Signature(const Phase& phase, const std::vector<int32_t>& device) const;
  std::vector<uint32_t> Order(const Phase& phase, const std::vector<double>& priority) const;
  std::vector<int32_t> ShiftSignature(const Phase& phase, const std::vector<int32_t>& device,
                                      const std::vector<double>& priority) const;
  double PhaseSpan(Phase& phase, const std::vector<int32_t>& local_device);
  // The move from the phase's devices `before` to `after` (both local, one
  // per phase node): the free nodes that change, and the exit cut's swap.
  static Move PhaseMove(const Phase& phase, uint32_t index, double before_us, double after_us,
                        const std::vector<int32_t>& before, const std::vector<int32_t>& after);

  const costmodel::CostGraph& graph_;
  const costmodel::Cluster& cluster_;
  const int num_devices_;
  bool interchangeable_ = false;
  const std::vector<uint8_t> fixed_;
  std::vector<std::unique_ptr<Phase>> phases_;
  uint32_t max_window_ = 0;
  int64_t simulations_ = 0;
  uint32_t orders_from_ = 0;
  int64_t orders_passes_ = 0;
  std::vector<double> default_priority_;
};

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_NODE_WINDOWS_H_
