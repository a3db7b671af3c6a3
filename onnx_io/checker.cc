#include "onnx_io/checker.h"

#include <exception>
#include <string>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"

namespace autopar::onnx_io {

bool OnnxLibraryKnowsModel(const onnx::ModelProto& proto) {
  if (proto.ir_version() > onnx::Version::IR_VERSION) return false;
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const onnx::OperatorSetIdProto& opset : proto.opset_import()) {
    std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
    auto it = known.find(domain);
    // Custom domains are the model's business; only known domains can be too new.
    if (it != known.end() && opset.version() > it->second.second) return false;
  }
  return true;
}

absl::Status CheckModel(const onnx::ModelProto& proto, const std::filesystem::path& model_dir) {
  if (!OnnxLibraryKnowsModel(proto)) return absl::OkStatus();
  try {
    onnx::checker::CheckerContext ctx;
    ctx.set_ir_version(static_cast<int>(proto.ir_version()));
    std::unordered_map<std::string, int> opsets;
    for (const onnx::OperatorSetIdProto& opset : proto.opset_import()) {
      opsets[opset.domain()] = static_cast<int>(opset.version());
    }
    ctx.set_opset_imports(opsets);
    ctx.set_model_dir(model_dir.string());
    onnx::checker::LexicalScopeContext lex_ctx;
    onnx::checker::check_graph(proto.graph(), ctx, lex_ctx);
    for (const onnx::FunctionProto& function : proto.functions()) {
      onnx::checker::LexicalScopeContext function_ctx;
      onnx::checker::check_function(function, ctx, function_ctx);
    }
  } catch (const std::exception& e) {
    // The checker's messages span lines; the first says what is wrong.
    std::string message = e.what();
    if (size_t newline = message.find('\n'); newline != std::string::npos) {
      message.resize(newline);
    }
    return absl::InvalidArgumentError(
        absl::StrCat("the ONNX checker rejects the model: ", message));
  }
  return absl::OkStatus();
}

}  // namespace autopar::onnx_io
