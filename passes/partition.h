// Partition: the rewriter. Turns a model and a node-level
// placement into one ONNX model per device, joined by ONNX Runtime's
// `com.microsoft` Send/Recv operators, and into stage models that stock
// runtimes run.
//
// Device models:
//  - Device k holds the nodes placed on k, copied verbatim from the source
//    NodeProtos, in the IR's topological order (Note [Topological order]).
//  - A tensor produced on device a and read on device b != a crosses once per
//    (a, b): a Send on a and a Recv on b sharing a unique `tag` (numbered from
//    0 in the order the tensors are produced, then by destination). The Recv
//    output keeps the tensor's name, so the consumers are untouched. Both are
//    placed right after the producer's position in the global order, so that
//    devices executing their models in order with blocking Send/Recv never
//    wait on each other in a cycle (a runtime that reorders nodes may lose
//    this; the stage models do not depend on it).
//  - Send/Recv read one initializer `InputSignal` (bool true) and an int64
//    initializer `Remote` per peer; every OutputSignal is a graph output, so no
//    runtime prunes the Send nodes (which have no other output).
//  - Initializers go to every device that reads them, Constant nodes are copied
//    to every device that reads their output (they never cross), graph inputs
//    go to every device that reads them, and each graph output is an output of
//    the device producing it.
//  - If/Loop/Scan move whole; the outer values their bodies capture are
//    delivered to their device like ordinary inputs.
//  - Generated names (Send/Recv nodes, their signals, the signal and Remote
//    initializers) are made unique against every name of the model, subgraphs
//    and functions included.
//
// Stage models: each device's nodes are grouped by their level, the greatest
// number of cross-device hops on any path from the graph inputs to the node.
// Every edge between stages goes from a lower to a higher level (a cross-device
// edge adds a hop; a same-device edge never lowers the level), so the stages
// form a DAG, and numbering them by (level, device) lists them in an order
// that can run one after another. A stage is an ordinary ONNX model: tensors
// from other stages and graph inputs are its inputs, tensors other stages
// read and graph outputs are its outputs; no Send/Recv.
#ifndef AUTOPAR_PASSES_PARTITION_H_
#define AUTOPAR_PASSES_PARTITION_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/graph.h"
#include "onnx/onnx_pb.h"
#include "onnx_io/deployment_writer.h"
#include "onnx_io/model.h"

namespace autopar::passes {

/// One tensor crossing from device `src` to device `dst`.
struct Transfer {
  int64_t tag = 0;
  std::string tensor;
  ir::ValueId value;
  int32_t src = 0;
  int32_t dst = 0;
  /// 0 when the shape or dtype is not known.
  int64_t bytes = 0;
  ir::DType dtype = ir::DType::kUndefined;
  /// -1 for unknown dims; empty for a scalar.
  std::vector<int64_t> shape;
};

struct DeviceModel {
  int32_t device = 0;
  /// File name within the output folder: "device_<k>.onnx".
  std::string file;
  /// The placement puts nothing here: no node, no transfer, no graph output
  /// (a search may leave devices idle when more would only add transfers).
  /// No file is written for it; `proto` is an empty shell.
  bool unused = false;
  onnx::ModelProto proto;
  /// Source nodes in the model, Constant copies included, Send/Recv excluded.
  int64_t num_nodes = 0;
  int64_t num_sends = 0;
  int64_t num_recvs = 0;
};

struct Stage {
  /// Index in Deployment::stages; stages are listed in a runnable order.
  int32_t id = 0;
  int32_t device = 0;
  /// Cross-device hops before this stage (see the file comment).
  int32_t level = 0;
  /// The phase of its nodes (PartitionOptions::node_phase; 0 without).
  int32_t phase = 0;
  /// File name within the output folder: "stages/s<id>.onnx".
  std::string file;
  onnx::ModelProto proto;
  /// The stage model's graph inputs and outputs, in its order.
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  /// Stages whose outputs this stage reads, ascending (all lower ids). Only
  /// data dependencies: a device runs its own stages in id order.
  std::vector<int32_t> after;
  /// Source nodes in the model, Constant copies included.
  int64_t num_nodes = 0;
  /// Source nodes of other stages (graph node indices, ascending) this stage
  /// runs a copy of, to compute a shape value from a tensor it holds rather
  /// than receive it (Note [Recomputed shapes] in partition_stages.cc); they
  /// count in num_nodes. Empty for a training step.
  std::vector<int32_t> recomputed;
};

/// A graph input and the devices that read it (ascending; empty when nothing
/// reads it).
struct InputUse {
  std::string name;
  std::vector<int32_t> devices;
};

/// A graph output and the device whose model outputs it.
struct OutputOwner {
  std::string name;
  int32_t device = 0;
};

struct Deployment {
  /// One per device, unused devices included, indexed by device.
  std::vector<DeviceModel> devices;
  /// Ordered by tag.
  std::vector<Transfer> transfers;
  /// Empty unless PartitionOptions::stages.
  std::vector<Stage> stages;
  /// In the source's order.
  std::vector<InputUse> inputs;
  std::vector<OutputOwner> outputs;
  /// An Identity or Cast of a weight is copied into every device and stage
  /// model reading it, like a Constant, rather than sent: set for inference
  /// splits (no PartitionOptions::node_phase), where torch's shared-weight
  /// Identities and float16 weights' Casts would otherwise make weights
  /// cross.
  bool copies_weight_identities = false;
};

struct PartitionOptions {
  /// Also build the stage models.
  bool stages = true;
  /// Per node of the graph, empty or a phase (a training step: 0 forward, 1
  /// backward). Note [Stage phases]: nodes of different phases never share a
  /// stage; stages are numbered in (level, phase, device) order, which stays
  /// topological when no node reads a value of a higher phase made at its
  /// own level (a backward value is never read by a forward node).
  std::vector<uint8_t> node_phase;
};

/// Splits `model` (whose IR is `graph`, shapes inferred) by `node_device`, the
/// device of each node of graph.nodes(), into `num_devices` device models and,
/// with options.stages, stage models. Fails when the placement does not match
/// the graph, or a value that must cross devices or stages is not a tensor of
/// known element type (Send/Recv carry tensors only; see
/// ColocateNonTensorValues).
absl::StatusOr<Deployment> Partition(const onnx_io::Model& model, const ir::Graph& graph,
                                     absl::Span<const int32_t> node_device, int num_devices,
                                     const PartitionOptions& options = {});

/// The pairs (producer, reader) of nodes joined by a value Send/Recv cannot
/// carry (sequences, maps, optionals, sparse tensors, unknown types), as node
/// indices: they must share a device, and so must the nodes on a path between
/// two of them (Note [Non-tensor stages] in partition.cc). Coarsen keeps each such pair in one unit
/// (CoarsenOptions::colocated), so that a searched placement respects it.
std::vector<std::pair<uint32_t, uint32_t>> NonTensorColocations(const ir::Graph& graph);

/// A placement that keeps every value Send/Recv cannot carry (sequences, maps,
/// optionals, sparse tensors, unknown types) on one device: each node reading
/// such a value from another node moves to that node's device, in topological
/// order, so chains follow their head. Any node-level placement is valid for
/// Partition otherwise. Needed only for placements that were not searched
/// (a hand-made placement file): searched ones respect it already.
std::vector<int32_t> ColocateNonTensorValues(const ir::Graph& graph,
                                             std::vector<int32_t> node_device);

/// Devices the placement uses (DeviceModel::unused is false).
int CountUsedDevices(const Deployment& deployment);

/// Device d's model, or an unused one when the deployment has none for d (a
/// training step's deployment is empty: it writes no device model).
const DeviceModel& DeviceModelOrUnused(const Deployment& deployment, int d);

/// The files of a deployment for onnx_io::WriteDeployment: the models of the
/// used devices and, when built, the stage models. Points into `deployment`.
onnx_io::DeploymentFiles DeploymentFilesOf(const Deployment& deployment);

}  // namespace autopar::passes

#endif  // AUTOPAR_PASSES_PARTITION_H_
