// Sequence-model formulas: RNN / GRU / LSTM over every time step and
// direction, and the attention family (com.microsoft Attention,
// MultiHeadAttention, GroupQueryAttention, QAttention; ONNX Attention), with
// the layer norms and embeddings that come with them.
#include <algorithm>
#include <string>

#include "costmodel/op_costs_internal.h"

namespace autopar::costmodel::internal {
namespace {

namespace w = weights;

// The activation functions an RNN op applies, by role (f, g, h), as named in
// its `activations` attribute (first direction), else the defaults.
std::vector<std::string> RnnActivations(const ir::Node& node, RecurrentCell cell) {
  std::vector<std::string> defaults;
  switch (cell) {
    case RecurrentCell::kRnn:
      defaults = {"Tanh"};
      break;
    case RecurrentCell::kGru:
      defaults = {"Sigmoid", "Tanh"};
      break;
    case RecurrentCell::kLstm:
      defaults = {"Sigmoid", "Tanh", "Tanh"};
      break;
  }
  const ir::Attribute* a = node.FindAttribute("activations");
  if (a == nullptr || a->type != ir::AttributeType::kStrings ||
      a->strings.size() < defaults.size()) {
    return defaults;
  }
  return std::vector<std::string>(
      a->strings.begin(), a->strings.begin() + static_cast<std::ptrdiff_t>(defaults.size()));
}

// The attention core shared by every variant: Q·Kᵀ (elements of Q × L MACs,
// all heads included), scaling and softmax of the scores (heads × rows × L
// of them), scores·V (elements of the output × L MACs).
void AddAttentionCore(Work& work, Count qk_macs, Count pv_macs, Count scores) {
  work.macs += qk_macs + pv_macs;
  work.flops += (qk_macs + pv_macs) * 2 + scores * (w::kSoftmax + 1);
}

}  // namespace

// Note [Recurrent cost]: per time step and direction, the gate GEMMs
// batch × gates × hidden × (input + hidden) MACs (gates: RNN 1, GRU 3, LSTM
// 4), the biases (2 × gates × hidden adds per batch row), the activations
// (by their per-element weights) and the cell update; all × seq_length ×
// num_directions. sequence_lens is ignored: every sequence counts as full
// length (an upper bound).
Work Recurrent(const OpContext& c, RecurrentCell cell) {
  const TensorInfo& x = c.in(0);
  const TensorInfo& weight = c.in(1);
  const TensorInfo& recurrence = c.in(2);
  int64_t gates = cell == RecurrentCell::kLstm ? 4 : cell == RecurrentCell::kGru ? 3 : 1;
  bool batch_first = c.node.GetInt("layout", 0) != 0;
  int64_t seq = x.Dim(batch_first ? 1 : 0);
  int64_t batch = x.Dim(batch_first ? 0 : 1);
  int64_t input = x.rank() == 3 ? x.Dim(2) : weight.Dim(2);
  int64_t hidden = c.node.GetInt("hidden_size", -1);
  if (hidden <= 0) hidden = recurrence.rank() == 3 ? recurrence.Dim(2) : weight.Dim(1) / gates;
  int64_t directions = weight.rank() == 3                                            ? weight.Dim(0)
                       : c.node.GetString("direction", "forward") == "bidirectional" ? 2
                                                                                     : 1;
  if (seq < 0 || batch < 0 || input < 0 || hidden <= 0 || directions <= 0) {
    return Estimate(c, 2, OpClass::kRecurrent);
  }

  std::vector<std::string> act = RnnActivations(c.node, cell);
  // Element-wise work per hidden unit and step.
  int64_t per_unit = 0;
  switch (cell) {
    case RecurrentCell::kRnn:  // h = f(Xw + Hr + b)
      per_unit = ActivationWeight(act[0]);
      break;
    case RecurrentCell::kGru:  // z, r = f(..); h~ = g(..); h = (1-z)h~ + zh: 5
      per_unit = 2 * ActivationWeight(act[0]) + ActivationWeight(act[1]) + 5;
      break;
    case RecurrentCell::kLstm:  // i, f, o = f(..); c = f⊙c + i⊙g(..); h = o⊙h(c)
      per_unit =
          3 * ActivationWeight(act[0]) + ActivationWeight(act[1]) + ActivationWeight(act[2]) + 4;
      if (c.in(7).present) per_unit += 6;  // peepholes: 3 multiply-adds
      break;
  }
  if (c.in(3).present) per_unit += 2 * gates;  // Wb + Rb
  if (c.node.FindAttribute("clip") != nullptr) per_unit += 2 * gates;

  Count steps = Count(seq) * directions;
  Work work;
  work.op_class = OpClass::kRecurrent;
  work.estimated = x.estimated;
  work.macs = steps * batch * gates * hidden * (input + hidden);
  work.flops = work.macs * 2 + steps * batch * hidden * per_unit;
  // The input projections of all steps, computed up front (gates × hidden
  // per step, batch row and direction).
  work.workspace_bytes = steps * batch * gates * hidden * ir::DTypeSizeBytes(x.dtype);
  return work;
}

// com.microsoft Attention / QAttention: input [B, S, D_in] × weights
// [D_in, q + k + v] (+ bias), then the attention core over L = past + S keys.
// (Its output has no output projection: that is a separate MatMul.)
Work ContribAttention(const OpContext& c) {
  const TensorInfo& input = c.in(0);
  const TensorInfo& weight = c.in(1);
  const TensorInfo& past = c.in(c.node.kind == ir::OpKind::kMsQAttention ? 8 : 4);
  int64_t heads = std::max<int64_t>(c.node.GetInt("num_heads", 1), 1);
  if (input.rank() != 3 || weight.rank() != 2) return Estimate(c, 2, OpClass::kMatMul);
  int64_t batch = input.Dim(0);
  int64_t seq = input.Dim(1);
  int64_t total = weight.Dim(1);
  std::vector<int64_t> sizes = c.node.GetInts("qkv_hidden_sizes");
  int64_t q_hidden = sizes.size() == 3 ? sizes[0] : total / 3;
  int64_t v_hidden = sizes.size() == 3 ? sizes[2] : total / 3;
  int64_t keys = seq + (past.rank() == 5 ? past.Dim(3) : 0);

  Work work;
  work.op_class = OpClass::kMatMul;
  work.estimated = input.estimated;
  Count rows = Count(batch) * seq;
  work.macs = rows * input.Dim(2) * total;
  work.flops = work.macs * 2;
  if (c.in(2).present) work.flops += rows * total;
  Count scores = rows * heads * keys;
  AddAttentionCore(work, rows * q_hidden * keys, rows * v_hidden * keys, scores);
  work.workspace_bytes = scores * 4 + rows * total * ir::DTypeSizeBytes(input.dtype);
  return work;
}

// com.microsoft MultiHeadAttention: projected Q, K, V in (packed or not);
// the attention core only.
Work MultiHeadAttention(const OpContext& c) {
  const TensorInfo& query = c.in(0);
  const TensorInfo& key = c.in(1);
  int64_t heads = std::max<int64_t>(c.node.GetInt("num_heads", 1), 1);
  if (query.rank() != 3 && query.rank() != 5) return Estimate(c, 2, OpClass::kMatMul);
  int64_t batch = query.Dim(0);
  int64_t seq = query.Dim(1);
  int64_t q_hidden = query.rank() == 3 ? query.Dim(2) : heads * query.Dim(4);
  int64_t keys = seq;
  if (c.out(1).rank() == 4) {
    keys = c.out(1).Dim(2);  // present_key: past + new keys
  } else if (key.present) {
    keys = key.rank() == 4 ? key.Dim(2) : key.Dim(1);
    if (c.in(6).rank() == 4) keys += c.in(6).Dim(2);
  }
  int64_t v_hidden = c.out(0).rank() == 3 ? c.out(0).Dim(2) : q_hidden;
  if (batch < 0 || seq < 0 || q_hidden < 0 || keys < 0 || v_hidden < 0) {
    return Estimate(c, 2, OpClass::kMatMul);
  }
  Work work;
  work.op_class = OpClass::kMatMul;
  work.estimated = query.estimated;
  Count rows = Count(batch) * seq;
  Count scores = rows * heads * keys;
  AddAttentionCore(work, rows * q_hidden * keys, rows * v_hidden * keys, scores);
  if (c.in(3).present) work.flops += rows * c.in(3).elements;  // bias of Q, K, V
  work.workspace_bytes = scores * 4;
  return work;
}

// com.microsoft GroupQueryAttention: every query head attends over L =
// past + new keys; K/V heads are shared, which saves memory, not MACs.
Work GroupQueryAttention(const OpContext& c) {
  const TensorInfo& query = c.in(0);
  int64_t heads = std::max<int64_t>(c.node.GetInt("num_heads", 1), 1);
  int64_t batch = query.Dim(0);
  int64_t seq = query.Dim(1);
  int64_t q_hidden = c.out(0).rank() == 3 ? c.out(0).Dim(2) : query.Dim(2);
  int64_t keys = c.out(1).rank() == 4  ? c.out(1).Dim(2)
                 : c.in(3).rank() == 4 ? c.in(3).Dim(2) + seq
                                       : seq;
  if (batch < 0 || seq < 0 || q_hidden < 0 || keys < 0) return Estimate(c, 2, OpClass::kMatMul);
  Work work;
  work.op_class = OpClass::kMatMul;
  work.estimated = query.estimated;
  Count rows = Count(batch) * seq;
  Count scores = rows * heads * keys;
  AddAttentionCore(work, rows * q_hidden * keys, rows * q_hidden * keys, scores);
  if (c.node.GetInt("do_rotary", 0) != 0) work.flops += rows * q_hidden * 2 * 3;
  work.workspace_bytes = scores * 4;
  return work;
}

// ONNX Attention (opset 23): Q [B, Hq, S, d] or [B, S, Hq·d]; K, V likewise
// with L keys (+ past).
Work OnnxAttention(const OpContext& c) {
  const TensorInfo& q = c.in(0);
  const TensorInfo& k = c.in(1);
  int64_t keys = c.out(1).rank() == 4 ? c.out(1).Dim(2) : k.rank() == 4 ? k.Dim(2) : k.Dim(1);
  if (c.out(1).rank() != 4 && c.in(4).rank() == 4 && keys >= 0) keys += c.in(4).Dim(2);
  if (!q.known() || keys < 0 || (q.rank() != 3 && q.rank() != 4)) {
    return Estimate(c, 2, OpClass::kMatMul);
  }
  Count score_rows = q.rank() == 4 ? Count(q.Dim(0)) * q.Dim(1) * q.Dim(2)
                                   : Count(q.Dim(0)) * q.Dim(1) *
                                         std::max<int64_t>(c.node.GetInt("q_num_heads", 1), 1);
  Work work;
  work.op_class = OpClass::kMatMul;
  work.estimated = q.estimated;
  AddAttentionCore(work, q.elements * keys, c.OutputElements() * keys, score_rows * keys);
  work.workspace_bytes = score_rows * keys * 4;
  return work;
}

// SkipLayerNormalization (input, skip, gamma, beta, bias) and
// SkipSimplifiedLayerNormalization (input, skip, gamma, bias): the residual
// add, the optional bias, then the norm.
Work SkipLayerNormalization(const OpContext& c, int64_t norm_weight) {
  size_t bias_slot = c.node.kind == ir::OpKind::kMsSkipLayerNormalization ? 4 : 3;
  return Elementwise(c, norm_weight + 1 + (c.in(bias_slot).present ? 1 : 0),
                     OpClass::kNormalization);
}

// EmbedLayerNormalization: word + position (+ segment) embedding lookups,
// their sum and a layer norm. Only the looked-up rows are read.
Work EmbedLayerNormalization(const OpContext& c) {
  int64_t tables = c.in(4).present ? 3 : 2;
  Work work = Elementwise(c, tables - 1 + w::kLayerNorm, OpClass::kNormalization);
  Count read = c.out(0).bytes() * tables;
  for (size_t i : {0, 1, 5, 6, 7, 8}) read += c.in(i).bytes();
  work.bytes_read = read;
  return work;
}

// Rotary embedding: x·cos + rotate(x)·sin, 3 FLOPs per element.
Work RotaryEmbedding(const OpContext& c) { return Elementwise(c, 3); }

}  // namespace autopar::costmodel::internal
