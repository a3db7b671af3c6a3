// make_large_model: writes a large synthetic ONNX model for the scale
// benchmark (scripts/bench_scale.sh). A stack of the blocks
// transformer and branchy CNN exporters produce — decomposed LayerNorm,
// single-head attention, an MLP, a Split/Concat block of two branches, and a
// long skip connection every kSkipEvery blocks — on small tensors so that a
// million nodes keep their weights in tens of MB. Weights of at least
// --external-min-bytes go to OUT.onnx.data as external data (as
// onnx.save_model does with its size threshold); smaller ones stay inline.
// The same flags give the same bytes: blocks and weights come from one
// mt19937_64 whose raw output is used directly (standard distributions are
// not portable).
//
//   make_large_model OUT.onnx [--nodes 1000000] [--hidden 8] [--seq 4]
//                    [--seed 1] [--external-min-bytes 256]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "onnx/onnx_pb.h"

namespace autopar::bench {
namespace {

constexpr char kUsage[] =
    "usage: make_large_model OUT.onnx [--nodes N] [--hidden H] [--seq S] [--seed N]\n"
    "                        [--external-min-bytes B]\n";

/// A long skip joins a block's output with the one this many blocks back.
constexpr int kSkipEvery = 16;

struct Options {
  std::string path;
  /// Exactly this many nodes (blocks, then Relu padding).
  int64_t nodes = 1000000;
  /// The feature size: weights are hidden x hidden floats (256 B at 8).
  int64_t hidden = 8;
  /// The sequence length; activations are [1, seq, hidden].
  int64_t seq = 4;
  uint64_t seed = 1;
  /// Weights of at least this many bytes are stored as external data.
  int64_t external_min_bytes = 256;
};

// Builds the graph node by node; every value is a [1, seq, hidden] float
// tensor unless said otherwise.
class ModelWriter {
 public:
  ModelWriter(const Options& options, onnx::GraphProto* graph, std::ofstream* data,
              std::string data_location)
      : options_(options),
        graph_(graph),
        data_(data),
        data_location_(std::move(data_location)),
        rng_(options.seed) {}

  int64_t num_nodes() const { return graph_->node_size(); }

  /// Adds a node with one output named after it; returns the output's name.
  std::string Node(const std::string& name, const std::string& op,
                   const std::vector<std::string>& inputs) {
    return Nodes(name, op, inputs, 1).front();
  }

  /// Adds a node with `outputs` outputs; returns their names.
  std::vector<std::string> Nodes(const std::string& name, const std::string& op,
                                 const std::vector<std::string>& inputs, int outputs) {
    onnx::NodeProto* node = graph_->add_node();
    node->set_name(name);
    node->set_op_type(op);
    for (const std::string& input : inputs) node->add_input(input);
    std::vector<std::string> names;
    for (int i = 0; i < outputs; ++i) {
      names.push_back(absl::StrCat(name, "_output_", i));
      node->add_output(names.back());
    }
    return names;
  }

  void IntsAttribute(const std::string& name, const std::vector<int64_t>& values) {
    onnx::AttributeProto* a = LastNode()->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }

  void IntAttribute(const std::string& name, int64_t value) {
    onnx::AttributeProto* a = LastNode()->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }

  /// A float weight of the given dims with deterministic pseudo-random
  /// values (uniform in ±1/sqrt(fan-in)), or all `fill` when given.
  std::string Weight(const std::string& name, const std::vector<int64_t>& dims,
                     const float* fill = nullptr) {
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    std::string bytes(static_cast<size_t>(count) * sizeof(float), '\0');
    const float scale = 1.0f / std::sqrt(static_cast<float>(dims.front()));
    for (int64_t i = 0; i < count; ++i) {
      // The top 24 bits as a fraction in [0, 1).
      const float unit = static_cast<float>(rng_() >> 40) / static_cast<float>(1 << 24);
      const float v = fill ? *fill : (2 * unit - 1) * scale;
      std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof(float));
    }
    onnx::TensorProto* tensor = graph_->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) tensor->add_dims(d);
    if (static_cast<int64_t>(bytes.size()) < options_.external_min_bytes) {
      tensor->set_raw_data(std::move(bytes));
      return name;
    }
    tensor->set_data_location(onnx::TensorProto::EXTERNAL);
    const int64_t offset = data_->tellp();
    data_->write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    for (const auto& [key, value] :
         {std::pair<std::string, std::string>{"location", data_location_},
          {"offset", absl::StrCat(offset)},
          {"length", absl::StrCat(bytes.size())}}) {
      onnx::StringStringEntryProto* entry = tensor->add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    }
    return name;
  }

  uint64_t Random() { return rng_(); }

 private:
  onnx::NodeProto* LastNode() { return graph_->mutable_node(graph_->node_size() - 1); }

  const Options& options_;
  onnx::GraphProto* graph_;
  std::ofstream* data_;
  std::string data_location_;
  std::mt19937_64 rng_;
};

// The blocks. Each takes the block's input and returns its output; `p` is the
// block's name prefix ("/blocks.12").

// LayerNorm as older exporters write it (9 nodes): (x - mean) / sqrt(var + eps)
// * gamma + beta over the last axis.
std::string LayerNormBlock(ModelWriter& w, const std::string& p, const std::string& x,
                           const std::string& eps, int64_t hidden) {
  const std::string s = p + "/ln";
  const std::string mean = w.Node(s + "/ReduceMean", "ReduceMean", {x});
  w.IntsAttribute("axes", {-1});
  const std::string centered = w.Node(s + "/Sub", "Sub", {x, mean});
  const std::string squared = w.Node(s + "/Mul", "Mul", {centered, centered});
  const std::string var = w.Node(s + "/ReduceMean_1", "ReduceMean", {squared});
  w.IntsAttribute("axes", {-1});
  const std::string shifted = w.Node(s + "/Add", "Add", {var, eps});
  const std::string stddev = w.Node(s + "/Sqrt", "Sqrt", {shifted});
  const std::string normed = w.Node(s + "/Div", "Div", {centered, stddev});
  const float one = 1, zero = 0;
  const std::string gamma = w.Weight(absl::StrCat(p, ".ln.weight"), {hidden}, &one);
  const std::string beta = w.Weight(absl::StrCat(p, ".ln.bias"), {hidden}, &zero);
  const std::string scaled = w.Node(s + "/Mul_1", "Mul", {normed, gamma});
  return w.Node(s + "/Add_1", "Add", {scaled, beta});
}

// Single-head self-attention with a residual (9 nodes); Q, K and V are three
// branches that join at the two attention MatMuls.
std::string AttentionBlock(ModelWriter& w, const std::string& p, const std::string& x,
                           int64_t hidden) {
  const std::string s = p + "/attn";
  const std::string q =
      w.Node(s + "/q/MatMul", "MatMul", {x, w.Weight(p + ".attn.q.weight", {hidden, hidden})});
  const std::string k =
      w.Node(s + "/k/MatMul", "MatMul", {x, w.Weight(p + ".attn.k.weight", {hidden, hidden})});
  const std::string v =
      w.Node(s + "/v/MatMul", "MatMul", {x, w.Weight(p + ".attn.v.weight", {hidden, hidden})});
  const std::string kt = w.Node(s + "/Transpose", "Transpose", {k});
  w.IntsAttribute("perm", {0, 2, 1});
  const std::string scores = w.Node(s + "/MatMul", "MatMul", {q, kt});  // [1, seq, seq]
  const std::string probs = w.Node(s + "/Softmax", "Softmax", {scores});
  w.IntAttribute("axis", -1);
  const std::string context = w.Node(s + "/MatMul_1", "MatMul", {probs, v});
  const std::string out = w.Node(s + "/o/MatMul", "MatMul",
                                 {context, w.Weight(p + ".attn.o.weight", {hidden, hidden})});
  return w.Node(s + "/Add", "Add", {x, out});
}

// Two-layer MLP with biases and a residual (6 nodes).
std::string MlpBlock(ModelWriter& w, const std::string& p, const std::string& x, int64_t hidden) {
  const std::string s = p + "/mlp";
  const std::string h1 =
      w.Node(s + "/fc1/MatMul", "MatMul", {x, w.Weight(p + ".mlp.fc1.weight", {hidden, hidden})});
  const std::string b1 =
      w.Node(s + "/fc1/Add", "Add", {h1, w.Weight(p + ".mlp.fc1.bias", {hidden})});
  const std::string act = w.Node(s + "/Relu", "Relu", {b1});
  const std::string h2 =
      w.Node(s + "/fc2/MatMul", "MatMul", {act, w.Weight(p + ".mlp.fc2.weight", {hidden, hidden})});
  const std::string b2 =
      w.Node(s + "/fc2/Add", "Add", {h2, w.Weight(p + ".mlp.fc2.bias", {hidden})});
  return w.Node(s + "/Add", "Add", {x, b2});
}

// Split the features in two, a MatMul and an activation on each half,
// Concat, residual (7 nodes): an Inception-like branch and join.
std::string BranchBlock(ModelWriter& w, const std::string& p, const std::string& x,
                        int64_t hidden) {
  const std::string s = p + "/branch";
  const int64_t half = hidden / 2;
  const std::vector<std::string> halves = w.Nodes(s + "/Split", "Split", {x}, 2);
  w.IntAttribute("axis", -1);
  const std::string a = w.Node(s + "/a/MatMul", "MatMul",
                               {halves[0], w.Weight(p + ".branch.a.weight", {half, half})});
  const std::string a_act = w.Node(s + "/a/Relu", "Relu", {a});
  const std::string b = w.Node(s + "/b/MatMul", "MatMul",
                               {halves[1], w.Weight(p + ".branch.b.weight", {half, half})});
  const std::string b_act = w.Node(s + "/b/Tanh", "Tanh", {b});
  const std::string joined = w.Node(s + "/Concat", "Concat", {a_act, b_act});
  w.IntAttribute("axis", -1);
  return w.Node(s + "/Add", "Add", {x, joined});
}

// The largest block has 9 nodes (+1 for a long skip).
constexpr int64_t kMaxBlockNodes = 10;

absl::Status Write(const Options& options) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("make_large_model");
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("large_model");

  const std::filesystem::path path(options.path);
  const std::string data_location = path.filename().string() + ".data";
  std::ofstream data(path.parent_path() / data_location, std::ios::binary | std::ios::trunc);
  if (!data) return absl::InternalError(absl::StrCat("cannot write ", data_location));
  ModelWriter w(options, graph, &data, data_location);

  auto add_tensor_type = [&](onnx::ValueInfoProto* info, const std::string& name) {
    info->set_name(name);
    onnx::TypeProto::Tensor* type = info->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {int64_t{1}, options.seq, options.hidden}) {
      type->mutable_shape()->add_dim()->set_dim_value(d);
    }
  };
  add_tensor_type(graph->add_input(), "input");
  const float eps_value = 1e-5f;
  // One eps shared by every LayerNorm, as exporters that fold constants do:
  // a value with a hundred thousand consumers.
  const std::string eps = w.Weight("ln.eps", {1}, &eps_value);

  // Transformer-like order (LayerNorm, attention, LayerNorm, MLP) with a
  // branch block drawn in now and then.
  std::string x = "input";
  std::vector<std::string> block_outputs;
  for (int64_t b = 0; w.num_nodes() + kMaxBlockNodes + 1 <= options.nodes; ++b) {
    const std::string p = absl::StrCat("/blocks.", b);
    const uint64_t draw = w.Random() % 8;
    if (draw == 0) {
      x = BranchBlock(w, p, x, options.hidden);
    } else {
      switch (b % 4) {
        case 0:
        case 2:
          x = LayerNormBlock(w, p, x, eps, options.hidden);
          break;
        case 1:
          x = AttentionBlock(w, p, x, options.hidden);
          break;
        default:
          x = MlpBlock(w, p, x, options.hidden);
          break;
      }
    }
    block_outputs.push_back(x);
    if (b >= kSkipEvery && b % kSkipEvery == 0) {
      x = w.Node(p + "/skip/Add", "Add", {x, block_outputs[b - kSkipEvery]});
      block_outputs.back() = x;
    }
  }
  // Pad with activations to exactly --nodes.
  for (int64_t i = 0; w.num_nodes() < options.nodes; ++i) {
    x = w.Node(absl::StrCat("/tail/Relu_", i), "Relu", {x});
  }
  add_tensor_type(graph->add_output(), x);
  data.close();
  if (!data) return absl::InternalError(absl::StrCat("writing ", data_location, " failed"));

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !model.SerializeToOstream(&out)) {
    return absl::InternalError(absl::StrCat("cannot write ", options.path));
  }
  std::printf(
      "wrote %s: %d nodes, %d initializers (%lld bytes external in %s)\n", options.path.c_str(),
      graph->node_size(), graph->initializer_size(),
      static_cast<long long>(std::filesystem::file_size(path.parent_path() / data_location)),
      data_location.c_str());
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!arg.starts_with("--")) {
      options.path = arg;
      continue;
    }
    int64_t value = 0;
    if (i + 1 >= argc || !absl::SimpleAtoi(argv[i + 1], &value) || value < 0) {
      std::fprintf(stderr, "make_large_model: %s needs a non-negative number\n%s", arg.c_str(),
                   kUsage);
      return 1;
    }
    ++i;
    if (arg == "--nodes") {
      options.nodes = value;
    } else if (arg == "--hidden") {
      options.hidden = value;
    } else if (arg == "--seq") {
      options.seq = value;
    } else if (arg == "--seed") {
      options.seed = static_cast<uint64_t>(value);
    } else if (arg == "--external-min-bytes") {
      options.external_min_bytes = value;
    } else {
      std::fprintf(stderr, "make_large_model: unknown flag %s\n%s", arg.c_str(), kUsage);
      return 1;
    }
  }
  if (options.path.empty() || options.hidden < 2 || options.hidden % 2 != 0 || options.seq < 1) {
    std::fprintf(stderr, "make_large_model: give OUT.onnx; --hidden must be even\n%s", kUsage);
    return 1;
  }
  if (absl::Status s = Write(options); !s.ok()) {
    std::fprintf(stderr, "make_large_model: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace autopar::bench

int main(int argc, char** argv) { return autopar::bench::Main(argc, argv); }
