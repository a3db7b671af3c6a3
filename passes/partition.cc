#include "passes/partition.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "onnx_io/send_recv_schema.h"
#include "passes/partition_internal.h"

namespace autopar::passes {
namespace {

using partition_internal::Analysis;

// The generated names, fixed once for the whole deployment.
struct GeneratedNames {
  std::string signal;               // the InputSignal initializer
  std::vector<std::string> remote;  // per device: the Remote initializer holding its rank
  struct PerTransfer {
    std::string send_node, send_signal, recv_node, recv_signal;
  };
  std::vector<PerTransfer> transfer;  // by tag
};

GeneratedNames MakeNames(const onnx::ModelProto& model, int num_devices, size_t num_transfers) {
  partition_internal::NameGenerator names(partition_internal::CollectModelNames(model));
  GeneratedNames out;
  out.signal = names.Make("autopar_signal");
  for (int d = 0; d < num_devices; ++d)
    out.remote.push_back(names.Make(absl::StrCat("autopar_remote_", d)));
  for (size_t t = 0; t < num_transfers; ++t) {
    out.transfer.push_back({names.Make(absl::StrCat("autopar_send_", t)),
                            names.Make(absl::StrCat("autopar_send_", t, "_signal")),
                            names.Make(absl::StrCat("autopar_recv_", t)),
                            names.Make(absl::StrCat("autopar_recv_", t, "_signal"))});
  }
  return out;
}

std::string DescribeType(const ir::Value& value) {
  switch (value.type_kind) {
    case ir::TypeKind::kTensor:
      return "a tensor of unknown element type";
    case ir::TypeKind::kSparseTensor:
      return "a sparse tensor";
    case ir::TypeKind::kSequence:
      return "a sequence";
    case ir::TypeKind::kOptional:
      return "an optional";
    case ir::TypeKind::kMap:
      return "a map";
    case ir::TypeKind::kUnknown:
      break;
  }
  return "of unknown type";
}

// Every (tensor, destination) pair that crosses devices, numbered in the
// order the tensors are produced, then by destination.
absl::StatusOr<std::vector<Transfer>> FindTransfers(const Analysis& a) {
  const ir::Graph& graph = *a.graph;
  std::vector<Transfer> transfers;
  std::vector<int32_t> dsts;
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    if (a.replicated[i]) continue;  // copied, never sent
    const int32_t src = a.device[i];
    for (ir::ValueId v : graph.nodes()[i].outputs) {
      if (!v.valid()) continue;
      const ir::Value& value = graph.value(v);
      dsts.clear();
      for (ir::NodeId c : value.consumers) {
        if (a.device[c.index()] != src) dsts.push_back(a.device[c.index()]);
      }
      std::sort(dsts.begin(), dsts.end());
      dsts.erase(std::unique(dsts.begin(), dsts.end()), dsts.end());
      if (dsts.empty()) continue;
      if (!partition_internal::IsCarriable(value)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "'", value.name, "' is ", DescribeType(value), ", produced on device ", src,
            " and read on device ", dsts.front(),
            "; Send/Recv carry only tensors of known element type, so its producer and "
            "readers must share a device"));
      }
      std::vector<int64_t> shape;
      for (const ir::Dim& d : value.shape.dims()) shape.push_back(d.known() ? d.value : -1);
      for (int32_t dst : dsts) {
        Transfer t;
        t.tag = static_cast<int64_t>(transfers.size());
        t.tensor = value.name;
        t.value = v;
        t.src = src;
        t.dst = dst;
        t.bytes = value.SizeBytes().value_or(0);
        t.dtype = value.dtype;
        t.shape = shape;
        transfers.push_back(std::move(t));
      }
    }
  }
  return transfers;
}

// The devices each node's copy goes to: its own for ordinary nodes; for a
// replicated one (a Constant...), every device holding a reader of it, plus
// its own when it is a graph output or read by nobody. Readers come later in
// the node order, so a chain of replicated nodes is done from its end.
std::vector<std::vector<int32_t>> NodeCopies(const Analysis& a) {
  const ir::Graph& graph = *a.graph;
  std::vector<std::vector<int32_t>> copies(graph.num_nodes());
  for (size_t i = graph.num_nodes(); i-- > 0;) {
    if (!a.replicated[i]) {
      copies[i] = {a.device[i]};
      continue;
    }
    const ir::Value& out = graph.value(graph.nodes()[i].outputs[0]);
    std::vector<int32_t>& devices = copies[i];
    for (ir::NodeId c : out.consumers) {
      const std::vector<int32_t>& reader = copies[c.index()];
      devices.insert(devices.end(), reader.begin(), reader.end());
    }
    if (out.is_graph_output || out.consumers.empty()) devices.push_back(a.device[i]);
    std::sort(devices.begin(), devices.end());
    devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  }
  return copies;
}

onnx::TensorProto ScalarInitializer(const std::string& name, onnx::TensorProto::DataType type,
                                    int64_t value) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  if (type == onnx::TensorProto::BOOL) {
    t.add_int32_data(value != 0 ? 1 : 0);
  } else {
    t.add_int64_data(value);
  }
  return t;
}

onnx::ValueInfoProto SignalInfo(const std::string& name) {
  onnx::ValueInfoProto info;
  info.set_name(name);
  onnx::TypeProto::Tensor* t = info.mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::BOOL);
  t->mutable_shape();  // a scalar
  return info;
}

void AddIntAttribute(onnx::NodeProto* node, const char* name, int64_t value) {
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(value);
}

void AddIntsAttribute(onnx::NodeProto* node, const char* name, int64_t value) {
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  attr->add_ints(value);
}

// Makes sure the model imports the Send/Recv domain.
void ImportSendRecvDomain(onnx::ModelProto& model) {
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    if (opset.domain() == onnx_io::kSendRecvDomain) return;
  }
  if (model.opset_import_size() == 0) {
    // IR version < 3 models use opset 1 without saying so; say it.
    model.set_ir_version(std::max<int64_t>(model.ir_version(), 3));
    onnx::OperatorSetIdProto* onnx_opset = model.add_opset_import();
    onnx_opset->set_domain("");
    onnx_opset->set_version(1);
  }
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain(onnx_io::kSendRecvDomain);
  opset->set_version(onnx_io::kSendRecvOpsetVersion);
}

// One step of a device model: a source node, or the Send/Recv of a transfer.
struct Step {
  enum class Kind : uint8_t { kNode, kSend, kRecv };
  Kind kind;
  uint32_t index;  // node index or tag
};

// Note [Send/Recv order]: a transfer's Send and Recv both come right after its
// producer's position in the global topological order. Every device's steps are
// thus sorted by one global key, and blocking Send/Recv pairs executed in that
// order cannot wait on each other in a cycle.
std::vector<std::vector<Step>> DeviceSteps(const Analysis& a,
                                           const std::vector<std::vector<int32_t>>& copies,
                                           const std::vector<Transfer>& transfers) {
  std::vector<std::vector<Step>> steps(a.num_devices);
  size_t next = 0;  // transfers are ordered by producer
  for (size_t i = 0; i < a.graph->num_nodes(); ++i) {
    for (int32_t d : copies[i]) steps[d].push_back({Step::Kind::kNode, static_cast<uint32_t>(i)});
    for (; next < transfers.size(); ++next) {
      const ir::NodeId producer = a.graph->value(transfers[next].value).producer;
      if (producer.index() != i) break;
      const auto tag = static_cast<uint32_t>(transfers[next].tag);
      steps[transfers[next].src].push_back({Step::Kind::kSend, tag});
      steps[transfers[next].dst].push_back({Step::Kind::kRecv, tag});
    }
  }
  return steps;
}

absl::StatusOr<DeviceModel> BuildDeviceModel(const Analysis& a, int32_t device,
                                             const std::vector<Step>& steps,
                                             const std::vector<Transfer>& transfers,
                                             const GeneratedNames& names) {
  const ir::Graph& graph = *a.graph;
  DeviceModel out;
  out.device = device;
  out.file = absl::StrCat("device_", device, ".onnx");
  out.proto = partition_internal::ModelShell(a.model->proto,
                                             absl::StrCat(a.source().name(), "_device", device));
  onnx::GraphProto* g = out.proto.mutable_graph();

  std::vector<ir::ValueId> needed;   // graph inputs and initializers read here
  std::vector<ir::ValueId> defined;  // values nodes of this model produce
  std::vector<onnx::ValueInfoProto> received_infos;
  std::vector<std::string> signals;
  std::vector<char> uses_remote(a.num_devices, 0);
  for (const Step& step : steps) {
    if (step.kind == Step::Kind::kNode) {
      *g->add_node() = partition_internal::SourceNode(a, step.index);
      ++out.num_nodes;
      for (ir::ValueId v : a.reads[step.index]) {
        const ir::ValueKind kind = graph.value(v).kind;
        if (kind == ir::ValueKind::kGraphInput || kind == ir::ValueKind::kInitializer) {
          needed.push_back(v);
        }
      }
      for (ir::ValueId v : graph.nodes()[step.index].outputs) {
        if (v.valid()) defined.push_back(v);
      }
      continue;
    }
    const Transfer& t = transfers[step.index];
    const GeneratedNames::PerTransfer& n = names.transfer[step.index];
    const bool send = step.kind == Step::Kind::kSend;
    const int32_t peer = send ? t.dst : t.src;
    uses_remote[peer] = 1;
    onnx::NodeProto* node = g->add_node();
    node->set_name(send ? n.send_node : n.recv_node);
    node->set_op_type(send ? "Send" : "Recv");
    node->set_domain(onnx_io::kSendRecvDomain);
    node->add_input(names.signal);
    node->add_input(names.remote[peer]);
    if (send) {
      node->add_input(t.tensor);
      node->add_output(n.send_signal);
      ++out.num_sends;
    } else {
      node->add_output(n.recv_signal);
      node->add_output(t.tensor);
      defined.push_back(t.value);
      absl::StatusOr<onnx::ValueInfoProto> info = partition_internal::BoundaryValueInfo(a, t.value);
      if (!info.ok()) return info.status();
      if (a.index.value_info[t.value.index()] < 0) received_infos.push_back(*std::move(info));
      ++out.num_recvs;
    }
    AddIntAttribute(node, "tag", t.tag);
    AddIntsAttribute(node, "element_types", static_cast<int64_t>(t.dtype));
    signals.push_back(node->output(0));
  }

  // Graph outputs this device produces (or, passed through, holds).
  std::vector<onnx::ValueInfoProto> outputs;
  for (size_t j = 0; j < graph.outputs().size(); ++j) {
    if (a.output_device[j] != device) continue;
    const ir::ValueId v = graph.outputs()[j];
    if (!graph.value(v).producer.valid()) needed.push_back(v);
    outputs.push_back(partition_internal::GraphOutputInfo(a, j));
  }
  partition_internal::AddSourceParts(a, std::move(needed), std::move(defined), g);
  for (onnx::ValueInfoProto& info : received_infos) *g->add_value_info() = std::move(info);
  for (onnx::ValueInfoProto& output : outputs) *g->add_output() = std::move(output);
  for (const std::string& signal : signals) *g->add_output() = SignalInfo(signal);

  if (out.num_sends + out.num_recvs > 0) {
    *g->add_initializer() = ScalarInitializer(names.signal, onnx::TensorProto::BOOL, 1);
    for (int32_t peer = 0; peer < a.num_devices; ++peer) {
      if (!uses_remote[peer]) continue;
      *g->add_initializer() = ScalarInitializer(names.remote[peer], onnx::TensorProto::INT64, peer);
    }
    if (out.proto.ir_version() < 4) {
      // Before IR version 4 every initializer is also a graph input.
      *g->add_input() = SignalInfo(names.signal);
      for (int32_t peer = 0; peer < a.num_devices; ++peer) {
        if (!uses_remote[peer]) continue;
        onnx::ValueInfoProto info = SignalInfo(names.remote[peer]);
        info.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
        *g->add_input() = std::move(info);
      }
    }
    ImportSendRecvDomain(out.proto);
  }
  return out;
}

std::vector<InputUse> InputUses(const Analysis& a) {
  const ir::Graph& graph = *a.graph;
  std::vector<InputUse> uses;
  for (ir::ValueId v : graph.inputs()) {
    const ir::Value& value = graph.value(v);
    uses.push_back({value.name, DevicesFedInput(a, v)});
  }
  return uses;
}

}  // namespace

absl::StatusOr<Deployment> Partition(const onnx_io::Model& model, const ir::Graph& graph,
                                     absl::Span<const int32_t> node_device, int num_devices,
                                     const PartitionOptions& options) {
  absl::StatusOr<Analysis> analysis =
      partition_internal::Analyze(model, graph, node_device, num_devices,
                                  /*weight_identities=*/options.node_phase.empty());
  if (!analysis.ok()) return analysis.status();
  if (!options.node_phase.empty()) {
    if (options.node_phase.size() != graph.num_nodes()) {
      return absl::InvalidArgumentError(absl::StrCat("node_phase has ", options.node_phase.size(),
                                                     " entries for ", graph.num_nodes(), " nodes"));
    }
    analysis->phase = options.node_phase;
  }
  const Analysis& a = *analysis;

  Deployment out;
  out.copies_weight_identities = options.node_phase.empty();
  absl::StatusOr<std::vector<Transfer>> transfers = FindTransfers(a);
  if (!transfers.ok()) return transfers.status();
  out.transfers = *std::move(transfers);

  const GeneratedNames names = MakeNames(model.proto, num_devices, out.transfers.size());
  const std::vector<std::vector<Step>> steps = DeviceSteps(a, NodeCopies(a), out.transfers);
  for (int32_t d = 0; d < num_devices; ++d) {
    absl::StatusOr<DeviceModel> device = BuildDeviceModel(a, d, steps[d], out.transfers, names);
    if (!device.ok()) return device.status();
    out.devices.push_back(*std::move(device));
  }

  out.inputs = InputUses(a);
  for (size_t j = 0; j < graph.outputs().size(); ++j) {
    out.outputs.push_back({graph.value(graph.outputs()[j]).name, a.output_device[j]});
  }
  for (DeviceModel& device : out.devices) {
    device.unused = device.num_nodes == 0 && device.num_sends == 0 && device.num_recvs == 0 &&
                    device.proto.graph().output_size() == 0;
  }

  if (options.stages) {
    absl::StatusOr<std::vector<Stage>> stages = partition_internal::BuildStages(a);
    if (!stages.ok()) return stages.status();
    out.stages = *std::move(stages);
  }
  return out;
}

std::vector<std::pair<uint32_t, uint32_t>> NonTensorColocations(const ir::Graph& graph) {
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (const ir::Value& value : graph.values()) {
    if (!value.producer.valid() || partition_internal::IsCarriable(value)) continue;
    for (ir::NodeId c : value.consumers) {
      if (c != value.producer) pairs.emplace_back(value.producer.index(), c.index());
    }
  }
  if (pairs.empty()) return pairs;
  // Note [Non-tensor stages]: sharing a device is not enough. A path that
  // leaves the group's device and comes back (producer → other device →
  // reader) puts the reader in a later stage than the producer, and a stage
  // cannot be fed a sequence either. So every node on a path between two
  // members of a group joins the group too: then the group and its stage
  // level can be one (partition_stages.cc).
  const size_t n = graph.num_nodes();
  partition_internal::NodeGroups joined(n);
  for (const auto& [a, b] : pairs) joined.Join(a, b);
  std::map<uint32_t, std::vector<uint32_t>> groups;  // root → members, ascending
  for (uint32_t i = 0; i < n; ++i) groups[joined.Find(i)].push_back(i);
  std::vector<uint8_t> member(n), forward(n), backward(n);
  for (const auto& [root, members] : groups) {
    if (members.size() < 2) continue;
    const uint32_t first = members.front();
    const uint32_t last = members.back();
    for (uint32_t i : members) member[i] = 1;
    // Nodes are in topological order: reach forward from the members, then
    // back from them, between the first and the last.
    for (uint32_t i = first; i <= last; ++i) {
      const ir::Node& node = graph.nodes()[i];
      forward[i] = member[i];
      auto reached = [&](ir::ValueId v) {
        const ir::NodeId p = v.valid() ? graph.value(v).producer : ir::NodeId();
        return p.valid() && p.index() >= first && forward[p.index()];
      };
      for (ir::ValueId v : node.inputs) forward[i] = forward[i] || reached(v);
      for (ir::ValueId v : node.captured) forward[i] = forward[i] || reached(v);
    }
    for (uint32_t i = last + 1; i-- > first;) {
      backward[i] = member[i];
      for (ir::ValueId v : graph.nodes()[i].outputs) {
        if (!v.valid()) continue;
        for (ir::NodeId c : graph.value(v).consumers) {
          if (c.index() <= last && backward[c.index()]) backward[i] = 1;
        }
      }
    }
    for (uint32_t i = first; i <= last; ++i) {
      if (!member[i] && forward[i] && backward[i]) pairs.emplace_back(first, i);
    }
    for (uint32_t i = first; i <= last; ++i) member[i] = forward[i] = backward[i] = 0;
  }
  return pairs;
}

std::vector<int32_t> ColocateNonTensorValues(const ir::Graph& graph,
                                             std::vector<int32_t> node_device) {
  if (node_device.size() != graph.num_nodes()) return node_device;  // Partition reports it
  // Union-find over nodes joined by values Send/Recv cannot carry; each group
  // goes to the device of its first node in topological order (its root).
  std::vector<uint32_t> parent(graph.num_nodes());
  std::iota(parent.begin(), parent.end(), 0u);
  auto find = [&parent](uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const auto& [producer, reader] : NonTensorColocations(graph)) {
    uint32_t ra = find(producer);
    uint32_t rb = find(reader);
    if (ra == rb) continue;
    if (rb < ra) std::swap(ra, rb);
    parent[rb] = ra;  // the root stays the lowest index
  }
  for (size_t i = 0; i < node_device.size(); ++i) {
    node_device[i] = node_device[find(static_cast<uint32_t>(i))];
  }
  return node_device;
}

const DeviceModel& DeviceModelOrUnused(const Deployment& deployment, int d) {
  static const DeviceModel* const kUnused = new DeviceModel{.unused = true};
  return d < static_cast<int>(deployment.devices.size()) ? deployment.devices[d] : *kUnused;
}

int CountUsedDevices(const Deployment& deployment) {
  return static_cast<int>(std::count_if(deployment.devices.begin(), deployment.devices.end(),
                                        [](const DeviceModel& d) { return !d.unused; }));
}

onnx_io::DeploymentFiles DeploymentFilesOf(const Deployment& deployment) {
  onnx_io::DeploymentFiles files;
  for (const DeviceModel& d : deployment.devices) {
    if (!d.unused) files.models.push_back({d.file, &d.proto});
  }
  for (const Stage& s : deployment.stages) files.models.push_back({s.file, &s.proto});
  return files;
}

}  // namespace autopar::passes
