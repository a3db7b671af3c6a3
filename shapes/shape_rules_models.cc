// Shape rules of model-level building blocks: normalizations with statistics
// outputs, recurrent layers, attention (ONNX and com.microsoft), losses and
// grid sampling.
#include "shapes/shape_rules_internal.h"

namespace autopar::shapes::rules {
namespace {

using K = ir::OpKind;

ir::DType DTypeOr(ir::DType preferred, ir::DType fallback) {
  return preferred != ir::DType::kUndefined ? preferred : fallback;
}

ir::Dim DimOf(const ir::Shape& shape, size_t i) {
  return shape.has_rank() && i < shape.rank() ? shape.dim(i) : UnknownDim();
}

// a / b for known dims when it divides evenly.
ir::Dim DivDim(const ir::Dim& a, std::optional<int64_t> b) {
  if (!a.known() || !b || *b <= 0 || a.value % *b != 0) return UnknownDim();
  return KnownDim(a.value / *b);
}

// The shape of normalization statistics: x's dims before `axis`, then 1s.
ir::Shape StatisticsShape(const ir::Shape& x, int64_t axis) {
  std::optional<int64_t> a = NormalizeAxis(axis, Rank(x).value_or(-1));
  if (!a) return ir::Shape();
  std::vector<ir::Dim> dims = x.dims();
  for (size_t i = static_cast<size_t>(*a); i < dims.size(); ++i) dims[i] = ir::Dim{1, ""};
  return ir::Shape::FromDims(std::move(dims));
}

}  // namespace

Outputs BatchNormalizationRule(const NodeView& node) {
  // Y like X; the optional statistics outputs (running mean and variance;
  // before opset 9 also saved mean and variance) are [C].
  Outputs out = {LikeInput(node, 0)};
  const OutputType stats =
      WithDims(DTypeOr(node.dtype(3), node.dtype(0)), {DimOf(node.shape(0), 1)});
  for (size_t i = 1; i < node.num_outputs(); ++i) out.push_back(stats);
  return out;
}

Outputs LayerNormalizationRule(const NodeView& node) {
  // LayerNormalization (Y, Mean, InvStdDev), com.microsoft LayerNormalization
  // and SimplifiedLayerNormalization (Y, inv_std_var): statistics keep the dims
  // before `axis` and are 1 after it, of type stash_type (float by default).
  const ir::DType stash = ir::DTypeFromOnnx(static_cast<int32_t>(node.GetInt("stash_type", 1)));
  Outputs out = {LikeInput(node, 0)};
  const OutputType stats =
      WithShape(stash, StatisticsShape(node.shape(0), node.GetInt("axis", -1)));
  for (size_t i = 1; i < node.num_outputs(); ++i) out.push_back(stats);
  return out;
}

Outputs SkipLayerNormalizationRule(const NodeView& node) {
  // (input, skip, gamma, beta?, bias?) -> output, mean?, inv_std_var?,
  // input_skip_bias_sum?; statistics are [.., 1] over the last axis.
  const OutputType stats = WithShape(ir::DType::kFloat, StatisticsShape(node.shape(0), -1));
  return {LikeInput(node, 0), stats, stats, LikeInput(node, 0)};
}

Outputs EmbedLayerNormalizationRule(const NodeView& node) {
  // (input_ids [B, S], segment_ids, word_embedding [V, H], ...) ->
  // output [B, S, H], mask_index [B] int32, embedding_sum [B, S, H].
  const ir::Shape& ids = node.shape(0);
  const ir::Dim batch = DimOf(ids, 0);
  const ir::Dim hidden = DimOf(node.shape(2), 1);
  const ir::DType dtype = node.dtype(2);
  if (!ids.has_rank() || ids.rank() != 2) return {Unranked(dtype), Unranked(ir::DType::kInt32)};
  const OutputType embedded = WithDims(dtype, {batch, ids.dim(1), hidden});
  return {embedded, WithDims(ir::DType::kInt32, {batch}), embedded};
}

Outputs RecurrentRule(const NodeView& node) {
  // RNN, GRU, LSTM: X [S, B, I] (layout 0) or [B, S, I] (layout 1) ->
  //   Y   [S, D, B, H] or [B, S, D, H]
  //   Y_h [D, B, H]    or [B, D, H]    (and LSTM's Y_c alike)
  // D = 2 for "bidirectional", H = hidden_size (or R's last dim).
  const ir::Shape& x = node.shape(0);
  const ir::DType dtype = node.dtype(0);
  const bool batch_first = node.GetInt("layout", 0) != 0;
  const ir::Dim directions =
      ir::Dim{node.GetString("direction", "forward") == "bidirectional" ? 2 : 1, ""};
  ir::Dim hidden = KnownDim(node.GetInt("hidden_size", -1));
  if (!hidden.known()) hidden = DimOf(node.shape(2), 2);
  if (!x.has_rank() || x.rank() != 3) return {Unranked(dtype), Unranked(dtype), Unranked(dtype)};
  const ir::Dim seq = x.dim(batch_first ? 1 : 0);
  const ir::Dim batch = x.dim(batch_first ? 0 : 1);
  const OutputType y = batch_first ? WithDims(dtype, {batch, seq, directions, hidden})
                                   : WithDims(dtype, {seq, directions, batch, hidden});
  const OutputType state = batch_first ? WithDims(dtype, {batch, directions, hidden})
                                       : WithDims(dtype, {directions, batch, hidden});
  return {y, state, state};
}

Outputs AttentionRule(const NodeView& node) {
  const ir::Shape& q = node.shape(0);
  const ir::Dim batch = DimOf(q, 0);
  switch (node.kind()) {
    case K::kMsAttention:
    case K::kMsQAttention: {
      // (input [B, S, I], weights [I, 3 * H], bias, ...) -> [B, S, H_v]; H_v is
      // qkv_hidden_sizes[2] when given. Attention's present (input 4 past
      // [2, B, N, P, h]) is [2, B, N, P + S, h].
      const ir::DType dtype = node.kind() == K::kMsQAttention
                                  ? DTypeOr(node.dtype(2), ir::DType::kFloat)
                                  : node.dtype(0);
      const std::vector<int64_t> sizes = node.GetInts("qkv_hidden_sizes");
      const ir::Dim v_hidden =
          sizes.size() == 3 ? KnownDim(sizes[2]) : DivDim(DimOf(node.shape(1), 1), 3);
      if (!q.has_rank() || q.rank() != 3) return {Unranked(dtype)};
      Outputs out = {WithDims(dtype, {batch, q.dim(1), v_hidden})};
      const ir::Shape& past = node.shape(4);
      if (node.kind() == K::kMsAttention && past.has_rank() && past.rank() == 5) {
        ir::Dim total = UnknownDim();
        if (past.dim(3).known() && q.dim(1).known()) {
          total = KnownDim(CheckedAdd(past.dim(3).value, q.dim(1).value));
        }
        out.push_back(WithDims(dtype, {past.dim(0), batch, past.dim(2), total, past.dim(4)}));
      }
      return out;
    }
    case K::kMsMultiHeadAttention: {
      // query [B, S, D] or packed [B, S, N, 3, h]; value [B, L, D_v] or
      // [B, N, L, h_v]; or key packed [B, L, N, 2, h] -> [B, S, D_v].
      const ir::DType dtype = node.dtype(0);
      if (!q.has_rank() || (q.rank() != 3 && q.rank() != 5)) return {Unranked(dtype)};
      const ir::Shape& k = node.shape(1);
      const ir::Shape& v = node.shape(2);
      ir::Dim v_hidden = UnknownDim();
      if (q.rank() == 5) {
        v_hidden = MulDims(q.dim(2), q.dim(4));
      } else if (v.has_rank() && v.rank() == 3) {
        v_hidden = v.dim(2);
      } else if (v.has_rank() && v.rank() == 4) {
        v_hidden = MulDims(v.dim(1), v.dim(3));
      } else if (!node.has_input(2) && k.has_rank() && k.rank() == 5) {
        v_hidden = MulDims(k.dim(2), k.dim(4));
      }
      return {WithDims(dtype, {batch, q.dim(1), v_hidden})};
    }
    case K::kMsGroupQueryAttention: {
      // query [B, S, D] (or packed QKV [B, S, (N + 2 * N_kv) * h] without key)
      // -> [B, S, N * h].
      const ir::DType dtype = node.dtype(0);
      if (!q.has_rank() || q.rank() != 3) return {Unranked(dtype)};
      if (node.has_input(1)) return {WithDims(dtype, {batch, q.dim(1), q.dim(2)})};
      const int64_t heads = node.GetInt("num_heads", 0);
      const int64_t kv_heads = node.GetInt("kv_num_heads", 0);
      std::optional<int64_t> all = ir::CheckedMul(kv_heads, 2);
      if (all) all = CheckedAdd(*all, heads);
      const ir::Dim head = heads > 0 && kv_heads > 0 ? DivDim(q.dim(2), all) : UnknownDim();
      return {WithDims(dtype, {batch, q.dim(1), MulDims(head, KnownDim(heads))})};
    }
    default: {
      // ONNX Attention (opset 23): Q [B, N_q, S, h] -> [B, N_q, S, h_v] with
      // V [B, N_kv, L, h_v]; or Q [B, S, D] -> [B, S, N_q * (D_v / N_kv)].
      const ir::DType dtype = node.dtype(0);
      const ir::Shape& v = node.shape(2);
      if (q.has_rank() && q.rank() == 4) {
        const ir::Dim v_head = v.has_rank() && v.rank() == 4 ? v.dim(3) : UnknownDim();
        return {WithDims(dtype, {batch, q.dim(1), q.dim(2), v_head})};
      }
      if (!q.has_rank() || q.rank() != 3) return {Unranked(dtype)};
      const int64_t q_heads = node.GetInt("q_num_heads", 0);
      const int64_t kv_heads = node.GetInt("kv_num_heads", 0);
      ir::Dim v_hidden = UnknownDim();
      if (q_heads > 0 && kv_heads > 0 && v.has_rank() && v.rank() == 3) {
        v_hidden = MulDims(DivDim(v.dim(2), kv_heads), KnownDim(q_heads));
      }
      return {WithDims(dtype, {batch, q.dim(1), v_hidden})};
    }
  }
}

Outputs LossRule(const NodeView& node) {
  // NegativeLogLikelihoodLoss (input [N, C, d..], target [N, d..]) and
  // SoftmaxCrossEntropyLoss (+ log_prob like scores): a scalar, or the
  // target's shape with reduction "none".
  const ir::DType dtype = node.dtype(0);
  OutputType loss = node.GetString("reduction", "mean") == "none" ? WithShape(dtype, node.shape(1))
                                                                  : WithDims(dtype, {});
  return {loss, LikeInput(node, 0)};
}

Outputs GridSampleRule(const NodeView& node) {
  // X [N, C, D1..Dn], grid [N, O1..On, n] -> [N, C, O1..On]
  const ir::Shape& x = node.shape(0);
  const ir::Shape& grid = node.shape(1);
  if (!x.has_rank() || !grid.has_rank() || x.rank() < 3 || grid.rank() != x.rank()) {
    return {Unranked(node.dtype(0))};
  }
  std::vector<ir::Dim> dims = {x.dim(0), x.dim(1)};
  dims.insert(dims.end(), grid.dims().begin() + 1, grid.dims().end() - 1);
  return {WithDims(node.dtype(0), std::move(dims))};
}

Outputs AffineGridRule(const NodeView& node) {
  // (theta, size = [N, C, H, W] or [N, C, D, H, W]) -> [N, H, W, 2] or [N, D, H, W, 3]
  const ir::DType dtype = node.dtype(0);
  std::optional<absl::Span<const int64_t>> size = node.ints(1);
  if (!size || (size->size() != 4 && size->size() != 5)) return {Unranked(dtype)};
  std::vector<ir::Dim> dims = {KnownDim((*size)[0])};
  for (size_t i = 2; i < size->size(); ++i) dims.push_back(KnownDim((*size)[i]));
  dims.push_back(KnownDim(static_cast<int64_t>(size->size()) - 2));
  return {WithDims(dtype, std::move(dims))};
}

}  // namespace autopar::shapes::rules
