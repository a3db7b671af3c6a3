// Writes a deployment's files (device models, stage models, plan.json...) into
// an output folder atomically: everything goes into a
// temporary sibling folder first, which is renamed into place only when every
// file is written. A failure leaves no output folder and no temporary one; an
// existing output folder is refused unless `force`, and then swapped for the
// new one in a single rename where the file system allows it.
//
// Model files are written with SaveModel: weights stored externally in the
// source (or above the threshold) are streamed one tensor at a time from the
// source's files into `<file>.data`, so a model larger than memory can be
// split. A model listed twice (a stage model that is also a Triton model) is
// written once: the second file's `.data` is a hard link to the first's.
#ifndef AUTOPAR_ONNX_IO_DEPLOYMENT_WRITER_H_
#define AUTOPAR_ONNX_IO_DEPLOYMENT_WRITER_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"
#include "onnx_io/export.h"
#include "onnx_io/model.h"

namespace autopar::onnx_io {

/// One model to write. `path` is relative to the output folder and may name
/// a subfolder ("stages/s0.onnx"); `model` must outlive WriteDeployment.
struct ModelFile {
  std::string path;
  const onnx::ModelProto* model = nullptr;
};

struct DeploymentFiles {
  std::vector<ModelFile> models;
  /// Other files (relative path → contents), e.g. "plan.json", written into the
  /// same temporary folder so they appear together with the models.
  std::map<std::string, std::string> extra_files;
  /// Folders to create even when nothing is written into them (relative
  /// paths), e.g. the version folder of a Triton ensemble.
  std::vector<std::string> folders;
};

struct WriteOptions {
  /// Replace an existing output folder instead of refusing.
  bool force = false;
  SaveOptions save;
  /// Called as external data is written, with the bytes written so far over
  /// all model files and their total; may be empty.
  std::function<void(int64_t bytes_written, int64_t total_bytes)> on_progress;
};

/// Writes `files` into `out_dir`. Fails — leaving the file system as it was —
/// when `out_dir` exists without `force` (kAlreadyExists), exists but is not a
/// folder, holds the source model (replacing it would delete the input), its
/// parent folder does not exist, a relative path is absolute, climbs out with
/// "..", or is given twice, or any file or folder cannot be written.
absl::Status WriteDeployment(const std::filesystem::path& out_dir, const Model& source,
                             const DeploymentFiles& files, const WriteOptions& options = {});

}  // namespace autopar::onnx_io

#endif  // AUTOPAR_ONNX_IO_DEPLOYMENT_WRITER_H_
