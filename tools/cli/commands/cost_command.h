// `onnx-autopar cost`: what every node of a model costs (MACs, FLOPs, bytes,
// parameters, memory) and how long it should take on a device, with totals
// and a per-operator breakdown — the cost model (costmodel/) made visible.
#ifndef AUTOPAR_TOOLS_CLI_COMMANDS_COST_COMMAND_H_
#define AUTOPAR_TOOLS_CLI_COMMANDS_COST_COMMAND_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/device.h"
#include "costmodel/node_cost.h"
#include "costmodel/op_costs.h"
#include "costmodel/training.h"
#include "nlohmann/json.hpp"
#include "passes/infer_shapes.h"
#include "pipeline/model_loading.h"

namespace autopar::tools {

/// A model with the cost of every node on one device.
struct ModelCost {
  pipeline::LoadedModel loaded;
  /// Indexed like loaded.graph.nodes().
  std::vector<costmodel::NodeCost> costs;
  std::vector<double> time_us;
  costmodel::CostTotals totals;
  double total_time_us = 0;
  costmodel::StepOptions step;
  /// Set for a training step; time_us is then forward + backward + update.
  std::optional<costmodel::TrainingCosts> training;
};

/// Loads `path` (shapes as `shape_options` say) and costs every node of one
/// `step` on `device`.
absl::StatusOr<ModelCost> CostModelFile(const std::string& path,
                                        const passes::ShapeOptions& shape_options,
                                        const costmodel::CostOptions& cost_options,
                                        const costmodel::DeviceSpec& device,
                                        const costmodel::StepOptions& step = {});

/// `cost --format json`'s document: {"model", "device", "totals": {"macs",
/// "flops", "param_bytes", "activation_bytes", "time_us"}, "nodes": [{"name",
/// "op", "macs", "flops", "bytes_read", "bytes_written", "param_bytes",
/// "output_bytes", "time_us"}]}, nodes in topological order. A training
/// step adds "mode": "training" and "optimizer", per node "backward_flops" and
/// "update_flops", and totals.training (see CostReportJson in the .cc).
nlohmann::ordered_json CostReportJson(const std::string& model_name, const ModelCost& cost,
                                      const costmodel::DeviceSpec& device);

/// Runs `onnx-autopar cost ARGS...`; returns the exit code.
int RunCostCommand(const std::vector<std::string>& args);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_COMMANDS_COST_COMMAND_H_
