#include "tools/bench/graph_families.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"

namespace autopar::bench {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

// Adds units in order; each `Add` returns the unit's single output tensor.
class Maker {
 public:
  Maker(uint64_t seed, int kinds) : rng_(seed), kinds_(kinds), builder_(kinds) {}

  // A unit of `compute_us` reading `inputs`, writing `out_bytes`, holding
  // `param_bytes` of weights.
  uint32_t Add(const std::string& op, double compute_us, const std::vector<uint32_t>& inputs,
               int64_t out_bytes, int64_t param_bytes = 0) {
    costmodel::CostGraph::UnitSpec unit;
    unit.name = absl::StrCat(op, "_", next_);
    unit.op = op;
    for (int k = 0; k < kinds_; ++k) unit.compute_us.push_back(compute_us * (1 + k));
    if (param_bytes > 0) unit.params.push_back(builder_.AddParameter(param_bytes));
    unit.flops = static_cast<int64_t>(compute_us * 1e6);
    uint32_t u = builder_.AddUnit(std::move(unit));
    uint32_t t = builder_.AddTensor({.name = absl::StrCat("t", next_), .producer = u, .bytes = out_bytes});
    for (uint32_t in : inputs) builder_.AddUse(in, u);
    ++next_;
    return t;
  }
  void MarkOutput(uint32_t tensor) { outputs_.push_back(tensor); }

  double Uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
  uint32_t count() const { return next_; }

  costmodel::CostGraph Build() && {
    // The graph output is the last tensor.
    absl::StatusOr<costmodel::CostGraph> g = std::move(builder_).Build();
    return *std::move(g);  // generators only produce valid graphs
  }

 private:
  std::mt19937_64 rng_;
  int kinds_;
  costmodel::CostGraph::Builder builder_;
  uint32_t next_ = 0;
  std::vector<uint32_t> outputs_;
};

// Layers of ~sqrt(n)/2 units; each reads 1–3 units of the two previous layers.
costmodel::CostGraph LayeredDag(uint32_t units, uint64_t seed, int kinds) {
  Maker m(seed, kinds);
  const uint32_t width = std::max<uint32_t>(4, static_cast<uint32_t>(std::sqrt(units) / 2));
  std::vector<uint32_t> previous, older, current;
  while (m.count() < units) {
    current.clear();
    for (uint32_t i = 0; i < width && m.count() < units; ++i) {
      std::vector<uint32_t> inputs;
      if (!previous.empty()) {
        int fan_in = 1 + static_cast<int>(m.Below(3));
        for (int k = 0; k < fan_in; ++k) {
          const std::vector<uint32_t>& from = (!older.empty() && m.Below(4) == 0) ? older : previous;
          inputs.push_back(from[m.Below(static_cast<uint32_t>(from.size()))]);
        }
      }
      current.push_back(m.Add("Op", m.Uniform(10, 100), inputs,
                              static_cast<int64_t>(m.Uniform(16, 1024)) * kKiB,
                              static_cast<int64_t>(m.Uniform(0, 4)) * kMiB));
    }
    older = previous;
    previous = current;
  }
  return std::move(m).Build();
}

// Bottleneck blocks: conv → bn/relu → conv → bn/relu → conv → add(skip).
costmodel::CostGraph ResNetChain(uint32_t units, uint64_t seed, int kinds) {
  Maker m(seed, kinds);
  uint32_t x = m.Add("Conv", 80, {}, 3 * kMiB, 40 * kKiB);
  while (m.count() + 6 <= units) {
    const double scale = m.Uniform(0.5, 2.0);
    uint32_t a = m.Add("Conv", 60 * scale, {x}, 1 * kMiB, static_cast<int64_t>(256 * kKiB * scale));
    uint32_t b = m.Add("Relu", 5 * scale, {a}, 1 * kMiB);
    uint32_t c = m.Add("Conv", 120 * scale, {b}, 1 * kMiB, static_cast<int64_t>(2 * kMiB * scale));
    uint32_t d = m.Add("Relu", 5 * scale, {c}, 1 * kMiB);
    uint32_t e = m.Add("Conv", 60 * scale, {d}, 3 * kMiB, static_cast<int64_t>(1 * kMiB * scale));
    x = m.Add("Add", 8 * scale, {e, x}, 3 * kMiB);
  }
  while (m.count() < units) x = m.Add("Relu", 5, {x}, 3 * kMiB);
  return std::move(m).Build();
}

// Encoder layers: LN → Q, K, V → scores → softmax → context → proj → add →
// LN → FFN up → GELU → FFN down → add (13 units).
costmodel::CostGraph TransformerStack(uint32_t units, uint64_t seed, int kinds) {
  Maker m(seed, kinds);
  const int64_t hidden = 2 * kMiB;      // activations of one layer
  const int64_t weight = 9 * kMiB / 4;  // a 768×768 fp32 matrix
  uint32_t x = m.Add("Gather", 20, {}, hidden, 90 * kMiB);
  while (m.count() + 13 <= units) {
    uint32_t ln = m.Add("LayerNormalization", 10, {x}, hidden, 6 * kKiB);
    uint32_t q = m.Add("MatMul", 90, {ln}, hidden, weight);
    uint32_t k = m.Add("MatMul", 90, {ln}, hidden, weight);
    uint32_t v = m.Add("MatMul", 90, {ln}, hidden, weight);
    uint32_t s = m.Add("MatMul", 40, {q, k}, 6 * kMiB);
    uint32_t p = m.Add("Softmax", 25, {s}, 6 * kMiB);
    uint32_t c = m.Add("MatMul", 40, {p, v}, hidden);
    uint32_t o = m.Add("MatMul", 90, {c}, hidden, weight);
    uint32_t r = m.Add("Add", 6, {o, x}, hidden);
    uint32_t ln2 = m.Add("LayerNormalization", 10, {r}, hidden, 6 * kKiB);
    uint32_t up = m.Add("MatMul", 360, {ln2}, 4 * hidden, 4 * weight);
    uint32_t g = m.Add("Gelu", 20, {up}, 4 * hidden);
    uint32_t down = m.Add("MatMul", 360, {g}, hidden, 4 * weight);
    x = m.Add("Add", 6, {down, r}, hidden);
  }
  while (m.count() < units) x = m.Add("Identity", 1, {x}, hidden);
  return std::move(m).Build();
}

// Blocks of four parallel branches (1, 2, 3 and 2 units) joined by a Concat.
costmodel::CostGraph InceptionBlocks(uint32_t units, uint64_t seed, int kinds) {
  Maker m(seed, kinds);
  uint32_t x = m.Add("Conv", 100, {}, 2 * kMiB, 100 * kKiB);
  const int lengths[] = {1, 2, 3, 2};
  while (m.count() + 9 <= units) {
    std::vector<uint32_t> ends;
    for (int len : lengths) {
      uint32_t y = x;
      for (int i = 0; i < len; ++i) {
        y = m.Add("Conv", m.Uniform(20, 120), {y}, static_cast<int64_t>(m.Uniform(0.25, 1)) * kMiB + kMiB / 2,
                  static_cast<int64_t>(m.Uniform(64, 1024)) * kKiB);
      }
      ends.push_back(y);
    }
    x = m.Add("Concat", 10, ends, 2 * kMiB);
  }
  while (m.count() < units) x = m.Add("Relu", 5, {x}, 2 * kMiB);
  return std::move(m).Build();
}

}  // namespace

std::string GraphFamilyName(GraphFamily family) {
  switch (family) {
    case GraphFamily::kLayeredDag:
      return "layered";
    case GraphFamily::kResNetChain:
      return "resnet";
    case GraphFamily::kTransformerStack:
      return "transformer";
    case GraphFamily::kInceptionBlocks:
      return "inception";
  }
  return "";
}

std::vector<GraphFamily> AllGraphFamilies() {
  return {GraphFamily::kLayeredDag, GraphFamily::kResNetChain, GraphFamily::kTransformerStack,
          GraphFamily::kInceptionBlocks};
}

costmodel::CostGraph MakeGraph(GraphFamily family, uint32_t units, uint64_t seed, int device_kinds) {
  switch (family) {
    case GraphFamily::kLayeredDag:
      return LayeredDag(units, seed, device_kinds);
    case GraphFamily::kResNetChain:
      return ResNetChain(units, seed, device_kinds);
    case GraphFamily::kTransformerStack:
      return TransformerStack(units, seed, device_kinds);
    case GraphFamily::kInceptionBlocks:
      return InceptionBlocks(units, seed, device_kinds);
  }
  return LayeredDag(units, seed, device_kinds);
}

}  // namespace autopar::bench
