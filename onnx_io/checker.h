// The ONNX checker behind a Status: every exception the ONNX library throws is
// caught here and becomes a message with context (the libraries above report
// errors as absl::Status and never throw).
#ifndef AUTOPAR_ONNX_IO_CHECKER_H_
#define AUTOPAR_ONNX_IO_CHECKER_H_

#include <filesystem>

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace autopar::onnx_io {

/// True when the installed ONNX library (1.12: IR version 8, opset 17) knows the
/// model's IR version and every opset it imports, so that its checker and
/// schemas apply. Newer models still load; they are checked by our own passes.
bool OnnxLibraryKnowsModel(const onnx::ModelProto& proto);

/// Runs the ONNX checker on `proto`; external-data locations are resolved
/// against `model_dir`. Models the library does not know
/// (OnnxLibraryKnowsModel false) pass unchecked.
absl::Status CheckModel(const onnx::ModelProto& proto, const std::filesystem::path& model_dir);

}  // namespace autopar::onnx_io

#endif  // AUTOPAR_ONNX_IO_CHECKER_H_
