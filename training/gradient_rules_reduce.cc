// Gradient rules of the reductions (ReduceSum, ReduceMean), the softmax
// family (Softmax, LogSoftmax) and LayerNormalization. Formulas: the table in
// gradient_rules.cc.
#include <string>
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

namespace {

// The axes Softmax/LogSoftmax normalise over: from opset 13 the one axis
// (default −1); before, X is coerced to 2-D at `axis` (default 1) and the
// whole tail [axis, rank) is normalised as one row.
std::vector<int64_t> SoftmaxAxes(NodeGradient& n) {
  const int64_t rank = n.XRank(0);
  const bool per_axis = n.node().opset >= 13;
  int64_t axis = n.node().GetInt("axis", per_axis ? -1 : 1);
  if (axis < 0) axis += rank;
  std::vector<int64_t> axes = {axis};
  if (!per_axis) {
    for (int64_t a = axis + 1; a < rank; ++a) axes.push_back(a);
  }
  return axes;
}

}  // namespace

absl::Status Softmax(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  std::string weighted = e.Op("Mul", {n.dY(0), n.Y(0)});
  std::string row_sum = e.ReduceSum(weighted, SoftmaxAxes(n), /*keep_dims=*/true);
  n.SetGradient(0, e.Op("Sub", {weighted, e.Op("Mul", {n.Y(0), row_sum})}));
  return absl::OkStatus();
}

absl::Status LogSoftmax(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  std::string row_sum = e.ReduceSum(n.dY(0), SoftmaxAxes(n), /*keep_dims=*/true);
  std::string softmax = e.Op("Exp", {n.Y(0)});
  n.SetGradient(0, e.Op("Sub", {n.dY(0), e.Op("Mul", {softmax, row_sum})}));
  return absl::OkStatus();
}

absl::Status LayerNormalization(NodeGradient& n) {
  // Over the axes [axis, rank): x̂ = (X − μ)·r with r = 1/√(σ² + ε) (μ and r
  // recomputed, in X's type), Y = x̂·S + B. Then dB = ∑↓dY, dS = ∑↓(dY·x̂),
  // and with g = dY·S: dX = r·(g − mean(g) − x̂·mean(g·x̂)), plus the terms of
  // the optional Mean and InvStdDev outputs when they carry gradients.
  GraphEmitter& e = n.emit();
  const ir::DType t = n.XType(0);
  const std::vector<int64_t> x_dims = n.XDims(0);
  const int64_t rank = static_cast<int64_t>(x_dims.size());
  int64_t axis = n.node().GetInt("axis", -1);
  if (axis < 0) axis += rank;
  std::vector<int64_t> axes;
  int64_t count = 1;
  for (int64_t a = axis; a < rank; ++a) {
    axes.push_back(a);
    count *= x_dims[a];
  }
  const float epsilon = n.node().GetFloat("epsilon", 1e-5f);
  auto mean = [&](const std::string& v) { return e.ReduceMean(v, axes, /*keep_dims=*/true); };
  std::string centered = e.Op("Sub", {n.X(0), mean(n.X(0))});
  std::string variance = mean(e.Op("Mul", {centered, centered}));
  std::string r =
      e.Op("Reciprocal", {e.Op("Sqrt", {e.Op("Add", {variance, e.Scalar(epsilon, t)})})});
  std::string normalized = e.Op("Mul", {centered, r});
  const std::string dy = n.dYOrZeros(0);
  if (n.Needs(0)) {
    std::string g = e.Op("Mul", {dy, n.X(1)});
    std::string inner = e.Op("Sub", {g, mean(g)});
    inner = e.Op("Sub", {inner, e.Op("Mul", {normalized, mean(e.Op("Mul", {g, normalized}))})});
    std::string dx = e.Op("Mul", {inner, r});
    std::vector<std::string> terms = {dx};
    const std::string scale = e.Scalar(static_cast<double>(count), t);
    // Mean and InvStdDev have the stash type (float32 by default).
    auto in_x_type = [&](int i) { return n.YType(i) == t ? n.dY(i) : e.Cast(n.dY(i), t); };
    if (n.num_outputs() > 1 && !n.dY(1).empty()) {
      // dμ/dX = 1/N on each element of the group.
      terms.push_back(e.Op("Div", {e.Expand(in_x_type(1), x_dims), scale}));
    }
    if (n.num_outputs() > 2 && !n.dY(2).empty()) {
      // dr/dX = −r³·(X − μ)/N = −r²·x̂/N.
      std::string r2 = e.Op("Mul", {r, r});
      std::string d = e.Op("Mul", {e.Op("Mul", {in_x_type(2), r2}), normalized});
      terms.push_back(e.Op("Neg", {e.Op("Div", {d, scale})}));
    }
    n.SetGradient(0, e.Sum(terms));
  }
  if (n.Needs(1)) {
    std::string g = e.Op("Mul", {dy, normalized});
    n.SetGradient(1, e.SumToShape(g, x_dims, n.XDims(1)));
  }
  if (n.HasInput(2) && n.Needs(2)) n.SetGradient(2, e.SumToShape(dy, x_dims, n.XDims(2)));
  return absl::OkStatus();
}

}  // namespace autopar::training::rules
