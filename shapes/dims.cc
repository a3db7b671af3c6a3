#include "shapes/dims.h"

#include <algorithm>
#include <utility>

namespace autopar::shapes {
namespace {

ir::Dim KnownOrUnknown(std::optional<int64_t> value) {
  if (!value || *value < 0) return ir::Dim{};
  return ir::Dim{*value, ""};
}

// One output dim from two broadcast input dims; nullopt when they conflict
// under kUnranked.
std::optional<ir::Dim> BroadcastDim(const ir::Dim& a, const ir::Dim& b, DimConflict conflict) {
  if (a.known() && b.known()) {
    if (a.value == b.value || b.value == 1) return a;
    if (a.value == 1) return b;
    if (conflict == DimConflict::kLarger) return a.value > b.value ? a : b;
    return std::nullopt;
  }
  if (a.known()) return a.value == 1 ? b : a;
  if (b.known()) return b.value == 1 ? a : b;
  if (a.symbol == b.symbol) return a;  // the same name (or both unnamed)
  return ir::Dim{};
}

// The attribute list `name`, or `size` copies of `fallback` when absent;
// nullopt when present with the wrong length.
std::optional<std::vector<int64_t>> IntsOr(const ir::Node& node, std::string_view name, size_t size,
                                           int64_t fallback) {
  std::vector<int64_t> values = node.GetInts(name);
  if (values.empty()) return std::vector<int64_t>(size, fallback);
  if (values.size() != size) return std::nullopt;
  return values;
}

std::optional<EinsumTerm> ParseEinsumTerm(std::string_view text) {
  EinsumTerm term;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      if (term.ellipsis_at >= 0 || text.substr(i, 3) != "...") return std::nullopt;
      term.ellipsis_at = static_cast<int>(term.letters.size());
      i += 2;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      term.letters.push_back(c);
    } else {
      return std::nullopt;
    }
  }
  return term;
}

}  // namespace

// --- Broadcasting ------------------------------------------------------------

ir::Shape Broadcast(absl::Span<const ir::Shape> shapes, DimConflict conflict) {
  size_t rank = 0;
  for (const ir::Shape& s : shapes) {
    if (!s.has_rank()) return ir::Shape();
    rank = std::max(rank, s.rank());
  }
  std::vector<ir::Dim> dims(rank, ir::Dim{1, ""});
  for (const ir::Shape& s : shapes) {
    const size_t offset = rank - s.rank();
    for (size_t i = 0; i < s.rank(); ++i) {
      std::optional<ir::Dim> d = BroadcastDim(dims[offset + i], s.dim(i), conflict);
      if (!d) return ir::Shape();
      dims[offset + i] = *std::move(d);
    }
  }
  return ir::Shape::FromDims(std::move(dims));
}

std::optional<std::vector<int64_t>> BroadcastDims(absl::Span<const absl::Span<const int64_t>> dims,
                                                  DimConflict conflict) {
  std::vector<ir::Shape> shapes;
  shapes.reserve(dims.size());
  for (absl::Span<const int64_t> d : dims)
    shapes.emplace_back(std::vector<int64_t>(d.begin(), d.end()));
  ir::Shape out = Broadcast(shapes, conflict);
  if (!out.IsStatic()) return std::nullopt;
  return out.Values();
}

// --- MatMul ------------------------------------------------------------------

ir::Shape MatMulShape(const ir::Shape& a_in, const ir::Shape& b_in, const MatMulOptions& options) {
  if (!a_in.has_rank() || !b_in.has_rank() || a_in.rank() == 0 || b_in.rank() == 0) {
    return ir::Shape();
  }
  std::vector<ir::Dim> a = a_in.dims();
  std::vector<ir::Dim> b = b_in.dims();
  const bool a_vector = a.size() == 1;
  const bool b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), ir::Dim{1, ""});
  if (b_vector) b.push_back(ir::Dim{1, ""});
  if (options.trans_a && !a_vector) std::swap(a[a.size() - 1], a[a.size() - 2]);
  if (options.trans_b && !b_vector) std::swap(b[b.size() - 1], b[b.size() - 2]);
  const ir::Dim& k_a = a[a.size() - 1];
  const ir::Dim& k_b = b[b.size() - 2];
  if (options.conflict == DimConflict::kUnranked && k_a.known() && k_b.known() &&
      k_a.value != k_b.value) {
    return ir::Shape();
  }
  ir::Shape batch = Broadcast({ir::Shape::FromDims({a.begin(), a.end() - 2}),
                               ir::Shape::FromDims({b.begin(), b.end() - 2})},
                              options.conflict);
  if (!batch.has_rank()) return ir::Shape();
  std::vector<ir::Dim> out = batch.dims();
  if (!a_vector) out.push_back(a[a.size() - 2]);
  if (!b_vector) out.push_back(b[b.size() - 1]);
  return ir::Shape::FromDims(std::move(out));
}

// --- Convolution and pooling windows --------------------------------------------

std::optional<Window> ReadWindow(const ir::Node& node, size_t spatial,
                                 const std::optional<std::vector<int64_t>>& weight_kernel) {
  Window w;
  w.kernel = node.GetInts("kernel_shape");
  if (w.kernel.empty() && weight_kernel) w.kernel = *weight_kernel;
  std::optional<std::vector<int64_t>> strides = IntsOr(node, "strides", spatial, 1);
  std::optional<std::vector<int64_t>> dilations = IntsOr(node, "dilations", spatial, 1);
  std::optional<std::vector<int64_t>> pads = IntsOr(node, "pads", 2 * spatial, 0);
  if (w.kernel.size() != spatial || !strides || !dilations || !pads) return std::nullopt;
  w.strides = *std::move(strides);
  w.dilations = *std::move(dilations);
  w.pads = *std::move(pads);
  w.auto_pad = node.GetString("auto_pad", "NOTSET");
  w.ceil_mode = node.GetInt("ceil_mode", 0) != 0;
  for (size_t i = 0; i < spatial; ++i) {
    if (w.kernel[i] <= 0 || w.strides[i] <= 0 || w.dilations[i] <= 0) return std::nullopt;
  }
  return w;
}

std::optional<int64_t> EffectiveKernel(const Window& w, size_t i) {
  std::optional<int64_t> span = ir::CheckedMul(w.kernel[i] - 1, w.dilations[i]);
  return span ? CheckedAdd(*span, 1) : std::nullopt;
}

ir::Dim WindowOutput(const ir::Dim& in, const Window& w, size_t i) {
  if (!in.known()) return ir::Dim{};
  const int64_t stride = w.strides[i];
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") {
    return KnownOrUnknown(CeilDiv(in.value, stride));
  }
  const bool valid = w.auto_pad == "VALID";
  const int64_t pad_begin = valid ? 0 : w.pads[i];
  const int64_t pad_end = valid ? 0 : w.pads[i + w.kernel.size()];
  std::optional<int64_t> kernel = EffectiveKernel(w, i);
  std::optional<int64_t> padded = CheckedAdd(in.value, pad_begin);
  if (padded) padded = CheckedAdd(*padded, pad_end);
  if (!kernel || !padded || *padded < *kernel) return ir::Dim{};
  const int64_t span = *padded - *kernel;
  if (!w.ceil_mode) return KnownOrUnknown(*FloorDiv(span, stride) + 1);
  int64_t out = *CeilDiv(span, stride) + 1;
  std::optional<int64_t> last_start = ir::CheckedMul(out - 1, stride);
  std::optional<int64_t> begin_limit = CheckedAdd(in.value, pad_begin);
  if (last_start && begin_limit && *last_start >= *begin_limit) --out;
  return KnownOrUnknown(out);
}

std::optional<std::vector<int64_t>> WeightKernel(const ir::Shape& weight, size_t spatial) {
  if (!weight.has_rank() || weight.rank() != spatial + 2) return std::nullopt;
  std::vector<int64_t> kernel;
  for (size_t i = 2; i < weight.rank(); ++i) {
    if (!weight.dim(i).known()) return std::nullopt;
    kernel.push_back(weight.dim(i).value);
  }
  return kernel;
}

ir::Shape WindowedShape(const ir::Node& node, const ir::Shape& x, const ir::Dim& channels,
                        const std::optional<std::vector<int64_t>>& weight_kernel) {
  if (!x.has_rank() || x.rank() < 3) return ir::Shape();
  const size_t spatial = x.rank() - 2;
  std::optional<Window> w = ReadWindow(node, spatial, weight_kernel);
  std::vector<ir::Dim> dims = {x.dim(0), channels};
  for (size_t i = 0; i < spatial; ++i) {
    dims.push_back(w ? WindowOutput(x.dim(2 + i), *w, i) : ir::Dim{});
  }
  return ir::Shape::FromDims(std::move(dims));
}

// --- Einsum ------------------------------------------------------------------

std::optional<EinsumEquation> ParseEinsum(std::string_view text) {
  std::string equation;
  for (char c : text) {
    if (c != ' ') equation.push_back(c);
  }
  const size_t arrow = equation.find("->");
  const std::string_view lhs = std::string_view(equation).substr(0, arrow);
  EinsumEquation parsed;
  size_t begin = 0;
  for (size_t i = 0; i <= lhs.size(); ++i) {
    if (i < lhs.size() && lhs[i] != ',') continue;
    std::optional<EinsumTerm> term = ParseEinsumTerm(lhs.substr(begin, i - begin));
    if (!term) return std::nullopt;
    parsed.inputs.push_back(*std::move(term));
    begin = i + 1;
  }
  if (arrow != std::string::npos) {
    parsed.output = ParseEinsumTerm(std::string_view(equation).substr(arrow + 2));
    if (!parsed.output) return std::nullopt;
  }
  return parsed;
}

std::optional<EinsumIndices> BindEinsumIndices(const EinsumEquation& equation,
                                               absl::Span<const ir::Shape> operands,
                                               DimConflict conflict) {
  if (equation.inputs.size() != operands.size()) return std::nullopt;
  EinsumIndices indices;
  std::vector<ir::Shape> ellipsis_shapes;
  for (size_t t = 0; t < operands.size(); ++t) {
    const EinsumTerm& term = equation.inputs[t];
    const ir::Shape& shape = operands[t];
    const size_t letters = term.letters.size();
    if (!shape.has_rank() ||
        (term.ellipsis_at < 0 ? shape.rank() != letters : shape.rank() < letters)) {
      return std::nullopt;
    }
    const size_t ellipsis_rank = shape.rank() - letters;
    size_t dim = 0;
    for (size_t l = 0; l <= letters; ++l) {
      if (static_cast<int>(l) == term.ellipsis_at) {
        ellipsis_shapes.push_back(ir::Shape::FromDims(
            {shape.dims().begin() + dim, shape.dims().begin() + dim + ellipsis_rank}));
        dim += ellipsis_rank;
      }
      if (l == letters) break;
      const char c = term.letters[l];
      const ir::Dim& d = shape.dim(dim++);
      ++indices.uses[c];
      auto [it, inserted] = indices.letters.try_emplace(c, d);
      if (inserted || d == it->second) continue;
      // The same letter on two dims: broadcast 1 against n, keep a known value.
      ir::Shape merged =
          Broadcast({ir::Shape::FromDims({it->second}), ir::Shape::FromDims({d})}, conflict);
      if (!merged.has_rank()) return std::nullopt;
      it->second = merged.dim(0);
    }
  }
  indices.any_ellipsis = !ellipsis_shapes.empty();
  indices.ellipsis = Broadcast(ellipsis_shapes, conflict);
  if (!indices.ellipsis.has_rank()) return std::nullopt;
  return indices;
}

ir::Shape EinsumShape(const EinsumEquation& equation, absl::Span<const ir::Shape> operands) {
  std::optional<EinsumIndices> indices = BindEinsumIndices(equation, operands);
  if (!indices) return ir::Shape();
  EinsumTerm output;
  if (equation.output) {
    output = *equation.output;
  } else {
    output.ellipsis_at = indices->any_ellipsis ? 0 : -1;
    for (const auto& [c, uses] : indices->uses) {
      if (uses == 1) output.letters.push_back(c);  // std::map: in character order
    }
  }
  std::vector<ir::Dim> dims;
  for (size_t l = 0; l <= output.letters.size(); ++l) {
    if (static_cast<int>(l) == output.ellipsis_at) {
      dims.insert(dims.end(), indices->ellipsis.dims().begin(), indices->ellipsis.dims().end());
    }
    if (l == output.letters.size()) break;
    auto it = indices->letters.find(output.letters[l]);
    if (it == indices->letters.end()) return ir::Shape();
    dims.push_back(it->second);
  }
  return ir::Shape::FromDims(std::move(dims));
}

// --- Axes and overflow-checked arithmetic ---------------------------------------

std::optional<int64_t> NormalizeAxis(int64_t axis, int64_t rank) {
  if (rank < 0 || axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_add_overflow(a, b, &result)) return std::nullopt;
  return result;
}

std::optional<int64_t> CheckedSub(int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_sub_overflow(a, b, &result)) return std::nullopt;
  return result;
}

std::optional<int64_t> FloorDiv(int64_t a, int64_t b) {
  if (b <= 0) return std::nullopt;
  int64_t q = a / b;  // b > 0: no overflow
  if (a % b != 0 && a < 0) --q;
  return q;
}

std::optional<int64_t> CeilDiv(int64_t a, int64_t b) {
  if (b <= 0) return std::nullopt;
  int64_t q = a / b;
  if (a % b != 0 && a > 0) ++q;
  return q;
}

}  // namespace autopar::shapes
