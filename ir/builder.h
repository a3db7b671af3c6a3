// GraphBuilder: builds IR graphs in code, for tests and generated benchmarks,
// so that a test's graph is visible at a glance.
//
//   GraphBuilder b;
//   ValueId x = b.Input("x", DType::kFloat, {1, 64});
//   ValueId w = b.Initializer("w", DType::kFloat, {64, 64});
//   ValueId y = b.Op("MatMul", {x, w}, {DType::kFloat, {1, 64}});
//   b.Output(y);
//   absl::StatusOr<Graph> g = std::move(b).Build();
#ifndef AUTOPAR_IR_BUILDER_H_
#define AUTOPAR_IR_BUILDER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace autopar::ir {

/// The type of a tensor an op produces.
struct TensorType {
  DType dtype = DType::kFloat;
  std::vector<int64_t> dims;
};

class GraphBuilder {
 public:
  GraphBuilder();

  ValueId Input(std::string name, DType dtype, std::vector<int64_t> dims);
  /// A weight; `int_data` gives the contents of small integer constants.
  ValueId Initializer(std::string name, DType dtype, std::vector<int64_t> dims,
                      std::vector<int64_t> int_data = {});
  /// Adds a node with one output, named "<op_type>_<n>" unless `name` is set.
  ValueId Op(std::string_view op_type, std::vector<ValueId> inputs, TensorType output,
             std::vector<Attribute> attributes = {}, std::string name = "");
  /// Adds a node with several outputs.
  std::vector<ValueId> MultiOp(std::string_view op_type, std::vector<ValueId> inputs,
                               std::vector<TensorType> outputs,
                               std::vector<Attribute> attributes = {}, std::string name = "");
  void Output(ValueId value);

  /// Finalizes the graph (links, sorts, checks).
  absl::StatusOr<Graph> Build() &&;

 private:
  Graph graph_;
  int next_node_ = 0;
};

}  // namespace autopar::ir

#endif  // AUTOPAR_IR_BUILDER_H_
