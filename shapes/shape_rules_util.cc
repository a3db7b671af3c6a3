// Helpers shared by the shape rules: the node view, output types, dim
// products, axis lists and integer folding (broadcasting, windows and the
// checked arithmetic are in dims.cc).
#include <algorithm>
#include <limits>

#include "shapes/shape_rules_internal.h"

namespace autopar::shapes::rules {

// --- NodeView ----------------------------------------------------------------------

const ir::Value* NodeView::input_value(size_t i) const {
  if (i >= node_.inputs.size() || !node_.inputs[i].valid()) return nullptr;
  if (node_.inputs[i].index() >= graph_.num_values()) return nullptr;
  return &graph_.value(node_.inputs[i]);
}

bool NodeView::has_input(size_t i) const { return input_value(i) != nullptr; }

bool NodeView::has_output(size_t i) const {
  return i < node_.outputs.size() && node_.outputs[i].valid();
}

ir::DType NodeView::dtype(size_t i) const {
  const ir::Value* v = input_value(i);
  return v == nullptr ? ir::DType::kUndefined : v->dtype;
}

const ir::Shape& NodeView::shape(size_t i) const {
  const ir::Value* v = input_value(i);
  if (v == nullptr || v->type_kind != ir::TypeKind::kTensor) return unranked_;
  return v->shape;
}

std::optional<absl::Span<const int64_t>> NodeView::ints(size_t i) const {
  const ir::Value* v = input_value(i);
  if (v == nullptr || v->type_kind != ir::TypeKind::kTensor) return std::nullopt;
  if (v->int_data) {
    // Contents that disagree with the shape are not trusted.
    std::optional<int64_t> n = v->shape.NumElements();
    if (v->shape.IsStatic() && (!n || *n != static_cast<int64_t>(v->int_data->size()))) {
      return std::nullopt;
    }
    return absl::MakeConstSpan(*v->int_data);
  }
  if (v->shape.NumElements() == 0) return absl::Span<const int64_t>();
  return std::nullopt;
}

std::optional<int64_t> NodeView::scalar(size_t i) const {
  std::optional<absl::Span<const int64_t>> data = ints(i);
  if (!data || data->size() != 1) return std::nullopt;
  return (*data)[0];
}

// --- Output types -------------------------------------------------------------------

OutputType Unranked(ir::DType dtype) {
  OutputType t;
  t.dtype = dtype;
  return t;
}

OutputType WithShape(ir::DType dtype, ir::Shape shape) {
  OutputType t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

OutputType WithDims(ir::DType dtype, std::vector<ir::Dim> dims) {
  return WithShape(dtype, ir::Shape::FromDims(std::move(dims)));
}

OutputType LikeInput(const NodeView& node, size_t i) {
  return WithShape(node.dtype(i), node.shape(i));
}

// --- Dims -------------------------------------------------------------------------------

ir::Dim UnknownDim() { return ir::Dim{}; }

ir::Dim KnownDim(std::optional<int64_t> value) {
  if (!value || *value < 0) return ir::Dim{};
  return ir::Dim{*value, ""};
}

std::optional<int64_t> DimValue(const ir::Dim& dim) {
  if (!dim.known()) return std::nullopt;
  return dim.value;
}

std::optional<int64_t> Rank(const ir::Shape& shape) {
  if (!shape.has_rank()) return std::nullopt;
  return static_cast<int64_t>(shape.rank());
}

std::optional<int64_t> Length1D(const ir::Shape& shape) {
  if (!shape.has_rank() || shape.rank() != 1) return std::nullopt;
  return DimValue(shape.dim(0));
}

std::optional<int64_t> Product(absl::Span<const ir::Dim> dims) {
  int64_t n = 1;
  for (const ir::Dim& d : dims) {
    if (!d.known()) return std::nullopt;
    std::optional<int64_t> product = ir::CheckedMul(n, d.value);
    if (!product) return std::nullopt;
    n = *product;
  }
  return n;
}

std::optional<int64_t> Product(absl::Span<const int64_t> values) {
  int64_t n = 1;
  for (int64_t v : values) {
    std::optional<int64_t> product = ir::CheckedMul(n, v);
    if (!product) return std::nullopt;
    n = *product;
  }
  return n;
}

ir::Dim MulDims(const ir::Dim& a, const ir::Dim& b) {
  if (a.known() && a.value == 1) return b;
  if (b.known() && b.value == 1) return a;
  if (!a.known() || !b.known()) return UnknownDim();
  return KnownDim(ir::CheckedMul(a.value, b.value));
}

// --- Axes -------------------------------------------------------------------------------

std::optional<std::vector<int64_t>> NormalizeAxes(absl::Span<const int64_t> axes, int64_t rank) {
  std::vector<int64_t> result;
  result.reserve(axes.size());
  for (int64_t axis : axes) {
    std::optional<int64_t> a = NormalizeAxis(axis, rank);
    if (!a || std::find(result.begin(), result.end(), *a) != result.end()) return std::nullopt;
    result.push_back(*a);
  }
  return result;
}

IntList ReadIntList(const NodeView& node, size_t input, std::string_view attribute,
                    int64_t first_input_opset) {
  IntList list;
  if (node.opset() >= first_input_opset) {
    if (!node.has_input(input)) return list;
    list.given = true;
    if (std::optional<absl::Span<const int64_t>> data = node.ints(input)) {
      list.values.emplace(data->begin(), data->end());
    }
    return list;
  }
  const ir::Attribute* a = node.node().FindAttribute(attribute);
  if (a == nullptr) return list;
  list.given = true;
  if (a->type == ir::AttributeType::kInts) list.values = a->ints;
  return list;
}

// --- Integer contents -------------------------------------------------------------------

bool IsIntegerOrBool(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kUint8:
    case ir::DType::kInt8:
    case ir::DType::kUint16:
    case ir::DType::kInt16:
    case ir::DType::kInt32:
    case ir::DType::kInt64:
    case ir::DType::kUint32:
    case ir::DType::kUint64:
    case ir::DType::kBool:
      return true;
    default:
      return false;
  }
}

std::optional<std::vector<int64_t>> BroadcastInts(absl::Span<const int64_t> data,
                                                  const ir::Shape& from, const ir::Shape& to) {
  if (!from.IsStatic() || !to.IsStatic() || from.rank() > to.rank()) return std::nullopt;
  std::optional<int64_t> from_n = from.NumElements();
  std::optional<int64_t> to_n = to.NumElements();
  if (!from_n || !to_n || *from_n != static_cast<int64_t>(data.size()) ||
      *to_n > ir::kMaxKnownIntElements) {
    return std::nullopt;
  }
  const size_t rank = to.rank();
  const size_t offset = rank - from.rank();
  // Strides of `from`, aligned to `to`'s dims; 0 along broadcast dims.
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = from.rank(); i-- > 0;) {
    const int64_t f = from.dim(i).value;
    const int64_t t = to.dim(offset + i).value;
    if (f != t && f != 1) return std::nullopt;
    strides[offset + i] = f == 1 ? 0 : stride;
    stride *= f;  // bounded by from_n
  }
  std::vector<int64_t> result;
  result.reserve(static_cast<size_t>(*to_n));
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < *to_n; ++n) {
    int64_t source = 0;
    for (size_t i = 0; i < rank; ++i) source += index[i] * strides[i];
    result.push_back(data[static_cast<size_t>(source)]);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < to.dim(i).value) break;
      index[i] = 0;
    }
  }
  return result;
}

std::optional<std::vector<int64_t>> FoldInts(const NodeView& node, absl::Span<const size_t> inputs,
                                             const ir::Shape& out, const IntOp& op) {
  if (!out.IsStatic()) return std::nullopt;
  std::vector<std::vector<int64_t>> operands;
  for (size_t i : inputs) {
    std::optional<absl::Span<const int64_t>> data = node.ints(i);
    if (!data) return std::nullopt;
    std::optional<std::vector<int64_t>> expanded = BroadcastInts(*data, node.shape(i), out);
    if (!expanded) return std::nullopt;
    operands.push_back(*std::move(expanded));
  }
  if (operands.empty()) return std::nullopt;
  const size_t n = operands[0].size();
  std::vector<int64_t> result;
  result.reserve(n);
  std::vector<int64_t> args(operands.size());
  for (size_t e = 0; e < n; ++e) {
    for (size_t k = 0; k < operands.size(); ++k) args[k] = operands[k][e];
    std::optional<int64_t> r = op(args);
    if (!r) return std::nullopt;
    result.push_back(*r);
  }
  return result;
}

}  // namespace autopar::shapes::rules
