// Element types of tensors, numbered as onnx::TensorProto::DataType so that
// conversion at the ONNX boundary is a cast, and their sizes in bytes.
#ifndef AUTOPAR_IR_DTYPE_H_
#define AUTOPAR_IR_DTYPE_H_

#include <cstdint>
#include <string_view>

namespace autopar::ir {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUint4 = 21,
  kInt4 = 22,
};

/// Maps an ONNX TensorProto data type number to a DType; unknown numbers map to
/// kUndefined.
DType DTypeFromOnnx(int32_t onnx_type);

/// Bytes per element. Strings count as 8 bytes (a pointer's worth: their real
/// size is data dependent); 4-bit types count as 1 (they are padded per byte
/// only in the worst case, and a slight overestimate is the safe side for
/// memory planning). kUndefined is 0.
int64_t DTypeSizeBytes(DType dtype);

/// Lower-case name as in ONNX's text format: "float32", "int64", "bfloat16"...
std::string_view DTypeName(DType dtype);

/// True for the types shape tensors are made of (int32, int64).
bool IsIndexType(DType dtype);

}  // namespace autopar::ir

#endif  // AUTOPAR_IR_DTYPE_H_
