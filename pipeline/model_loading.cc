#include "pipeline/model_loading.h"

#include "absl/strings/str_cat.h"
#include "onnx_io/checker.h"
#include "onnx_io/import.h"

namespace autopar::pipeline {

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
  absl::StatusOr<passes::ShapeReport> shapes =
      passes::InferShapesWithReport(*model, options, *graph);
  if (!shapes.ok()) {
    return absl::Status(shapes.status().code(),
                        absl::StrCat("'", path, "': ", shapes.status().message()));
  }
  return LoadedModel{*std::move(model), *std::move(graph), std::move(shapes->estimates)};
}

}  // namespace autopar::pipeline
