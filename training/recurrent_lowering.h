// Recurrent lowering: the LSTM, GRU and RNN nodes on a training step's
// gradient path are rewritten, before the gradient pass, into the standard
// operators their recurrence unrolls to over the (static) sequence length:
// one MatMul for the input projection of every time step and direction, then
// per step a MatMul with the recurrent weights, Add for the biases,
// Sigmoid/Tanh/Relu for the gates (the node's `activations`), Mul/Add/Sub to
// combine them (LSTM peepholes too), and Split/Reshape/Concat/Transpose to
// take the steps apart and build Y, Y_h and Y_c under the node's own output
// names. Every direction, layout, linear_before_reset and optional input and
// output is covered.
//
// Why: ONNX Runtime's CPU provider has no gradient kernels for these
// operators, and their vector-Jacobian products (backpropagation through
// time) would be three large rules of their own. Unrolled, the recurrence is
// a chain of operators that already have per-op rules (gradient_rules.h), so
// the gradient pass differentiates it like any other graph and the backward
// pass is checked by the same finite-difference tests.
//
// Cost: the written step holds O(seq_len) nodes per recurrent node (about 20
// a step for an LSTM, per direction) instead of one, and the gradient model
// keeps every step's gates alive for the backward pass (what a fused kernel
// stashes too: O(seq_len · batch · hidden) floats). Per-step MatMuls of
// [batch, hidden] are slower than a fused kernel on long sequences; training
// plans are for the modest sequence lengths where this is fine.
//
// What it refuses (one error line naming the node): activations other than
// Sigmoid, Tanh and Relu, `clip`, LSTM's `input_forget`, and sequence_lens
// that is not a constant equal to the sequence length everywhere. Nodes off
// the gradient path are left as they are (the forward pass runs them fused).
#ifndef AUTOPAR_TRAINING_RECURRENT_LOWERING_H_
#define AUTOPAR_TRAINING_RECURRENT_LOWERING_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "onnx_io/model.h"

namespace autopar::training {

/// A model with its recurrent nodes unrolled and its IR (every value typed:
/// the original values as in the source IR, the new ones from the lowering).
struct LoweredModel {
  onnx_io::Model model;
  ir::Graph graph;
  /// Recurrent nodes replaced, and nodes written in their place.
  int64_t lowered_nodes = 0;
  int64_t written_nodes = 0;
  /// Each written node's name → the recurrent node it replaces.
  absl::flat_hash_map<std::string, std::string> origins;
};

/// True for LSTM, GRU and RNN.
bool IsRecurrent(ir::OpKind kind);

/// The recurrent nodes on the gradient path: some output in `reached` (the
/// loss depends on it) and some input computed from a value of `trained`.
std::vector<ir::NodeId> RecurrentNodesOnGradientPath(const ir::Graph& graph,
                                                     const std::vector<bool>& reached,
                                                     const std::vector<ir::ValueId>& trained);

/// `model` (whose IR is `graph`, every shape static around `nodes`) with each
/// of `nodes` replaced by its unrolled form. Errors (InvalidArgument, one
/// line naming the node): what the header comment lists as refused.
absl::StatusOr<LoweredModel> LowerRecurrentNodes(const onnx_io::Model& model,
                                                 const ir::Graph& graph,
                                                 const std::vector<ir::NodeId>& nodes);

}  // namespace autopar::training

#endif  // AUTOPAR_TRAINING_RECURRENT_LOWERING_H_
