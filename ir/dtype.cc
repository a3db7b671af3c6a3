#include "ir/dtype.h"

namespace autopar::ir {

DType DTypeFromOnnx(int32_t onnx_type) {
  if (onnx_type < 0 || onnx_type > static_cast<int32_t>(DType::kInt4)) {
    return DType::kUndefined;
  }
  return static_cast<DType>(onnx_type);
}

int64_t DTypeSizeBytes(DType dtype) {
  switch (dtype) {
    case DType::kUndefined:
      return 0;
    case DType::kBool:
    case DType::kUint8:
    case DType::kInt8:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kUint4:
    case DType::kInt4:
      return 1;
    case DType::kUint16:
    case DType::kInt16:
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kFloat:
    case DType::kInt32:
    case DType::kUint32:
      return 4;
    case DType::kInt64:
    case DType::kUint64:
    case DType::kDouble:
    case DType::kComplex64:
    case DType::kString:
      return 8;
    case DType::kComplex128:
      return 16;
  }
  return 0;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kUndefined:
      return "undefined";
    case DType::kFloat:
      return "float32";
    case DType::kUint8:
      return "uint8";
    case DType::kInt8:
      return "int8";
    case DType::kUint16:
      return "uint16";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kString:
      return "string";
    case DType::kBool:
      return "bool";
    case DType::kFloat16:
      return "float16";
    case DType::kDouble:
      return "float64";
    case DType::kUint32:
      return "uint32";
    case DType::kUint64:
      return "uint64";
    case DType::kComplex64:
      return "complex64";
    case DType::kComplex128:
      return "complex128";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kFloat8E4M3FN:
      return "float8e4m3fn";
    case DType::kFloat8E4M3FNUZ:
      return "float8e4m3fnuz";
    case DType::kFloat8E5M2:
      return "float8e5m2";
    case DType::kFloat8E5M2FNUZ:
      return "float8e5m2fnuz";
    case DType::kUint4:
      return "uint4";
    case DType::kInt4:
      return "int4";
  }
  return "undefined";
}

bool IsIndexType(DType dtype) { return dtype == DType::kInt64 || dtype == DType::kInt32; }

}  // namespace autopar::ir
