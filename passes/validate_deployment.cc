#include "passes/validate_deployment.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "onnx_io/checker.h"
#include "onnx_io/send_recv_schema.h"
#include "onnx_io/shape_inference.h"
#include "passes/partition_internal.h"

namespace autopar::passes {
namespace {

absl::Status Fail(const std::string& where, const std::string& what) {
  return absl::InternalError(absl::StrCat("invalid deployment: ", where, ": ", what));
}

// A node each device or stage reading it holds a copy of, never sent: a
// Constant, and (Deployment::copies_weight_identities) an Identity or Cast of
// a weight.
bool IsCopied(const ir::Graph& graph, const ir::Node& node, bool weight_identities) {
  return partition_internal::IsReplicable(graph, node, weight_identities);
}

bool IsSendRecv(const onnx::NodeProto& node) {
  return node.domain() == onnx_io::kSendRecvDomain &&
         (node.op_type() == "Send" || node.op_type() == "Recv");
}

// --- Rule 4: every value defined once, before it is read -------------------

struct Scope {
  absl::flat_hash_set<std::string> names;
  const Scope* outer = nullptr;

  bool Defines(const std::string& name) const {
    for (const Scope* s = this; s != nullptr; s = s->outer) {
      if (s->names.contains(name)) return true;
    }
    return false;
  }
};

absl::Status CheckDefinedBeforeUse(const onnx::GraphProto& g, const Scope* outer,
                                   const std::string& where) {
  Scope scope;
  scope.outer = outer;
  auto define = [&](const std::string& name, const std::string& by) -> absl::Status {
    if (name.empty()) return absl::OkStatus();
    if (!scope.names.insert(name).second) {
      return Fail(where, absl::StrCat("'", name, "' is defined twice (again by ", by, ")"));
    }
    return absl::OkStatus();
  };
  absl::flat_hash_set<std::string> initializers;
  for (const onnx::TensorProto& t : g.initializer()) {
    if (absl::Status s = define(t.name(), "an initializer"); !s.ok()) return s;
    initializers.insert(t.name());
  }
  for (const onnx::SparseTensorProto& t : g.sparse_initializer()) {
    if (absl::Status s = define(t.values().name(), "a sparse initializer"); !s.ok()) return s;
    initializers.insert(t.values().name());
  }
  for (const onnx::ValueInfoProto& v : g.input()) {
    if (initializers.contains(v.name())) continue;  // IR < 4 lists weights as inputs
    if (absl::Status s = define(v.name(), "a graph input"); !s.ok()) return s;
  }
  for (const onnx::NodeProto& node : g.node()) {
    const std::string reader = absl::StrCat("node '", node.name(), "' (", node.op_type(), ")");
    for (const std::string& name : node.input()) {
      if (!name.empty() && !scope.Defines(name)) {
        return Fail(where,
                    absl::StrCat(reader, " reads '", name, "', which nothing defines before it"));
      }
    }
    for (const onnx::AttributeProto& attr : node.attribute()) {
      const std::string body_where = absl::StrCat(where, ", body '", attr.name(), "' of ", reader);
      if (attr.has_g()) {
        if (absl::Status s = CheckDefinedBeforeUse(attr.g(), &scope, body_where); !s.ok()) return s;
      }
      for (const onnx::GraphProto& body : attr.graphs()) {
        if (absl::Status s = CheckDefinedBeforeUse(body, &scope, body_where); !s.ok()) return s;
      }
    }
    for (const std::string& name : node.output()) {
      if (absl::Status s = define(name, reader); !s.ok()) return s;
    }
  }
  for (const onnx::ValueInfoProto& v : g.output()) {
    if (!scope.Defines(v.name())) {
      return Fail(where, absl::StrCat("graph output '", v.name(), "' is not defined"));
    }
  }
  return absl::OkStatus();
}

// --- Rules 1, 2, 5: Send/Recv pairs and the cut edges ----------------------

struct Endpoint {
  int32_t device = -1;
  int64_t remote = -1;
  std::vector<std::string> data;
  std::vector<int64_t> element_types;
  std::string node;
};

std::optional<int64_t> ScalarInt64(const onnx::TensorProto& t) {
  if (t.data_type() != onnx::TensorProto::INT64 || t.dims_size() != 0) return std::nullopt;
  if (t.int64_data_size() == 1) return t.int64_data(0);
  if (t.raw_data().size() == sizeof(int64_t)) {
    int64_t value;
    std::memcpy(&value, t.raw_data().data(), sizeof(value));
    return value;
  }
  return std::nullopt;
}

const onnx::AttributeProto* FindAttribute(const onnx::NodeProto& node, const char* name) {
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

// Reads the Send/Recv nodes of device `k` into `sends` / `recvs` by tag.
absl::Status CollectEndpoints(const DeviceModel& device, const std::string& where,
                              std::map<int64_t, Endpoint>& sends,
                              std::map<int64_t, Endpoint>& recvs) {
  const onnx::GraphProto& g = device.proto.graph();
  absl::flat_hash_map<std::string, const onnx::TensorProto*> initializers;
  for (const onnx::TensorProto& t : g.initializer()) initializers[t.name()] = &t;
  absl::flat_hash_set<std::string> outputs;
  for (const onnx::ValueInfoProto& v : g.output()) outputs.insert(v.name());
  absl::flat_hash_set<std::string> produced;
  for (const onnx::NodeProto& node : g.node()) {
    for (const std::string& name : node.output()) produced.insert(name);
  }

  for (const onnx::NodeProto& node : g.node()) {
    if (!IsSendRecv(node)) continue;
    const bool send = node.op_type() == "Send";
    const std::string what = absl::StrCat(node.op_type(), " '", node.name(), "'");
    const onnx::AttributeProto* tag = FindAttribute(node, "tag");
    const onnx::AttributeProto* types = FindAttribute(node, "element_types");
    if (tag == nullptr || tag->type() != onnx::AttributeProto::INT || types == nullptr ||
        types->type() != onnx::AttributeProto::INTS) {
      return Fail(where, absl::StrCat(what, " lacks its tag or element_types"));
    }
    if (node.input_size() < 2 || (send ? node.input_size() < 3 : node.input_size() != 2) ||
        (send ? node.output_size() != 1 : node.output_size() < 2)) {
      return Fail(where, absl::StrCat(what, " has the wrong number of inputs or outputs"));
    }
    auto remote = initializers.find(node.input(1));
    std::optional<int64_t> rank;
    if (remote != initializers.end()) rank = ScalarInt64(*remote->second);
    if (!rank) {
      return Fail(where, absl::StrCat(what, ": Remote '", node.input(1),
                                      "' is not an int64 scalar initializer"));
    }
    if (!initializers.contains(node.input(0)) && !produced.contains(node.input(0))) {
      return Fail(where, absl::StrCat(what, ": InputSignal '", node.input(0),
                                      "' is neither an initializer nor a node output"));
    }
    if (!outputs.contains(node.output(0))) {
      return Fail(where, absl::StrCat(what, ": its OutputSignal '", node.output(0),
                                      "' is not a graph output, so a runtime may prune it"));
    }
    Endpoint e;
    e.device = device.device;
    e.remote = *rank;
    e.node = node.name();
    e.element_types.assign(types->ints().begin(), types->ints().end());
    if (send) {
      e.data.assign(node.input().begin() + 2, node.input().end());
    } else {
      e.data.assign(node.output().begin() + 1, node.output().end());
    }
    if (e.element_types.size() != e.data.size()) {
      return Fail(where, absl::StrCat(what, " lists ", e.element_types.size(),
                                      " element_types for ", e.data.size(), " tensors"));
    }
    std::map<int64_t, Endpoint>& by_tag = send ? sends : recvs;
    if (!by_tag.emplace(tag->i(), std::move(e)).second) {
      return Fail(where, absl::StrCat("two ", node.op_type(), " nodes use tag ", tag->i()));
    }
  }
  return absl::OkStatus();
}

using Crossing = std::tuple<std::string, int32_t, int32_t>;  // tensor, src, dst

absl::Status CheckTransfers(const ir::Graph& graph, absl::Span<const int32_t> node_device,
                            const Deployment& deployment) {
  // What must cross, from the graph alone.
  std::vector<Crossing> expected;
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& node = graph.nodes()[i];
    if (IsCopied(graph, node, deployment.copies_weight_identities)) continue;
    for (ir::ValueId v : node.outputs) {
      if (!v.valid()) continue;
      for (ir::NodeId c : graph.value(v).consumers) {
        if (node_device[c.index()] != node_device[i]) {
          expected.emplace_back(graph.value(v).name, node_device[i], node_device[c.index()]);
        }
      }
    }
  }
  std::sort(expected.begin(), expected.end());
  expected.erase(std::unique(expected.begin(), expected.end()), expected.end());

  std::map<int64_t, Endpoint> sends, recvs;
  for (const DeviceModel& device : deployment.devices) {
    if (absl::Status s = CollectEndpoints(device, device.file, sends, recvs); !s.ok()) return s;
  }
  std::vector<Crossing> actual;
  std::map<int64_t, Crossing> by_tag;
  for (const auto& [tag, send] : sends) {
    auto it = recvs.find(tag);
    const std::string where = absl::StrCat("tag ", tag);
    if (it == recvs.end()) {
      return Fail(where,
                  absl::StrCat("Send '", send.node, "' on device ", send.device, " has no Recv"));
    }
    const Endpoint& recv = it->second;
    if (send.remote != recv.device || recv.remote != send.device) {
      return Fail(where,
                  absl::StrCat("Send on device ", send.device, " to ", send.remote,
                               " is received on device ", recv.device, " from ", recv.remote));
    }
    if (send.data != recv.data || send.element_types != recv.element_types) {
      return Fail(where, "Send and Recv carry different tensors or element_types");
    }
    for (size_t i = 0; i < send.data.size(); ++i) {
      std::optional<ir::ValueId> v = graph.FindValue(send.data[i]);
      if (!v) return Fail(where, absl::StrCat("'", send.data[i], "' is not a value of the model"));
      if (static_cast<int64_t>(graph.value(*v).dtype) != send.element_types[i]) {
        return Fail(where, absl::StrCat("element_types says ", send.element_types[i], " for '",
                                        send.data[i], "'"));
      }
      actual.emplace_back(send.data[i], send.device, recv.device);
      by_tag[tag] = actual.back();
    }
  }
  for (const auto& [tag, recv] : recvs) {
    if (!sends.contains(tag)) {
      return Fail(absl::StrCat("tag ", tag),
                  absl::StrCat("Recv '", recv.node, "' on device ", recv.device, " has no Send"));
    }
  }
  std::sort(actual.begin(), actual.end());
  if (std::adjacent_find(actual.begin(), actual.end()) != actual.end()) {
    const Crossing& c = *std::adjacent_find(actual.begin(), actual.end());
    return Fail("transfers", absl::StrCat("'", std::get<0>(c), "' crosses from device ",
                                          std::get<1>(c), " to ", std::get<2>(c), " twice"));
  }
  if (actual != expected) {
    std::vector<Crossing> missing, extra;
    std::set_difference(expected.begin(), expected.end(), actual.begin(), actual.end(),
                        std::back_inserter(missing));
    std::set_difference(actual.begin(), actual.end(), expected.begin(), expected.end(),
                        std::back_inserter(extra));
    const Crossing& c = missing.empty() ? extra.front() : missing.front();
    return Fail(
        "transfers",
        absl::StrCat(expected.size(), " cut edges but ", actual.size(), " Send/Recv crossings; '",
                     std::get<0>(c), "' from device ", std::get<1>(c), " to ", std::get<2>(c),
                     missing.empty() ? " is sent needlessly" : " is not sent"));
  }
  if (deployment.transfers.size() != by_tag.size()) {
    return Fail("transfers", absl::StrCat("the deployment lists ", deployment.transfers.size(),
                                          " transfers for ", by_tag.size(), " Send/Recv pairs"));
  }
  for (const Transfer& t : deployment.transfers) {
    auto it = by_tag.find(t.tag);
    if (it == by_tag.end() || it->second != Crossing(t.tensor, t.src, t.dst)) {
      return Fail("transfers", absl::StrCat("transfer tag ", t.tag, " ('", t.tensor,
                                            "') does not match the models' Send/Recv"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckGeneratedNames(const onnx_io::Model& model, const Deployment& deployment) {
  const absl::flat_hash_set<absl::string_view> source_names =
      partition_internal::CollectModelNames(model.proto);
  absl::flat_hash_set<std::string> source_initializers;
  for (const onnx::TensorProto& t : model.proto.graph().initializer()) {
    source_initializers.insert(t.name());
  }
  for (const DeviceModel& device : deployment.devices) {
    const onnx::GraphProto& g = device.proto.graph();
    absl::flat_hash_set<std::string> generated;
    auto check = [&](const std::string& name, const char* what) -> absl::Status {
      if (source_names.contains(name)) {
        return Fail(device.file, absl::StrCat("generated ", what, " '", name,
                                              "' collides with a name of the model"));
      }
      if (!generated.insert(name).second) {
        return Fail(device.file, absl::StrCat("generated name '", name, "' is used twice"));
      }
      return absl::OkStatus();
    };
    for (const onnx::NodeProto& node : g.node()) {
      if (!IsSendRecv(node)) continue;
      if (absl::Status s = check(node.name(), "node name"); !s.ok()) return s;
      if (absl::Status s = check(node.output(0), "signal"); !s.ok()) return s;
    }
    for (const onnx::TensorProto& t : g.initializer()) {
      if (source_initializers.contains(t.name())) continue;
      if (absl::Status s = check(t.name(), "initializer"); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

// --- Rule 3: nodes on their devices, outputs where the plan says -----------

// The IR node that a copied NodeProto is, found by its first output.
std::optional<size_t> SourceNodeOf(const ir::Graph& graph, const onnx::NodeProto& node) {
  for (const std::string& name : node.output()) {
    if (name.empty()) continue;
    std::optional<ir::ValueId> v = graph.FindValue(name);
    if (!v || !graph.value(*v).producer.valid()) return std::nullopt;
    return graph.value(*v).producer.index();
  }
  return std::nullopt;
}

// Counts, per IR node, its copies among `nodes`; fails on a node that is on
// the wrong device or unknown.
// A stage's `recomputed` nodes (copies of shape chains of other stages) may
// sit on any device and do not count as the node's one placement.
absl::Status CountNodes(const ir::Graph& graph, absl::Span<const int32_t> node_device,
                        const onnx::GraphProto& g, int32_t device, const std::string& where,
                        bool weight_identities, std::vector<int32_t>& copies, int64_t& count,
                        absl::Span<const int32_t> recomputed = {}) {
  for (const onnx::NodeProto& node : g.node()) {
    if (IsSendRecv(node)) continue;
    std::optional<size_t> i = SourceNodeOf(graph, node);
    if (!i) {
      return Fail(where, absl::StrCat("node '", node.name(), "' (", node.op_type(),
                                      ") is not a node of the model"));
    }
    const ir::Node& source = graph.nodes()[*i];
    if (std::binary_search(recomputed.begin(), recomputed.end(), static_cast<int32_t>(*i))) {
      if (!partition_internal::IsShapeChainOp(source)) {
        return Fail(where, absl::StrCat("node '", source.name, "' (", node.op_type(),
                                        ") is listed as a recomputed shape node"));
      }
      ++count;
      continue;
    }
    if (!IsCopied(graph, source, weight_identities) && node_device[*i] != device) {
      return Fail(where, absl::StrCat("node '", source.name, "' is placed on device ",
                                      node_device[*i], " but appears here"));
    }
    ++copies[*i];
    ++count;
  }
  return absl::OkStatus();
}

absl::Status CheckAllNodesOnce(const ir::Graph& graph, const std::vector<int32_t>& copies,
                               bool weight_identities, const char* where) {
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& node = graph.nodes()[i];
    if (IsCopied(graph, node, weight_identities) ? copies[i] >= 1 : copies[i] == 1) continue;
    return Fail(where, absl::StrCat("node '", node.name, "' appears ", copies[i], " times"));
  }
  return absl::OkStatus();
}

absl::Status CheckDevices(const ir::Graph& graph, absl::Span<const int32_t> node_device,
                          const Deployment& deployment) {
  std::vector<int32_t> copies(graph.num_nodes(), 0);
  std::map<std::string, int32_t> output_device;
  for (size_t k = 0; k < deployment.devices.size(); ++k) {
    const DeviceModel& device = deployment.devices[k];
    if (device.device != static_cast<int32_t>(k)) {
      return Fail(device.file, absl::StrCat("listed as device ", k));
    }
    const onnx::GraphProto& g = device.proto.graph();
    if (absl::Status s = CheckDefinedBeforeUse(g, nullptr, device.file); !s.ok()) return s;
    int64_t count = 0;
    if (absl::Status s = CountNodes(graph, node_device, g, device.device, device.file,
                                    deployment.copies_weight_identities, copies, count);
        !s.ok()) {
      return s;
    }
    if (count != device.num_nodes) {
      return Fail(device.file,
                  absl::StrCat("holds ", count, " nodes, the deployment says ", device.num_nodes));
    }
    for (const onnx::ValueInfoProto& v : g.output()) output_device.emplace(v.name(), device.device);
  }
  if (absl::Status s =
          CheckAllNodesOnce(graph, copies, deployment.copies_weight_identities, "device models");
      !s.ok()) {
    return s;
  }
  for (const OutputOwner& output : deployment.outputs) {
    auto it = output_device.find(output.name);
    if (it == output_device.end() || it->second != output.device) {
      return Fail("outputs", absl::StrCat("graph output '", output.name,
                                          "' is not an output of device ", output.device));
    }
  }
  if (deployment.outputs.size() != graph.outputs().size()) {
    return Fail("outputs", "not every graph output has a device");
  }
  return absl::OkStatus();
}

// --- Rule 6: stages ---------------------------------------------------------

absl::Status CheckStages(const ir::Graph& graph, absl::Span<const int32_t> node_device,
                         const Deployment& deployment) {
  if (deployment.stages.empty()) return absl::OkStatus();
  absl::flat_hash_set<std::string> graph_inputs;
  for (ir::ValueId v : graph.inputs()) graph_inputs.insert(graph.value(v).name);
  std::map<std::string, int32_t> produced_by;  // stage output → its stage
  std::vector<int32_t> copies(graph.num_nodes(), 0);
  for (size_t s = 0; s < deployment.stages.size(); ++s) {
    const Stage& stage = deployment.stages[s];
    const std::string& where = stage.file;
    if (stage.id != static_cast<int32_t>(s))
      return Fail(where, absl::StrCat("listed as stage ", s));
    if (stage.device < 0 || stage.device >= static_cast<int32_t>(deployment.devices.size())) {
      return Fail(where, absl::StrCat("on device ", stage.device));
    }
    for (size_t i = 0; i < stage.after.size(); ++i) {
      if (stage.after[i] < 0 || stage.after[i] >= stage.id ||
          (i > 0 && stage.after[i] <= stage.after[i - 1])) {
        return Fail(where,
                    "`after` must list earlier stages, ascending (the stages must form a DAG)");
      }
    }
    const onnx::GraphProto& g = stage.proto.graph();
    if (absl::Status st = CheckDefinedBeforeUse(g, nullptr, where); !st.ok()) return st;
    for (const onnx::NodeProto& node : g.node()) {
      if (IsSendRecv(node)) return Fail(where, "a stage model holds a Send or Recv");
    }
    int64_t count = 0;
    if (absl::Status st =
            CountNodes(graph, node_device, g, stage.device, where,
                       deployment.copies_weight_identities, copies, count, stage.recomputed);
        !st.ok()) {
      return st;
    }
    if (count != stage.num_nodes) return Fail(where, "node count differs from the deployment's");

    absl::flat_hash_set<std::string> initializers;
    for (const onnx::TensorProto& t : g.initializer()) initializers.insert(t.name());
    std::vector<std::string> inputs, outputs;
    for (const onnx::ValueInfoProto& v : g.input()) {
      if (!initializers.contains(v.name())) inputs.push_back(v.name());
    }
    for (const onnx::ValueInfoProto& v : g.output()) outputs.push_back(v.name());
    if (inputs != stage.inputs || outputs != stage.outputs) {
      return Fail(where, "the model's inputs or outputs differ from the stage's lists");
    }
    std::vector<int32_t> needed_stages;
    for (const std::string& input : stage.inputs) {
      if (graph_inputs.contains(input)) continue;
      auto it = produced_by.find(input);
      if (it == produced_by.end() ||
          !std::binary_search(stage.after.begin(), stage.after.end(), it->second)) {
        return Fail(where,
                    absl::StrCat("input '", input, "' comes from no stage listed in `after`"));
      }
      needed_stages.push_back(it->second);
    }
    std::sort(needed_stages.begin(), needed_stages.end());
    needed_stages.erase(std::unique(needed_stages.begin(), needed_stages.end()),
                        needed_stages.end());
    if (needed_stages != stage.after) {
      return Fail(where, "`after` lists a stage none of whose outputs it reads");
    }
    for (const std::string& output : stage.outputs) {
      if (!produced_by.emplace(output, stage.id).second) {
        return Fail(where, absl::StrCat("'", output, "' is an output of two stages"));
      }
    }
  }
  if (absl::Status st =
          CheckAllNodesOnce(graph, copies, deployment.copies_weight_identities, "stages");
      !st.ok()) {
    return st;
  }
  for (ir::ValueId v : graph.outputs()) {
    if (!produced_by.contains(graph.value(v).name)) {
      return Fail("stages",
                  absl::StrCat("graph output '", graph.value(v).name, "' comes out of no stage"));
    }
  }
  return absl::OkStatus();
}

// --- Rule 7: the ONNX checker and shape inference ---------------------------

absl::Status InferShapesStrictly(const onnx::ModelProto& proto, const std::string& where) {
  if (!onnx_io::OnnxLibraryKnowsModel(proto)) return absl::OkStatus();
  absl::StatusOr<onnx::ModelProto> inferred = onnx_io::InferShapesOfCopy(proto, {.strict = true});
  if (!inferred.ok()) {
    return Fail(where, absl::StrCat("ONNX shape inference fails: ", inferred.status().message()));
  }
  return absl::OkStatus();
}

absl::Status CheckWithOnnx(const onnx_io::Model& model, const Deployment& deployment,
                           const ValidateOptions& options) {
  onnx_io::RegisterSendRecvSchemas();
  auto check = [&](const onnx::ModelProto& proto, const std::string& where) -> absl::Status {
    if (options.check_models) {
      if (absl::Status s = onnx_io::CheckModel(proto, model.directory()); !s.ok()) {
        return Fail(where, std::string(s.message()));
      }
    }
    if (options.infer_shapes) return InferShapesStrictly(proto, where);
    return absl::OkStatus();
  };
  for (const DeviceModel& device : deployment.devices) {
    if (absl::Status s = check(device.proto, device.file); !s.ok()) return s;
  }
  for (const Stage& stage : deployment.stages) {
    if (absl::Status s = check(stage.proto, stage.file); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateDeployment(const onnx_io::Model& model, const ir::Graph& graph,
                                absl::Span<const int32_t> node_device, const Deployment& deployment,
                                const ValidateOptions& options) {
  if (node_device.size() != graph.num_nodes()) {
    return absl::InvalidArgumentError(absl::StrCat("the placement has ", node_device.size(),
                                                   " entries for ", graph.num_nodes(), " nodes"));
  }
  const auto num_devices = static_cast<int32_t>(deployment.devices.size());
  for (size_t i = 0; i < node_device.size(); ++i) {
    if (node_device[i] < 0 || node_device[i] >= num_devices) {
      return Fail("placement", absl::StrCat("node '", graph.nodes()[i].name, "' is on device ",
                                            node_device[i], " of ", num_devices));
    }
  }
  if (absl::Status s = CheckDevices(graph, node_device, deployment); !s.ok()) return s;
  if (absl::Status s = CheckTransfers(graph, node_device, deployment); !s.ok()) return s;
  if (absl::Status s = CheckGeneratedNames(model, deployment); !s.ok()) return s;
  if (absl::Status s = CheckStages(graph, node_device, deployment); !s.ok()) return s;
  return CheckWithOnnx(model, deployment, options);
}

}  // namespace autopar::passes
