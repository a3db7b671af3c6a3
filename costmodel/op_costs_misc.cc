// Formulas for everything irregular: resampling, scatter with reduction,
// signal processing, detection, random numbers, losses, text, classical ML
// (ai.onnx.ml) and training optimizers.
#include <algorithm>
#include <bit>
#include <string>

#include "costmodel/op_costs_internal.h"

namespace autopar::costmodel::internal {
namespace {

namespace w = weights;

int64_t Log2Ceil(int64_t n) {
  if (n <= 2) return 1;
  return 64 - std::countl_zero(static_cast<uint64_t>(n - 1));
}

// Interpolation taps per output element over `dims` resampled dims.
int64_t Taps(std::string_view mode, int64_t dims) {
  int64_t per_dim = mode == "cubic" || mode == "bicubic" ? 4 : 2;
  int64_t taps = 1;
  for (int64_t i = 0; i < dims; ++i) taps *= per_dim;
  return taps;
}

// Complex FFT of length n: 5 n log2 n FLOPs (radix 2) when n is a power of
// two; otherwise the naive transform, n² complex multiply-adds (8 FLOPs).
Count FftFlops(int64_t n) {
  if (n <= 1) return 0;
  if (std::has_single_bit(static_cast<uint64_t>(n))) return Count(5) * n * Log2Ceil(n);
  return Count(8) * n * n;
}

// Samples (rows) of an ai.onnx.ml input whose last dim holds the features.
Count MlSamples(const TensorInfo& x, int64_t features) {
  if (x.rank() <= 1 || features <= 0) return 1;
  return x.elements / features;
}

int64_t PostTransformWeight(const std::string& transform) {
  if (transform == "SOFTMAX" || transform == "SOFTMAX_ZERO") return w::kSoftmax;
  if (transform == "LOGISTIC") return w::kSigmoid;
  if (transform == "PROBIT") return w::kErf + 2;
  return 0;
}

int64_t FloatsLength(const ir::Node& node, std::string_view name) {
  const ir::Attribute* a = node.FindAttribute(name);
  return a == nullptr ? 0 : static_cast<int64_t>(a->floats.size());
}

}  // namespace

// Resize / Upsample: nearest is a gather (data movement); linear and cubic
// weigh 2^r / 4^r taps per output element (r resampled dims), a multiply-add
// each, plus the coordinate transform (3 per resampled dim).
Work Resize(const OpContext& c) {
  std::string mode = c.node.GetString("mode", "nearest");
  if (mode == "nearest") return DataMovement(c);
  const TensorInfo& x = c.in(0);
  const TensorInfo& y = c.out(0);
  int64_t resized = 0;
  if (x.known() && y.known() && x.rank() == y.rank()) {
    for (int64_t i = 0; i < x.rank(); ++i) resized += x.Dim(i) != y.Dim(i) ? 1 : 0;
  } else {
    resized = std::max<int64_t>(x.rank() - 2, 1);
  }
  return Elementwise(c, 2 * Taps(mode, resized) + 3 * resized, OpClass::kOther);
}

// GridSample: per output element, the sampling coordinates (2 per spatial
// dim) and the interpolation taps (none for nearest).
Work GridSample(const OpContext& c) {
  std::string mode = c.node.GetString("mode", "bilinear");
  int64_t dims = std::max<int64_t>(c.in(1).Dim(-1), 1);
  int64_t taps = mode == "nearest" ? 0 : Taps(mode, dims);
  return Elementwise(c, 2 * taps + 2 * dims, OpClass::kOther);
}

// AffineGrid: each output coordinate is theta's row (r + 1 entries) times the
// homogeneous base coordinate: r MACs and an add.
Work AffineGrid(const OpContext& c) {
  int64_t dims = std::max<int64_t>(c.out(0).Dim(-1), 1);
  Work work;
  work.op_class = OpClass::kOther;
  work.macs = c.OutputElements() * dims;
  work.flops = work.macs * 2 + c.OutputElements();
  work.estimated = c.OutputEstimated();
  return work;
}

// Col2Im: every input element is added into its output position.
Work Col2Im(const OpContext& c) {
  Work work = DataMovement(c);
  work.rule = CostRule::kFormula;
  work.flops = c.in(0).elements;
  return work;
}

// ScatterElements / ScatterND: a copy, plus one op per update element when
// `reduction` is add, mul, max or min.
Work ScatterWithReduction(const OpContext& c) {
  if (c.node.GetString("reduction", "none") == "none") return DataMovement(c);
  Work work = DataMovement(c);
  work.rule = CostRule::kFormula;
  work.flops = c.in(2).elements;
  return work;
}

// DFT: one transform of length N per signal along `axis`.
Work Dft(const OpContext& c) {
  const TensorInfo& x = c.in(0);
  int64_t axis = c.node.opset >= 20 ? c.in(2).ScalarInt().value_or(-2) : c.node.GetInt("axis", 1);
  int64_t along = x.Dim(axis);
  int64_t n = c.in(1).ScalarInt().value_or(along);
  int64_t components = x.Dim(-1);
  if (!x.known() || along <= 0 || n <= 0 || components <= 0)
    return Estimate(c, 10, OpClass::kOther);
  Work work;
  work.op_class = OpClass::kOther;
  work.flops = x.elements / (along * components) * FftFlops(n);
  return work;
}

// STFT: per batch and frame, the window multiply and an FFT of frame_length.
Work Stft(const OpContext& c) {
  const TensorInfo& signal = c.in(0);
  int64_t frame_length = c.in(3).ScalarInt().value_or(c.in(2).Dim(0));
  int64_t frames = c.out(0).Dim(1);
  if (frames < 0 && frame_length > 0) {
    int64_t step = c.in(1).ScalarInt().value_or(frame_length);
    frames = step > 0 ? (signal.Dim(1) - frame_length) / step + 1 : -1;
  }
  if (signal.Dim(0) < 0 || frames < 0 || frame_length <= 0) return Estimate(c, 10, OpClass::kOther);
  Work work;
  work.op_class = OpClass::kOther;
  work.flops = Count(signal.Dim(0)) * frames * (FftFlops(frame_length) + frame_length);
  return work;
}

// Hann / Hamming (one cosine term) and Blackman (two) windows.
Work Window(const OpContext& c, int64_t cosine_terms) {
  return Elementwise(c, cosine_terms * (w::kTrig + 2) + 1, OpClass::kOther);
}

// NonMaxSuppression: per batch and class, sort the N boxes by score
// (N log2 N) and compare each kept box with the rest (IoU: ~15 FLOPs), at
// most max_output_boxes_per_class kept (N when not a constant).
Work NonMaxSuppression(const OpContext& c) {
  const TensorInfo& boxes = c.in(0);
  const TensorInfo& scores = c.in(1);
  if (boxes.rank() != 3 || scores.rank() != 3) return Estimate(c, 10, OpClass::kOther);
  int64_t n = boxes.Dim(1);
  int64_t kept = std::min(n, c.in(2).ScalarInt().value_or(n));
  Work work;
  work.op_class = OpClass::kOther;
  work.flops = Count(scores.Dim(0)) * scores.Dim(1) *
               (Count(n) * Log2Ceil(n) + Count(std::max<int64_t>(kept, 0)) * n * 15);
  return work;
}

// Multinomial: a prefix sum over the classes, then per sample a random number
// and a binary search.
Work Multinomial(const OpContext& c) {
  Work work;
  work.op_class = OpClass::kOther;
  int64_t classes = std::max<int64_t>(c.in(0).Dim(-1), 1);
  work.flops = c.in(0).elements + c.OutputElements() * (w::kRandom + Log2Ceil(classes));
  work.estimated = c.OutputEstimated();
  return work;
}

Work RandomGenerator(const OpContext& c, int64_t per_element) {
  return Elementwise(c, per_element, OpClass::kElementwise);
}

// NegativeLogLikelihoodLoss: per target, a gather, a weight multiply and the
// reduction's add.
Work NegativeLogLikelihoodLoss(const OpContext& c) {
  Work work;
  work.op_class = OpClass::kReduction;
  work.flops = c.in(1).elements * 3;
  work.estimated = !c.in(1).known();
  return work;
}

// SoftmaxCrossEntropyLoss: a log-softmax over the scores, then the NLL.
Work SoftmaxCrossEntropyLoss(const OpContext& c) {
  Work work;
  work.op_class = OpClass::kNormalization;
  work.flops = c.in(0).elements * w::kSoftmax + c.in(1).elements * 3;
  work.estimated = !c.in(0).known();
  return work;
}

// TfIdfVectorizer: per input token, up to max_gram_length n-gram hash
// lookups (2 each), then the weighting of the output.
Work TfIdfVectorizer(const OpContext& c) {
  Work work;
  work.op_class = OpClass::kOther;
  int64_t grams = std::max<int64_t>(c.node.GetInt("max_gram_length", 1), 1);
  work.flops = c.in(0).elements * grams * 2 + c.OutputElements();
  work.estimated = !c.in(0).known();
  return work;
}

// LinearClassifier / LinearRegressor: samples × |coefficients| MACs (the
// coefficients hold targets × features), intercepts, the post transform,
// and for the classifier the arg-max over classes.
Work MlLinear(const OpContext& c) {
  const TensorInfo& x = c.in(0);
  int64_t coefficients = FloatsLength(c.node, "coefficients");
  int64_t features = x.Dim(-1);
  if (!x.known() || features <= 0 || coefficients == 0) return Estimate(c, 2, OpClass::kMatMul);
  Count samples = MlSamples(x, features);
  int64_t targets = std::max<int64_t>(coefficients / features, 1);
  Work work;
  work.op_class = OpClass::kMatMul;
  work.macs = samples * coefficients;
  int64_t per_target = 1 + PostTransformWeight(c.node.GetString("post_transform", "NONE")) +
                       (c.node.kind == ir::OpKind::kMlLinearClassifier ? 1 : 0);
  work.flops = work.macs * 2 + samples * targets * per_target;
  return work;
}

// SVMClassifier / SVMRegressor: a kernel evaluation per sample and support
// vector (a dot product over the features, then the kernel's function), and
// the decision function over the coefficients. Without support vectors (a
// linear SVM) just the coefficients.
Work MlSvm(const OpContext& c) {
  const TensorInfo& x = c.in(0);
  int64_t features = x.Dim(-1);
  int64_t support = FloatsLength(c.node, "support_vectors");
  int64_t coefficients = FloatsLength(c.node, "coefficients");
  if (!x.known() || features <= 0) return Estimate(c, 2, OpClass::kMatMul);
  Count samples = MlSamples(x, features);
  std::string kernel = c.node.GetString("kernel_type", "LINEAR");
  int64_t kernel_weight = kernel == "RBF"       ? w::kExp + 2
                          : kernel == "POLY"    ? w::kPow + 2
                          : kernel == "SIGMOID" ? w::kTanh + 2
                                                : 0;
  Work work;
  work.op_class = OpClass::kMatMul;
  work.macs = samples * support + samples * coefficients;
  work.flops = work.macs * 2 + samples * (support / features) * kernel_weight +
               samples * PostTransformWeight(c.node.GetString("post_transform", "NONE"));
  return work;
}

// TreeEnsembleClassifier / Regressor: per sample and tree, a root-to-leaf
// walk of about log2(nodes per tree) comparisons (2 FLOPs: load, compare),
// and the aggregation of the leaf weights.
Work MlTreeEnsemble(const OpContext& c) {
  const TensorInfo& x = c.in(0);
  std::vector<int64_t> tree_ids = c.node.GetInts("nodes_treeids");
  if (!x.known() || tree_ids.empty()) return Estimate(c, 10, OpClass::kOther);
  int64_t nodes = static_cast<int64_t>(tree_ids.size());
  std::sort(tree_ids.begin(), tree_ids.end());
  int64_t trees = std::unique(tree_ids.begin(), tree_ids.end()) - tree_ids.begin();
  int64_t depth = Log2Ceil(nodes / trees + 1);
  Count samples = MlSamples(x, x.Dim(-1));
  Work work;
  work.op_class = OpClass::kOther;
  work.flops = samples * trees * (depth * 2 + 1) +
               c.OutputElements() * PostTransformWeight(c.node.GetString("post_transform", "NONE"));
  return work;
}

Work Optimizer(const OpContext& c, int64_t per_element) {
  Count updated;
  for (const TensorInfo& t : c.outputs) updated += t.elements;
  Work work;
  work.op_class = OpClass::kElementwise;
  work.flops = updated * per_element;
  work.estimated = c.OutputEstimated();
  return work;
}

}  // namespace autopar::costmodel::internal
