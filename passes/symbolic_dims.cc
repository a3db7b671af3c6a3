#include "passes/symbolic_dims.h"

#include <optional>

#include "onnx_io/import.h"
#include "passes/infer_shapes.h"

namespace autopar::passes {
namespace {

// Per value: whether it is computed from a graph input with a bound symbolic
// dim, in the graph's topological order.
std::vector<char> DependsOnSymbols(const ir::Graph& graph,
                                   const std::map<std::string, int64_t>& symbols) {
  std::vector<char> depends(graph.num_values(), 0);
  for (ir::ValueId id : graph.inputs()) {
    for (const ir::Dim& d : graph.value(id).shape.dims()) {
      if (symbols.contains(d.symbol)) depends[id.index()] = 1;
    }
  }
  for (const ir::Node& node : graph.nodes()) {
    bool any = false;
    for (ir::ValueId in : node.inputs) any = any || (in.valid() && depends[in.index()]);
    for (ir::ValueId in : node.captured) any = any || depends[in.index()];
    if (!any) continue;
    for (ir::ValueId out : node.outputs) {
      if (out.valid()) depends[out.index()] = 1;
    }
  }
  return depends;
}

// The sentinel values (primes no layer size is) that the second inference
// binds the symbols to.
constexpr int64_t kSentinels[] = {7919, 7907, 7901, 7883, 7877, 7873, 7867, 7853};

// `graph` built afresh from `model` with its shapes inferred as `options`
// say, but with `dim_values` as the bindings and no static shape required;
// nullopt (and `error` set) when that fails.
std::optional<ir::Graph> InferWith(const onnx_io::Model& model, const ShapeOptions& options,
                                   const std::map<std::string, int64_t>& dim_values,
                                   std::string& error) {
  absl::StatusOr<ir::Graph> fresh = onnx_io::BuildGraph(model);
  if (!fresh.ok()) {
    error = std::string(fresh.status().message());
    return std::nullopt;
  }
  ShapeOptions rebound = options;
  rebound.dim_values = dim_values;
  rebound.require_static = false;
  if (absl::Status s = InferShapes(model, rebound, *fresh); !s.ok()) {
    error = std::string(s.message());
    return std::nullopt;
  }
  return *std::move(fresh);
}

}  // namespace

std::string_view UnnamedDimReasonText(UnnamedDimReason reason) {
  switch (reason) {
    case UnnamedDimReason::kNone:
      return "named";
    case UnnamedDimReason::kDerived:
      return "a function of a symbolic dim other than the dim itself";
    case UnnamedDimReason::kNotInferred:
      return "shape inference with the symbol unbound or moved does not reach this tensor";
  }
  return "unnamed";
}

SymbolicDimsReport TrackSymbolicDims(const onnx_io::Model& model, const ShapeOptions& options,
                                     ir::Graph& graph) {
  SymbolicDimsReport report;
  for (ir::ValueId id : graph.inputs()) {
    for (const ir::Dim& d : graph.value(id).shape.dims()) {
      if (auto it = options.dim_values.find(d.symbol); it != options.dim_values.end()) {
        report.symbols[d.symbol] = it->second;
      }
    }
  }
  if (report.symbols.empty()) return report;

  // The same inference with the symbols unbound, and once more with each
  // bound to a sentinel, each on a graph no binding has touched.
  std::map<std::string, int64_t> sentinels;
  {
    size_t next = 0;
    for (const auto& [name, value] : report.symbols) {
      while (next < std::size(kSentinels) && kSentinels[next] == value) ++next;
      if (next < std::size(kSentinels)) sentinels[name] = kSentinels[next++];
    }
  }
  std::optional<ir::Graph> symbolic = InferWith(model, options, {}, report.inference_error);
  std::string sentinel_error;
  std::optional<ir::Graph> sentinel = sentinels.size() == report.symbols.size()
                                          ? InferWith(model, options, sentinels, sentinel_error)
                                          : std::nullopt;
  auto same_rank = [](const std::optional<ir::Graph>& g,
                      const ir::Value& value) -> const ir::Shape* {
    if (!g) return nullptr;
    std::optional<ir::ValueId> id = g->FindValue(value.name);
    if (!id) return nullptr;
    const ir::Shape& s = g->value(*id).shape;
    return s.has_rank() && s.rank() == value.shape.rank() ? &s : nullptr;
  };

  const std::vector<char> depends = DependsOnSymbols(graph, report.symbols);
  for (uint32_t i = 0; i < graph.num_values(); ++i) {
    if (!depends[i]) continue;
    ir::Value& value = graph.mutable_value(ir::ValueId(i));
    if (value.kind != ir::ValueKind::kNodeOutput || value.type_kind != ir::TypeKind::kTensor ||
        !value.shape.has_rank() || value.shape_estimated) {
      continue;
    }
    const ir::Shape* shape = same_rank(symbolic, value);
    const ir::Shape* moved = same_rank(sentinel, value);
    std::vector<uint8_t> unnamed(value.shape.rank(), 0);
    bool any_unnamed = false;
    for (size_t d = 0; d < value.shape.rank(); ++d) {
      ir::Dim& dim = value.shape.mutable_dims()[d];
      if (!dim.known()) continue;  // unknown dims are written without a value anyway
      std::string name;
      bool fixed = false;
      if (shape != nullptr) {
        const ir::Dim& from = shape->dim(d);
        fixed = from.known() && from.value == dim.value;
        auto it = report.symbols.find(from.symbol);
        if (!from.known() && it != report.symbols.end() && it->second == dim.value) {
          name = from.symbol;
        }
      }
      if (!fixed && name.empty() && moved != nullptr && moved->dim(d).known()) {
        const int64_t there = moved->dim(d).value;
        fixed = there == dim.value;
        for (const auto& [symbol, value_there] : sentinels) {
          if (there == value_there && report.symbols.at(symbol) == dim.value) name = symbol;
        }
      }
      if (fixed) continue;
      if (!name.empty()) {
        dim.symbol = name;
        ++report.named_dims;
        continue;
      }
      unnamed[d] = static_cast<uint8_t>(shape != nullptr || moved != nullptr
                                            ? UnnamedDimReason::kDerived
                                            : UnnamedDimReason::kNotInferred);
      any_unnamed = true;
      ++report.unnamed_dims;
    }
    value.unnamed_symbolic_dims = any_unnamed ? std::move(unnamed) : std::vector<uint8_t>{};
  }
  return report;
}

std::vector<UnnamedBoundaryDim> UnnamedDimsOf(const ir::Graph& graph,
                                              const std::vector<ir::ValueId>& values) {
  std::vector<UnnamedBoundaryDim> result;
  for (ir::ValueId id : values) {
    const ir::Value& v = graph.value(id);
    for (size_t d = 0; d < v.unnamed_symbolic_dims.size() && d < v.shape.rank(); ++d) {
      if (v.unnamed_symbolic_dims[d] == 0) continue;
      result.push_back({v.name, static_cast<int32_t>(d), v.shape.dim(d).value,
                        static_cast<UnnamedDimReason>(v.unnamed_symbolic_dims[d])});
    }
  }
  return result;
}

}  // namespace autopar::passes
