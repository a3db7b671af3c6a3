// A Triton Inference Server model repository made from a deployment's stage
// models, for serving a split model where people already serve ONNX models:
//
//   triton/
//     <name>/config.pbtxt       the ensemble: platform "ensemble", one step
//     <name>/1/                 per stage, the graph's inputs and outputs
//                               under their original names (empty folder)
//     <name>_s<k>/config.pbtxt  stage k: platform "onnxruntime_onnx", its
//     <name>_s<k>/1/model.onnx  inputs and outputs, one instance on the GPU
//                               of its device (external data beside it)
//
// Each step's input_map and output_map name the stage model's own tensors
// (keys) and the ensemble tensors (values); both are the source model's tensor
// names, so every cross-stage tensor is wired by name. The configs are
// autopar::triton::ModelConfig messages (model_config.proto: Triton's field
// names and numbers) printed by protobuf's TextFormat, so they are valid text
// format by construction.
//
// Batching (Note [Triton batching] in triton_repository.cc): when dim 0 of
// every input and output of every stage model is one symbolic dim (`batch`,
// which planning bound but the stage models keep: passes/symbolic_dims.h),
// every config says `max_batch_size: N` and leaves that dim out of `dims`,
// and every stage has `dynamic_batching {}`, so Triton batches requests.
// Otherwise max_batch_size is 0 (dims are the full shape) and
// TritonRepository::unbatched_reason says which tensor keeps it so.
//
// Shapes: a dimension that is not a fixed number is -1, and a scalar is `dims: [1]` —
// Triton wants non-empty dims — with an empty `reshape` on the stage model,
// so ONNX Runtime still gets a scalar; the ensemble's tensor is then [1].
// Triton's ONNX Runtime backend refuses a config whose -1 meets a dim that
// ONNX Runtime's own inference fixes, so a stage's dims are what ONNX's shape
// inference gives on the stage model (over what it declares: a fixed dim
// beats a symbolic one), then the planner's shapes for dims it cannot reach
// (ONNX 1.12 has no data propagation here and no opset-18 schemas). Shapes
// that rest on an estimate (plan.json's "estimates") or on an --input-value
// never lend a dim.
//
// Initializers that a stage lists among its graph inputs are no Triton
// inputs: ONNX Runtime treats them as overridable weights, Triton would
// demand them in every request.
#ifndef AUTOPAR_TOOLS_ARTIFACTS_TRITON_TRITON_REPOSITORY_H_
#define AUTOPAR_TOOLS_ARTIFACTS_TRITON_TRITON_REPOSITORY_H_

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "onnx/onnx_pb.h"
#include "onnx_io/deployment_writer.h"
#include "passes/partition.h"
#include "tools/artifacts/triton/model_config.pb.h"

namespace autopar::tools {

struct TritonRepositoryOptions {
  /// The ensemble's model name; stage k is "<model_name>_s<k>". Must be a
  /// valid model folder name (see TritonModelName).
  std::string model_name = "model";
  /// The GPU of each device: device k's stages run on gpus[k]. Empty: device
  /// k runs on GPU k. Two devices may share a GPU.
  std::vector<int32_t> gpus;
  /// The source model's IR with its shapes, for the dims that neither a stage
  /// model declares nor ONNX infers on it; values marked shape_estimated lend
  /// none. Null: declared and inferred dims only.
  const ir::Graph* graph = nullptr;
  /// Graph inputs whose contents the plan was given (--input-value): the
  /// planner's shapes of what is computed from them hold for those contents
  /// only, and a request may send others, so they lend no dims either.
  std::set<std::string> given_inputs;
  /// max_batch_size when the stages can be batched (`--triton-max-batch`);
  /// 0 never batches.
  int32_t max_batch_size = 8;
};

/// One model of the repository: its config and, for a stage, its ONNX model
/// (pointing into the deployment; null for the ensemble).
struct TritonModel {
  triton::ModelConfig config;
  const onnx::ModelProto* model = nullptr;
};

struct TritonRepository {
  /// The stages in the deployment's order, then the ensemble.
  std::vector<TritonModel> models;
  /// The configs' max_batch_size: TritonRepositoryOptions::max_batch_size
  /// when batched, else 0.
  int32_t max_batch_size = 0;
  /// The symbolic dim batched over, when batched.
  std::string batch_dim;
  /// When not batched: why (the first tensor whose dim 0 is not one shared
  /// symbolic dim, or the option that turned batching off).
  std::string unbatched_reason;
};

/// The repository of `deployment`'s stage models. Fails when the deployment
/// has no stages, a device has no GPU in options.gpus, the model name is not
/// valid, or a stage's input or output is not a tensor of a type and rank
/// Triton can state (sequences, complex numbers, unknown rank).
absl::StatusOr<TritonRepository> BuildTritonRepository(const passes::Deployment& deployment,
                                                       const TritonRepositoryOptions& options);

/// config.pbtxt: the config in protobuf text format, non-ASCII text kept as
/// UTF-8.
std::string TritonConfigText(const triton::ModelConfig& config);

/// Adds the repository's files under `folder` ("triton") to `files`:
/// <model>/config.pbtxt for every model, <stage>/1/model.onnx for the stages
/// and the ensemble's empty version folder. The models must outlive `files`.
void AddTritonRepositoryFiles(const TritonRepository& repository, const std::string& folder,
                              onnx_io::DeploymentFiles& files);

/// A valid Triton model name (a folder name that is also a URL path segment)
/// from `stem`, e.g. a model file's name without ".onnx": letters, digits,
/// '_', '-' and '.' are kept, every other character becomes one '_', a
/// leading '.' becomes '_', and the name is cut to 100 bytes; "model" when
/// nothing is left.
std::string TritonModelName(std::string_view stem);

/// Whether `name` is a name TritonModelName returns unchanged.
bool IsValidTritonModelName(std::string_view name);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_ARTIFACTS_TRITON_TRITON_REPOSITORY_H_
