#include "pipeline/model_loading.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "onnx_io/checker.h"
#include "onnx_io/import.h"
#include "passes/inline_if.h"

namespace autopar::pipeline {
namespace {

// Nested Ifs a taken branch may reveal, inlined one level per round; deeper
// ones stay whole.
constexpr int kMaxInlineRounds = 8;

// Replaces each If whose condition folds to a constant by its taken branch
// (passes/inline_if.h), in `model` and `graph`, before the shapes that
// planning uses are inferred. Shapes are inferred here without requiring
// them static: a shape the branch's nodes fix only once inlined must not
// stop it. The symbolic dims stay unbound here: a condition that only a
// `--dim` value decides (`if x.shape[0] > 1`) would otherwise take one
// branch for good, and the written models would serve that batch only; such
// an If stays whole and decides at run time (passes/symbolic_dims.h).
absl::Status InlineKnownBranches(const passes::ShapeOptions& options, onnx_io::Model& model,
                                 ir::Graph& graph) {
  passes::ShapeOptions probe = options;
  probe.require_static = false;
  probe.dim_values.clear();
  for (int round = 0; round < kMaxInlineRounds; ++round) {
    if (std::none_of(graph.nodes().begin(), graph.nodes().end(),
                     [](const ir::Node& n) { return n.kind == ir::OpKind::kIf; }))
      return absl::OkStatus();
    absl::StatusOr<passes::ShapeReport> shapes = passes::InferShapesWithReport(model, probe, graph);
    if (!shapes.ok()) return shapes.status();
    absl::StatusOr<int> inlined = passes::InlineKnownIfs(model, graph);
    if (!inlined.ok()) return inlined.status();
    if (*inlined == 0) break;
    absl::StatusOr<ir::Graph> rebuilt = onnx_io::BuildGraph(model);
    if (!rebuilt.ok()) return rebuilt.status();
    graph = *std::move(rebuilt);
  }
  // The final inference starts from a graph no probe has touched.
  absl::StatusOr<ir::Graph> fresh = onnx_io::BuildGraph(model);
  if (!fresh.ok()) return fresh.status();
  graph = *std::move(fresh);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LoadedModel> LoadAndAnalyze(const std::string& path,
                                           const passes::ShapeOptions& options,
                                           const onnx_io::LoadOptions& load,
                                           const PhaseCallback& on_phase) {
  auto phase = [&on_phase](std::string_view name) {
    if (on_phase) on_phase(name);
  };
  phase("load");
  absl::StatusOr<onnx_io::Model> model = onnx_io::LoadModel(path, load);
  if (!model.ok()) return model.status();
  phase("check (ONNX checker)");
  if (absl::Status s = onnx_io::CheckModel(model->proto, model->directory()); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("'", path, "': ", s.message()));
  }
  phase("build IR");
  absl::StatusOr<ir::Graph> graph = onnx_io::BuildGraph(*model);
  if (!graph.ok()) {
    return absl::Status(graph.status().code(),
                        absl::StrCat("'", path, "': ", graph.status().message()));
  }
  phase("infer shapes");
  if (absl::Status s = InlineKnownBranches(options, *model, *graph); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("'", path, "': ", s.message()));
  }
  absl::StatusOr<passes::ShapeReport> shapes =
      passes::InferShapesWithReport(*model, options, *graph);
  if (!shapes.ok()) {
    return absl::Status(shapes.status().code(),
                        absl::StrCat("'", path, "': ", shapes.status().message()));
  }
  return LoadedModel{*std::move(model), *std::move(graph), std::move(shapes->estimates)};
}

}  // namespace autopar::pipeline
