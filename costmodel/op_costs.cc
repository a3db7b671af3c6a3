// The driver of the cost model: the one dispatch on OpKind (Note [One
// dispatch]) and the per-graph loop. Operand lookup is in op_costs_context.cc,
// the formulas in op_costs_*.cc by family.
#include "costmodel/op_costs.h"

#include <algorithm>

#include "costmodel/op_costs_internal.h"

namespace autopar::costmodel {
namespace internal {
namespace {

using K = ir::OpKind;
namespace w = weights;

// Note [One dispatch]: every operator's rule is chosen here, once, by its
// OpKind. The switch has no default, so that -Wswitch (an error under
// -Werror) rejects an op_kinds.def entry without a rule.
Work Dispatch(const OpContext& c) {
  switch (c.node.kind) {
    case K::kUnknown: {
      Work work = DataMovement(c);
      work.rule = CostRule::kNone;
      work.op_class = OpClass::kOther;
      return work;
    }

    // --- Element-wise arithmetic, logic and activations -------------------
    case K::kAbs:
    case K::kAdd:
    case K::kAnd:
    case K::kBitShift:
    case K::kBitwiseAnd:
    case K::kBitwiseNot:
    case K::kBitwiseOr:
    case K::kBitwiseXor:
    case K::kCeil:
    case K::kEqual:
    case K::kFloor:
    case K::kGreater:
    case K::kGreaterOrEqual:
    case K::kIsInf:
    case K::kIsNaN:
    case K::kLess:
    case K::kLessOrEqual:
    case K::kMul:
    case K::kNeg:
    case K::kNot:
    case K::kOr:
    case K::kRelu:
    case K::kRound:
    case K::kSign:
    case K::kSub:
    case K::kThresholdedRelu:
    case K::kWhere:
    case K::kXor:
    case K::kMlBinarizer:
    case K::kMlImputer:
      return Elementwise(c, w::kSimple);
    case K::kLeakyRelu:
    case K::kPRelu:
    case K::kShrink:
    case K::kMlScaler:   // (x - offset) * scale
    case K::kMsBiasAdd:  // x + bias + skip
      return Elementwise(c, 2);
    case K::kDiv:
    case K::kMod:
    case K::kReciprocal:
      return Elementwise(c, w::kDivide);
    case K::kSqrt:
      return Elementwise(c, w::kSqrt);
    case K::kExp:
    case K::kLog:
      return Elementwise(c, w::kExp);
    case K::kCos:
    case K::kSin:
    case K::kTan:
      return Elementwise(c, w::kTrig);
    case K::kAcos:
    case K::kAcosh:
    case K::kAsin:
    case K::kAsinh:
    case K::kAtan:
    case K::kAtanh:
    case K::kCosh:
    case K::kSinh:
      return Elementwise(c, w::kHyperbolic);
    case K::kTanh:
      return Elementwise(c, w::kTanh);
    case K::kSigmoid:
      return Elementwise(c, w::kSigmoid);
    case K::kErf:
      return Elementwise(c, w::kErf);
    case K::kPow:
      return Elementwise(c, w::kPow);
    case K::kElu:
    case K::kCelu:
      return Elementwise(c, w::kElu);
    case K::kSelu:
      return Elementwise(c, w::kSelu);
    case K::kSoftplus:
      return Elementwise(c, w::kSoftplus);
    case K::kSoftsign:
      return Elementwise(c, w::kSoftsign);
    case K::kHardSigmoid:
      return Elementwise(c, w::kHardSigmoid);
    case K::kHardSwish:
      return Elementwise(c, w::kHardSwish);
    case K::kMish:
      return Elementwise(c, w::kMish);
    case K::kClip:
      return Clip(c);
    case K::kGelu:
      return Gelu(c);
    case K::kMsGelu:
      return Elementwise(c, w::kGeluErf);
    case K::kMsBiasGelu:
      return Elementwise(c, w::kGeluErf + 1);
    case K::kMsFastGelu:  // optional bias input
      return Elementwise(c, w::kGeluTanh + (c.in(1).present ? 1 : 0));
    case K::kMsQuickGelu:
      return Elementwise(c, w::kQuickGelu);
    case K::kSum:
    case K::kMax:
    case K::kMin:
      return Variadic(c, 0);
    case K::kMean:
      return Variadic(c, 1);
    case K::kDropout:
      return Dropout(c);

    // --- Quantization -------------------------------------------------------
    case K::kQuantizeLinear:
      return QuantizeLinear(c);
    case K::kDequantizeLinear:
      return DequantizeLinear(c);
    case K::kDynamicQuantizeLinear:
      return DynamicQuantizeLinear(c);
    case K::kMsQLinearAdd:
    case K::kMsQLinearMul:  // rescale both inputs, the op, requantize
      return Elementwise(c, 2 + w::kSimple + w::kRequantize);
    case K::kMsQLinearSigmoid:
    case K::kMsQLinearLeakyRelu:  // a 256-entry lookup table per element
      return Elementwise(c, w::kSimple);
    case K::kMsQLinearSoftmax:  // max, table exp, sum, scale and requantize
      return Elementwise(c, 3 + w::kRequantize, OpClass::kNormalization);
    case K::kMsQLinearConcat:  // copy, requantizing each input
      return Elementwise(c, 2, OpClass::kDataMovement);
    case K::kMsQLinearAveragePool:
      return Pool(c, PoolKind::kAverage, w::kRequantize);
    case K::kMsQLinearGlobalAveragePool:
      return GlobalPool(c, PoolKind::kAverage, w::kRequantize);

    // --- Convolution, GEMM, MatMul, Einsum ----------------------------------
    case K::kConv:
      return Conv(c, {.x = 0, .w = 1, .bias = 2}, 0);
    case K::kConvInteger:
      return Conv(c, {.x = 0, .w = 1}, 0);
    case K::kQLinearConv:  // x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B
      return Conv(c, {.x = 0, .w = 3, .bias = 8}, w::kRequantize);
    case K::kMsFusedConv:  // X, W, B, Z + activation
      return Conv(c, {.x = 0, .w = 1, .bias = 2, .sum = 3},
                  ActivationWeight(c.node.GetString("activation", "")));
    case K::kConvTranspose:
      return ConvTranspose(c);
    case K::kMatMul:
    case K::kMatMulInteger:
      return MatMul(c, {.a = 0, .b = 1}, 0);
    case K::kQLinearMatMul:  // a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp
      return MatMul(c, {.a = 0, .b = 3}, w::kRequantize);
    case K::kMsMatMulIntegerToFloat:  // A, B, a_scale, b_scale, a_zp, b_zp, bias
      return MatMul(c, {.a = 0, .b = 1, .bias = 6}, w::kDequantize);
    case K::kMsDynamicQuantizeMatMul: {  // A (float), B (int8), b_scale, b_zp, bias
      Work work = MatMul(c, {.a = 0, .b = 1, .bias = 4}, w::kDequantize);
      work.flops += c.in(0).elements * (2 + w::kQuantize);  // min/max, quantize A
      work.dtype_class = DTypeClass::kInt8;
      return work;
    }
    case K::kMsFusedMatMul:
    case K::kMsTransposeMatMul:
      return FusedMatMul(c);
    case K::kMsMatMulNBits:
      return MatMulNBits(c);
    case K::kGemm:
      return Gemm(c,
                  {.a = 0,
                   .b = 1,
                   .bias = 2,
                   .trans_a = c.node.GetInt("transA", 0) != 0,
                   .trans_b = c.node.GetInt("transB", 0) != 0},
                  0);
    case K::kMsFusedGemm:
      return Gemm(c,
                  {.a = 0,
                   .b = 1,
                   .bias = 2,
                   .trans_a = c.node.GetInt("transA", 0) != 0,
                   .trans_b = c.node.GetInt("transB", 0) != 0},
                  ActivationWeight(c.node.GetString("activation", "")));
    case K::kMsQGemm:  // A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp
      return Gemm(c,
                  {.a = 0,
                   .b = 3,
                   .bias = 6,
                   .trans_a = c.node.GetInt("transA", 0) != 0,
                   .trans_b = c.node.GetInt("transB", 0) != 0},
                  c.in(7).present ? w::kRequantize : w::kDequantize);
    case K::kEinsum:
      return Einsum(c);
    case K::kDet:
      return Det(c);

    // --- Recurrent networks and attention ------------------------------------
    case K::kRNN:
      return Recurrent(c, RecurrentCell::kRnn);
    case K::kGRU:
      return Recurrent(c, RecurrentCell::kGru);
    case K::kLSTM:
      return Recurrent(c, RecurrentCell::kLstm);
    case K::kMsAttention:
    case K::kMsQAttention:
      return ContribAttention(c);
    case K::kMsMultiHeadAttention:
      return MultiHeadAttention(c);
    case K::kMsGroupQueryAttention:
      return GroupQueryAttention(c);
    case K::kAttention:
      return OnnxAttention(c);
    case K::kRotaryEmbedding:
    case K::kMsRotaryEmbedding:
      return RotaryEmbedding(c);

    // --- Normalization and softmax ------------------------------------------
    case K::kBatchNormalization:
      return BatchNormalization(c);
    case K::kInstanceNormalization:
    case K::kLayerNormalization:
    case K::kGroupNormalization:
    case K::kMsLayerNormalization:
      return Elementwise(c, w::kLayerNorm, OpClass::kNormalization);
    case K::kRMSNormalization:
    case K::kMsSimplifiedLayerNormalization:
      return Elementwise(c, w::kRmsNorm, OpClass::kNormalization);
    case K::kMeanVarianceNormalization:
      return Elementwise(c, w::kMeanVarianceNorm, OpClass::kNormalization);
    case K::kLpNormalization:
    case K::kMlNormalizer:
      return Elementwise(c, w::kLpNorm, OpClass::kNormalization);
    case K::kMsSkipLayerNormalization:
      return SkipLayerNormalization(c, w::kLayerNorm);
    case K::kMsSkipSimplifiedLayerNormalization:
      return SkipLayerNormalization(c, w::kRmsNorm);
    case K::kMsEmbedLayerNormalization:
      return EmbedLayerNormalization(c);
    case K::kLRN:
      return Lrn(c);
    case K::kSoftmax:
    case K::kLogSoftmax:
      return Softmax(c, 0);
    case K::kMsBiasSoftmax:
      return Softmax(c, 1);

    // --- Pooling ---------------------------------------------------------------
    case K::kMaxPool:
      return Pool(c, PoolKind::kMax, 0);
    case K::kAveragePool:
      return Pool(c, PoolKind::kAverage, 1);
    case K::kLpPool:
      return Pool(c, PoolKind::kLp, w::kSqrt);
    case K::kGlobalMaxPool:
      return GlobalPool(c, PoolKind::kMax, 0);
    case K::kGlobalAveragePool:
      return GlobalPool(c, PoolKind::kAverage, 1);
    case K::kGlobalLpPool:
      return GlobalPool(c, PoolKind::kLp, w::kSqrt);
    case K::kMaxRoiPool:
      return MaxRoiPool(c);
    case K::kRoiAlign:
      return RoiAlign(c);

    // --- Reductions, scans, sorting ---------------------------------------------
    case K::kReduceMax:
    case K::kReduceMin:
    case K::kReduceProd:
    case K::kReduceSum:
    case K::kArgMax:
    case K::kArgMin:
    case K::kHardmax:
      return Reduce(c, 1, 0);
    case K::kReduceMean:
      return Reduce(c, 1, 1);
    case K::kReduceL1:
    case K::kReduceSumSquare:
      return Reduce(c, 2, 0);
    case K::kReduceL2:
      return Reduce(c, 2, w::kSqrt);
    case K::kReduceLogSum:
      return Reduce(c, 1, w::kExp);
    case K::kReduceLogSumExp:  // max, subtract, exp, add; log per output
      return Reduce(c, w::kExp + 3, w::kExp);
    case K::kCumSum:
      return Elementwise(c, w::kSimple, OpClass::kReduction);
    case K::kTopK:
      return TopK(c);
    case K::kUnique:
      return Unique(c);
    case K::kNonZero:
      return NonZero(c);

    // --- Data movement only: bytes, no arithmetic -----------------------------
    case K::kCast:
    case K::kCastLike:
    case K::kCenterCropPad:
    case K::kConcat:
    case K::kConcatFromSequence:
    case K::kConstantOfShape:
    case K::kDepthToSpace:
    case K::kExpand:
    case K::kEyeLike:
    case K::kMaxUnpool:
    case K::kOneHot:
    case K::kPad:
    case K::kRange:
    case K::kReverseSequence:
    case K::kScatter:
    case K::kSequenceAt:
    case K::kSequenceConstruct:
    case K::kSequenceErase:
    case K::kSequenceInsert:
    case K::kSpaceToDepth:
    case K::kSplit:
    case K::kSplitToSequence:
    case K::kTile:
    case K::kTranspose:
    case K::kTrilu:
    case K::kMlCastMap:
    case K::kMlDictVectorizer:
    case K::kMlFeatureVectorizer:
    case K::kMlOneHotEncoder:
    case K::kMlZipMap:
    case K::kMsSend:  // the transfer itself is the cluster model's business
    case K::kMsRecv:
    case K::kTrainingGradient:  // symbolic; no inference runtime executes it
      return DataMovement(c);
    case K::kScatterElements:
    case K::kScatterND:
      return ScatterWithReduction(c);
    case K::kGather:
    case K::kGatherElements:
    case K::kGatherND:
    case K::kSlice:
    case K::kCompress:
    case K::kMlArrayFeatureExtractor:
      return Selection(c);

    // --- Views: the input's buffer under another shape (Note [Views]) -----------
    case K::kFlatten:
    case K::kIdentity:
    case K::kOptional:
    case K::kOptionalGetElement:
    case K::kReshape:
    case K::kSqueeze:
    case K::kUnsqueeze:
      return View(c);

    // --- Metadata: no tensor data touched ---------------------------------------
    case K::kShape:
    case K::kSize:
    case K::kConstant:
    case K::kSequenceEmpty:
    case K::kSequenceLength:
    case K::kOptionalHasElement:
      return Metadata(c);

    // --- Resampling, signal processing, detection -------------------------------
    case K::kResize:
    case K::kUpsample:
      return Resize(c);
    case K::kGridSample:
      return GridSample(c);
    case K::kAffineGrid:
      return AffineGrid(c);
    case K::kCol2Im:
      return Col2Im(c);
    case K::kDFT:
      return Dft(c);
    case K::kSTFT:
      return Stft(c);
    case K::kHannWindow:
    case K::kHammingWindow:
      return Window(c, 1);
    case K::kBlackmanWindow:
      return Window(c, 2);
    case K::kMelWeightMatrix:  // triangular filters: a few ops per entry
      return Elementwise(c, 4, OpClass::kOther);
    case K::kNonMaxSuppression:
      return NonMaxSuppression(c);

    // --- Random numbers and losses -------------------------------------------------
    case K::kRandomNormal:
    case K::kRandomNormalLike:
    case K::kRandomUniform:
    case K::kRandomUniformLike:
      return RandomGenerator(c, w::kRandom);
    case K::kBernoulli:
      return RandomGenerator(c, w::kRandom + 1);
    case K::kMultinomial:
      return Multinomial(c);
    case K::kNegativeLogLikelihoodLoss:
      return NegativeLogLikelihoodLoss(c);
    case K::kSoftmaxCrossEntropyLoss:
      return SoftmaxCrossEntropyLoss(c);

    // --- Text and classical ML (ai.onnx.ml) ---------------------------------------
    case K::kStringNormalizer:  // case folding / stop-word lookup per string
      return Elementwise(c, 10, OpClass::kOther);
    case K::kTfIdfVectorizer:
      return TfIdfVectorizer(c);
    case K::kMlCategoryMapper:
    case K::kMlLabelEncoder:  // one hash lookup per element
      return Elementwise(c, w::kSimple, OpClass::kOther);
    case K::kMlLinearClassifier:
    case K::kMlLinearRegressor:
      return MlLinear(c);
    case K::kMlSVMClassifier:
    case K::kMlSVMRegressor:
      return MlSvm(c);
    case K::kMlTreeEnsembleClassifier:
    case K::kMlTreeEnsembleRegressor:
      return MlTreeEnsemble(c);

    // --- Training optimizers (ai.onnx.preview.training), per output element ----
    case K::kTrainingAdagrad:  // h += g², x -= r·g/(√h+ε): 13 per (x, h) pair
      return Optimizer(c, 7);
    case K::kTrainingAdam:  // moments, bias correction, √, update: ~20 per triple
      return Optimizer(c, 7);
    case K::kTrainingMomentum:  // v = αv + βg, x -= r·v: 4 per (x, v) pair
      return Optimizer(c, 2);

    // --- Control flow ---------------------------------------------------------------
    case K::kIf:
      return If(c);
    case K::kLoop:
      return Loop(c);
    case K::kScan:
      return Scan(c);
    case K::kSequenceMap:
      return SequenceMap(c);
  }
  // Out-of-range enum values only (a corrupted kind).
  Work work = DataMovement(c);
  work.rule = CostRule::kNone;
  return work;
}

DTypeClass DeriveDTypeClass(const OpContext& c) {
  if (std::optional<DTypeClass> first = DTypeClassOf(c.in(0).dtype)) return *first;
  for (const TensorInfo& t : c.inputs) {
    std::optional<DTypeClass> cls = DTypeClassOf(t.dtype);
    if (cls && *cls != DTypeClass::kInt8) return *cls;
  }
  return DTypeClass::kFp32;
}

bool Contains(const std::vector<ir::ValueId>& ids, ir::ValueId id, size_t end) {
  return std::find(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(end), id) !=
         ids.begin() + static_cast<std::ptrdiff_t>(end);
}

// The broadcast of the known dims among `infos` (shapes::Broadcast; dims
// that disagree, as estimates may, take the larger); nullopt when none is
// known.
std::optional<std::vector<int64_t>> BroadcastKnown(const std::vector<const TensorInfo*>& infos) {
  std::vector<ir::Shape> known;
  for (const TensorInfo* t : infos) {
    if (t->known()) known.push_back(t->shape());
  }
  if (known.empty()) return std::nullopt;
  ir::Shape out = shapes::Broadcast(known, shapes::DimConflict::kLarger);
  if (!out.IsStatic()) return std::nullopt;
  return out.Values();
}

}  // namespace

// --- The driver -----------------------------------------------------------------

NodeCost CostNode(const ValueTable& table, const ir::Node& node, const CostOptions& options) {
  OpContext c{node, {}, {}, options, table};
  c.inputs.reserve(node.inputs.size());
  for (ir::ValueId id : node.inputs) c.inputs.push_back(table.Info(id));
  c.outputs.reserve(node.outputs.size());
  for (ir::ValueId id : node.outputs) c.outputs.push_back(table.Info(id));

  Work work = Dispatch(c);

  Count read;
  Count params;
  bool estimated = work.estimated;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const TensorInfo& t = c.inputs[i];
    if (!t.present) continue;
    estimated = estimated || t.estimated;
    if (Contains(node.inputs, node.inputs[i], i)) continue;  // read once
    read += t.bytes();
    if (t.is_parameter) params += t.bytes();
  }
  for (ir::ValueId id : node.captured) {
    if (Contains(node.inputs, id, node.inputs.size())) continue;
    TensorInfo t = table.Info(id);
    if (t.is_parameter) params += t.bytes();
  }
  Count written;
  for (const TensorInfo& t : c.outputs) {
    if (!t.present) continue;
    estimated = estimated || t.estimated;
    written += t.bytes();
  }

  NodeCost cost;
  cost.macs = work.macs.value();
  cost.flops = work.flops.value();
  cost.bytes_read = work.bytes_read.value_or(read).value();
  cost.bytes_written = work.bytes_written.value_or(written).value();
  cost.param_bytes = params.value();
  cost.output_bytes = written.value();
  cost.workspace_bytes = work.workspace_bytes.value();
  cost.kernels = work.kernels.value();
  cost.op_class = work.op_class;
  cost.dtype_class = work.dtype_class.value_or(DeriveDTypeClass(c));
  cost.rule = work.rule;
  cost.has_formula = work.rule != CostRule::kNone;
  cost.estimated = estimated;
  for (int64_t count : {cost.macs, cost.flops, cost.bytes_read, cost.bytes_written,
                        cost.param_bytes, cost.output_bytes, cost.workspace_bytes, cost.kernels}) {
    cost.saturated = cost.saturated || count == kSaturatedCount;
  }
  return cost;
}

void BindEstimatedOutputs(ValueTable& table, const ir::Node& node) {
  bool any_unknown = false;
  for (ir::ValueId id : node.outputs) {
    TensorInfo t = table.Info(id);
    any_unknown = any_unknown || (t.present && t.estimated && !t.known());
  }
  if (!any_unknown) return;

  std::vector<TensorInfo> inputs;
  for (ir::ValueId id : node.inputs) inputs.push_back(table.Info(id));
  auto in = [&](size_t i) -> const TensorInfo& {
    return i < inputs.size() ? inputs[i] : AbsentTensor();
  };

  std::optional<std::vector<int64_t>> dims;
  switch (node.kind) {  // kinds with a better estimate than the broadcast below
    case K::kMatMul:
    case K::kMatMulInteger:
    case K::kMsMatMulIntegerToFloat:
    case K::kMsDynamicQuantizeMatMul:
      dims = MatMulOutputDims(in(0), in(1), false, false);
      break;
    case K::kMsFusedMatMul:
    case K::kMsTransposeMatMul:
      dims = MatMulOutputDims(in(0), in(1), node.GetInt("transA", 0) != 0,
                              node.GetInt("transB", 0) != 0);
      break;
    case K::kQLinearMatMul:
      dims = MatMulOutputDims(in(0), in(3), false, false);
      break;
    case K::kGemm:
    case K::kMsFusedGemm:
      dims = MatMulOutputDims(in(0), in(1), node.GetInt("transA", 0) != 0,
                              node.GetInt("transB", 0) != 0);
      break;
    case K::kConv:
    case K::kConvInteger:
    case K::kMsFusedConv:
    case K::kQLinearConv: {
      const TensorInfo& w = in(node.kind == K::kQLinearConv ? 3 : 1);
      if (w.rank() < 3) break;
      std::vector<int64_t> kernel(w.dims->begin() + 2, w.dims->end());
      if (std::optional<std::vector<int64_t>> spatial = ConvOutputSpatial(node, in(0), kernel)) {
        dims = std::vector<int64_t>{in(0).Dim(0), w.Dim(0)};
        dims->insert(dims->end(), spatial->begin(), spatial->end());
      }
      break;
    }
    case K::kMaxPool:
    case K::kAveragePool:
    case K::kLpPool:
      if (std::optional<std::vector<int64_t>> spatial =
              ConvOutputSpatial(node, in(0), node.GetInts("kernel_shape"))) {
        dims = std::vector<int64_t>{in(0).Dim(0), in(0).Dim(1)};
        dims->insert(dims->end(), spatial->begin(), spatial->end());
      }
      break;
    case K::kGlobalAveragePool:
    case K::kGlobalMaxPool:
    case K::kGlobalLpPool:
      if (in(0).rank() >= 2) {
        dims = std::vector<int64_t>(static_cast<size_t>(in(0).rank()), 1);
        (*dims)[0] = in(0).Dim(0);
        (*dims)[1] = in(0).Dim(1);
      }
      break;
    default:
      break;
  }
  if (!dims) {
    // The broadcast of the data inputs (weights would distort it), else of
    // every input: exact for element-wise ops, the right order for most.
    std::vector<const TensorInfo*> data;
    std::vector<const TensorInfo*> all;
    for (const TensorInfo& t : inputs) {
      all.push_back(&t);
      if (!t.is_parameter) data.push_back(&t);
    }
    dims = BroadcastKnown(data);
    if (!dims) dims = BroadcastKnown(all);
  }
  if (!dims) return;

  ir::DType fallback_dtype = ir::DType::kUndefined;
  for (const TensorInfo& t : inputs) {
    if (t.dtype != ir::DType::kUndefined) {
      fallback_dtype = t.dtype;
      break;
    }
  }
  for (ir::ValueId id : node.outputs) {
    TensorInfo t = table.Info(id);
    if (!t.present || !t.estimated || t.known()) continue;
    TensorInfo estimate;
    estimate.present = true;
    estimate.dtype = t.dtype != ir::DType::kUndefined ? t.dtype : fallback_dtype;
    estimate.dims = dims;
    estimate.elements = 1;
    for (int64_t d : *dims) estimate.elements *= d;
    estimate.estimated = true;
    table.Bind(id, std::move(estimate));
  }
}

std::vector<NodeCost> CostAllNodes(ValueTable& table, const CostOptions& options) {
  std::vector<NodeCost> costs;
  costs.reserve(table.graph().num_nodes());
  for (const ir::Node& node : table.graph().nodes()) {
    BindEstimatedOutputs(table, node);
    costs.push_back(CostNode(table, node, options));
  }
  return costs;
}

}  // namespace internal

NodeCost ComputeNodeCost(const ir::Graph& graph, const ir::Node& node, const CostOptions& options) {
  internal::ValueTable table(graph);
  return internal::CostNode(table, node, options);
}

std::vector<NodeCost> ComputeGraphCosts(const ir::Graph& graph, const CostOptions& options) {
  internal::ValueTable table(graph);
  return internal::CostAllNodes(table, options);
}

namespace {

// Parameters read by the nodes of `graph` and of its bodies, each once.
void AddParameterBytes(const ir::Graph& graph, Count& total) {
  std::vector<bool> seen(graph.num_values(), false);
  auto add = [&](ir::ValueId id) {
    if (!id.valid() || seen[id.index()]) return;
    seen[id.index()] = true;
    const ir::Value& v = graph.value(id);
    if (v.is_parameter) total += v.SizeBytes().value_or(0);
  };
  for (const ir::Node& node : graph.nodes()) {
    for (ir::ValueId id : node.inputs) add(id);
    for (ir::ValueId id : node.captured) add(id);
    // A body's outer values are the node's captured values, counted above
    // (the body's copies of them are not parameters); its own weights are
    // counted here.
    for (const ir::Subgraph& s : node.subgraphs) AddParameterBytes(*s.body, total);
  }
}

}  // namespace

CostTotals SumCosts(const ir::Graph& graph, absl::Span<const NodeCost> costs) {
  CostTotals totals;
  Count macs, flops, read, written, activations;
  size_t n = std::min(costs.size(), graph.num_nodes());
  for (size_t i = 0; i < n; ++i) {
    const NodeCost& cost = costs[i];
    macs += cost.macs;
    flops += cost.flops;
    read += cost.bytes_read;
    written += cost.bytes_written;
    if (graph.nodes()[i].kind != ir::OpKind::kConstant) activations += cost.output_bytes;
    totals.max_workspace_bytes = std::max(totals.max_workspace_bytes, cost.workspace_bytes);
    totals.nodes_without_formula += cost.has_formula ? 0 : 1;
    totals.nodes_estimated += cost.estimated ? 1 : 0;
    totals.saturated = totals.saturated || cost.saturated;
  }
  Count params;
  AddParameterBytes(graph, params);
  totals.macs = macs.value();
  totals.flops = flops.value();
  totals.bytes_read = read.value();
  totals.bytes_written = written.value();
  totals.param_bytes = params.value();
  totals.activation_bytes = activations.value();
  totals.nodes = static_cast<int64_t>(n);
  totals.saturated = totals.saturated || macs.saturated() || flops.saturated() ||
                     read.saturated() || written.saturated() || params.saturated() ||
                     activations.saturated();
  return totals;
}

}  // namespace autopar::costmodel
