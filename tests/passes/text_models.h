// Models written as ONNX text for the tests of passes/ that start from an
// imported model (constant folding, shape inference): the import steps once,
// and the models more than one of those tests builds.
#ifndef AUTOPAR_TESTS_PASSES_TEXT_MODELS_H_
#define AUTOPAR_TESTS_PASSES_TEXT_MODELS_H_

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "onnx_io/import.h"
#include "onnx_io/model.h"
#include "onnx_io/text_format.h"

namespace autopar::passes::testing {

struct ImportedText {
  onnx_io::Model model;
  ir::Graph graph;
};

/// `text` parsed (onnx_io::ParseModelText), checked and imported into the IR.
inline absl::StatusOr<ImportedText> ImportText(const std::string& text) {
  absl::StatusOr<onnx::ModelProto> proto = onnx_io::ParseModelText(text);
  if (!proto.ok()) return proto.status();
  absl::StatusOr<onnx_io::Model> model = onnx_io::ModelFromProto(*proto);
  if (!model.ok()) return model.status();
  absl::StatusOr<ir::Graph> graph = onnx_io::BuildGraph(*model);
  if (!graph.ok()) return graph.status();
  return ImportedText{*std::move(model), *std::move(graph)};
}

/// torch's key-padding-mask pattern: Expand's target shape is computed from
/// ConstantOfShape, Mul, Equal and Where over a constant shape, where ONNX's
/// data propagation stops (at Where). Folding resolves it to [2, 4, 5, 5].
inline constexpr char kMaskChainModel[] = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (bool[2,1,1,5] mask) => (bool[?,?,?,?] y) {
      target = Constant <value = int64[4] {2, 4, 5, 5}> ()
      n = Constant <value = int64[1] {4}> ()
      ones = ConstantOfShape <value = int64[1] {1}> (n)
      minus = Constant <value = int64 {-1}> ()
      neg = Mul(ones, minus)
      same = Equal(target, neg)
      shape = Where(same, ones, target)
      y = Expand(mask, shape)
    }
  )";

}  // namespace autopar::passes::testing

#endif  // AUTOPAR_TESTS_PASSES_TEXT_MODELS_H_
