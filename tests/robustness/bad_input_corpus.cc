#include "tests/robustness/bad_input_corpus.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "onnx/onnx_pb.h"
#include "onnx_io/text_format.h"
#include "tools/cli/exit_codes.h"

namespace autopar::testing {
namespace {

using tools::kExitBadInput;
using tools::kExitInfeasible;
using tools::kExitUsage;

// A small valid model: enough work and one 1 KiB weight, so that a split has
// something to place and external data has something to hold. OPSET, DIM and
// WEIGHTS are replaced.
constexpr char kModelText[] = R"(
  <ir_version: 8, opset_import: ["" : OPSET]>
  small (float[DIM,16] x) => (float[DIM,16] y)
  <float[16,16] w = {WEIGHTS}> {
    h = MatMul(x, w)
    y = Relu(h)
  }
)";

onnx::ModelProto Parse(const std::string& text) {
  absl::StatusOr<onnx::ModelProto> model = onnx_io::ParseModelText(text);
  // The texts are constants of this file; a parse failure is a bug here.
  if (!model.ok()) std::abort();
  return *std::move(model);
}

onnx::ModelProto SmallModel(int opset = 17, const std::string& dim = "8") {
  std::vector<std::string> weights;
  for (int i = 0; i < 16 * 16; ++i) weights.push_back(absl::StrCat((i % 5) - 2));
  return Parse(absl::StrReplaceAll(
      kModelText,
      {{"OPSET", absl::StrCat(opset)}, {"DIM", dim}, {"WEIGHTS", absl::StrJoin(weights, ",")}}));
}

std::string Bytes(const onnx::ModelProto& model) { return model.SerializeAsString(); }

// The model `signature` { `body` } in opset `opset`, serialized.
std::string GraphModel(const std::string& signature, const std::string& body, int opset = 17) {
  return Bytes(Parse(absl::StrCat("<ir_version: 8, opset_import: [\"\" : ", opset, "]>\n",
                                  signature, " {\n", body, "\n}")));
}

// ---- the four commands on one model ----------------------------------------

CorpusRun Info(Outcome o) { return {"info", {"info", "{dir}/model.onnx"}, std::move(o)}; }
CorpusRun Cost(Outcome o) { return {"cost", {"cost", "{dir}/model.onnx"}, std::move(o)}; }
CorpusRun Place(Outcome o, std::vector<std::string> flags = {}) {
  std::vector<std::string> args = {"place", "{dir}/model.onnx", "--quiet"};
  args.insert(args.end(), flags.begin(), flags.end());
  return {"place", std::move(args), std::move(o)};
}
CorpusRun Split(Outcome o, std::vector<std::string> flags = {}) {
  std::vector<std::string> args = {"{dir}/model.onnx", "-o", "{out}", "--quiet", "--stages"};
  args.insert(args.end(), flags.begin(), flags.end());
  return {"split", std::move(args), std::move(o)};
}

Outcome Ok() { return {}; }
Outcome OkInOrt() { return {.run_in_ort = true}; }
Outcome Fails(int exit_code, std::string needle) { return {exit_code, std::move(needle)}; }

// Every command fails the same way: the model itself is unusable.
std::vector<CorpusRun> AllFail(int exit_code, const std::string& needle) {
  const Outcome o = Fails(exit_code, needle);
  return {Info(o), Cost(o), Place(o), Split(o)};
}

CorpusCase ModelCase(std::string name, std::string model, std::vector<CorpusRun> runs) {
  return {std::move(name), {{"model.onnx", std::move(model)}}, std::move(runs)};
}

// ---- files that are not models -----------------------------------------------

void AddUnreadableFiles(std::vector<CorpusCase>& corpus) {
  const std::string model = Bytes(SmallModel());
  corpus.push_back(ModelCase("empty file", "", AllFail(kExitBadInput, "empty")));
  corpus.push_back(ModelCase("truncated to half", model.substr(0, model.size() / 2),
                             AllFail(kExitBadInput, "not an ONNX model")));
  corpus.push_back(ModelCase("truncated by 7 bytes", model.substr(0, model.size() - 7),
                             AllFail(kExitBadInput, "not an ONNX model")));
  std::mt19937 rng(10);
  std::string noise(4096, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  corpus.push_back(ModelCase("random bytes", noise, AllFail(kExitBadInput, "not an ONNX model")));
  // Valid protobufs of other ONNX messages: a tensor and a bare graph.
  onnx::TensorProto tensor;
  tensor.set_name("t");
  tensor.set_data_type(onnx::TensorProto::FLOAT);
  tensor.add_dims(3);
  for (float v : {1.0f, 2.0f, 3.0f}) tensor.add_float_data(v);
  corpus.push_back(ModelCase("a TensorProto", tensor.SerializeAsString(),
                             AllFail(kExitBadInput, "not an ONNX model")));
  corpus.push_back(ModelCase("a GraphProto", SmallModel().graph().SerializeAsString(),
                             AllFail(kExitBadInput, "not an ONNX model")));
  corpus.push_back({"missing model file", {}, AllFail(kExitBadInput, "no such file")});
  corpus.push_back(
      {"a folder named model.onnx", {{"model.onnx/x", "x"}}, AllFail(kExitBadInput, "model.onnx")});
}

// ---- invalid graphs ---------------------------------------------------------------

void AddInvalidGraphs(std::vector<CorpusCase>& corpus) {
  // Each twice: at opset 17 the ONNX checker sees it first; at opset 18,
  // which the installed ONNX library does not know, only our own passes do.
  for (int opset : {17, 18}) {
    const std::string at = absl::StrCat(" (opset ", opset, ")");
    corpus.push_back(ModelCase("cycle" + at,
                               GraphModel("g (float[2] x) => (float[2] y)",
                                          "a = Add(x, b)\n b = Relu(a)\n y = Neg(b)", opset),
                               AllFail(kExitBadInput, opset == 17 ? "'b'" : "cycle")));
    corpus.push_back(
        ModelCase("dangling input" + at,
                  GraphModel("g (float[2] x) => (float[2] y)", "y = Add(x, nothere)", opset),
                  AllFail(kExitBadInput, "nothere")));
    corpus.push_back(ModelCase("duplicate value names" + at,
                               GraphModel("g (float[2] x) => (float[2] y)",
                                          "h = Relu(x)\n h = Neg(x)\n y = Abs(h)", opset),
                               AllFail(kExitBadInput, "'h'")));
  }
  corpus.push_back(
      ModelCase("graph output listed twice",
                GraphModel("g (float[2] x) => (float[2] y, float[2] y)", "y = Relu(x)"),
                AllFail(kExitBadInput, "graph output 'y' is listed twice")));
  // Strides of 0: ONNX 1.12's shape inference would divide by them.
  for (int opset : {17, 18}) {
    corpus.push_back(
        ModelCase(absl::StrCat("Conv with stride 0 (opset ", opset, ")"),
                  GraphModel("g (float[1,4,8,8] x, float[4,4,3,3] w) => (float[1,4,6,6] y)",
                             "y = Conv<strides = [0, 0]>(x, w)", opset),
                  AllFail(kExitBadInput, "a Conv node: strides must be positive")));
  }
  corpus.push_back(
      ModelCase("AveragePool with stride 0",
                GraphModel("g (float[1,4,8,8] x) => (float[1,4,4,4] y)",
                           "y = AveragePool<kernel_shape = [2, 2], strides = [2, 0]>(x)"),
                AllFail(kExitBadInput, "strides must be positive")));
  corpus.push_back(ModelCase(
      "DepthToSpace with blocksize 2^40",
      GraphModel("g (float[1,4,4,4] x) => (float[1,1,8,8] y)",
                 "y = DepthToSpace<blocksize = 1099511627776>(x)"),
      AllFail(kExitBadInput, "a DepthToSpace node: blocksize 1099511627776 is too large")));
  // STFT of a scalar: ONNX 1.12 reads dims the signal does not have.
  corpus.push_back(ModelCase(
      "STFT of a scalar",
      GraphModel("g (float x, int64 step) => (float[1] y)", "y = STFT(x, step)"), {Info(Ok())}));
  // A graph output nothing produces.
  corpus.push_back(
      ModelCase("graph output never produced",
                GraphModel("g (float[2] x) => (float[2] y, float[2] z)", "y = Relu(x)"),
                AllFail(kExitBadInput, "'z'")));
}

// ---- unusual models, which must work ------------------------------------------

// An op of a domain nobody registered. Where its output's shape is known (a
// graph output, or declared in value_info as exporters of custom ops do) it
// is costed with the default and placed; where not, its output's size is
// unknown and the error says which value.
onnx::ModelProto WithUnknownOp(int node) {
  onnx::ModelProto model = SmallModel();
  onnx::NodeProto* unknown = model.mutable_graph()->mutable_node(node);
  unknown->set_op_type("Frobnicate");
  unknown->set_domain("com.example.nowhere");
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("com.example.nowhere");
  opset->set_version(3);
  return model;
}

void AddUnknownOps(std::vector<CorpusCase>& corpus) {
  const Outcome unknown_size = Fails(kExitBadInput, "'h' from Frobnicate unranked");
  corpus.push_back(
      ModelCase("unknown op, output shape unknown", Bytes(WithUnknownOp(0)),
                {Info(Ok()), Cost(unknown_size), Place(unknown_size), Split(unknown_size)}));
  onnx::ModelProto declared = WithUnknownOp(0);
  onnx::ValueInfoProto* h = declared.mutable_graph()->add_value_info();
  *h = declared.graph().output(0);  // y's type: float[8,16], as h's
  h->set_name("h");
  const std::vector<CorpusRun> works = {Info(Ok()), Cost(Ok()), Place(Ok()), Split(Ok())};
  corpus.push_back(ModelCase("unknown op, output shape declared", Bytes(declared), works));
  corpus.push_back(ModelCase("unknown op making a graph output", Bytes(WithUnknownOp(1)), works));
}

// Graphs with little in them: no node at all, and an input that is also an
// output.
void AddDegenerateGraphs(std::vector<CorpusCase>& corpus) {
  const std::vector<CorpusRun> works = {Info(Ok()), Cost(Ok()), Place(Ok()), Split(OkInOrt())};
  onnx::ModelProto no_nodes = SmallModel();
  no_nodes.mutable_graph()->clear_node();
  no_nodes.mutable_graph()->clear_initializer();
  *no_nodes.mutable_graph()->mutable_output(0) = no_nodes.graph().input(0);
  corpus.push_back(ModelCase("no nodes", Bytes(no_nodes), works));
  onnx::ModelProto pass_through = SmallModel();
  *pass_through.mutable_graph()->add_output() = pass_through.graph().input(0);
  corpus.push_back(ModelCase("a graph input that is also an output", Bytes(pass_through), works));
}

// Opsets the installed ONNX library (1.12, opset 17) does not know.
void AddNewOpsets(std::vector<CorpusCase>& corpus) {
  // ReduceMean takes its axes as an input from opset 18 on.
  const std::string signature = "g (float[4,8] x) => (float[4,1] y)";
  const std::string body =
      "axes = Constant<value = int64[1] {1}>()\n m = ReduceMean(x, axes)\n y = Relu(m)";
  for (int opset : {18, 21}) {
    onnx::ModelProto model = Parse(absl::StrCat("<ir_version: 8, opset_import: [\"\" : ", opset,
                                                "]>\n", signature, " {\n", body, "\n}"));
    model.set_ir_version(opset == 18 ? 8 : 10);
    corpus.push_back(ModelCase(absl::StrCat("opset ", opset), Bytes(model),
                               {Info(Ok()), Cost(Ok()), Place(Ok()), Split(OkInOrt())}));
  }
}

// Renames value `from` to `to` everywhere in the graph.
void RenameValue(onnx::GraphProto& graph, const std::string& from, const std::string& to) {
  auto rename = [&](std::string* name) {
    if (*name == from) *name = to;
  };
  for (onnx::ValueInfoProto& v : *graph.mutable_input()) rename(v.mutable_name());
  for (onnx::ValueInfoProto& v : *graph.mutable_output()) rename(v.mutable_name());
  for (onnx::ValueInfoProto& v : *graph.mutable_value_info()) rename(v.mutable_name());
  for (onnx::TensorProto& t : *graph.mutable_initializer()) rename(t.mutable_name());
  for (onnx::NodeProto& n : *graph.mutable_node()) {
    for (std::string& name : *n.mutable_input()) rename(&name);
    for (std::string& name : *n.mutable_output()) rename(&name);
  }
}

// A chain of element-wise ops through values v0..v{n-1}; node k produces v{k}.
onnx::ModelProto Chain(int length) {
  std::string body;
  std::string previous = "x";
  for (int k = 0; k < length; ++k) {
    const std::string out = k + 1 == length ? "y" : absl::StrCat("v", k);
    absl::StrAppend(&body, out, " = ", k % 2 ? "Relu" : "Neg", "(", previous, ")\n");
    previous = out;
  }
  return Parse(absl::StrCat("<ir_version: 8, opset_import: [\"\" : 17]>\n",
                            "g (float[64,256] x) => (float[64,256] y) {\n", body, "}"));
}

// Names the chain's values and nodes `names` and places the nodes on
// alternating devices with a placement file, so that every name crosses a
// device boundary and the rewriter must carry it.
CorpusCase NamedChainCase(const std::string& case_name, const std::vector<std::string>& names) {
  onnx::ModelProto model = Chain(static_cast<int>(names.size()) + 1);
  std::string placement = "{";
  for (size_t k = 0; k < static_cast<size_t>(model.graph().node_size()); ++k) {
    onnx::NodeProto* node = model.mutable_graph()->mutable_node(static_cast<int>(k));
    const std::string name = k < names.size() ? names[k] : "last";
    if (k < names.size()) RenameValue(*model.mutable_graph(), absl::StrCat("v", k), name);
    node->set_name(name);
    // Escaped for JSON by hand: the names hold quotes, backslashes, newlines.
    std::string escaped =
        absl::StrReplaceAll(name, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}, {"\t", "\\t"}});
    absl::StrAppend(&placement, k ? ", " : "", "\"", escaped, "\": ", k % 2);
  }
  placement += "}";
  const std::vector<std::string> two = {"--devices", "2"};
  std::vector<std::string> placed = {"--devices", "2", "--placement", "{dir}/placement.json"};
  return {case_name,
          {{"model.onnx", Bytes(model)}, {"placement.json", placement}},
          {Info(Ok()), Cost(Ok()), Place(Ok(), two), Split(OkInOrt(), placed)}};
}

void AddOddNames(std::vector<CorpusCase>& corpus) {
  corpus.push_back(NamedChainCase("names with quotes, commas, slashes, newlines, non-ASCII",
                                  {"q\"uote'd", "comma,separated", "a/b\\c", "line\nbreak",
                                   "gr\xC3\xBC\xC3\x9F\x65 \xE2\x82\xAC", "\xF0\x9F\x98\x80",
                                   "</script><b>&amp;", "sp ace\ttab", "-o"}));
  // What passes/partition.cc generates: autopar_signal, autopar_remote_<d>,
  // autopar_send_<t>[_signal], autopar_recv_<t>[_signal], and the suffix
  // NameGenerator adds on a collision.
  corpus.push_back(
      NamedChainCase("names the rewriter generates",
                     {"autopar_signal", "autopar_remote_0", "autopar_remote_1", "autopar_send_0",
                      "autopar_send_0_signal", "autopar_recv_0", "autopar_recv_0_signal",
                      "autopar_signal_1", "autopar_send_1", "autopar_recv_1_signal"}));
}

// ---- external data --------------------------------------------------------------

// The small model with its weight in `w.bin` (1 KiB) and these entries.
CorpusCase ExternalCase(std::string name,
                        const std::vector<std::pair<std::string, std::string>>& entries,
                        bool write_file, std::vector<CorpusRun> runs) {
  onnx::ModelProto model = SmallModel();
  onnx::TensorProto* w = model.mutable_graph()->mutable_initializer(0);
  std::string bytes(16 * 16 * sizeof(float), '\0');
  for (int i = 0; i < w->float_data_size(); ++i) {
    const float v = w->float_data(i);
    std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof(float));
  }
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [key, value] : entries) {
    onnx::StringStringEntryProto* e = w->add_external_data();
    e->set_key(key);
    e->set_value(value);
  }
  CorpusCase c = ModelCase(std::move(name), Bytes(model), std::move(runs));
  if (write_file) c.files["w.bin"] = bytes;
  return c;
}

void AddExternalData(std::vector<CorpusCase>& corpus) {
  corpus.push_back(ExternalCase("external data that is fine", {{"location", "w.bin"}},
                                /*write_file=*/true,
                                {Info(Ok()), Cost(Ok()), Place(Ok()), Split(OkInOrt())}));
  corpus.push_back(ExternalCase("external data file missing", {{"location", "gone.bin"}},
                                /*write_file=*/false, AllFail(kExitBadInput, "gone.bin")));
  corpus.push_back(ExternalCase("external data offset past the end",
                                {{"location", "w.bin"}, {"offset", "4096"}}, /*write_file=*/true,
                                AllFail(kExitBadInput, "outside")));
  corpus.push_back(ExternalCase("external data length past the end",
                                {{"location", "w.bin"}, {"offset", "8"}, {"length", "1024"}},
                                /*write_file=*/true, AllFail(kExitBadInput, "outside")));
  corpus.push_back(
      ExternalCase("external data offset + length overflow int64",
                   {{"location", "w.bin"}, {"offset", "9223372036854775807"}, {"length", "1024"}},
                   /*write_file=*/true, AllFail(kExitBadInput, "outside")));
  corpus.push_back(ExternalCase("external data negative offset",
                                {{"location", "w.bin"}, {"offset", "-8"}}, /*write_file=*/true,
                                AllFail(kExitBadInput, "offset")));
  corpus.push_back(ExternalCase("external data length past uint64",
                                {{"location", "w.bin"}, {"length", "18446744073709551616"}},
                                /*write_file=*/true, AllFail(kExitBadInput, "length")));
  corpus.push_back(ExternalCase("external data outside the model's folder",
                                {{"location", "../w.bin"}}, /*write_file=*/true,
                                AllFail(kExitBadInput, "inside the model's folder")));
}

// ---- sizes -----------------------------------------------------------------------

// MatMul of two [n, n] inputs: 2 n^3 FLOPs.
std::string SquareMatMul(int64_t n) {
  const std::string dim = absl::StrCat(n);
  return GraphModel(absl::StrCat("g (float[", dim, ",", dim, "] a, float[", dim, ",", dim,
                                 "] b) => (float[", dim, ",", dim, "] y)"),
                    "y = MatMul(a, b)");
}

void AddHugeSizes(std::vector<CorpusCase>& corpus) {
  // n = 2^22: 2^67 FLOPs overflow int64; 64 TiB per tensor still counts.
  // It fits nowhere real, and on devices of a thousand TiB it is placed.
  const std::vector<std::string> huge = {"--devices", "2", "--memory-per-device", "1000TiB"};
  corpus.push_back(ModelCase(
      "FLOPs overflow 64 bits", SquareMatMul(int64_t{1} << 22),
      {Info(Ok()), Cost(Ok()), Place(Fails(kExitInfeasible, "alone needs")),
       Split(Fails(kExitInfeasible, "alone needs")), Place(Ok(), huge), Split(Ok(), huge)}));
  // n = 2^40: even the tensors' byte sizes overflow.
  corpus.push_back(ModelCase(
      "tensor bytes overflow 64 bits", SquareMatMul(int64_t{1} << 40),
      {Info(Ok()), Cost(Ok()), Place(Fails(kExitBadInput, "'y' of node 'MatMul_0' is too large")),
       Split(Fails(kExitBadInput, "'y' of node 'MatMul_0' is too large"))}));
}

// ---- shapes and devices --------------------------------------------------------

void AddShapesAndDevices(std::vector<CorpusCase>& corpus) {
  const Outcome unbound = Fails(kExitBadInput, "--dim batch=");
  corpus.push_back(ModelCase("unbound symbolic dim", Bytes(SmallModel(17, "batch")),
                             {Info(Ok()), Cost(unbound), Place(unbound), Split(unbound),
                              Split(OkInOrt(), {"--dim", "batch=3"})}));
  const std::string model = Bytes(SmallModel());
  const Outcome zero = Fails(kExitUsage, "--devices");
  corpus.push_back(ModelCase("zero devices", model,
                             {Place(zero, {"--devices", "0"}), Split(zero, {"--devices", "0"}),
                              Place(zero, {"--devices", "-1"})}));
  // Two 1 KiB weights: each node fits 2 KiB, the whole model does not.
  const std::string two_weights =
      Bytes(Parse(absl::StrReplaceAll(R"(
        <ir_version: 8, opset_import: ["" : 17]>
        g (float[8,16] x) => (float[8,16] y) <float[16,16] w1 = {W}, float[16,16] w2 = {W}> {
          h = MatMul(x, w1)
          y = MatMul(h, w2)
        })",
                                      {{"W", absl::StrJoin(std::vector<int>(256, 1), ",")}})));
  const Outcome too_small = Fails(kExitInfeasible, "the model does not fit the cluster");
  const std::vector<std::string> one_small = {"--devices", "1", "--memory-per-device", "2KiB"};
  corpus.push_back(ModelCase("memory cap below the whole model", two_weights,
                             {Place(too_small, one_small), Split(too_small, one_small)}));
  // The weight alone is 1 KiB.
  const Outcome tiny = Fails(kExitInfeasible, "alone needs");
  corpus.push_back(ModelCase(
      "memory cap below the largest node", model,
      {Place(tiny, {"--memory-per-device", "512B"}), Split(tiny, {"--memory-per-device", "512B"}),
       Place(tiny, {"--memory-per-device", "512B", "--algo", "tga", "--time-budget", "1s"})}));
}

// ---- cluster, cost-graph and placement files ------------------------------------

void AddClusterFiles(std::vector<CorpusCase>& corpus) {
  const std::string model = Bytes(SmallModel());
  const std::vector<std::pair<std::string, std::string>> clusters = {
      {"", "not valid JSON"},
      {"{\"devices\": [{\"device\": \"T4\"}", "not valid JSON"},
      {"[1, 2]", "object"},
      {"{\"devices\": []}", "devices"},
      {"{\"devices\": {\"device\": \"T4\"}}", "devices"},
      {"{\"devices\": [{\"device\": \"no-such-gpu\"}], \"link\": {\"bandwidth_bytes_per_s\": 1e9, "
       "\"latency_us\": 1}}",
       "no-such-gpu"},
      {"{\"devices\": [{\"device\": \"T4\", \"memory_bytes\": -5}], \"link\": "
       "{\"bandwidth_bytes_per_s\": 1e9, \"latency_us\": 1}}",
       "memory_bytes"},
      {"{\"devices\": [{\"device\": \"T4\", \"memory_bytes\": 1e300}], \"link\": "
       "{\"bandwidth_bytes_per_s\": 1e9, \"latency_us\": 1}}",
       "memory_bytes"},
      {"{\"devices\": [{\"device\": \"T4\"}, {\"device\": \"T4\"}], \"link\": "
       "{\"bandwidth_bytes_per_s\": -1, \"latency_us\": 1}}",
       "bandwidth"},
      {"{\"devices\": [{\"device\": \"T4\"}, {\"device\": \"T4\"}], "
       "\"bandwidth_matrix_bytes_per_s\": [[1]]}",
       "bandwidth_matrix"},
      {"{\"devices\": [{\"device\": \"T4\"}, {\"device\": \"T4\"}], \"link\": "
       "{\"bandwidth_bytes_per_s\": \"fast\", \"latency_us\": 1}}",
       "bandwidth"},
      {"{\"devices\": [{\"device\": \"T4\", \"name\": 2}], \"link\": "
       "{\"bandwidth_bytes_per_s\": 1e9, \"latency_us\": 1}}",
       "devices[0].name"},
  };
  for (size_t i = 0; i < clusters.size(); ++i) {
    const Outcome o = Fails(kExitBadInput, clusters[i].second);
    const std::vector<std::string> flags = {"--cluster", "{dir}/cluster.json"};
    corpus.push_back({absl::StrCat("invalid cluster JSON #", i),
                      {{"model.onnx", model}, {"cluster.json", clusters[i].first}},
                      {Place(o, flags), Split(o, flags)}});
  }
}

void AddCostGraphFiles(std::vector<CorpusCase>& corpus) {
  const std::string devices =
      R"("devices": {"count": 2, "memory_bytes": [1000000, 1000000], "bandwidth_bytes_per_s": 1e9, "latency_us": 1})";
  const std::string nodes =
      R"("nodes": [{"id": 0, "name": "a", "op": "X", "compute_us": 1, "param_bytes": 0, "output_bytes": [4], "temp_bytes": 0},
                   {"id": 1, "name": "b", "op": "X", "compute_us": 1, "param_bytes": 0, "output_bytes": [4], "temp_bytes": 0}])";
  auto graph = [&](const std::string& edges, const std::string& devs) {
    return absl::StrCat("{", nodes, ", \"edges\": [", edges, "], ", devs, "}");
  };
  const std::vector<std::pair<std::string, std::string>> graphs = {
      {"", "not valid JSON"},
      {"{\"nodes\": [", "not valid JSON"},
      {"\"a string\"", "object"},
      {graph(R"({"src": 1, "dst": 0, "bytes": 4})", devices), "src must come before dst"},
      {graph(R"({"src": 0, "dst": 0, "bytes": 4})", devices), "src must come before dst"},
      {graph(R"({"src": 0, "dst": 7, "bytes": 4})", devices), "dst"},
      {graph(R"({"src": 0, "dst": 1, "bytes": -4})", devices), "bytes"},
      {graph(R"({"src": 0, "dst": 1, "bytes": 1e300})", devices), "bytes"},
      {graph(R"({"src": 0, "dst": 1})", devices), "bytes"},
      {graph(
           "",
           R"("devices": {"count": 0, "memory_bytes": [], "bandwidth_bytes_per_s": 1e9, "latency_us": 1})"),
       "count"},
      {absl::StrCat(
           "{\"nodes\": [{\"id\": 5, \"name\": \"a\", \"op\": \"X\", \"compute_us\": -1, "
           "\"param_bytes\": 0, \"output_bytes\": [4], \"temp_bytes\": 0}], \"edges\": [], ",
           devices, "}"),
       "nodes[0]"},
  };
  for (size_t i = 0; i < graphs.size(); ++i) {
    corpus.push_back({absl::StrCat("invalid cost-graph JSON #", i),
                      {{"graph.json", graphs[i].first}},
                      {{"place --costgraph",
                        {"place", "--costgraph", "{dir}/graph.json", "--quiet"},
                        Fails(kExitBadInput, graphs[i].second)}}});
  }
  // A valid one, so that the errors above are about what was broken.
  corpus.push_back(
      {"valid cost-graph JSON",
       {{"graph.json", graph(R"({"src": 0, "dst": 1, "bytes": 4})", devices)}},
       {{"place --costgraph", {"place", "--costgraph", "{dir}/graph.json", "--quiet"}, Ok()}}});
}

void AddPlacementFiles(std::vector<CorpusCase>& corpus) {
  onnx::ModelProto model = SmallModel();
  model.mutable_graph()->mutable_node(0)->set_name("mm");
  model.mutable_graph()->mutable_node(1)->set_name("relu");
  const std::vector<std::pair<std::string, std::string>> placements = {
      {"", "not valid JSON"},
      {"{\"mm\": 0,", "not valid JSON"},
      {"[0, 1]", "JSON object"},
      {R"({"mm": 0, "relu": 2})", "'relu' has device 2"},
      {R"({"mm": 0, "relu": -1})", "'relu' has device -1"},
      {R"({"mm": 0, "relu": "1"})", "'relu' has device"},
      {R"({"mm": 0, "relu": 1.5})", "'relu' has device"},
      {R"({"mm": 0})", "no device for node 'relu'"},
      {R"({"mm": 0, "relu": 1, "ghost": 0})", "'ghost'"},
      {R"({"node_to_device": 3})", "JSON object"},
      // A name with a line break still gives one error line.
      {R"({"mm": 0, "relu": 1, "gh\nost": 0})", "'gh ost'"},
  };
  for (size_t i = 0; i < placements.size(); ++i) {
    corpus.push_back({absl::StrCat("invalid placement file #", i),
                      {{"model.onnx", Bytes(model)}, {"placement.json", placements[i].first}},
                      {Split(Fails(kExitBadInput, placements[i].second),
                             {"--devices", "2", "--placement", "{dir}/placement.json"})}});
  }
  corpus.push_back({"placement file that is missing",
                    {{"model.onnx", Bytes(model)}},
                    {Split(Fails(kExitBadInput, "placement"),
                           {"--devices", "2", "--placement", "{dir}/placement.json"})}});
}

}  // namespace

std::vector<CorpusCase> BadInputCorpus() {
  std::vector<CorpusCase> corpus;
  AddUnreadableFiles(corpus);
  AddInvalidGraphs(corpus);
  AddUnknownOps(corpus);
  AddDegenerateGraphs(corpus);
  AddNewOpsets(corpus);
  AddOddNames(corpus);
  AddExternalData(corpus);
  AddHugeSizes(corpus);
  AddShapesAndDevices(corpus);
  AddClusterFiles(corpus);
  AddCostGraphFiles(corpus);
  AddPlacementFiles(corpus);
  return corpus;
}

}  // namespace autopar::testing
