#include "tools/cli/commands/cost_command.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "costmodel/cost_graph_json.h"
#include "costmodel/node_times.h"
#include "passes/annotate_costs.h"
#include "tools/cli/cli_output.h"
#include "tools/cli/cluster_flags.h"
#include "tools/cli/exit_codes.h"
#include "tools/cli/mode_flags.h"
#include "tools/cli/quantities.h"
#include "tools/cli/shape_flags.h"

namespace autopar::tools {
namespace {

using costmodel::NodeCost;

constexpr char kUsage[] =
    R"(usage: onnx-autopar cost MODEL.onnx [--device PRESET|FILE] [--format table|csv|json]
                         [--top N] [--by-op] [--node-times FILE]
                         [--mode inference|training] [--optimizer sgd|momentum|adam|adamw]
                         [--dim NAME=VALUE]... [--input-shape NAME=D0,D1,...]...
                         [--input-value NAME=V,...]... [--loop-trips N] [--strict-shapes]

Prints what every node costs — MACs (multiply-accumulates of conv, matmul,
gemm, attention, RNN gates), FLOPs (2 per MAC plus all other arithmetic),
parameters read, memory (its outputs plus its workspace) — and its predicted
time on the device (a roofline: kernel overhead + max(compute, memory)),
then the totals.

flags:
  --device D        a preset (v100, a100-80gb, h100, h200, t4, l4, cpu, cpu:N)
                    or a device JSON file; default cpu
  --format F        table (default), csv, json, or costgraph (the tool-neutral
                    cost-graph JSON for --devices N [--memory-per-device SIZE])
  --node-times FILE with --format costgraph: measured node times replace the
                    predicted ones (measure.mjs output or {"node": us}; nodes
                    the file does not name are scaled by the median
                    measured/predicted ratio of those it names)
  --top N           only the N nodes with the longest predicted time
  --by-op           a breakdown per operator type (csv: instead of the nodes)
  --loop-trips N    iterations of loops whose trip count is not a constant
                    (default 10)
  --mode M          inference (default) or training: a training step's time
                    per node is forward + backward + the optimizer's update,
                    and the totals add gradients, optimizer state and the
                    activations kept for the backward pass
  --optimizer O     adam (default), sgd or momentum; with --mode training
  --dim, --input-shape   bind symbolic input dims and unnamed ones
  --input-value NAME=V,...  an input's contents (a sample rate, a max length);
                    an If on it is costed as its taken branch
  --strict-shapes   fail instead of estimating a shape (unnamed input dims
                    as 1, an If as its larger branch, loop trip counts)

examples:
  onnx-autopar cost resnet50.onnx --device a100-80gb --top 10 --by-op
  onnx-autopar cost bert.onnx --dim batch=1 --dim sequence=128 --format json
  onnx-autopar cost resnet50.onnx --device v100 --mode training --optimizer sgd
)";

// "4.09G", "237.6M", "12.3K", "512".
std::string FormatSi(int64_t value) {
  if (value == costmodel::kSaturatedCount) return "overflow";
  constexpr std::pair<double, const char*> kUnits[] = {
      {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "K"}};
  double v = static_cast<double>(value);
  for (const auto& [scale, suffix] : kUnits) {
    if (v < scale) continue;
    double scaled = v / scale;
    return scaled < 10    ? absl::StrFormat("%.2f%s", scaled, suffix)
           : scaled < 100 ? absl::StrFormat("%.1f%s", scaled, suffix)
                          : absl::StrFormat("%.0f%s", scaled, suffix);
  }
  return absl::StrCat(value);
}

std::string OpName(const ir::Node& node) {
  return node.domain.empty() ? node.op_type : absl::StrCat(node.domain, ".", node.op_type);
}

std::string OutputShape(const ir::Graph& graph, const ir::Node& node) {
  std::vector<std::string> shapes;
  for (ir::ValueId id : node.outputs) {
    if (id.valid()) shapes.push_back(graph.value(id).shape.ToString());
  }
  if (shapes.empty()) return "-";
  if (shapes.size() == 1) return shapes[0];
  return absl::StrCat(shapes[0], " +", shapes.size() - 1);
}

// Keeps the end of long names: that is where exporters put what differs.
std::string Fit(const std::string& text, size_t width) {
  if (text.size() <= width) return text;
  return "..." + text.substr(text.size() - (width - 3));
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char ch : text) {
    if (ch == '"') quoted.push_back('"');
    quoted.push_back(ch);
  }
  return quoted + "\"";
}

// The nodes to list: all in topological order, or the top N by time.
std::vector<size_t> SelectNodes(const ModelCost& cost, std::optional<int64_t> top) {
  std::vector<size_t> order(cost.costs.size());
  std::iota(order.begin(), order.end(), 0);
  if (!top) return order;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return cost.time_us[a] > cost.time_us[b]; });
  order.resize(std::min<size_t>(order.size(), static_cast<size_t>(*top)));
  return order;
}

struct OpSummary {
  int64_t nodes = 0;
  costmodel::Count macs;
  costmodel::Count flops;
  costmodel::Count param_bytes;
  double time_us = 0;
};

// Per operator type, by descending time (then name).
std::vector<std::pair<std::string, OpSummary>> SummarizeByOp(const ModelCost& cost) {
  std::map<std::string, OpSummary> by_op;
  const ir::Graph& graph = cost.loaded.graph;
  for (size_t i = 0; i < cost.costs.size(); ++i) {
    OpSummary& s = by_op[OpName(graph.nodes()[i])];
    ++s.nodes;
    s.macs += cost.costs[i].macs;
    s.flops += cost.costs[i].flops;
    s.param_bytes += cost.costs[i].param_bytes;
    s.time_us += cost.time_us[i];
  }
  std::vector<std::pair<std::string, OpSummary>> rows(by_op.begin(), by_op.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.time_us > b.second.time_us;
  });
  return rows;
}

nlohmann::ordered_json ByOpJson(const ModelCost& cost) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& [op, s] : SummarizeByOp(cost)) {
    rows.push_back({{"op", op},
                    {"nodes", s.nodes},
                    {"macs", s.macs.value()},
                    {"flops", s.flops.value()},
                    {"param_bytes", s.param_bytes.value()},
                    {"time_us", s.time_us}});
  }
  return rows;
}

void PrintTable(const std::string& model_name, const ModelCost& cost,
                const costmodel::DeviceSpec& device, std::optional<int64_t> top, bool by_op) {
  const ir::Graph& graph = cost.loaded.graph;
  std::vector<size_t> rows = SelectNodes(cost, top);
  size_t name_width = 4;
  size_t op_width = 2;
  size_t shape_width = 6;
  for (size_t i : rows) {
    const ir::Node& node = graph.nodes()[i];
    name_width = std::max(name_width, std::min<size_t>(node.name.size(), 48));
    op_width = std::max(op_width, std::min<size_t>(OpName(node).size(), 32));
    shape_width = std::max(shape_width, std::min<size_t>(OutputShape(graph, node).size(), 28));
  }
  std::printf("model   %s\n", model_name.c_str());
  std::printf(
      "device  %s%s\n", device.name.c_str(),
      device.description.empty() ? "" : absl::StrCat(" (", device.description, ")").c_str());
  if (cost.training) {
    std::printf("step    %s: time_us is forward + backward + update\n",
                StepDescription(cost.step).c_str());
  }
  if (top) {
    std::printf("nodes   top %zu of %zu by predicted time\n", rows.size(), cost.costs.size());
  }
  std::printf("\n%-*s  %-*s  %-*s  %9s  %9s  %10s  %10s  %10s\n", static_cast<int>(name_width),
              "name", static_cast<int>(op_width), "op", static_cast<int>(shape_width), "output",
              "MACs", "FLOPs", "params", "memory", "time_us");
  for (size_t i : rows) {
    const ir::Node& node = graph.nodes()[i];
    const NodeCost& c = cost.costs[i];
    std::string flags = c.has_formula ? (c.estimated ? " ~" : "") : " ?";
    std::printf("%-*s  %-*s  %-*s  %9s  %9s  %10s  %10s  %10.2f%s\n", static_cast<int>(name_width),
                Fit(node.name, name_width).c_str(), static_cast<int>(op_width),
                Fit(OpName(node), op_width).c_str(), static_cast<int>(shape_width),
                Fit(OutputShape(graph, node), shape_width).c_str(), FormatSi(c.macs).c_str(),
                FormatSi(c.flops).c_str(), FormatBytes(c.param_bytes).c_str(),
                FormatBytes((costmodel::Count(c.output_bytes) + c.workspace_bytes).value()).c_str(),
                cost.time_us[i], flags.c_str());
  }
  const costmodel::CostTotals& t = cost.totals;
  std::printf("\ntotal   %lld nodes: %s MACs, %s FLOPs, params %s, activations %s, %.1f us\n",
              static_cast<long long>(t.nodes), FormatSi(t.macs).c_str(), FormatSi(t.flops).c_str(),
              FormatBytes(t.param_bytes).c_str(), FormatBytes(t.activation_bytes).c_str(),
              cost.total_time_us);
  if (const std::optional<costmodel::TrainingCosts>& tr = cost.training) {
    std::printf(
        "train   backward %s FLOPs, update %s FLOPs; trainable params %s + gradients %s + "
        "optimizer state %s; saved activations %s\n",
        FormatSi(tr->backward_flops).c_str(), FormatSi(tr->update_flops).c_str(),
        FormatBytes(tr->trainable_param_bytes).c_str(), FormatBytes(tr->gradient_bytes).c_str(),
        FormatBytes(tr->optimizer_state_bytes).c_str(),
        FormatBytes((costmodel::Count(tr->saved_activation_bytes) + tr->persistent_bytes).value())
            .c_str());
  }
  if (t.nodes_without_formula > 0) {
    std::printf("note    %lld nodes (marked ?) have no cost formula: counted as bytes only\n",
                static_cast<long long>(t.nodes_without_formula));
  }
  if (t.nodes_estimated > 0) {
    std::printf(
        "note    %lld nodes (marked ~) have estimated sizes (control-flow bodies, "
        "unknown trip counts)\n",
        static_cast<long long>(t.nodes_estimated));
  }
  if (t.saturated)
    std::printf("note    some counts overflowed int64 and are shown as 'overflow'\n");
  if (!by_op) return;

  std::vector<std::pair<std::string, OpSummary>> ops = SummarizeByOp(cost);
  size_t width = 2;
  for (const auto& [op, s] : ops) width = std::max(width, op.size());
  std::printf("\n%-*s  %6s  %9s  %9s  %10s  %11s  %6s\n", static_cast<int>(width), "op", "nodes",
              "MACs", "FLOPs", "params", "time_us", "time%");
  for (const auto& [op, s] : ops) {
    double share = cost.total_time_us > 0 ? 100.0 * s.time_us / cost.total_time_us : 0.0;
    std::printf("%-*s  %6lld  %9s  %9s  %10s  %11.2f  %5.1f%%\n", static_cast<int>(width),
                op.c_str(), static_cast<long long>(s.nodes), FormatSi(s.macs.value()).c_str(),
                FormatSi(s.flops.value()).c_str(), FormatBytes(s.param_bytes.value()).c_str(),
                s.time_us, share);
  }
}

void PrintCsv(const ModelCost& cost, std::optional<int64_t> top, bool by_op) {
  if (by_op) {
    std::printf("op,nodes,macs,flops,param_bytes,time_us\n");
    for (const auto& [op, s] : SummarizeByOp(cost)) {
      std::printf("%s,%lld,%lld,%lld,%lld,%.3f\n", CsvField(op).c_str(),
                  static_cast<long long>(s.nodes), static_cast<long long>(s.macs.value()),
                  static_cast<long long>(s.flops.value()),
                  static_cast<long long>(s.param_bytes.value()), s.time_us);
    }
    return;
  }
  const ir::Graph& graph = cost.loaded.graph;
  std::printf(
      "name,op,output_shape,macs,flops,bytes_read,bytes_written,param_bytes,output_bytes,"
      "workspace_bytes,op_class,rule,estimated,time_us\n");
  for (size_t i : SelectNodes(cost, top)) {
    const ir::Node& node = graph.nodes()[i];
    const NodeCost& c = cost.costs[i];
    std::printf("%s,%s,%s,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%s,%s,%d,%.3f\n",
                CsvField(node.name).c_str(), CsvField(OpName(node)).c_str(),
                CsvField(OutputShape(graph, node)).c_str(), static_cast<long long>(c.macs),
                static_cast<long long>(c.flops), static_cast<long long>(c.bytes_read),
                static_cast<long long>(c.bytes_written), static_cast<long long>(c.param_bytes),
                static_cast<long long>(c.output_bytes), static_cast<long long>(c.workspace_bytes),
                std::string(costmodel::OpClassName(c.op_class)).c_str(),
                std::string(costmodel::CostRuleName(c.rule)).c_str(), c.estimated ? 1 : 0,
                cost.time_us[i]);
  }
}

absl::StatusOr<int64_t> PositiveFlag(const ParsedArgs& args, const char* flag) {
  std::optional<std::string> text = args.Get(flag);
  int64_t value = 0;
  if (!absl::SimpleAtoi(*text, &value) || value <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " expects a positive integer, got '", *text, "'"));
  }
  return value;
}

}  // namespace

absl::StatusOr<ModelCost> CostModelFile(const std::string& path,
                                        const passes::ShapeOptions& shape_options,
                                        const costmodel::CostOptions& cost_options,
                                        const costmodel::DeviceSpec& device,
                                        const costmodel::StepOptions& step) {
  absl::StatusOr<pipeline::LoadedModel> loaded = pipeline::LoadAndAnalyze(path, shape_options);
  if (!loaded.ok()) return loaded.status();
  PrintEstimates(loaded->estimates);
  ModelCost cost;
  cost.loaded = *std::move(loaded);
  cost.costs = costmodel::ComputeGraphCosts(cost.loaded.graph, cost_options);
  cost.totals = costmodel::SumCosts(cost.loaded.graph, cost.costs);
  cost.step = step;
  if (step.mode == costmodel::StepMode::kTraining) {
    cost.training = costmodel::ComputeTrainingCosts(cost.loaded.graph, cost.costs, step.optimizer);
  }
  cost.time_us.reserve(cost.costs.size());
  for (size_t i = 0; i < cost.costs.size(); ++i) {
    cost.time_us.push_back(
        cost.training ? costmodel::TrainingTimeUs(cost.costs[i], cost.training->nodes[i], device)
                      : costmodel::PredictTimeUs(cost.costs[i], device));
    cost.total_time_us += cost.time_us.back();
  }
  return cost;
}

nlohmann::ordered_json CostReportJson(const std::string& model_name, const ModelCost& cost,
                                      const costmodel::DeviceSpec& device) {
  const ir::Graph& graph = cost.loaded.graph;
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (size_t i = 0; i < cost.costs.size(); ++i) {
    const NodeCost& c = cost.costs[i];
    nodes.push_back({{"name", graph.nodes()[i].name},
                     {"op", OpName(graph.nodes()[i])},
                     {"macs", c.macs},
                     {"flops", c.flops},
                     {"bytes_read", c.bytes_read},
                     {"bytes_written", c.bytes_written},
                     {"param_bytes", c.param_bytes},
                     {"output_bytes", c.output_bytes},
                     {"time_us", cost.time_us[i]},
                     {"op_class", std::string(costmodel::OpClassName(c.op_class))},
                     {"kernels", c.kernels}});
    if (cost.training) {
      nodes.back()["backward_flops"] = cost.training->nodes[i].backward.flops;
      nodes.back()["update_flops"] = cost.training->nodes[i].update.flops;
    }
  }
  nlohmann::ordered_json report = {{"model", model_name},
                                   {"device", device.name},
                                   {"totals",
                                    {{"macs", cost.totals.macs},
                                     {"flops", cost.totals.flops},
                                     {"param_bytes", cost.totals.param_bytes},
                                     {"activation_bytes", cost.totals.activation_bytes},
                                     {"time_us", cost.total_time_us}}},
                                   {"nodes", nodes}};
  if (const std::optional<costmodel::TrainingCosts>& t = cost.training) {
    // Forward figures stay in "flops" and the other totals; the step adds these.
    report["mode"] = std::string(costmodel::StepModeName(cost.step.mode));
    report["optimizer"] = std::string(costmodel::OptimizerName(cost.step.optimizer));
    report["totals"]["training"] = {{"backward_flops", t->backward_flops},
                                    {"update_flops", t->update_flops},
                                    {"trainable_param_bytes", t->trainable_param_bytes},
                                    {"gradient_bytes", t->gradient_bytes},
                                    {"optimizer_state_bytes", t->optimizer_state_bytes},
                                    {"saved_activation_bytes", t->saved_activation_bytes},
                                    {"persistent_bytes", t->persistent_bytes}};
  }
  return report;
}

// The tool-neutral cost graph (costmodel/cost_graph_json.h) of the model for
// --devices devices of the chosen kind, so that any placement tool can read it.
absl::StatusOr<std::string> CostGraphJsonText(const std::string& path, const ParsedArgs& args,
                                              const passes::ShapeOptions& shapes,
                                              const costmodel::CostOptions& costs,
                                              const costmodel::StepOptions& step,
                                              const costmodel::DeviceSpec& device) {
  absl::StatusOr<int> devices = DeviceCountFlag(args, 1);
  if (!devices.ok()) return devices.status();
  absl::StatusOr<int64_t> memory = MemoryPerDeviceFlag(args, device.memory_bytes);
  if (!memory.ok()) return memory.status();
  const pipeline::Link link = pipeline::DefaultLink(device);
  costmodel::Cluster cluster = costmodel::MakeHomogeneousCluster(
      device, *devices, *memory, link.bandwidth_bytes_per_s, link.latency_us);
  absl::StatusOr<pipeline::LoadedModel> loaded = pipeline::LoadAndAnalyze(path, shapes);
  if (!loaded.ok()) return loaded.status();
  PrintEstimates(loaded->estimates);
  absl::StatusOr<passes::AnnotatedGraph> annotated =
      passes::AnnotateCosts(loaded->graph, cluster, costs, step);
  if (!annotated.ok()) return annotated.status();
  if (std::optional<std::string> file = args.Get("node-times")) {
    absl::StatusOr<costmodel::NodeTimes> times = costmodel::LoadNodeTimesFile(*file);
    if (!times.ok()) return times.status();
    absl::StatusOr<costmodel::CostSource> source =
        costmodel::ApplyNodeTimes(*times, annotated->graph);
    if (!source.ok()) return source.status();
  }
  return costmodel::CostGraphToJson(annotated->graph, &cluster).dump(2);
}

int RunCostCommand(const std::vector<std::string>& args) {
  std::vector<FlagSpec> specs = ShapeFlagSpecs();
  specs.push_back({"device", true});
  specs.push_back({"format", true});
  specs.push_back({"top", true});
  specs.push_back({"by-op", false});
  specs.push_back({"devices", true});
  specs.push_back({"memory-per-device", true});
  specs.push_back({"node-times", true});
  for (const FlagSpec& s : ModeFlagSpecs()) specs.push_back(s);
  specs.push_back({"help", false});
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, specs);
  if (!parsed.ok()) return UsageError(parsed.status().message(), kUsage);
  if (parsed->Has("help")) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (parsed->positional().size() != 1) return UsageError("cost takes one model file", kUsage);
  std::string format = parsed->Get("format").value_or("table");
  if (format != "table" && format != "csv" && format != "json" && format != "costgraph") {
    return UsageError(
        absl::StrCat("--format must be table, csv, json or costgraph, not '", format, "'"), kUsage);
  }
  if (parsed->Has("node-times") && format != "costgraph") {
    return UsageError("--node-times applies to --format costgraph", kUsage);
  }
  std::optional<int64_t> top;
  if (parsed->Has("top")) {
    absl::StatusOr<int64_t> n = PositiveFlag(*parsed, "top");
    if (!n.ok()) return UsageError(n.status().message(), kUsage);
    top = *n;
  }
  costmodel::CostOptions cost_options;
  // --loop-trips sizes the loops' shapes (ShapeOptions) and their costs.
  if (parsed->Has("loop-trips")) {
    absl::StatusOr<int64_t> n = PositiveFlag(*parsed, "loop-trips");
    if (!n.ok()) return UsageError(n.status().message(), kUsage);
    cost_options.default_loop_trips = *n;
  }
  absl::StatusOr<costmodel::StepOptions> step = StepOptionsFromArgs(*parsed);
  if (!step.ok()) return UsageError(step.status().message(), kUsage);
  absl::StatusOr<passes::ShapeOptions> shape_options = ShapeOptionsFromArgs(*parsed);
  if (!shape_options.ok()) return UsageError(shape_options.status().message(), kUsage);
  if (absl::Status cluster = CheckClusterFlags(*parsed); !cluster.ok()) {
    return UsageError(cluster.message(), kUsage);
  }
  shape_options->require_static = true;  // costs need every shape

  absl::StatusOr<costmodel::DeviceSpec> device =
      costmodel::ResolveDevice(parsed->Get("device").value_or("cpu"));
  if (!device.ok()) return ReportError(device.status());

  const std::string& path = parsed->positional()[0];
  if (format == "costgraph") {
    absl::StatusOr<std::string> graph =
        CostGraphJsonText(path, *parsed, *shape_options, cost_options, *step, *device);
    if (!graph.ok()) return ReportError(graph.status());
    std::printf("%s\n", graph->c_str());
    return kExitOk;
  }
  absl::StatusOr<ModelCost> cost =
      CostModelFile(path, *shape_options, cost_options, *device, *step);
  if (!cost.ok()) return ReportError(cost.status());

  bool by_op = parsed->Has("by-op");
  if (format == "json") {
    nlohmann::ordered_json report = CostReportJson(path, *cost, *device);
    if (top) {
      nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
      for (size_t i : SelectNodes(*cost, top)) nodes.push_back(report["nodes"][i]);
      report["nodes"] = nodes;
    }
    if (by_op) report["by_op"] = ByOpJson(*cost);
    std::printf("%s\n", report.dump(2).c_str());
  } else if (format == "csv") {
    PrintCsv(*cost, top, by_op);
  } else {
    PrintTable(path, *cost, *device, top, by_op);
  }
  return kExitOk;
}

}  // namespace autopar::tools
