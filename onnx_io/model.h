// Model: a loaded ONNX ModelProto plus where its external weights live.
//
// Weights stored as external data are never read at load time: the proto keeps
// their TensorProto (dims, type, location) without bytes, and ReadTensorBytes
// fetches a tensor's bytes from its file only when a caller needs them. A model
// with tens of GB of weights therefore loads in the memory of its graph alone.
#ifndef AUTOPAR_ONNX_IO_MODEL_H_
#define AUTOPAR_ONNX_IO_MODEL_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"

namespace autopar::onnx_io {

/// Where one externally stored tensor's bytes are.
struct ExternalDataRef {
  std::filesystem::path file;  // absolute, resolved against the model's folder
  int64_t offset = 0;
  int64_t length = 0;
};

struct Model {
  onnx::ModelProto proto;
  /// The file it was loaded from; empty for models built in memory.
  std::filesystem::path path;
  /// Initializer name → its external bytes, for the main graph's external
  /// initializers. Ordered, so iteration is deterministic.
  std::map<std::string, ExternalDataRef> external_data;

  /// The folder relative external-data locations are resolved against.
  std::filesystem::path directory() const { return path.parent_path(); }
};

struct LoadOptions {
  /// Called now and then while the file is parsed with the bytes read so far
  /// and the file's size; may be empty. For progress bars: a 2 GiB protobuf
  /// takes seconds.
  std::function<void(int64_t bytes_read, int64_t file_bytes)> on_progress;
};

/// Reads and parses an ONNX model file and indexes (but does not read) its
/// external data. Fails with one clear message for a missing, empty,
/// unparsable or truncated file, a protobuf that is not a model, and external
/// data that is missing or out of range. Node lists that are not in
/// topological order are sorted (onnx_io/sort_nodes.h); a cycle is an error
/// naming its nodes.
absl::StatusOr<Model> LoadModel(const std::filesystem::path& path, const LoadOptions& options = {});

/// Builds a Model from a proto in memory (external locations resolve against
/// `directory`). The node order is kept as given: callers that want a sorted
/// proto call SortNodes.
absl::StatusOr<Model> ModelFromProto(onnx::ModelProto proto,
                                     const std::filesystem::path& directory = {});

/// The model's opset of the default domain ("" or "ai.onnx"); 1 when it
/// imports none.
int64_t DefaultDomainOpset(const onnx::ModelProto& model);

/// The raw little-endian bytes of a tensor, wherever they are stored (raw_data,
/// typed fields, or external file). Strings are not supported.
absl::StatusOr<std::string> ReadTensorBytes(const Model& model, const onnx::TensorProto& tensor);

/// The contents of an integer or bool tensor as int64 values.
absl::StatusOr<std::vector<int64_t>> ReadTensorInts(const Model& model,
                                                    const onnx::TensorProto& tensor);

/// Number of elements of a tensor from its dims; fails on negative dims or
/// overflow.
absl::StatusOr<int64_t> TensorNumElements(const onnx::TensorProto& tensor);

/// True when the tensor's bytes live in an external file.
bool IsExternal(const onnx::TensorProto& tensor);

}  // namespace autopar::onnx_io

#endif  // AUTOPAR_ONNX_IO_MODEL_H_
