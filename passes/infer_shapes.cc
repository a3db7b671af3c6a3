#include "passes/infer_shapes.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "onnx_io/shape_inference.h"
#include "shapes/shape_rules.h"

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

// Step 1b: applies --input-value: the input's shape (when it has no static
// one: a scalar for one value of an unranked or rank-0 input, else a vector)
// and, for integer and bool inputs, its contents.
absl::Status BindInputValues(const ShapeOptions& options, ir::Graph& graph) {
  for (const auto& [name, values] : options.input_values) {
    std::optional<ir::ValueId> id = graph.FindValue(name);
    if (!id || graph.value(*id).kind != ir::ValueKind::kGraphInput) {
      return absl::InvalidArgumentError(
          absl::StrCat("--input-value names '", name, "', which is not an input of the model"));
    }
    ir::Value& v = graph.mutable_value(*id);
    if (v.type_kind != ir::TypeKind::kTensor) {
      return absl::InvalidArgumentError(
          absl::StrCat("--input-value: input '", name, "' is not a tensor"));
    }
    const int64_t count = static_cast<int64_t>(values.size());
    if (!v.shape.IsStatic()) {
      if ((!v.shape.has_rank() || v.shape.rank() == 0) && count == 1) {
        v.shape = ir::Shape(std::vector<int64_t>{});
      } else if (!v.shape.has_rank() || v.shape.rank() == 1) {
        v.shape = ir::Shape({count});
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--input-value: input '", name, "' has shape ", v.shape.ToString(),
                         "; give its whole shape with --input-shape ", name, "=D0,D1,... as well"));
      }
    }
    if (v.shape.NumElements() != count) {
      return absl::InvalidArgumentError(absl::StrCat("--input-value gives ", count,
                                                     " value(s) for '", name, "' of shape ",
                                                     v.shape.ToString()));
    }
    const bool integral = v.dtype == ir::DType::kBool || ir::IsIndexType(v.dtype) ||
                          v.dtype == ir::DType::kInt8 || v.dtype == ir::DType::kInt16 ||
                          v.dtype == ir::DType::kUint8 || v.dtype == ir::DType::kUint16 ||
                          v.dtype == ir::DType::kUint32 || v.dtype == ir::DType::kUint64;
    if (!integral) continue;  // float contents reach the folder through FoldOptions
    std::vector<int64_t> ints;
    for (double x : values) {
      if (x != static_cast<double>(static_cast<int64_t>(x))) {
        return absl::InvalidArgumentError(absl::StrCat("--input-value: input '", name, "' is ",
                                                       std::string(ir::DTypeName(v.dtype)), " but ",
                                                       x, " is not an integer"));
      }
      ints.push_back(v.dtype == ir::DType::kBool ? x != 0 : static_cast<int64_t>(x));
    }
    v.int_data = std::move(ints);
  }
  return absl::OkStatus();
}

// Step 1c (Note [Shape estimates]): dims without a name or value are 1.
void EstimateUnnamedDims(ir::Graph& graph, std::vector<ShapeEstimate>& estimates) {
  for (ir::ValueId id : graph.inputs()) {
    ir::Value& v = graph.mutable_value(id);
    if (v.type_kind != ir::TypeKind::kTensor || !v.shape.has_rank()) continue;
    std::vector<std::string> which;
    for (size_t i = 0; i < v.shape.rank(); ++i) {
      ir::Dim& d = v.shape.mutable_dims()[i];
      if (d.known() || !d.symbol.empty()) continue;
      d.value = 1;
      which.push_back(absl::StrCat(i));
    }
    if (which.empty()) continue;
    estimates.push_back({EstimateKind::kUnnamedInputDim, v.name,
                         absl::StrCat("dim ", absl::StrJoin(which, ", "), " = 1 (shape ",
                                      v.shape.ToString(), "; --input-shape sets it)")});
  }
}

// Flags the estimated values and everything computed from them
// (Value::shape_estimated), in topological order.
void MarkEstimatedShapes(const std::vector<ShapeEstimate>& estimates, ir::Graph& graph) {
  if (estimates.empty()) return;
  for (const ShapeEstimate& e : estimates) {
    if (std::optional<ir::ValueId> id = graph.FindValue(e.value)) {
      graph.mutable_value(*id).shape_estimated = true;
    }
  }
  for (const ir::Node& node : graph.nodes()) {
    bool tainted = false;
    for (ir::ValueId in : node.inputs)
      tainted = tainted || (in.valid() && graph.value(in).shape_estimated);
    for (ir::ValueId in : node.captured) tainted = tainted || graph.value(in).shape_estimated;
    if (!tainted) continue;
    for (ir::ValueId out : node.outputs) {
      if (out.valid()) graph.mutable_value(out).shape_estimated = true;
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

std::string_view EstimateKindName(EstimateKind kind) {
  switch (kind) {
    case EstimateKind::kUnnamedInputDim:
      return "unnamed input dim";
    case EstimateKind::kIfBranch:
      return "If branch shape";
    case EstimateKind::kLoopTrips:
      return "loop trip count";
    case EstimateKind::kDataDependentSize:
      return "data-dependent size";
  }
  return "estimate";
}

absl::Status InferShapes(const onnx_io::Model& model, const ShapeOptions& options,
                         ir::Graph& graph) {
  return InferShapesWithReport(model, options, graph).status();
}

absl::StatusOr<ShapeReport> InferShapesWithReport(const onnx_io::Model& model,
                                                  const ShapeOptions& options, ir::Graph& graph) {
  // 1. Bind the inputs.
  ShapeReport report;
  if (absl::Status s = BindInputs(options, graph); !s.ok()) return s;
  if (absl::Status s = BindInputValues(options, graph); !s.ok()) return s;
  if (options.estimate) EstimateUnnamedDims(graph, report.estimates);
  if (options.require_static) {
    if (absl::Status s = UnboundInputsError(graph); !s.ok()) return s;
  }
  // 2. ONNX's inference with data propagation, 3. constant folding, then
  //    4. our rules for the rest. What folding and the rules learn (contents
  //    of shape tensors, types of operators ONNX cannot type) lets ONNX
  //    continue past them, so repeat while it helps.
  FoldOptions fold;
  fold.input_values = options.input_values;
  shapes::RuleOptions rules;
  rules.estimate = options.estimate;
  rules.loop_trips = options.loop_trips;
  std::map<uint32_t, std::string> estimated;  // value → what was assumed
  size_t open_before = SIZE_MAX;
  for (int round = 0; round < kMaxInferenceRounds; ++round) {
    if (absl::Status s = onnx_io::InferShapesWithOnnx(model, graph); !s.ok()) return s;
    if (options.fold_constants) {
      absl::StatusOr<FoldResult> folded = FoldConstants(model, fold, graph);
      if (!folded.ok()) return folded.status();
      report.folded_nodes = folded->folded_nodes;
    }
    for (shapes::RuleEstimate& e : shapes::PropagateRules(graph, rules)) {
      estimated.try_emplace(e.value.index(), std::move(e.assumed));
    }
    const size_t still_open = ValuesWithoutStaticShape(graph).size();
    if (still_open == 0 || still_open >= open_before) break;
    open_before = still_open;
  }
  for (const auto& [index, assumed] : estimated) {
    const ir::Value& v = graph.value(ir::ValueId(index));
    const ir::Node& producer = graph.node(v.producer);
    EstimateKind kind = EstimateKind::kDataDependentSize;
    if (producer.kind == ir::OpKind::kIf) kind = EstimateKind::kIfBranch;
    // A sequence's length comes from the trip count of the Loop that fills it.
    if (producer.kind == ir::OpKind::kLoop || producer.kind == ir::OpKind::kConcatFromSequence ||
        producer.kind == ir::OpKind::kSequenceAt) {
      kind = EstimateKind::kLoopTrips;
    }
    report.estimates.push_back({kind, v.name, assumed});
  }
  MarkEstimatedShapes(report.estimates, graph);
  // 5. Report what is still open.
  if (!options.require_static) return report;
  std::vector<ir::ValueId> open = ValuesWithoutStaticShape(graph);
  if (open.empty()) {
    // 6. Which planned dims are bound symbols, for the models a split writes.
    if (!options.dim_values.empty()) {
      report.symbolic = TrackSymbolicDims(model, options, graph);
    }
    return report;
  }
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
      options.estimate ? " (data-dependent shapes, or operators without a shape rule)"
                       : " (data-dependent shapes, or operators without a shape rule; without "
                         "--strict-shapes some may be estimated)"));
}

}  // namespace autopar::passes
