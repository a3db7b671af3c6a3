// Internals shared by the op_costs_*.cc files: how formulas see their
// operands (TensorInfo, OpContext), what they return (Work), the documented
// per-element weights, and the formula families. Not part of the library's
// interface; include op_costs.h instead.
#ifndef AUTOPAR_COSTMODEL_OP_COSTS_INTERNAL_H_
#define AUTOPAR_COSTMODEL_OP_COSTS_INTERNAL_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "costmodel/node_cost.h"
#include "costmodel/op_costs.h"
#include "ir/graph.h"
#include "shapes/dims.h"

namespace autopar::costmodel::internal {

// Note [Per-element weights]: FLOPs charged per element for element-wise
// functions, roughly the arithmetic of the vectorized polynomial / rational
// approximations CPU (MLAS, Eigen) and GPU (CUDA libm) math libraries use.
// They only need to rank ops sensibly: the device efficiencies absorb the
// rest, and on GPUs element-wise ops are memory-bound anyway.
namespace weights {
inline constexpr int64_t kSimple = 1;       // + - * max min compare abs relu logic select
inline constexpr int64_t kDivide = 4;       // / reciprocal mod
inline constexpr int64_t kSqrt = 4;         // sqrt (and rsqrt)
inline constexpr int64_t kExp = 8;          // exp, log
inline constexpr int64_t kTrig = 8;         // sin, cos, tan
inline constexpr int64_t kHyperbolic = 10;  // sinh cosh asin acos atan asinh acosh atanh
inline constexpr int64_t kTanh = 10;
inline constexpr int64_t kSigmoid = 10;
inline constexpr int64_t kErf = 10;
inline constexpr int64_t kPow = 16;     // exp(y * log(x))
inline constexpr int64_t kRandom = 10;  // one random number (counter-based generator)
// Composite functions, from their definitions.
inline constexpr int64_t kElu = kExp + 3;                // x<0 ? a(e^x-1) : x
inline constexpr int64_t kSelu = kExp + 4;               // g * elu
inline constexpr int64_t kSoftplus = 2 * kExp + 1;       // log(1+e^x)
inline constexpr int64_t kSoftsign = kDivide + 2;        // x/(1+|x|)
inline constexpr int64_t kHardSigmoid = 4;               // clip(a*x+b)
inline constexpr int64_t kHardSwish = kHardSigmoid + 1;  // x*hardsigmoid(x)
inline constexpr int64_t kMish = kSoftplus + kTanh + 1;  // x*tanh(softplus(x))
inline constexpr int64_t kGeluErf = kErf + 4;            // 0.5x(1+erf(x/√2))
inline constexpr int64_t kGeluTanh = kTanh + 7;          // tanh approximation
inline constexpr int64_t kQuickGelu = kSigmoid + 2;      // x*sigmoid(1.702x)
inline constexpr int64_t kSoftmax = kExp + 4;            // max, sub, exp, sum, scale
inline constexpr int64_t kQuantize = 4;                  // x/s, round, +zp, saturate
inline constexpr int64_t kDequantize = 2;                // (x-zp)*s
inline constexpr int64_t kRequantize = 4;                // int32 acc → int8 output
// Normalizations, per element: mean (1), center (1), variance (2),
// normalize (1), scale (1), shift (1).
inline constexpr int64_t kLayerNorm = 7;
inline constexpr int64_t kRmsNorm = 4;             // square+sum (2), normalize, scale
inline constexpr int64_t kBatchNormInference = 2;  // x*a+b, a and b folded per channel
inline constexpr int64_t kBatchNormTraining = 5;   // + mean and variance
inline constexpr int64_t kMeanVarianceNorm = 5;    // layer norm without scale/shift
inline constexpr int64_t kLpNorm = 3;              // |x| or x², sum, scale
}  // namespace weights

/// What a formula knows about one operand.
struct TensorInfo {
  /// A tensor is at this slot (false for omitted optional inputs).
  bool present = false;
  ir::DType dtype = ir::DType::kUndefined;
  /// The dims, when static (exact, or estimated when `estimated`).
  std::optional<std::vector<int64_t>> dims;
  /// Number of elements; 0 when unknown.
  Count elements;
  /// The size is an estimate or unknown.
  bool estimated = false;
  bool is_parameter = false;
  /// Contents of a small integer constant, when known.
  const std::vector<int64_t>* int_data = nullptr;

  bool known() const { return dims.has_value(); }
  int64_t rank() const { return dims ? static_cast<int64_t>(dims->size()) : -1; }
  /// dims[axis], negative axes counting from the end; -1 when unknown or out
  /// of range.
  int64_t Dim(int64_t axis) const;
  /// Product of dims[begin, end) (end < 0: from the end); 0 when unknown.
  Count DimProduct(int64_t begin, int64_t end) const;
  Count bytes() const { return elements * ir::DTypeSizeBytes(dtype); }
  /// The single known integer of a scalar / 1-element constant.
  std::optional<int64_t> ScalarInt() const;
  /// The dims as an ir::Shape for the shape rules of shapes/dims.h;
  /// unranked when unknown.
  ir::Shape shape() const;
};

/// The TensorInfo of an omitted operand.
const TensorInfo& AbsentTensor();

/// Value lookups for one graph: sizes from the IR, estimates bound for values
/// without a static shape, and (in a body) outer values by name from the
/// enclosing graphs.
class ValueTable {
 public:
  explicit ValueTable(const ir::Graph& graph, const ValueTable* outer = nullptr)
      : graph_(graph), outer_(outer) {}

  const ir::Graph& graph() const { return graph_; }
  TensorInfo Info(ir::ValueId id) const;
  /// Records an estimate for a value whose shape the IR does not know.
  void Bind(ir::ValueId id, TensorInfo info);

 private:
  std::optional<TensorInfo> InfoByName(std::string_view name) const;

  const ir::Graph& graph_;
  const ValueTable* outer_;
  std::vector<std::optional<TensorInfo>> bound_;  // allocated on first Bind
};

/// A node and what is known about its operands.
struct OpContext {
  const ir::Node& node;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  const CostOptions& options;
  const ValueTable& table;

  /// Input / output slot i; an absent TensorInfo when out of range or omitted.
  const TensorInfo& in(size_t i) const;
  const TensorInfo& out(size_t i) const;
  /// Elements of output 0, or of the largest operand when that is unknown.
  Count OutputElements() const;
  /// The largest element count among known operands.
  Count MaxElements() const;
  /// True when output 0's size had to be estimated.
  bool OutputEstimated() const;
};

/// What a formula computes; the driver adds the bytes of the operands.
struct Work {
  Count macs;
  Count flops;
  Count workspace_bytes;
  OpClass op_class = OpClass::kOther;
  CostRule rule = CostRule::kFormula;
  /// Set when the kernel reads / writes something else than its operands.
  std::optional<Count> bytes_read;
  std::optional<Count> bytes_written;
  /// Set when the arithmetic runs at another peak than the inputs suggest.
  std::optional<DTypeClass> dtype_class;
  Count kernels = 1;
  bool estimated = false;
};

// --- Generic rules (op_costs_elementwise.cc) --------------------------------

/// `weight` FLOPs per output element.
Work Elementwise(const OpContext& c, int64_t weight, OpClass op_class = OpClass::kElementwise);
/// Sum/Max/Min/Mean: one op per extra input per output element (+ `extra`).
Work Variadic(const OpContext& c, int64_t extra_per_element);
/// Bytes only, no arithmetic.
Work DataMovement(const OpContext& c);
/// Like DataMovement, but the kernel reads only the selected elements of
/// input 0 (≈ output bytes) plus its other inputs: Gather, Slice, Compress...
Work Selection(const OpContext& c);
/// No tensor data touched.
Work Metadata(const OpContext& c);
/// A view of input 0 under another shape (Note [Views]): no bytes move, one
/// kernel launch.
Work View(const OpContext& c);
/// `weight` FLOPs per element of the largest operand, marked estimated: the
/// fall-back of a formula whose shapes are missing.
Work Estimate(const OpContext& c, int64_t weight, OpClass op_class);
/// The weight of an activation named by a string attribute ("Relu", "Tanh",
/// "LeakyRelu"...) as FusedConv / FusedGemm / RNNs name them; 0 for "".
int64_t ActivationWeight(std::string_view activation);
Work Clip(const OpContext& c);
Work Dropout(const OpContext& c);
Work Gelu(const OpContext& c);
Work QuantizeLinear(const OpContext& c);
Work DequantizeLinear(const OpContext& c);
Work DynamicQuantizeLinear(const OpContext& c);

// --- Linear algebra (op_costs_linear.cc) ------------------------------------

/// Input slots of a convolution-like op.
struct ConvSlots {
  size_t x = 0;
  size_t w = 1;
  std::optional<size_t> bias;
  std::optional<size_t> sum;  // FusedConv's Z
};
/// N × C_out × out_spatial × (C_in / group) × kernel MACs; `per_output` FLOPs
/// per output element on top (activation, requantization).
Work Conv(const OpContext& c, const ConvSlots& slots, int64_t per_output);
Work ConvTranspose(const OpContext& c);

struct MatMulSlots {
  size_t a = 0;
  size_t b = 1;
  std::optional<size_t> bias;
  bool trans_a = false;
  bool trans_b = false;
};
/// Batched, broadcasting MatMul: out_elements × K MACs.
Work MatMul(const OpContext& c, const MatMulSlots& slots, int64_t per_output);
/// Gemm: M × N × K MACs, + alpha/beta/bias terms.
Work Gemm(const OpContext& c, const MatMulSlots& slots, int64_t per_output);
Work FusedMatMul(const OpContext& c);
Work MatMulNBits(const OpContext& c);
Work Einsum(const OpContext& c);
Work Det(const OpContext& c);

/// Output spatial dims of a convolution or pooling window of `kernel` over
/// `x` [N, C, spatial...] from the node's strides, dilations, pads, auto_pad
/// and ceil_mode attributes (shapes::WindowOutput); nullopt when x's shape
/// is not known or the attributes do not describe a window that fits.
std::optional<std::vector<int64_t>> ConvOutputSpatial(const ir::Node& node, const TensorInfo& x,
                                                      const std::vector<int64_t>& kernel);

/// The output dims of a MatMul of `a` and `b` (shapes::MatMulShape; a
/// contracted or batch dim that differs, as estimates may, takes the larger),
/// when known.
std::optional<std::vector<int64_t>> MatMulOutputDims(const TensorInfo& a, const TensorInfo& b,
                                                     bool trans_a, bool trans_b);

// --- Sequence models (op_costs_sequence.cc) ---------------------------------

enum class RecurrentCell : uint8_t { kRnn, kGru, kLstm };
/// Every time step × direction: gate GEMMs, bias, activations, cell update.
Work Recurrent(const OpContext& c, RecurrentCell cell);
/// com.microsoft Attention / QAttention: QKV projection + attention core.
Work ContribAttention(const OpContext& c);
Work MultiHeadAttention(const OpContext& c);
Work GroupQueryAttention(const OpContext& c);
/// ONNX Attention (opset 23).
Work OnnxAttention(const OpContext& c);
Work SkipLayerNormalization(const OpContext& c, int64_t norm_weight);
Work EmbedLayerNormalization(const OpContext& c);
Work RotaryEmbedding(const OpContext& c);

// --- Normalization, pooling, reductions (op_costs_nn.cc) --------------------

Work BatchNormalization(const OpContext& c);
Work Lrn(const OpContext& c);
Work Softmax(const OpContext& c, int64_t extra_per_element);
enum class PoolKind : uint8_t { kMax, kAverage, kLp };
/// out_elements × kernel elements.
Work Pool(const OpContext& c, PoolKind kind, int64_t per_output);
/// in_elements (+ per output).
Work GlobalPool(const OpContext& c, PoolKind kind, int64_t per_output);
Work MaxRoiPool(const OpContext& c);
Work RoiAlign(const OpContext& c);
/// `per_input` FLOPs per input element + `per_output` per output element.
Work Reduce(const OpContext& c, int64_t per_input, int64_t per_output);
Work TopK(const OpContext& c);
Work Unique(const OpContext& c);
Work NonZero(const OpContext& c);

// --- Everything else (op_costs_misc.cc) --------------------------------------

Work Resize(const OpContext& c);
Work GridSample(const OpContext& c);
Work AffineGrid(const OpContext& c);
Work Col2Im(const OpContext& c);
Work ScatterWithReduction(const OpContext& c);
Work Dft(const OpContext& c);
Work Stft(const OpContext& c);
Work Window(const OpContext& c, int64_t cosine_terms);
Work NonMaxSuppression(const OpContext& c);
Work Multinomial(const OpContext& c);
Work RandomGenerator(const OpContext& c, int64_t per_element);
Work NegativeLogLikelihoodLoss(const OpContext& c);
Work SoftmaxCrossEntropyLoss(const OpContext& c);
Work TfIdfVectorizer(const OpContext& c);
Work MlLinear(const OpContext& c);
Work MlSvm(const OpContext& c);
Work MlTreeEnsemble(const OpContext& c);
/// Adagrad / Adam / Momentum: `per_element` FLOPs per updated element.
Work Optimizer(const OpContext& c, int64_t per_element);

// --- Control flow (op_costs_control_flow.cc) ---------------------------------

Work If(const OpContext& c);
Work Loop(const OpContext& c);
Work Scan(const OpContext& c);
Work SequenceMap(const OpContext& c);

// --- Driver (op_costs.cc) ---------------------------------------------------

/// The cost of `node` with operands looked up in `table`.
NodeCost CostNode(const ValueTable& table, const ir::Node& node, const CostOptions& options);

/// Sizes of `node`'s outputs that have no static shape, estimated from its
/// inputs (MatMul shape for matmuls, broadcast of the inputs otherwise).
void BindEstimatedOutputs(ValueTable& table, const ir::Node& node);

/// The cost of every node of `table`'s graph in order, estimating the sizes
/// of values without a static shape as it goes.
std::vector<NodeCost> CostAllNodes(ValueTable& table, const CostOptions& options);

/// The arithmetic peak class of an element type; nullopt for types that say
/// nothing about it (bool, strings, int32/int64 indices).
std::optional<DTypeClass> DTypeClassOf(ir::DType dtype);

}  // namespace autopar::costmodel::internal

#endif  // AUTOPAR_COSTMODEL_OP_COSTS_INTERNAL_H_
