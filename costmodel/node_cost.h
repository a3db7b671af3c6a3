// NodeCost: what one node costs, from shapes and attributes alone —
// arithmetic, memory traffic and memory footprint. Device-independent:
// costmodel/device.h turns a NodeCost into a predicted time on a device.
//
// Note [Counting convention]:
//  - `macs` counts multiply-accumulates of the linear-algebra core of an op
//    (Conv, ConvTranspose, Gemm, MatMul, Einsum, attention, RNN gates, their
//    quantized and fused forms, ai.onnx.ml linear models). Nothing else counts
//    as a MAC: BatchNormalization, activations, pooling, Add... have macs == 0.
//    This is the convention of the published torchvision counts ("GMACs"
//    counted over conv and linear layers), which the totals match.
//  - `flops` counts every arithmetic operation: 2 per MAC, plus bias adds,
//    activations, normalizations, pooling, element-wise math, with the
//    documented per-element weights of op_costs_internal.h for transcendental
//    functions. Quantized ops count integer operations the same way.
//  - Counts are int64 and saturate at kSaturatedCount instead of overflowing
//    (a dim of 2^40 squared must not wrap to a small number); `saturated`
//    flags a node where that happened. Times are computed in double.
#ifndef AUTOPAR_COSTMODEL_NODE_COST_H_
#define AUTOPAR_COSTMODEL_NODE_COST_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace autopar::costmodel {

/// The family an op belongs to, for the device model: each class has its own
/// efficiency (fraction of peak it reaches) in a DeviceSpec.
enum class OpClass : uint8_t {
  kConv,           // Conv, ConvTranspose and their quantized / fused forms
  kMatMul,         // Gemm, MatMul, Einsum, attention, Det, linear ML models
  kRecurrent,      // RNN, GRU, LSTM: sequential small GEMMs
  kNormalization,  // Batch/Layer/Instance/Group/RMS norm, LRN, Softmax family
  kPooling,        // Max/Average/Lp pooling, global pooling, RoI pooling
  kReduction,      // Reduce*, ArgMax/ArgMin, CumSum, Hardmax
  kElementwise,    // arithmetic, activations, comparisons, (de)quantization
  kDataMovement,   // copies and layout: Transpose, Concat, Gather, Expand...
  kMetadata,       // no tensor data touched: Shape, Size, Constant, and the
                   // views Reshape, Flatten, (Un)Squeeze, Identity, Optional*
  kOther,          // everything irregular: Resize, TopK, NMS, ML trees, DFT...
};
inline constexpr size_t kNumOpClasses = 10;

/// Lower-case name used in JSON ("conv", "matmul", "data_movement"...).
std::string_view OpClassName(OpClass op_class);
/// The inverse of OpClassName.
std::optional<OpClass> OpClassFromName(std::string_view name);

/// Which peak of a device the arithmetic runs at.
enum class DTypeClass : uint8_t {
  kFp32,  // float32, float64 (no separate fp64 peak is modelled), integers
  kFp16,  // float16, bfloat16, float8 variants
  kInt8,  // int8 / uint8 / int4 arithmetic of quantized ops
};
inline constexpr size_t kNumDTypeClasses = 3;

/// "fp32", "fp16", "int8".
std::string_view DTypeClassName(DTypeClass dtype_class);
std::optional<DTypeClass> DTypeClassFromName(std::string_view name);

/// How a node's cost was obtained.
enum class CostRule : uint8_t {
  kNone,          // no formula: an operator the model does not know
  kFormula,       // an arithmetic formula from shapes and attributes
  kDataMovement,  // documented "data movement only": bytes, no arithmetic
  kMetadata,      // touches no tensor data (Shape, Size, Constant, views
                  // such as Reshape): kernel overhead only
  kSubgraph,      // If / Loop / Scan / SequenceMap: the cost of its bodies
};

/// "none", "formula", "data_movement", "metadata", "subgraph".
std::string_view CostRuleName(CostRule rule);

inline constexpr int64_t kSaturatedCount = std::numeric_limits<int64_t>::max();

struct NodeCost {
  /// Multiply-accumulates (see Note [Counting convention]).
  int64_t macs = 0;
  /// Arithmetic operations; 2 per MAC plus everything else.
  int64_t flops = 0;
  /// Bytes the kernel reads: its input tensors (parameters included), except
  /// for selection ops (Gather, Slice...) which read only what they select.
  int64_t bytes_read = 0;
  /// Bytes the kernel writes: its output tensors (for control flow: the
  /// traffic of the body over all iterations).
  int64_t bytes_written = 0;
  /// Bytes of the distinct inputs (and, for control flow, captured outer
  /// values) that are parameters: initializers and Constant outputs.
  int64_t param_bytes = 0;
  /// Bytes of the node's output tensors, what stays allocated after it ran.
  int64_t output_bytes = 0;
  /// Temporary memory the kernel needs besides inputs and outputs (im2col
  /// buffers, attention score matrices, RNN gate buffers, loop bodies).
  int64_t workspace_bytes = 0;
  /// Kernel launches the node stands for: 1 for an ordinary op, 0 for a
  /// Constant (runtimes fold it at load time), body × trips for control flow.
  /// The device model charges its kernel overhead this many times.
  int64_t kernels = 1;
  OpClass op_class = OpClass::kOther;
  DTypeClass dtype_class = DTypeClass::kFp32;
  CostRule rule = CostRule::kNone;
  /// A formula or an explicit rule covers this op (rule != kNone).
  bool has_formula = false;
  /// Some operand had no static shape and its size was estimated (values
  /// inside control-flow bodies; graphs analysed without require_static).
  bool estimated = false;
  /// Some count reached kSaturatedCount.
  bool saturated = false;
};

/// A non-negative int64 that saturates at kSaturatedCount instead of
/// overflowing, so that formulas read as arithmetic. Negative inputs count as
/// 0 (unknown dims are -1 in the IR). Start every product with a Count:
/// `Count(n) * c * h * w`, never `Count(n * c * h * w)`.
class Count {
 public:
  constexpr Count() = default;
  constexpr Count(int64_t value) : value_(value < 0 ? 0 : value) {}  // NOLINT: implicit

  constexpr int64_t value() const { return value_; }
  constexpr bool saturated() const { return value_ == kSaturatedCount; }

  friend constexpr Count operator+(Count a, Count b) {
    int64_t sum = 0;
    if (__builtin_add_overflow(a.value_, b.value_, &sum)) return Count(kSaturatedCount);
    return Count(sum);
  }
  friend constexpr Count operator*(Count a, Count b) {
    int64_t product = 0;
    if (__builtin_mul_overflow(a.value_, b.value_, &product)) return Count(kSaturatedCount);
    return Count(product);
  }
  /// Division by a positive number; a saturated count stays saturated.
  friend constexpr Count operator/(Count a, int64_t b) {
    if (a.saturated() || b <= 0) return a;
    return Count(a.value_ / b);
  }
  constexpr Count& operator+=(Count b) { return *this = *this + b; }
  constexpr Count& operator*=(Count b) { return *this = *this * b; }
  friend constexpr bool operator==(Count a, Count b) = default;
  friend constexpr auto operator<=>(Count a, Count b) = default;

 private:
  int64_t value_ = 0;
};

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_NODE_COST_H_
