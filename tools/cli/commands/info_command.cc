#include "tools/cli/commands/info_command.h"

#include <cstdio>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "pipeline/model_loading.h"
#include "tools/cli/cli_output.h"
#include "tools/cli/exit_codes.h"
#include "tools/cli/shape_flags.h"

namespace autopar::tools {
namespace {

constexpr char kUsage[] = R"(usage: onnx-autopar info MODEL.onnx [--format text|json]
                         [--dim NAME=VALUE]... [--input-shape NAME=D0,D1,...]...
                         [--input-value NAME=V,...]... [--loop-trips N] [--strict-shapes]

Prints what the model contains: node count (nodes inside If/Loop/Scan bodies
counted separately), operator histogram, opsets, parameters (initializers and
Constant-held weights), inputs and outputs with shapes, and the dims that are
still unresolved.

examples:
  onnx-autopar info resnet50.onnx
  onnx-autopar info bert.onnx --dim batch=1 --dim sequence=128 --format json
)";

struct ParameterTotals {
  int64_t count = 0;
  int64_t bytes = 0;
  int64_t tensors = 0;
};

void AddParameters(const ir::Graph& graph, ParameterTotals& totals) {
  for (const ir::Value& v : graph.values()) {
    if (!v.is_parameter) continue;
    ++totals.tensors;
    totals.count += v.shape.NumElements().value_or(0);
    totals.bytes += v.SizeBytes().value_or(0);
  }
  for (const ir::Node& node : graph.nodes()) {
    for (const ir::Subgraph& s : node.subgraphs) AddParameters(*s.body, totals);
  }
}

void CountOps(const ir::Graph& graph, std::map<std::string, int64_t>& ops) {
  for (const ir::Node& node : graph.nodes()) {
    std::string key =
        node.domain.empty() ? node.op_type : absl::StrCat(node.domain, ".", node.op_type);
    ++ops[key];
  }
}

nlohmann::ordered_json ShapeJson(const ir::Shape& shape) {
  if (!shape.has_rank()) return nullptr;
  nlohmann::ordered_json dims = nlohmann::ordered_json::array();
  for (const ir::Dim& d : shape.dims()) {
    if (d.known()) {
      dims.push_back(d.value);
    } else if (!d.symbol.empty()) {
      dims.push_back(d.symbol);
    } else {
      dims.push_back(nullptr);
    }
  }
  return dims;
}

nlohmann::ordered_json ValuesJson(const ir::Graph& graph, const std::vector<ir::ValueId>& ids) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (ir::ValueId id : ids) {
    const ir::Value& v = graph.value(id);
    list.push_back({{"name", v.name},
                    {"dtype", std::string(ir::DTypeName(v.dtype))},
                    {"shape", ShapeJson(v.shape)}});
  }
  return list;
}

std::string ValuesText(const ir::Graph& graph, const std::vector<ir::ValueId>& ids) {
  std::vector<std::string> lines;
  for (ir::ValueId id : ids) {
    const ir::Value& v = graph.value(id);
    lines.push_back(
        absl::StrCat(v.name, " ", std::string(ir::DTypeName(v.dtype)), " ", v.shape.ToString()));
  }
  return absl::StrJoin(lines, "\n             ");
}

}  // namespace

nlohmann::ordered_json ModelInfoJson(const ir::Graph& graph) {
  std::map<std::string, int64_t> ops;
  CountOps(graph, ops);
  ParameterTotals params;
  AddParameters(graph, params);
  nlohmann::ordered_json opsets = nlohmann::ordered_json::object();
  for (const auto& [domain, version] : graph.opset_imports()) {
    opsets[domain.empty() ? "ai.onnx" : domain] = version;
  }
  nlohmann::ordered_json ops_json = nlohmann::ordered_json::object();
  for (const auto& [op, count] : ops) ops_json[op] = count;
  std::vector<std::string> unresolved = passes::UnresolvedInputDims(graph);
  return {{"nodes", graph.num_nodes()},
          {"subgraph_nodes", graph.NumSubgraphNodes()},
          {"ops", ops_json},
          {"opsets", opsets},
          {"parameters", params.count},
          {"parameter_bytes", params.bytes},
          {"parameter_tensors", params.tensors},
          {"inputs", ValuesJson(graph, graph.inputs())},
          {"outputs", ValuesJson(graph, graph.outputs())},
          {"unresolved_dims", unresolved},
          {"values_without_static_shape", passes::ValuesWithoutStaticShape(graph).size()}};
}

int RunInfoCommand(const std::vector<std::string>& args) {
  std::vector<FlagSpec> specs = ShapeFlagSpecs();
  specs.push_back({"format", true});
  specs.push_back({"help", false});
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, specs);
  if (!parsed.ok()) return UsageError(parsed.status().message(), kUsage);
  if (parsed->Has("help")) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (parsed->positional().size() != 1) return UsageError("info takes one model file", kUsage);
  std::string format = parsed->Get("format").value_or("text");
  if (format != "text" && format != "json") {
    return UsageError(absl::StrCat("--format must be text or json, not '", format, "'"), kUsage);
  }
  absl::StatusOr<passes::ShapeOptions> options = ShapeOptionsFromArgs(*parsed);
  if (!options.ok()) return UsageError(options.status().message(), kUsage);
  options->require_static = false;  // info reports what is unresolved instead

  absl::StatusOr<pipeline::LoadedModel> loaded =
      pipeline::LoadAndAnalyze(parsed->positional()[0], *options);
  if (!loaded.ok()) return ReportError(loaded.status());
  PrintEstimates(loaded->estimates);

  nlohmann::ordered_json info = ModelInfoJson(loaded->graph);
  if (format == "json") {
    std::printf("%s\n", info.dump(2).c_str());
    return kExitOk;
  }
  const ir::Graph& g = loaded->graph;
  std::vector<std::string> ops;
  for (const auto& [op, count] : info["ops"].items())
    ops.push_back(absl::StrCat(op, " ", count.get<int64_t>()));
  std::vector<std::string> opsets;
  for (const auto& [domain, version] : info["opsets"].items()) {
    opsets.push_back(absl::StrCat(domain, " ", version.get<int64_t>()));
  }
  std::vector<std::string> unresolved = info["unresolved_dims"].get<std::vector<std::string>>();
  std::printf("model        %s\n", parsed->positional()[0].c_str());
  std::printf("nodes        %zu (+%lld in subgraphs)\n", g.num_nodes(),
              static_cast<long long>(g.NumSubgraphNodes()));
  std::printf("opsets       %s\n", absl::StrJoin(opsets, ", ").c_str());
  std::printf("parameters   %s (%s) in %lld tensors\n",
              FormatCount(info["parameters"].get<int64_t>()).c_str(),
              FormatBytes(info["parameter_bytes"].get<int64_t>()).c_str(),
              static_cast<long long>(info["parameter_tensors"].get<int64_t>()));
  std::printf("inputs       %s\n", ValuesText(g, g.inputs()).c_str());
  std::printf("outputs      %s\n", ValuesText(g, g.outputs()).c_str());
  std::printf("ops          %s\n", absl::StrJoin(ops, ", ").c_str());
  std::printf("unresolved   %s\n",
              unresolved.empty() ? "none" : absl::StrJoin(unresolved, "; ").c_str());
  return kExitOk;
}

}  // namespace autopar::tools
