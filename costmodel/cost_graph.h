// CostGraph: the frozen, search-facing view of a model.
// Placement units in topological order with per-device-kind compute times,
// the tensors they exchange, and CSR adjacency — flat arrays, no pointers, so
// that the simulator and the searches touch only contiguous memory.
//
// Note [Tensors and edges]: a unit's output tensor may feed several units. The
// tensor is the thing that crosses a link (once per destination device); an
// edge (src → dst, tensor) records one consumer. Edges of a unit are stored
// grouped by source in `out_edges` order and by destination in `in_edges`.
//
// Note [Shared parameters]: weights are identified so that a weight read by
// units on two devices is counted on both (replicated) but only once per
// device. Graphs read from the tool-neutral JSON format have one private
// parameter block per unit.
#ifndef AUTOPAR_COSTMODEL_COST_GRAPH_H_
#define AUTOPAR_COSTMODEL_COST_GRAPH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace autopar::costmodel {

class CostGraph {
 public:
  /// What a builder supplies for one unit.
  struct UnitSpec {
    std::string name;
    std::string op;
    /// Compute time on each device kind of the cluster, µs.
    std::vector<double> compute_us;
    /// Parameter blocks (ids into the graph's parameters) this unit reads.
    std::vector<uint32_t> params;
    /// Temporary memory while the unit runs.
    int64_t temp_bytes = 0;
    /// Arithmetic of the unit, for reports.
    int64_t flops = 0;
  };
  /// One tensor: produced by `producer`, `bytes` large.
  struct TensorSpec {
    std::string name;
    uint32_t producer = 0;
    int64_t bytes = 0;
    /// Graph outputs stay allocated until the step ends.
    bool is_graph_output = false;
  };

  class Builder {
   public:
    explicit Builder(int num_device_kinds) : num_device_kinds_(num_device_kinds) {}
    uint32_t AddUnit(UnitSpec unit);
    uint32_t AddParameter(int64_t bytes);
    uint32_t AddTensor(TensorSpec tensor);
    /// `dst` reads `tensor`.
    void AddUse(uint32_t tensor, uint32_t dst);
    /// Freezes the graph; fails when units are not in topological order
    /// (some use reads a tensor of a later unit), ids are out of range, or a
    /// unit lacks a time for some device kind.
    absl::StatusOr<CostGraph> Build() &&;

   private:
    int num_device_kinds_;
    std::vector<UnitSpec> units_;
    std::vector<int64_t> param_bytes_;
    std::vector<TensorSpec> tensors_;
    std::vector<std::pair<uint32_t, uint32_t>> uses_;  // (tensor, dst)
  };

  // --- Sizes ---------------------------------------------------------------
  uint32_t num_units() const { return static_cast<uint32_t>(names_.size()); }
  uint32_t num_tensors() const { return static_cast<uint32_t>(tensor_bytes_.size()); }
  uint32_t num_edges() const { return static_cast<uint32_t>(edge_src_.size()); }
  uint32_t num_params() const { return static_cast<uint32_t>(param_bytes_.size()); }
  int num_device_kinds() const { return num_device_kinds_; }

  // --- Units ---------------------------------------------------------------
  const std::string& name(uint32_t u) const { return names_[u]; }
  const std::string& op(uint32_t u) const { return ops_[u]; }
  double compute_us(uint32_t u, int kind) const {
    return compute_us_[static_cast<size_t>(u) * num_device_kinds_ + kind];
  }
  /// Replaces a unit's time on one kind: measured times replacing predicted
  /// ones (costmodel/node_times.h), before the graph is searched.
  void set_compute_us(uint32_t u, int kind, double us) {
    compute_us_[static_cast<size_t>(u) * num_device_kinds_ + kind] = us;
  }
  int64_t temp_bytes(uint32_t u) const { return temp_bytes_[u]; }
  int64_t flops(uint32_t u) const { return flops_[u]; }
  /// Parameter blocks the unit reads.
  absl::Span<const uint32_t> params(uint32_t u) const {
    return Slice(param_ids_, param_offsets_, u);
  }
  int64_t param_bytes(uint32_t p) const { return param_bytes_[p]; }
  /// Sum of the unit's parameter blocks.
  int64_t unit_param_bytes(uint32_t u) const { return unit_param_bytes_[u]; }
  /// Output tensors of the unit.
  absl::Span<const uint32_t> outputs(uint32_t u) const {
    return Slice(output_ids_, output_offsets_, u);
  }
  /// Sum of the unit's output tensor bytes.
  int64_t output_bytes(uint32_t u) const { return unit_output_bytes_[u]; }

  // --- Tensors -------------------------------------------------------------
  const std::string& tensor_name(uint32_t t) const { return tensor_names_[t]; }
  uint32_t tensor_producer(uint32_t t) const { return tensor_producer_[t]; }
  int64_t tensor_bytes(uint32_t t) const { return tensor_bytes_[t]; }
  bool tensor_is_graph_output(uint32_t t) const { return tensor_is_output_[t] != 0; }
  /// Edges reading the tensor.
  absl::Span<const uint32_t> tensor_uses(uint32_t t) const {
    return Slice(use_edges_, use_offsets_, t);
  }

  // --- Edges ---------------------------------------------------------------
  uint32_t edge_src(uint32_t e) const { return edge_src_[e]; }
  uint32_t edge_dst(uint32_t e) const { return edge_dst_[e]; }
  uint32_t edge_tensor(uint32_t e) const { return edge_tensor_[e]; }
  int64_t edge_bytes(uint32_t e) const { return tensor_bytes_[edge_tensor_[e]]; }
  /// Edges leaving / entering a unit.
  absl::Span<const uint32_t> out_edges(uint32_t u) const {
    return Slice(out_edges_, out_offsets_, u);
  }
  absl::Span<const uint32_t> in_edges(uint32_t u) const { return Slice(in_edges_, in_offsets_, u); }

 private:
  static absl::Span<const uint32_t> Slice(const std::vector<uint32_t>& items,
                                          const std::vector<uint32_t>& offsets, uint32_t i) {
    return absl::MakeConstSpan(items.data() + offsets[i], offsets[i + 1] - offsets[i]);
  }

  int num_device_kinds_ = 1;
  std::vector<std::string> names_;
  std::vector<std::string> ops_;
  std::vector<double> compute_us_;  // [unit * num_device_kinds + kind]
  std::vector<int64_t> temp_bytes_;
  std::vector<int64_t> flops_;
  std::vector<uint32_t> param_offsets_, param_ids_;
  std::vector<int64_t> param_bytes_;
  std::vector<int64_t> unit_param_bytes_;
  std::vector<uint32_t> output_offsets_, output_ids_;
  std::vector<int64_t> unit_output_bytes_;
  std::vector<std::string> tensor_names_;
  std::vector<uint32_t> tensor_producer_;
  std::vector<int64_t> tensor_bytes_;
  std::vector<uint8_t> tensor_is_output_;
  std::vector<uint32_t> use_offsets_, use_edges_;
  std::vector<uint32_t> edge_src_, edge_dst_, edge_tensor_;
  std::vector<uint32_t> out_offsets_, out_edges_;
  std::vector<uint32_t> in_offsets_, in_edges_;
};

}  // namespace autopar::costmodel

#endif  // AUTOPAR_COSTMODEL_COST_GRAPH_H_
