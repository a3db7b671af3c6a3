// Gradient rules of the layout and data-movement operators: views that only
// reshape, permutations, and (to come) the slicing, joining and gathering
// operators. Formulas: the table in gradient_rules.cc.
#include <vector>

#include "training/gradient_rules_internal.h"

namespace autopar::training::rules {

absl::Status ReshapeBack(NodeGradient& n) {
  n.SetGradient(0, n.emit().Reshape(n.dY(0), n.XDims(0)));
  return absl::OkStatus();
}

absl::Status Transpose(NodeGradient& n) {
  std::vector<int64_t> perm = n.node().GetInts("perm");
  const int64_t rank = n.XRank(0);
  if (perm.empty()) {  // default: reverse the axes
    for (int64_t a = rank - 1; a >= 0; --a) perm.push_back(a);
  }
  std::vector<int64_t> inverse(perm.size());
  for (size_t a = 0; a < perm.size(); ++a) inverse[perm[a]] = static_cast<int64_t>(a);
  n.SetGradient(0, n.emit().Transpose(n.dY(0), inverse));
  return absl::OkStatus();
}

}  // namespace autopar::training::rules
