// Internals of passes/partition shared by the device-model and stage-model
// builders: the analysis of a placement and helpers that assemble ModelProtos
// from pieces of the source model. Not part of the public API.
#ifndef AUTOPAR_PASSES_PARTITION_INTERNAL_H_
#define AUTOPAR_PASSES_PARTITION_INTERNAL_H_

#include <cstdint>
#include <deque>
#include <numeric>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/graph.h"
#include "onnx/onnx_pb.h"
#include "onnx_io/model.h"
#include "passes/partition.h"

namespace autopar::passes::partition_internal {

/// Every name the model uses: node names and value names of the main graph,
/// of every subgraph body (at any depth) and of model-local functions. The
/// views point into `model`, which must outlive the set (no copies: a
/// million-node model has millions of names).
absl::flat_hash_set<absl::string_view> CollectModelNames(const onnx::ModelProto& model);

/// Union-find over node indices (path halving): the groups of nodes that a
/// value a stage cannot be fed (NonTensorColocations) ties together.
class NodeGroups {
 public:
  explicit NodeGroups(size_t num_nodes) : parent_(num_nodes) {
    std::iota(parent_.begin(), parent_.end(), 0u);
  }
  uint32_t Find(uint32_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Join(uint32_t a, uint32_t b) { parent_[Find(a)] = Find(b); }

 private:
  std::vector<uint32_t> parent_;
};

/// Makes names that collide with nothing taken so far: `base` when free, else
/// `base_1`, `base_2`, ... Every name it returns is taken from then on. The
/// views in `taken` must outlive the generator.
class NameGenerator {
 public:
  explicit NameGenerator(absl::flat_hash_set<absl::string_view> taken) : taken_(std::move(taken)) {}
  std::string Make(const std::string& base);

 private:
  absl::flat_hash_set<absl::string_view> taken_;
  /// The names made so far; a deque never moves its elements, so the views
  /// of them in `taken_` stay valid.
  std::deque<std::string> made_;
};

/// Where each IR value of the main graph appears in the source GraphProto
/// (-1: nowhere).
struct SourceIndex {
  std::vector<int32_t> initializer;
  std::vector<int32_t> sparse_initializer;
  std::vector<int32_t> input;  // graph.input() position (IR < 4 lists weights too)
  std::vector<int32_t> output;
  std::vector<int32_t> value_info;
};

/// What Partition works from, computed once.
struct Analysis {
  const onnx_io::Model* model = nullptr;
  const ir::Graph* graph = nullptr;
  absl::Span<const int32_t> device;  // per node
  int num_devices = 0;
  SourceIndex index;
  /// Per node: copied to every device (or stage) reading it rather than
  /// sent (IsReplicable).
  std::vector<char> replicated;
  /// Per node: its inputs and captured outer values, each once, in order.
  std::vector<std::vector<ir::ValueId>> reads;
  /// Per node: its phase (PartitionOptions::node_phase); empty: all 0.
  absl::Span<const uint8_t> phase;
  /// Per graph.outputs() entry: the device whose model outputs it.
  std::vector<int32_t> output_device;
  /// Types ONNX's shape inference gives values the IR cannot type (sequences,
  /// optionals...) and the source does not declare; filled only when the
  /// graph has such values.
  absl::flat_hash_map<std::string, onnx::TypeProto> inferred_types;

  const onnx::GraphProto& source() const { return model->proto.graph(); }
  bool IsReplicatedProducer(ir::ValueId v) const {
    const ir::NodeId p = graph->value(v).producer;
    return p.valid() && replicated[p.index()];
  }
};

/// A node every device (or stage) reading it gets its own copy of: a
/// Constant; and, with `weight_identities`, an Identity or a Cast of a
/// weight. Torch's exporter writes the Identity when two layers hold equal
/// weights (folded BatchNorm biases of zeros, shared embeddings), and
/// mixed-precision exports read float16 weights through a Cast: sending one
/// would make a weight cross between stages, a transfer the copy avoids,
/// and a stage tensor with no batch dim, which keeps a Triton repository
/// unbatched.
bool IsReplicable(const ir::Graph& graph, const ir::Node& node, bool weight_identities);

/// The devices graph input `input` is fed to (ascending): those of the nodes
/// reading it, and the one that outputs it when it is also a graph output.
/// Deployment::inputs lists these; a stage may read the input only there.
std::vector<int32_t> DevicesFedInput(const Analysis& a, ir::ValueId input);

/// An operator a stage may run a copy of to compute a shape value itself
/// (Note [Recomputed shapes] in partition_stages.cc): Shape, Size, and the
/// cheap index and arithmetic operators shape computations are made of, and
/// ConstantOfShape. One output, no body, the default domain.
bool IsShapeChainOp(const ir::Node& node);

/// `weight_identities`: IsReplicable's (a training step updates its
/// weights in one place, so it keeps them off).
absl::StatusOr<Analysis> Analyze(const onnx_io::Model& model, const ir::Graph& graph,
                                 absl::Span<const int32_t> node_device, int num_devices,
                                 bool weight_identities);

/// The declared type of graph output `j` as a split writes it: the source's,
/// with the bound symbol (passes/symbolic_dims.h) named on every dim the IR
/// traced to one, where the source left the dim open or named it otherwise
/// (an exporter's own name, such as torch's "Gemm26_dim_0", for a dim that
/// is the batch).
onnx::ValueInfoProto GraphOutputInfo(const Analysis& a, size_t j);

/// True for values Send/Recv can carry: tensors of a known element type.
bool IsCarriable(const ir::Value& value);

/// The type of a value at a model boundary (a stage input or output, a
/// received tensor): the IR's dtype and inferred shape for tensors, else the
/// type the source model declares for it, else the type ONNX's shape
/// inference gives it. Fails when none is known.
absl::StatusOr<onnx::ValueInfoProto> BoundaryValueInfo(const Analysis& a, ir::ValueId v);

/// A model with the source's IR version, opsets, metadata and functions, and
/// an empty graph called `graph_name`.
onnx::ModelProto ModelShell(const onnx::ModelProto& source, const std::string& graph_name);

/// Copies into `g`, in the source's order, the initializers, sparse
/// initializers and graph inputs among `needed` (graph inputs and
/// initializers; duplicates allowed), and the source value_info of `defined`.
void AddSourceParts(const Analysis& a, std::vector<ir::ValueId> needed,
                    std::vector<ir::ValueId> defined, onnx::GraphProto* g);

/// The source NodeProto of node `i`.
const onnx::NodeProto& SourceNode(const Analysis& a, size_t i);

/// Builds the stage models (partition_stages.cc).
absl::StatusOr<std::vector<Stage>> BuildStages(const Analysis& a);

}  // namespace autopar::passes::partition_internal

#endif  // AUTOPAR_PASSES_PARTITION_INTERNAL_H_
