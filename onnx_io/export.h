// IR → ONNX: turns a graph back into a ModelProto by copying the source
// NodeProtos verbatim, in the IR's topological order, and writes models to
// disk with large weights as external data.
#ifndef AUTOPAR_ONNX_IO_EXPORT_H_
#define AUTOPAR_ONNX_IO_EXPORT_H_

#include <cstdint>
#include <filesystem>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "onnx/onnx_pb.h"
#include "onnx_io/model.h"

namespace autopar::onnx_io {

/// The model with `graph`'s nodes in the graph's (topological) order, copied
/// from `source`; model metadata, inputs, outputs, value_info and initializers
/// come from `source` unchanged. External initializers stay external: their
/// bytes are not read.
absl::StatusOr<onnx::ModelProto> ExportModel(const ir::Graph& graph, const Model& source);

struct SaveOptions {
  /// Initializers at least this large are written to `<file>.data` instead of
  /// into the protobuf.
  int64_t external_threshold_bytes = 1 << 20;
  /// Called after each tensor streamed into `<file>.data` with the bytes
  /// written so far and ExternalDataBytes(); may be empty. For progress bars:
  /// tens of GB of weights take minutes.
  std::function<void(int64_t bytes_written, int64_t total_bytes)> on_progress;
};

/// The bytes SaveModel will stream into `<file>.data` for `proto` (tensor data
/// only, without alignment padding).
int64_t ExternalDataBytes(const onnx::ModelProto& proto, const Model& source,
                          const SaveOptions& options);

/// Writes `proto` to `path`. Initializers whose bytes are external in `source`
/// (or above the threshold) are streamed one at a time into `<path>.data` and
/// referenced from the written proto, so neither the process nor the protobuf
/// ever holds all weights. Fails rather than writing a protobuf over 2 GiB.
absl::Status SaveModel(const onnx::ModelProto& proto, const Model& source,
                       const std::filesystem::path& path, const SaveOptions& options = {});

}  // namespace autopar::onnx_io

#endif  // AUTOPAR_ONNX_IO_EXPORT_H_
