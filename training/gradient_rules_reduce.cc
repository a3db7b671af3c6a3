// Gradient rules of the reductions (ReduceSum, ReduceMean) and, to come, the
// softmax family and the normalisations. Formulas: the table in
// gradient_rules.cc.
#include <vector>

#include "training/gradient_rules_internal.h"

namespace autopar::training::rules {

namespace {

// The axes a Reduce* node reduces over, non-negative; every axis when none
// are given (unless noop_with_empty_axes, where the node is an identity and
// the returned list is empty).
absl::StatusOr<std::vector<int64_t>> ReducedAxes(NodeGradient& n) {
  std::vector<int64_t> axes = n.node().GetInts("axes");
  if (n.HasInput(1)) {
    if (!n.XInts(1).has_value()) return n.Unsupported("axes are not a constant");
    axes = *n.XInts(1);
  }
  const int64_t rank = n.XRank(0);
  if (axes.empty()) {
    if (n.node().GetInt("noop_with_empty_axes", 0) != 0) return axes;
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  return axes;
}

// dY brought back to X's shape: the reduced axes restored (when keepdims was
// 0) and expanded.
std::string ExpandBack(NodeGradient& n, const std::vector<int64_t>& axes) {
  GraphEmitter& e = n.emit();
  std::vector<int64_t> kept = n.XDims(0);
  for (int64_t a : axes) kept[a] = 1;
  std::string g = e.Reshape(n.dY(0), kept);
  return e.Expand(g, n.XDims(0));
}

}  // namespace

absl::Status ReduceSum(NodeGradient& n) {
  absl::StatusOr<std::vector<int64_t>> axes = ReducedAxes(n);
  if (!axes.ok()) return axes.status();
  n.SetGradient(0, ExpandBack(n, *axes));
  return absl::OkStatus();
}

absl::Status ReduceMean(NodeGradient& n) {
  absl::StatusOr<std::vector<int64_t>> axes = ReducedAxes(n);
  if (!axes.ok()) return axes.status();
  std::string g = ExpandBack(n, *axes);
  int64_t count = 1;
  std::vector<int64_t> dims = n.XDims(0);
  for (int64_t a : *axes) count *= dims[a];
  n.SetGradient(0,
                n.emit().Op("Div", {g, n.emit().Scalar(static_cast<double>(count), n.XType(0))}));
  return absl::OkStatus();
}

}  // namespace autopar::training::rules
