// Constant nodes: nodes whose inputs are all weights — initializers, Constant
// outputs, or outputs of other constant nodes — compute the same tensor on
// every inference step (torch exports share a bias as
// `Identity(onnx::Conv_239)`, for example).
//
// What they cost: ONNX Runtime's constant folding, on by default, replaces
// them with initializers when a session starts, so in an inference step they
// take no time (AnnotateCosts gives them none). In training their weights
// change every step and they are ordinary nodes.
//
// Where they go: a list schedule sees such a node ready at time 0 and may
// start it on an idle device, which then holds nothing else and sends the
// tensor on every step — in a Triton ensemble, a weight moved per request.
// MoveConstantNodesToReaders moves it to its readers' device;
// pipeline::MakePlan applies that before judging a plan, and keeps it only
// when the simulated step is no slower.
#ifndef AUTOPAR_PASSES_CONSTANT_NODES_H_
#define AUTOPAR_PASSES_CONSTANT_NODES_H_

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace autopar::passes {

/// Per node of graph.nodes(): true when every input the node reads (captured
/// outer values included) is an initializer, a Constant's output or the
/// output of another constant node, and the node is deterministic (not one of
/// the Random* operators, Bernoulli or Multinomial, which ONNX Runtime does
/// not fold). Nodes without inputs (Constant) count.
std::vector<uint8_t> ConstantNodes(const ir::Graph& graph);

/// Moves each constant node whose readers all sit on one other device to that
/// device. Readers are visited first (reverse topological order), so a chain
/// of constant nodes follows its last reader. Left where they are: nodes that
/// produce a graph output, nodes with no reader, and nodes joined to another
/// by a value Send/Recv cannot carry (NonTensorColocations), so that the
/// placement stays valid for Partition. Returns how many nodes moved.
int64_t MoveConstantNodesToReaders(const ir::Graph& graph, std::vector<int32_t>& node_device);

}  // namespace autopar::passes

#endif  // AUTOPAR_PASSES_CONSTANT_NODES_H_
