#include "passes/infer_shapes.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "onnx_io/shape_inference.h"
#include "passes/shape_rules.h"

namespace autopar::passes {
namespace {

// At most this many names in one error line.
constexpr size_t kMaxNamesInError = 5;

// ONNX inference + our rules, repeated while values keep getting resolved.
constexpr int kMaxInferenceRounds = 3;

// "'a', 'b' and 4 more": the first kMaxNamesInError names, quoted, each
// followed by its entry of `suffixes` (what explains it) when given.
std::string JoinQuoted(const std::vector<std::string>& names,
                       const std::vector<std::string>& suffixes = {}) {
  std::string text;
  const size_t shown = std::min(names.size(), kMaxNamesInError);
  for (size_t i = 0; i < shown; ++i) {
    absl::StrAppend(&text, i ? ", '" : "'", names[i], "'", i < suffixes.size() ? suffixes[i] : "");
  }
  if (names.size() > shown) absl::StrAppend(&text, " and ", names.size() - shown, " more");
  return text;
}

// Step 1: applies --input-shape and --dim to the graph inputs.
absl::Status BindInputs(const ShapeOptions& options, ir::Graph& graph) {
  std::map<std::string, bool> used_dims;
  for (const auto& [name, value] : options.dim_values) used_dims[name] = false;
  for (const auto& [name, dims] : options.input_shapes) {
    std::optional<ir::ValueId> id = graph.FindValue(name);
    if (!id || graph.value(*id).kind != ir::ValueKind::kGraphInput) {
      return absl::InvalidArgumentError(
          absl::StrCat("--input-shape names '", name, "', which is not an input of the model"));
    }
    ir::Value& v = graph.mutable_value(*id);
    if (v.shape.has_rank() && v.shape.rank() != dims.size()) {
      return absl::InvalidArgumentError(absl::StrCat("--input-shape gives '", name, "' ",
                                                     dims.size(), " dims but the model says ",
                                                     v.shape.rank()));
    }
    v.shape = ir::Shape(dims);
  }
  for (ir::ValueId id : graph.inputs()) {
    ir::Value& v = graph.mutable_value(id);
    for (ir::Dim& d : v.shape.mutable_dims()) {
      if (d.known() || d.symbol.empty()) continue;
      auto it = options.dim_values.find(d.symbol);
      if (it == options.dim_values.end()) continue;
      d.value = it->second;
      used_dims[d.symbol] = true;
    }
  }
  for (const auto& [name, used] : used_dims) {
    if (used) continue;
    std::vector<std::string> unresolved = UnresolvedInputDims(graph);
    return absl::InvalidArgumentError(absl::StrCat(
        "--dim ", name, " names no symbolic dim of the model's inputs",
        unresolved.empty() ? std::string(" (all input dims are known)")
                           : absl::StrCat(" (unresolved: ", absl::StrJoin(unresolved, "; "), ")")));
  }
  return absl::OkStatus();
}

// The error for inputs whose dims are still unknown after binding.
absl::Status UnboundInputsError(const ir::Graph& graph) {
  std::vector<std::string> symbols;
  std::vector<std::string> unnamed;
  for (ir::ValueId id : graph.inputs()) {
    const ir::Value& v = graph.value(id);
    if (v.type_kind != ir::TypeKind::kTensor) continue;
    if (!v.shape.has_rank()) {
      unnamed.push_back(v.name);
      continue;
    }
    for (const ir::Dim& d : v.shape.dims()) {
      if (d.known()) continue;
      if (d.symbol.empty()) {
        if (unnamed.empty() || unnamed.back() != v.name) unnamed.push_back(v.name);
      } else if (std::find(symbols.begin(), symbols.end(), d.symbol) == symbols.end()) {
        symbols.push_back(d.symbol);
      }
    }
  }
  if (symbols.empty() && unnamed.empty()) return absl::OkStatus();
  std::vector<std::string> fixes;
  for (const std::string& s : symbols) fixes.push_back(absl::StrCat("--dim ", s, "=VALUE"));
  for (const std::string& s : unnamed)
    fixes.push_back(absl::StrCat("--input-shape ", s, "=D0,D1,..."));
  std::string what;
  if (!symbols.empty()) absl::StrAppend(&what, "symbolic dims ", JoinQuoted(symbols));
  if (!unnamed.empty()) {
    absl::StrAppend(&what, what.empty() ? "" : " and ", "dims without a name or value in input(s) ",
                    JoinQuoted(unnamed));
  }
  return absl::InvalidArgumentError(absl::StrCat("the model's inputs have ", what,
                                                 "; bind them with ", absl::StrJoin(fixes, " ")));
}

bool NeedsRule(const ir::Value& v) {
  if (v.type_kind != ir::TypeKind::kTensor) return false;
  if (!v.shape.IsStatic() || v.dtype == ir::DType::kUndefined) return true;
  // Small integer tensors: their contents may resolve a later Reshape.
  std::optional<int64_t> n = v.shape.NumElements();
  return ir::IsIndexType(v.dtype) && !v.int_data && n && *n <= ir::kMaxKnownIntElements;
}

// Step 3: our own rules, in topological order, for what ONNX left open.
void PropagateWithRules(ir::Graph& graph) {
  for (const ir::Node& node : graph.nodes()) {
    bool needed = false;
    for (ir::ValueId out : node.outputs) {
      if (out.valid() && NeedsRule(graph.value(out))) needed = true;
    }
    if (!needed) continue;
    std::optional<std::vector<OutputType>> types = InferOutputTypes(graph, node);
    if (!types) continue;
    for (size_t i = 0; i < node.outputs.size() && i < types->size(); ++i) {
      if (!node.outputs[i].valid()) continue;
      ir::Value& v = graph.mutable_value(node.outputs[i]);
      OutputType& t = (*types)[i];
      if (v.dtype == ir::DType::kUndefined) v.dtype = t.dtype;
      if (!v.shape.IsStatic() && t.shape.has_rank()) {
        if (!v.shape.has_rank() || v.shape.rank() != t.shape.rank()) {
          v.shape = t.shape;
        } else {
          for (size_t d = 0; d < v.shape.rank(); ++d) {
            if (!v.shape.dim(d).known()) v.shape.mutable_dims()[d] = t.shape.dim(d);
          }
        }
      }
      if (!v.int_data && t.int_data) v.int_data = std::move(t.int_data);
    }
  }
}

}  // namespace

std::vector<std::string> UnresolvedInputDims(const ir::Graph& graph) {
  std::vector<std::string> result;
  for (ir::ValueId id : graph.inputs()) {
    const ir::Value& v = graph.value(id);
    if (v.type_kind != ir::TypeKind::kTensor || v.shape.IsStatic()) continue;
    std::vector<std::string> dims;
    if (!v.shape.has_rank()) dims.push_back("unknown rank");
    for (size_t i = 0; i < v.shape.rank(); ++i) {
      const ir::Dim& d = v.shape.dim(i);
      if (!d.known())
        dims.push_back(d.symbol.empty() ? absl::StrCat("dim ", i, " (unnamed)") : d.symbol);
    }
    result.push_back(absl::StrCat(v.name, ": ", absl::StrJoin(dims, ", ")));
  }
  return result;
}

std::vector<ir::ValueId> ValuesWithoutStaticShape(const ir::Graph& graph) {
  std::vector<ir::ValueId> result;
  for (uint32_t i = 0; i < graph.num_values(); ++i) {
    const ir::Value& v = graph.value(ir::ValueId(i));
    if (v.kind == ir::ValueKind::kNodeOutput && v.type_kind == ir::TypeKind::kTensor &&
        (!v.consumers.empty() || v.is_graph_output) && !v.shape.IsStatic()) {
      result.push_back(ir::ValueId(i));
    }
  }
  return result;
}

absl::Status InferShapes(const onnx_io::Model& model, const ShapeOptions& options,
                         ir::Graph& graph) {
  // 1. Bind the inputs.
  if (absl::Status s = BindInputs(options, graph); !s.ok()) return s;
  if (options.require_static) {
    if (absl::Status s = UnboundInputsError(graph); !s.ok()) return s;
  }
  // 2. ONNX's inference with data propagation, then 3. our rules for the rest.
  //    What the rules learn about operators ONNX cannot type (newer opsets,
  //    other domains) lets ONNX continue past them, so repeat while it helps.
  size_t open_before = SIZE_MAX;
  for (int round = 0; round < kMaxInferenceRounds; ++round) {
    if (absl::Status s = onnx_io::InferShapesWithOnnx(model, graph); !s.ok()) return s;
    PropagateWithRules(graph);
    const size_t still_open = ValuesWithoutStaticShape(graph).size();
    if (still_open == 0 || still_open >= open_before) break;
    open_before = still_open;
  }
  // 4. Report what is still open.
  if (!options.require_static) return absl::OkStatus();
  std::vector<ir::ValueId> open = ValuesWithoutStaticShape(graph);
  if (open.empty()) return absl::OkStatus();
  // Each as "'name' from Op [dims]": the name quoted alone, since it may
  // hold spaces.
  std::vector<std::string> names;
  std::vector<std::string> origins;
  for (ir::ValueId id : open) {
    const ir::Value& v = graph.value(id);
    names.push_back(v.name);
    origins.push_back(
        absl::StrCat(" from ", graph.node(v.producer).op_type, " ", v.shape.ToString()));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "cannot infer a static shape for ", open.size(), " value(s): ", JoinQuoted(names, origins),
      " (data-dependent shapes, or operators without a shape rule)"));
}

}  // namespace autopar::passes
