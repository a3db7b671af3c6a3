// InferOutputTypes: the one place that maps an operator to its shape rule.
// The rules live in shape_rules_<family>.cc, declared in
// shape_rules_internal.h; this file only dispatches and checks what they
// return.
#include "shapes/shape_rules.h"

#include "shapes/shape_rules_internal.h"

namespace autopar::shapes {
namespace {

using rules::NodeView;
using rules::Outputs;
using Rule = Outputs (*)(const NodeView&);
using K = ir::OpKind;

// The rule of each operator kind; nullptr for operators without one
// (SequenceMap, Optional, ai.onnx.ml, training, Send/Recv...). Kept as a table, one
// family per line group, which clang-format would spread over one label a line.
// clang-format off
Rule FindRule(K kind) {
  namespace r = rules;
  switch (kind) {
    // Element-wise unary: same type and shape as input 0.
    case K::kAcos: case K::kAcosh: case K::kAsin: case K::kAsinh: case K::kAtan:
    case K::kAtanh: case K::kCeil: case K::kCelu: case K::kClip: case K::kCos:
    case K::kCosh: case K::kElu: case K::kErf: case K::kExp: case K::kFloor:
    case K::kGelu: case K::kHardSigmoid: case K::kHardSwish: case K::kLeakyRelu:
    case K::kLog: case K::kMish: case K::kReciprocal: case K::kRelu: case K::kRound:
    case K::kSelu: case K::kShrink: case K::kSigmoid: case K::kSign: case K::kSin:
    case K::kSinh: case K::kSoftplus: case K::kSoftsign: case K::kSqrt: case K::kTan:
    case K::kTanh: case K::kThresholdedRelu: case K::kBitwiseNot:
    // Same shape as input 0 for other reasons.
    case K::kCumSum: case K::kTrilu: case K::kLRN: case K::kSoftmax: case K::kLogSoftmax:
    case K::kHardmax: case K::kLpNormalization: case K::kMeanVarianceNormalization:
    case K::kInstanceNormalization: case K::kGroupNormalization: case K::kRMSNormalization:
    case K::kScatter: case K::kScatterElements: case K::kScatterND:
    case K::kReverseSequence: case K::kRotaryEmbedding:
    case K::kMsGelu: case K::kMsFastGelu: case K::kMsQuickGelu: case K::kMsBiasSoftmax:
    case K::kMsQLinearSigmoid: case K::kMsQLinearLeakyRelu: case K::kMsQLinearSoftmax:
    case K::kMsRotaryEmbedding:
      return r::SameAsInput;
    case K::kIdentity: case K::kNeg: case K::kAbs: case K::kNot:
      return r::UnaryRule;
    case K::kIsInf: case K::kIsNaN:
      return r::BoolOfInputRule;
    // Broadcasting binary and variadic ops.
    case K::kAdd: case K::kSub: case K::kMul: case K::kDiv: case K::kPow: case K::kMod:
    case K::kMax: case K::kMin: case K::kSum: case K::kMean: case K::kAnd: case K::kOr:
    case K::kXor: case K::kBitShift: case K::kBitwiseAnd: case K::kBitwiseOr:
    case K::kBitwiseXor: case K::kPRelu: case K::kEqual: case K::kLess:
    case K::kLessOrEqual: case K::kGreater: case K::kGreaterOrEqual:
    case K::kMsBiasGelu: case K::kMsBiasAdd:
      return r::BroadcastRule;
    case K::kWhere: return r::WhereRule;
    case K::kDropout: return r::DropoutRule;
    case K::kCast: case K::kCastLike: return r::CastRule;
    case K::kQuantizeLinear: return r::QuantizeLinearRule;
    case K::kDequantizeLinear: return r::DequantizeLinearRule;
    case K::kDynamicQuantizeLinear: return r::DynamicQuantizeLinearRule;
    case K::kMsQLinearAdd: case K::kMsQLinearMul: return r::QLinearBinaryRule;
    case K::kRandomNormal: case K::kRandomUniform: case K::kRandomNormalLike:
    case K::kRandomUniformLike: case K::kBernoulli: case K::kEyeLike: case K::kMultinomial:
      return r::RandomRule;
    case K::kConstant: return r::ConstantRule;
    case K::kHannWindow: case K::kHammingWindow: case K::kBlackmanWindow:
    case K::kMelWeightMatrix:
      return r::WindowRule;

    // Linear algebra, convolution, pooling.
    case K::kMatMul: case K::kMatMulInteger: case K::kQLinearMatMul: case K::kMsFusedMatMul:
    case K::kMsTransposeMatMul: case K::kMsMatMulIntegerToFloat:
    case K::kMsDynamicQuantizeMatMul: case K::kMsMatMulNBits:
      return r::MatMulRule;
    case K::kGemm: case K::kMsFusedGemm: case K::kMsQGemm: return r::GemmRule;
    case K::kConv: case K::kConvInteger: case K::kQLinearConv: case K::kMsFusedConv:
      return r::ConvRule;
    case K::kConvTranspose: return r::ConvTransposeRule;
    case K::kMaxPool: case K::kAveragePool: case K::kLpPool: case K::kMsQLinearAveragePool:
      return r::PoolRule;
    case K::kGlobalAveragePool: case K::kGlobalMaxPool: case K::kGlobalLpPool:
    case K::kMsQLinearGlobalAveragePool:
      return r::GlobalPoolRule;
    case K::kMaxRoiPool: case K::kRoiAlign: return r::RoiPoolRule;
    case K::kMaxUnpool: return r::MaxUnpoolRule;
    case K::kEinsum: return r::EinsumRule;
    case K::kDet: return r::DetRule;

    // Normalization, recurrent, attention, losses.
    case K::kBatchNormalization: return r::BatchNormalizationRule;
    case K::kLayerNormalization: case K::kMsLayerNormalization:
    case K::kMsSimplifiedLayerNormalization:
      return r::LayerNormalizationRule;
    case K::kMsSkipLayerNormalization: case K::kMsSkipSimplifiedLayerNormalization:
      return r::SkipLayerNormalizationRule;
    case K::kMsEmbedLayerNormalization: return r::EmbedLayerNormalizationRule;
    case K::kRNN: case K::kGRU: case K::kLSTM: return r::RecurrentRule;
    case K::kAttention: case K::kMsAttention: case K::kMsQAttention:
    case K::kMsMultiHeadAttention: case K::kMsGroupQueryAttention:
      return r::AttentionRule;
    case K::kNegativeLogLikelihoodLoss: case K::kSoftmaxCrossEntropyLoss: return r::LossRule;
    case K::kGridSample: return r::GridSampleRule;
    case K::kAffineGrid: return r::AffineGridRule;

    // Reshaping and data movement.
    case K::kReshape: return r::ReshapeRule;
    case K::kFlatten: return r::FlattenRule;
    case K::kTranspose: return r::TransposeRule;
    case K::kSqueeze: return r::SqueezeRule;
    case K::kUnsqueeze: return r::UnsqueezeRule;
    case K::kConcat: case K::kMsQLinearConcat: return r::ConcatRule;
    case K::kSplit: return r::SplitRule;
    case K::kSlice: return r::SliceRule;
    case K::kExpand: return r::ExpandRule;
    case K::kTile: return r::TileRule;
    case K::kPad: return r::PadRule;
    case K::kCenterCropPad: return r::CenterCropPadRule;
    case K::kDepthToSpace: return r::DepthToSpaceRule;
    case K::kSpaceToDepth: return r::SpaceToDepthRule;

    // Indexing, reductions, shapes and generators.
    case K::kGather: return r::GatherRule;
    case K::kGatherElements: return r::GatherElementsRule;
    case K::kGatherND: return r::GatherNDRule;
    case K::kReduceL1: case K::kReduceL2: case K::kReduceLogSum: case K::kReduceLogSumExp:
    case K::kReduceMax: case K::kReduceMean: case K::kReduceMin: case K::kReduceProd:
    case K::kReduceSum: case K::kReduceSumSquare:
      return r::ReduceRule;
    case K::kArgMax: case K::kArgMin: return r::ArgReduceRule;
    case K::kTopK: return r::TopKRule;
    case K::kShape: return r::ShapeRule;
    case K::kSize: return r::SizeRule;
    case K::kConstantOfShape: return r::ConstantOfShapeRule;
    case K::kRange: return r::RangeRule;
    case K::kOneHot: return r::OneHotRule;
    case K::kResize: case K::kUpsample: return r::ResizeRule;
    case K::kCol2Im: return r::Col2ImRule;
    case K::kNonZero: case K::kNonMaxSuppression: case K::kCompress: case K::kUnique:
      return r::DataDependentRule;

    case K::kIf: return r::IfRule;
    case K::kSequenceEmpty: case K::kSequenceConstruct: case K::kSequenceInsert:
    case K::kSequenceErase: case K::kSplitToSequence:
      return r::SequenceRule;
    case K::kConcatFromSequence: return r::ConcatFromSequenceRule;
    case K::kSequenceAt: return r::SequenceAtRule;
    case K::kSequenceLength: return r::SequenceLengthRule;
    case K::kLoop: return r::LoopRule;
    case K::kScan: return r::ScanRule;
    default:
      return nullptr;
  }
}
// clang-format on

// Keeps int_data only where it is consistent: an integer or bool type, a
// static shape with as many elements, and small enough to keep.
void CheckContents(OutputType& t) {
  if (!t.int_data) return;
  std::optional<int64_t> n = t.shape.NumElements();
  const bool integral = t.dtype == ir::DType::kUndefined || rules::IsIntegerOrBool(t.dtype);
  if (!integral || !n || *n != static_cast<int64_t>(t.int_data->size()) ||
      *n > ir::kMaxKnownIntElements) {
    t.int_data.reset();
  }
}

bool NeedsRule(const ir::Value& v) {
  if (v.type_kind != ir::TypeKind::kTensor) return false;
  if (!v.shape.IsStatic() || v.dtype == ir::DType::kUndefined) return true;
  // Small integer tensors: their contents may resolve a later Reshape.
  std::optional<int64_t> n = v.shape.NumElements();
  return ir::IsIndexType(v.dtype) && !v.int_data && n && *n <= ir::kMaxKnownIntElements;
}

}  // namespace

bool HasRule(ir::OpKind kind) { return FindRule(kind) != nullptr; }

std::optional<std::vector<OutputType>> InferOutputTypes(const ir::Graph& graph,
                                                        const ir::Node& node,
                                                        const RuleOptions& options) {
  Rule rule = FindRule(node.kind);
  if (rule == nullptr) return std::nullopt;
  std::vector<OutputType> types = rule(NodeView(graph, node, options));
  // One entry per output: the rule's, or unranked and untyped.
  types.resize(node.outputs.size(), rules::Unranked(ir::DType::kUndefined));
  for (OutputType& t : types) {
    CheckContents(t);
    if (!options.estimate && !t.estimate.empty()) t = rules::Unranked(t.dtype);
  }
  return types;
}

std::vector<RuleEstimate> PropagateRules(ir::Graph& graph, const RuleOptions& options) {
  std::vector<RuleEstimate> estimates;
  for (const ir::Node& node : graph.nodes()) {
    bool needed = false;
    for (ir::ValueId out : node.outputs) {
      if (out.valid() && NeedsRule(graph.value(out))) needed = true;
    }
    if (!needed) continue;
    std::optional<std::vector<OutputType>> types = InferOutputTypes(graph, node, options);
    if (!types) continue;
    for (size_t i = 0; i < node.outputs.size() && i < types->size(); ++i) {
      if (!node.outputs[i].valid()) continue;
      ir::Value& v = graph.mutable_value(node.outputs[i]);
      OutputType& t = (*types)[i];
      if (t.type_kind != ir::TypeKind::kTensor) {
        v.type_kind = t.type_kind;
        continue;
      }
      if (v.dtype == ir::DType::kUndefined) v.dtype = t.dtype;
      if (!v.shape.IsStatic() && t.shape.has_rank()) {
        if (!v.shape.has_rank() || v.shape.rank() != t.shape.rank()) {
          v.shape = t.shape;
        } else {
          for (size_t d = 0; d < v.shape.rank(); ++d) {
            if (!v.shape.dim(d).known()) v.shape.mutable_dims()[d] = t.shape.dim(d);
          }
        }
        if (!t.estimate.empty()) estimates.push_back({node.outputs[i], t.estimate});
      }
      if (!v.int_data && t.int_data) v.int_data = std::move(t.int_data);
    }
  }
  return estimates;
}

}  // namespace autopar::shapes
