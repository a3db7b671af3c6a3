// Fuzz target: the bytes of a model file through everything the main command
// does with it (pipeline::Split) — load, ONNX checker, IR import, shape
// inference, costs, coarsening, an SGP placement and its simulation, the
// rewrite into device and stage models, and their validation — all in memory.
//
// Bad input must end in an error Status. A crash, a sanitizer report, a hang,
// an uncaught exception or an internal error (a broken invariant) is a
// finding; found inputs are kept in fuzz/regressions/model_loader/.
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "fuzz/fuzz_input_file.h"
#include "pipeline/split.h"

namespace autopar::fuzz {
namespace {

absl::Status RunModelPipeline(const std::filesystem::path& path) {
  pipeline::SplitRequest request;
  request.problem.model_path = path.string();
  request.problem.cluster.cluster = "2xH200";
  request.partition.stages = true;
  return pipeline::Split(request).status();
}

}  // namespace
}  // namespace autopar::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One scratch file per process, removed at exit.
  static autopar::fuzz::FuzzInputFile file("model.onnx");
  autopar::fuzz::AbortOnInternalError(autopar::fuzz::RunModelPipeline(file.Write(data, size)));
  return 0;
}
