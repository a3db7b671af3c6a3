// Normalization, softmax, pooling, reductions and sorting formulas.
#include <algorithm>
#include <bit>

#include "costmodel/op_costs_internal.h"

namespace autopar::costmodel::internal {
namespace {

namespace w = weights;

// ceil(log2(n)), at least 1.
int64_t Log2Ceil(int64_t n) {
  if (n <= 2) return 1;
  return 64 - std::countl_zero(static_cast<uint64_t>(n - 1));
}

// FLOPs per element of a pooling window: a comparison (max), an add
// (average), |x|^p and an add (Lp).
int64_t PerWindowElement(PoolKind kind) { return kind == PoolKind::kLp ? 2 : 1; }

}  // namespace

// Inference: y = x·a + b with a, b folded per channel (2 per element).
// training_mode: the batch mean and variance first (5 per element).
Work BatchNormalization(const OpContext& c) {
  bool training = c.node.GetInt("training_mode", 0) != 0;
  return Elementwise(c, training ? w::kBatchNormTraining : w::kBatchNormInference,
                     OpClass::kNormalization);
}

// LRN: the sum of squares over `size` channels (2 per channel), then
// (bias + alpha/size · sum)^beta and a divide.
Work Lrn(const OpContext& c) {
  int64_t size = std::max<int64_t>(c.node.GetInt("size", 1), 1);
  return Elementwise(c, 2 * size + w::kPow + w::kDivide + 2, OpClass::kNormalization);
}

Work Softmax(const OpContext& c, int64_t extra_per_element) {
  return Elementwise(c, w::kSoftmax + extra_per_element, OpClass::kNormalization);
}

// Pooling: out_elements × prod(kernel_shape) window elements (dilations
// spread the window, they do not grow it), + `per_output` (average: a divide).
Work Pool(const OpContext& c, PoolKind kind, int64_t per_output) {
  std::vector<int64_t> kernel = c.node.GetInts("kernel_shape");
  if (kernel.empty()) return Estimate(c, 1, OpClass::kPooling);
  Count window = 1;
  for (int64_t k : kernel) window *= k;
  Work work;
  work.op_class = OpClass::kPooling;
  work.flops = c.OutputElements() * (window * PerWindowElement(kind) + per_output);
  work.estimated = c.OutputEstimated();
  return work;
}

Work GlobalPool(const OpContext& c, PoolKind kind, int64_t per_output) {
  Work work;
  work.op_class = OpClass::kPooling;
  work.flops = c.in(0).elements * PerWindowElement(kind) + c.OutputElements() * per_output;
  work.estimated = !c.in(0).known();
  return work;
}

// MaxRoiPool: each RoI's bins tile the RoI, which is at most the feature map:
// rois × C × H × W comparisons (an upper bound).
Work MaxRoiPool(const OpContext& c) {
  const TensorInfo& x = c.in(0);
  const TensorInfo& rois = c.in(1);
  if (x.rank() != 4 || !rois.known()) return Estimate(c, 1, OpClass::kPooling);
  Work work;
  work.op_class = OpClass::kPooling;
  work.flops = Count(rois.Dim(0)) * x.DimProduct(1, 4);
  return work;
}

// RoiAlign: per output element, sampling_ratio² bilinear samples (4 taps,
// their weights: 10 FLOPs each); an adaptive ratio (0) counts as 2 × 2.
Work RoiAlign(const OpContext& c) {
  int64_t ratio = c.node.GetInt("sampling_ratio", 0);
  int64_t samples = ratio > 0 ? ratio * ratio : 4;
  Work work = Elementwise(c, samples * 10, OpClass::kPooling);
  return work;
}

Work Reduce(const OpContext& c, int64_t per_input, int64_t per_output) {
  Work work;
  work.op_class = OpClass::kReduction;
  work.flops = c.in(0).elements * per_input + c.OutputElements() * per_output;
  work.estimated = !c.in(0).known();
  return work;
}

// TopK: a heap of k per row: n × log2(k) comparisons.
Work TopK(const OpContext& c) {
  const TensorInfo& x = c.in(0);
  int64_t axis = c.node.GetInt("axis", -1);
  int64_t k = c.in(1).ScalarInt().value_or(c.node.GetInt("k", x.Dim(axis)));
  if (!x.known()) return Estimate(c, 1, OpClass::kOther);
  Work work;
  work.op_class = OpClass::kOther;
  work.flops = x.elements * Log2Ceil(std::max<int64_t>(k, 1) + 1);
  return work;
}

// Unique: a sort (n log2 n comparisons) and a pass; index buffers.
Work Unique(const OpContext& c) {
  const TensorInfo& x = c.in(0);
  if (!x.known()) return Estimate(c, 1, OpClass::kOther);
  Work work;
  work.op_class = OpClass::kOther;
  work.flops = x.elements * (Log2Ceil(x.elements.value()) + 1);
  work.workspace_bytes = x.elements * 8;
  return work;
}

// NonZero: one comparison per element; the output size is data-dependent
// (its declared shape, when known, is what counts as written).
Work NonZero(const OpContext& c) {
  Work work;
  work.op_class = OpClass::kOther;
  work.flops = c.in(0).elements;
  work.estimated = !c.in(0).known();
  return work;
}

}  // namespace autopar::costmodel::internal
