#include "costmodel/cost_graph.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace autopar::costmodel {
namespace {

// Fills a CSR offsets array from per-bucket counts.
std::vector<uint32_t> Offsets(const std::vector<uint32_t>& counts) {
  std::vector<uint32_t> offsets(counts.size() + 1, 0);
  for (size_t i = 0; i < counts.size(); ++i) offsets[i + 1] = offsets[i] + counts[i];
  return offsets;
}

// Items 0..n-1 bucketed by key(i), stable within a bucket.
template <typename Key>
std::pair<std::vector<uint32_t>, std::vector<uint32_t>> Bucket(uint32_t num_buckets, uint32_t n,
                                                               Key key) {
  std::vector<uint32_t> counts(num_buckets, 0);
  for (uint32_t i = 0; i < n; ++i) ++counts[key(i)];
  std::vector<uint32_t> offsets = Offsets(counts);
  std::vector<uint32_t> items(n);
  std::vector<uint32_t> cursor(offsets.begin(), offsets.end() - 1);
  for (uint32_t i = 0; i < n; ++i) items[cursor[key(i)]++] = i;
  return {std::move(offsets), std::move(items)};
}

}  // namespace

uint32_t CostGraph::Builder::AddUnit(UnitSpec unit) {
  units_.push_back(std::move(unit));
  return static_cast<uint32_t>(units_.size() - 1);
}

uint32_t CostGraph::Builder::AddParameter(int64_t bytes) {
  param_bytes_.push_back(bytes);
  return static_cast<uint32_t>(param_bytes_.size() - 1);
}

uint32_t CostGraph::Builder::AddTensor(TensorSpec tensor) {
  tensors_.push_back(std::move(tensor));
  return static_cast<uint32_t>(tensors_.size() - 1);
}

void CostGraph::Builder::AddUse(uint32_t tensor, uint32_t dst) { uses_.emplace_back(tensor, dst); }

absl::StatusOr<CostGraph> CostGraph::Builder::Build() && {
  const auto n = static_cast<uint32_t>(units_.size());
  const auto num_tensors = static_cast<uint32_t>(tensors_.size());
  CostGraph g;
  g.num_device_kinds_ = num_device_kinds_;

  // 1. Units.
  std::vector<uint32_t> param_counts(n);
  for (uint32_t u = 0; u < n; ++u) {
    UnitSpec& unit = units_[u];
    if (unit.compute_us.size() != static_cast<size_t>(num_device_kinds_)) {
      return absl::InvalidArgumentError(absl::StrCat("unit '", unit.name, "' has ",
                                                     unit.compute_us.size(), " compute times for ",
                                                     num_device_kinds_, " device kinds"));
    }
    int64_t bytes = 0;
    for (uint32_t p : unit.params) {
      if (p >= param_bytes_.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("unit '", unit.name, "' reads unknown parameter ", p));
      }
      bytes += param_bytes_[p];
    }
    param_counts[u] = static_cast<uint32_t>(unit.params.size());
    g.unit_param_bytes_.push_back(bytes);
    g.compute_us_.insert(g.compute_us_.end(), unit.compute_us.begin(), unit.compute_us.end());
    g.temp_bytes_.push_back(unit.temp_bytes);
    g.flops_.push_back(unit.flops);
    g.param_ids_.insert(g.param_ids_.end(), unit.params.begin(), unit.params.end());
    g.names_.push_back(std::move(unit.name));
    g.ops_.push_back(std::move(unit.op));
  }
  g.param_offsets_ = Offsets(param_counts);
  g.param_bytes_ = std::move(param_bytes_);

  // 2. Tensors and unit outputs.
  for (TensorSpec& t : tensors_) {
    if (t.producer >= n) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", t.name, "' has no producer"));
    }
    g.tensor_producer_.push_back(t.producer);
    g.tensor_bytes_.push_back(t.bytes);
    g.tensor_is_output_.push_back(t.is_graph_output ? 1 : 0);
    g.tensor_names_.push_back(std::move(t.name));
  }
  std::tie(g.output_offsets_, g.output_ids_) =
      Bucket(n, num_tensors, [&](uint32_t t) { return g.tensor_producer_[t]; });
  g.unit_output_bytes_.assign(n, 0);
  for (uint32_t t = 0; t < num_tensors; ++t) {
    g.unit_output_bytes_[g.tensor_producer_[t]] += g.tensor_bytes_[t];
  }

  // 3. Edges: one per distinct (tensor, reader), ordered by (source, tensor,
  //    destination) so that every iteration over them is deterministic.
  for (const auto& [tensor, dst] : uses_) {
    if (tensor >= num_tensors || dst >= n) {
      return absl::InvalidArgumentError("a use names an unknown tensor or unit");
    }
    uint32_t src = g.tensor_producer_[tensor];
    if (src >= dst) {
      return absl::InvalidArgumentError(
          absl::StrCat("units are not in topological order: '", g.names_[dst], "' reads tensor '",
                       g.tensor_names_[tensor], "' of '", g.names_[src], "'"));
    }
  }
  std::sort(uses_.begin(), uses_.end(), [&](const auto& a, const auto& b) {
    return std::make_tuple(g.tensor_producer_[a.first], a.first, a.second) <
           std::make_tuple(g.tensor_producer_[b.first], b.first, b.second);
  });
  uses_.erase(std::unique(uses_.begin(), uses_.end()), uses_.end());
  for (const auto& [tensor, dst] : uses_) {
    g.edge_src_.push_back(g.tensor_producer_[tensor]);
    g.edge_dst_.push_back(dst);
    g.edge_tensor_.push_back(tensor);
  }
  const auto num_edges = static_cast<uint32_t>(uses_.size());
  std::tie(g.out_offsets_, g.out_edges_) =
      Bucket(n, num_edges, [&](uint32_t e) { return g.edge_src_[e]; });
  std::tie(g.in_offsets_, g.in_edges_) =
      Bucket(n, num_edges, [&](uint32_t e) { return g.edge_dst_[e]; });
  std::tie(g.use_offsets_, g.use_edges_) =
      Bucket(num_tensors, num_edges, [&](uint32_t e) { return g.edge_tensor_[e]; });
  return g;
}

}  // namespace autopar::costmodel
