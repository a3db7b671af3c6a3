#include "onnx_io/text_format.h"

#include <exception>

#include "absl/strings/str_cat.h"
#include "onnx/defs/parser.h"

namespace autopar::onnx_io {

absl::StatusOr<onnx::ModelProto> ParseModelText(const std::string& text) {
  onnx::ModelProto model;
  try {
    onnx::Common::Status status = onnx::OnnxParser::Parse(model, text.c_str());
    if (!status.IsOK()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot parse ONNX text: ", status.ErrorMessage()));
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("cannot parse ONNX text: ", e.what()));
  }
  return model;
}

}  // namespace autopar::onnx_io
