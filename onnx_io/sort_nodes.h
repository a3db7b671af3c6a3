// SortNodes: puts the node lists of a GraphProto, and of every subgraph in
// it, into topological order before anything else reads them.
//
// ONNX requires sorted node lists and its checker refuses others, but some
// converters write nodes out of order and ONNX Runtime sorts them itself and
// runs the model. Sorting on load lets such models through the checker and
// makes every model written from them sorted.
//
// The sort is stable: among the nodes that are ready, the one that came first
// in the source goes first, so a sorted list is left exactly as it is. A node
// that owns subgraphs depends on the producers of the outer values its bodies
// read, as well as on its own inputs. Names that no node of the list produces
// (graph inputs, initializers, outer-scope values, undefined names) impose no
// order; the checker and the importer report the undefined ones.
#ifndef AUTOPAR_ONNX_IO_SORT_NODES_H_
#define AUTOPAR_ONNX_IO_SORT_NODES_H_

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace autopar::onnx_io {

/// Sorts `graph`'s nodes (and, recursively, its subgraphs' nodes) so that
/// every node comes after the producers of the values it reads. A cycle is an
/// InvalidArgument naming the nodes on it in data-flow order; the list
/// holding the cycle is then left as it was.
absl::Status SortNodes(onnx::GraphProto& graph);

}  // namespace autopar::onnx_io

#endif  // AUTOPAR_ONNX_IO_SORT_NODES_H_
