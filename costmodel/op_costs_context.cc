// How formulas see their operands: TensorInfo, the per-graph ValueTable
// (IR sizes, bound estimates, outer values by name) and OpContext.
#include <algorithm>

#include "costmodel/op_costs_internal.h"

namespace autopar::costmodel::internal {

const TensorInfo& AbsentTensor() {
  static const TensorInfo* const absent = new TensorInfo();  // never destroyed
  return *absent;
}

int64_t TensorInfo::Dim(int64_t axis) const {
  if (!dims) return -1;
  int64_t r = rank();
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return -1;
  return (*dims)[static_cast<size_t>(axis)];
}

Count TensorInfo::DimProduct(int64_t begin, int64_t end) const {
  if (!dims) return 0;
  int64_t r = rank();
  if (end < 0) end += r;
  begin = std::clamp<int64_t>(begin, 0, r);
  end = std::clamp<int64_t>(end, begin, r);
  Count product = 1;
  for (int64_t i = begin; i < end; ++i) product *= (*dims)[static_cast<size_t>(i)];
  return product;
}

std::optional<int64_t> TensorInfo::ScalarInt() const {
  if (int_data == nullptr || int_data->size() != 1) return std::nullopt;
  return (*int_data)[0];
}

ir::Shape TensorInfo::shape() const {
  if (!dims) return ir::Shape();
  return ir::Shape(*dims);
}

TensorInfo ValueTable::Info(ir::ValueId id) const {
  if (!id.valid() || id.index() >= graph_.num_values()) return {};
  if (id.index() < bound_.size() && bound_[id.index()]) return *bound_[id.index()];
  const ir::Value& v = graph_.value(id);
  if (v.kind == ir::ValueKind::kOuterScope && outer_ != nullptr) {
    if (std::optional<TensorInfo> outer = outer_->InfoByName(v.name)) return *outer;
  }
  TensorInfo info;
  info.present = true;
  info.dtype = v.dtype;
  info.is_parameter = v.is_parameter;
  if (v.int_data) info.int_data = &*v.int_data;
  switch (v.type_kind) {
    case ir::TypeKind::kSequence:
    case ir::TypeKind::kOptional:
    case ir::TypeKind::kMap:
      // Containers have no static size; they count as 0 bytes by convention.
      return info;
    case ir::TypeKind::kTensor:
    case ir::TypeKind::kSparseTensor:
    case ir::TypeKind::kUnknown:
      break;
  }
  if (!v.shape.IsStatic()) {
    info.estimated = true;
    return info;
  }
  info.dims = v.shape.Values();
  info.elements = 1;
  for (int64_t d : *info.dims) info.elements *= d;
  return info;
}

void ValueTable::Bind(ir::ValueId id, TensorInfo info) {
  if (!id.valid() || id.index() >= graph_.num_values()) return;
  if (bound_.empty()) bound_.resize(graph_.num_values());
  bound_[id.index()] = std::move(info);
}

std::optional<TensorInfo> ValueTable::InfoByName(std::string_view name) const {
  if (std::optional<ir::ValueId> id = graph_.FindValue(name)) return Info(*id);
  if (outer_ != nullptr) return outer_->InfoByName(name);
  return std::nullopt;
}

const TensorInfo& OpContext::in(size_t i) const {
  return i < inputs.size() ? inputs[i] : AbsentTensor();
}

const TensorInfo& OpContext::out(size_t i) const {
  return i < outputs.size() ? outputs[i] : AbsentTensor();
}

Count OpContext::OutputElements() const { return out(0).known() ? out(0).elements : MaxElements(); }

Count OpContext::MaxElements() const {
  Count largest;
  for (const TensorInfo& t : inputs) largest = std::max(largest, t.elements);
  for (const TensorInfo& t : outputs) largest = std::max(largest, t.elements);
  return largest;
}

bool OpContext::OutputEstimated() const { return !out(0).known() || out(0).estimated; }

std::optional<DTypeClass> DTypeClassOf(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat:
    case ir::DType::kDouble:
    case ir::DType::kComplex64:
    case ir::DType::kComplex128:
      return DTypeClass::kFp32;
    case ir::DType::kFloat16:
    case ir::DType::kBFloat16:
    case ir::DType::kFloat8E4M3FN:
    case ir::DType::kFloat8E4M3FNUZ:
    case ir::DType::kFloat8E5M2:
    case ir::DType::kFloat8E5M2FNUZ:
      return DTypeClass::kFp16;
    case ir::DType::kInt8:
    case ir::DType::kUint8:
    case ir::DType::kInt4:
    case ir::DType::kUint4:
      return DTypeClass::kInt8;
    default:
      return std::nullopt;
  }
}

}  // namespace autopar::costmodel::internal
