// ONNX's textual model syntax (onnx/defs/parser.h), for tests and generated
// inputs: a model written as text is readable in the test that uses it.
//
//   <ir_version: 8, opset_import: ["" : 17]>
//   g (float[1,4] x) => (float[1,4] y) { y = Relu(x) }
#ifndef AUTOPAR_ONNX_IO_TEXT_FORMAT_H_
#define AUTOPAR_ONNX_IO_TEXT_FORMAT_H_

#include <string>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"

namespace autopar::onnx_io {

/// Parses a model in ONNX's text syntax.
absl::StatusOr<onnx::ModelProto> ParseModelText(const std::string& text);

}  // namespace autopar::onnx_io

#endif  // AUTOPAR_ONNX_IO_TEXT_FORMAT_H_
