// GraphEmitter: appends ONNX nodes to a GraphProto under fresh names, at one
// opset. The gradient rules, the losses and the optimizer updates write their
// nodes through it, so that:
//   - every name it makes is unique in the graph (it is told the names already
//     taken and never reuses one);
//   - the operators whose signature changed between opsets (ReduceSum and
//     ReduceMean's axes, Squeeze/Unsqueeze's axes, Split's sizes, Pad's pads,
//     Clip's bounds) are written in the form the graph's opset wants, in one
//     place, instead of each rule checking the opset;
//   - constants carry the dtype of the tensors they meet (float32, float64 or
//     float16 networks get float32, float64 or float16 constants).
// Shapes are static when the emitter is used (training plans bind every dim),
// so shapes and axes are written as constants, never computed with Shape.
#ifndef AUTOPAR_TRAINING_GRAPH_EMITTER_H_
#define AUTOPAR_TRAINING_GRAPH_EMITTER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "ir/dtype.h"
#include "onnx/onnx_pb.h"

namespace autopar::training {

/// An attribute of an emitted node.
onnx::AttributeProto AttrInt(std::string_view name, int64_t value);
onnx::AttributeProto AttrInts(std::string_view name, const std::vector<int64_t>& values);
onnx::AttributeProto AttrFloat(std::string_view name, float value);
onnx::AttributeProto AttrString(std::string_view name, std::string_view value);
onnx::AttributeProto AttrTensor(std::string_view name, onnx::TensorProto value);

class GraphEmitter {
 public:
  /// Appends to `graph` (not owned; it must outlive the emitter). `taken`
  /// holds every name already used in the graph (values and nodes); `opset`
  /// is the graph's default-domain opset; `prefix` starts every made-up name
  /// ("grad/" for the backward pass), so emitted nodes are easy to tell apart.
  GraphEmitter(onnx::GraphProto* graph, absl::flat_hash_set<std::string> taken, int64_t opset,
               std::string prefix);

  int64_t opset() const { return opset_; }
  onnx::GraphProto& graph() { return *graph_; }

  /// A fresh name "<prefix><hint>" (with a counter when taken), now taken.
  std::string FreshName(std::string_view hint);
  /// Reserves `name` exactly (a graph input or output the caller names);
  /// false when it is taken already.
  bool Reserve(const std::string& name);

  /// The source node the next emitted nodes work for (a forward node whose
  /// gradient rule or lowering is running, or the node whose output a loss
  /// reads); "" stops recording. Every node appended while it is set is
  /// recorded in origins(): a split training step places it on that node's
  /// device (Note [Gradient colocation] in pipeline/training_split.h), and
  /// measured node times are charged to it.
  void set_origin(std::string origin) { origin_ = std::move(origin); }
  /// Emitted node name → its origin, for the nodes appended while one was set.
  const absl::flat_hash_map<std::string, std::string>& origins() const { return origins_; }

  /// Appends node `op_type` reading `inputs` ("" for an omitted optional
  /// input) and returns its single output's name. `hint` names the output.
  std::string Op(std::string_view op_type, const std::vector<std::string>& inputs,
                 std::vector<onnx::AttributeProto> attributes = {}, std::string_view hint = {});
  /// Appends node `op_type` writing the output `output`, a name the caller
  /// reserved (a graph output).
  void OpTo(std::string_view op_type, const std::vector<std::string>& inputs,
            const std::string& output, std::vector<onnx::AttributeProto> attributes = {});
  /// The same with `num_outputs` outputs.
  std::vector<std::string> OpN(std::string_view op_type, const std::vector<std::string>& inputs,
                               int num_outputs, std::vector<onnx::AttributeProto> attributes = {},
                               std::string_view hint = {});

  // --- Constants (Constant nodes) --------------------------------------------
  /// A scalar (rank 0) of `dtype` (a floating-point type, int64 or bool).
  std::string Scalar(double value, ir::DType dtype);
  /// A 1-D int64 tensor.
  std::string Ints(const std::vector<int64_t>& values);
  /// A tensor of `dtype` and `dims` from doubles (row-major), converted.
  std::string Tensor(const std::vector<int64_t>& dims, const std::vector<double>& values,
                     ir::DType dtype);
  /// Zeros of `dims` and `dtype`.
  std::string Zeros(const std::vector<int64_t>& dims, ir::DType dtype);

  // --- Operators whose form depends on the opset -----------------------------
  /// ReduceSum over `axes` (none: returns x unchanged).
  std::string ReduceSum(const std::string& x, const std::vector<int64_t>& axes, bool keep_dims);
  std::string ReduceMean(const std::string& x, const std::vector<int64_t>& axes, bool keep_dims);
  std::string Unsqueeze(const std::string& x, const std::vector<int64_t>& axes);
  std::string Squeeze(const std::string& x, const std::vector<int64_t>& axes);
  /// Split along `axis` into pieces of `sizes`.
  std::vector<std::string> Split(const std::string& x, int64_t axis,
                                 const std::vector<int64_t>& sizes);
  /// Zero padding: `pads` as ONNX orders them (all begins, then all ends).
  std::string PadZeros(const std::string& x, const std::vector<int64_t>& pads);
  /// Constant padding with `value` of `dtype`.
  std::string PadConstant(const std::string& x, const std::vector<int64_t>& pads, double value,
                          ir::DType dtype);
  /// Slice with unit steps: starts/ends per axis in `axes`.
  std::string Slice(const std::string& x, const std::vector<int64_t>& starts,
                    const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                    const std::vector<int64_t>& steps = {});

  // --- Shape helpers ----------------------------------------------------------
  std::string Reshape(const std::string& x, const std::vector<int64_t>& dims);
  std::string Transpose(const std::string& x, const std::vector<int64_t>& perm);
  std::string Expand(const std::string& x, const std::vector<int64_t>& dims);
  /// Sums `x`, of shape `from` (a broadcast of `to` by ONNX's numpy rule),
  /// down to shape `to`: the gradient of a broadcast operand. No node when
  /// the shapes are equal.
  std::string SumToShape(const std::string& x, const std::vector<int64_t>& from,
                         const std::vector<int64_t>& to);
  /// Sum of `terms` (one term: itself).
  std::string Sum(const std::vector<std::string>& terms);
  /// A Cast to `dtype`.
  std::string Cast(const std::string& x, ir::DType dtype);

 private:
  onnx::GraphProto* graph_;
  absl::flat_hash_set<std::string> taken_;
  int64_t opset_;
  std::string prefix_;
  std::string origin_;
  absl::flat_hash_map<std::string, std::string> origins_;
};

}  // namespace autopar::training

#endif  // AUTOPAR_TRAINING_GRAPH_EMITTER_H_
