// Gradient rules of the products (MatMul with batching and broadcasting,
// Gemm) and, to come, Conv and Einsum. Formulas: the table in
// gradient_rules.cc.
#include <vector>

#include "training/gradient_rules_internal.h"

namespace autopar::training::rules {

namespace {

// The permutation swapping the last two axes of a rank-`rank` tensor.
std::vector<int64_t> SwapLastTwo(int64_t rank) {
  std::vector<int64_t> perm;
  for (int64_t a = 0; a < rank; ++a) perm.push_back(a);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return perm;
}

}  // namespace

absl::Status MatMul(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  std::vector<int64_t> a_dims = n.XDims(0), b_dims = n.XDims(1), y_dims = n.YDims(0);
  // 1-D operands are promoted as numpy does (a vector A is [1, K], a vector B
  // [K, 1]); the gradient is computed in the promoted form and reshaped back.
  std::string a = n.X(0), b = n.X(1), dy = n.dY(0);
  std::vector<int64_t> a2 = a_dims, b2 = b_dims, y2 = y_dims;
  if (a_dims.size() == 1) {
    a2 = {1, a_dims[0]};
    a = e.Reshape(a, a2);
    y2.insert(y2.end() - (b_dims.size() == 1 ? 0 : 1), 1);
  }
  if (b_dims.size() == 1) {
    b2 = {b_dims[0], 1};
    b = e.Reshape(b, b2);
    y2.push_back(1);
  }
  if (y2 != y_dims) dy = e.Reshape(dy, y2);
  const int64_t rank = static_cast<int64_t>(y2.size());
  if (n.Needs(0)) {
    std::string bt = e.Transpose(b, SwapLastTwo(static_cast<int64_t>(b2.size())));
    std::string da = e.Op("MatMul", {dy, bt});
    std::vector<int64_t> da_dims = y2;
    da_dims[rank - 1] = a2.back();
    n.SetGradient(0, e.Reshape(e.SumToShape(da, da_dims, a2), a_dims));
  }
  if (n.Needs(1)) {
    std::string at = e.Transpose(a, SwapLastTwo(static_cast<int64_t>(a2.size())));
    std::string db = e.Op("MatMul", {at, dy});
    std::vector<int64_t> db_dims = y2;
    db_dims[rank - 2] = b2[b2.size() - 2];
    n.SetGradient(1, e.Reshape(e.SumToShape(db, db_dims, b2), b_dims));
  }
  return absl::OkStatus();
}

absl::Status Gemm(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  const float alpha = n.node().GetFloat("alpha", 1.0f);
  const float beta = n.node().GetFloat("beta", 1.0f);
  const bool trans_a = n.node().GetInt("transA", 0) != 0;
  const bool trans_b = n.node().GetInt("transB", 0) != 0;
  const ir::DType t = n.YType(0);
  std::string dy = n.dY(0);
  if (alpha != 1.0f) dy = e.Op("Mul", {dy, e.Scalar(alpha, t)});
  // op(A) = A or Aᵀ. d op(A) = dY·op(B)ᵀ and d op(B) = op(A)ᵀ·dY, written
  // with Gemm's own transpose flags so that no Transpose node is needed.
  if (n.Needs(0)) {
    // transA = 0: dA = dY · op(B)ᵀ;  transA = 1: dA = op(B) · dYᵀ.
    std::string da = trans_a ? e.Op("Gemm", {n.X(1), dy},
                                    {AttrInt("transA", trans_b ? 1 : 0), AttrInt("transB", 1)})
                             : e.Op("Gemm", {dy, n.X(1)}, {AttrInt("transB", trans_b ? 0 : 1)});
    n.SetGradient(0, da);
  }
  if (n.Needs(1)) {
    // transB = 0: dB = op(A)ᵀ · dY;  transB = 1: dB = dYᵀ · op(A).
    std::string db = trans_b ? e.Op("Gemm", {dy, n.X(0)},
                                    {AttrInt("transA", 1), AttrInt("transB", trans_a ? 1 : 0)})
                             : e.Op("Gemm", {n.X(0), dy}, {AttrInt("transA", trans_a ? 0 : 1)});
    n.SetGradient(1, db);
  }
  if (n.HasInput(2) && n.Needs(2)) {
    std::string dc = n.dY(0);
    if (beta != 1.0f) dc = e.Op("Mul", {dc, e.Scalar(beta, t)});
    n.SetGradient(2, e.SumToShape(dc, n.YDims(0), n.XDims(2)));
  }
  return absl::OkStatus();
}

}  // namespace autopar::training::rules
