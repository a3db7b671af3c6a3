// Node attributes in a form the passes can read without the ONNX library.
// The rewriter never rebuilds nodes from these: it copies the source NodeProto.
#ifndef AUTOPAR_IR_ATTRIBUTE_H_
#define AUTOPAR_IR_ATTRIBUTE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace autopar::ir {

enum class AttributeType : uint8_t {
  kFloat,
  kInt,
  kString,
  kTensor,
  kGraph,
  kFloats,
  kInts,
  kStrings,
  kOther,  // tensors, graphs, sparse tensors, type protos: kept by name only
};

/// A tensor-valued attribute (Constant's `value`, ConstantOfShape's `value`):
/// its type and dims, and its contents when it is a small integer tensor.
struct TensorAttribute {
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;
  std::optional<std::vector<int64_t>> int_data;
};

struct Attribute {
  std::string name;
  AttributeType type = AttributeType::kOther;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  TensorAttribute tensor;

  static Attribute Int(std::string name, int64_t value);
  static Attribute Float(std::string name, float value);
  static Attribute String(std::string name, std::string value);
  static Attribute Ints(std::string name, std::vector<int64_t> values);
  static Attribute Floats(std::string name, std::vector<float> values);
};

}  // namespace autopar::ir

#endif  // AUTOPAR_IR_ATTRIBUTE_H_
