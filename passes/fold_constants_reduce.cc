// The constant folder's reductions: ReduceSum, ReduceProd, ReduceMin,
// ReduceMax, ArgMax, ArgMin.
#include <cmath>
#include <limits>

#include "passes/fold_constants.h"
#include "passes/fold_constants_internal.h"

namespace autopar::passes::fold {
namespace {

using K = ir::OpKind;

// The opset from which each reduction takes its axes as an input.
int64_t FirstAxesInputOpset(K kind) { return kind == K::kReduceSum ? 13 : 18; }

// For each output element, the input elements it reduces: the input's
// indices grouped by their coordinates outside `reduced`.
struct Grouping {
  std::vector<int64_t> out_dims;              // with keepdims applied
  std::vector<std::vector<int64_t>> members;  // per output element
};
Grouping Group(const std::vector<int64_t>& dims, const std::vector<bool>& reduced, bool keepdims) {
  Grouping g;
  std::vector<int64_t> kept_dims;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!reduced[d]) kept_dims.push_back(dims[d]);
    if (keepdims || !reduced[d]) g.out_dims.push_back(reduced[d] ? 1 : dims[d]);
  }
  const int64_t groups = NumElements(kept_dims).value_or(0);
  const std::vector<int64_t> kept_strides = Strides(kept_dims);
  g.members.resize(groups);
  const int64_t n = NumElements(dims).value_or(0);
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t group = 0;
    size_t k = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!reduced[d]) group += index[d] * kept_strides[k++];
    }
    g.members[group].push_back(flat);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  return g;
}

}  // namespace

// ReduceSum/Prod/Min/Max(data, axes) with keepdims and
// noop_with_empty_axes. Min and Max of an empty set do not fold.
std::optional<Outputs> EvalReduce(const EvalContext& c) {
  const Tensor* data = c.in(0);
  const K kind = c.node.kind;
  std::optional<std::vector<int64_t>> axes = c.IntList(1, "axes", FirstAxesInputOpset(kind));
  if (data == nullptr || !axes || data->dtype == ir::DType::kBool) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(data->dims.size());
  if (axes->empty() && c.node.GetInt("noop_with_empty_axes", 0) != 0) return Outputs{*data};
  std::vector<bool> reduced(rank, axes->empty());
  for (int64_t a : *axes) {
    std::optional<int64_t> axis = NormalizeAxis(a, rank);
    if (!axis) return std::nullopt;
    reduced[*axis] = true;
  }
  Grouping g = Group(data->dims, reduced, c.node.GetInt("keepdims", 1) != 0);
  std::optional<Tensor> out = MakeTensor(data->dtype, g.out_dims);
  if (!out) return std::nullopt;
  for (const std::vector<int64_t>& members : g.members) {
    if (members.empty() && (kind == K::kReduceMin || kind == K::kReduceMax)) return std::nullopt;
    if (data->is_real()) {
      double acc = kind == K::kReduceProd ? 1.0 : 0.0;
      for (size_t m = 0; m < members.size(); ++m) {
        const double v = data->reals[members[m]];
        if (kind == K::kReduceSum) acc += v;
        if (kind == K::kReduceProd) acc *= v;
        if (kind == K::kReduceMin) acc = m == 0 ? v : std::min(acc, v);
        if (kind == K::kReduceMax) acc = m == 0 ? v : std::max(acc, v);
      }
      out->reals.push_back(acc);
    } else {
      uint64_t acc = kind == K::kReduceProd ? 1 : 0;  // wraps like the runtime
      int64_t best = 0;
      for (size_t m = 0; m < members.size(); ++m) {
        const int64_t v = data->ints[members[m]];
        if (kind == K::kReduceSum) acc += static_cast<uint64_t>(v);
        if (kind == K::kReduceProd) acc *= static_cast<uint64_t>(v);
        if (kind == K::kReduceMin) best = m == 0 ? v : std::min(best, v);
        if (kind == K::kReduceMax) best = m == 0 ? v : std::max(best, v);
      }
      const bool extremum = kind == K::kReduceMin || kind == K::kReduceMax;
      out->ints.push_back(extremum ? best : static_cast<int64_t>(acc));
    }
  }
  Normalize(*out);
  return Outputs{*std::move(out)};
}

// ArgMax/ArgMin(data, axis, keepdims, select_last_index) → int64.
std::optional<Outputs> EvalArgReduce(const EvalContext& c) {
  const Tensor* data = c.in(0);
  if (data == nullptr) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(data->dims.size());
  std::optional<int64_t> axis = NormalizeAxis(c.node.GetInt("axis", 0), rank);
  if (!axis || data->dims[*axis] == 0) return std::nullopt;
  std::vector<bool> reduced(rank, false);
  reduced[*axis] = true;
  Grouping g = Group(data->dims, reduced, c.node.GetInt("keepdims", 1) != 0);
  std::optional<Tensor> out = MakeTensor(ir::DType::kInt64, g.out_dims);
  if (!out) return std::nullopt;
  const bool last = c.node.GetInt("select_last_index", 0) != 0;
  const bool max = c.node.kind == K::kArgMax;
  for (const std::vector<int64_t>& members : g.members) {
    int64_t best = 0;
    for (size_t m = 1; m < members.size(); ++m) {
      const double v = data->real(members[m]);
      const double b = data->real(members[best]);
      const bool better = max ? (v > b || (last && v == b)) : (v < b || (last && v == b));
      if (better) best = static_cast<int64_t>(m);
    }
    out->ints.push_back(best);
  }
  return Outputs{*std::move(out)};
}

}  // namespace autopar::passes::fold
