#include "tools/cli/shape_flags.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace autopar::tools {

std::vector<FlagSpec> ShapeFlagSpecs() {
  return {{"dim", true, true},
          {"input-shape", true, true},
          {"input-value", true, true},
          {"loop-trips", true},
          {"strict-shapes", false}};
}

absl::StatusOr<passes::ShapeOptions> ShapeOptionsFromArgs(const ParsedArgs& args) {
  passes::ShapeOptions options;
  for (const std::string& text : args.GetAll("dim")) {
    std::pair<std::string, std::string> kv = absl::StrSplit(text, absl::MaxSplits('=', 1));
    int64_t value = 0;
    if (kv.first.empty() || !absl::SimpleAtoi(kv.second, &value) || value <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--dim expects NAME=VALUE with a positive VALUE, got '", text, "'"));
    }
    options.dim_values[kv.first] = value;
  }
  for (const std::string& text : args.GetAll("input-shape")) {
    std::pair<std::string, std::string> kv = absl::StrSplit(text, absl::MaxSplits('=', 1));
    std::vector<int64_t> dims;
    bool ok = !kv.first.empty();
    if (!kv.second.empty()) {
      for (absl::string_view part : absl::StrSplit(kv.second, ',')) {
        int64_t d = 0;
        ok = ok && absl::SimpleAtoi(part, &d) && d >= 0;
        dims.push_back(d);
      }
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--input-shape expects NAME=D0,D1,... with non-negative dims, got '", text, "'"));
    }
    options.input_shapes[kv.first] = std::move(dims);
  }
  for (const std::string& text : args.GetAll("input-value")) {
    std::pair<std::string, std::string> kv = absl::StrSplit(text, absl::MaxSplits('=', 1));
    std::vector<double> values;
    bool ok = !kv.first.empty() && !kv.second.empty();
    if (ok) {
      for (absl::string_view part : absl::StrSplit(kv.second, ',')) {
        double v = 0;
        if (part == "true")
          v = 1;
        else if (part == "false")
          v = 0;
        else
          ok = ok && absl::SimpleAtod(part, &v) && std::isfinite(v);
        values.push_back(v);
      }
    }
    if (!ok || static_cast<int64_t>(values.size()) > passes::kMaxFoldedElements) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--input-value expects NAME=V[,V...] with numbers (or true/false), got '", text, "'"));
    }
    options.input_values[kv.first] = std::move(values);
  }
  if (std::optional<std::string> text = args.Get("loop-trips")) {
    int64_t trips = 0;
    if (!absl::SimpleAtoi(*text, &trips) || trips <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--loop-trips expects a positive integer, got '", *text, "'"));
    }
    options.loop_trips = trips;
  }
  options.estimate = !args.Has("strict-shapes");
  return options;
}

std::vector<std::string> EstimateLines(const std::vector<passes::ShapeEstimate>& estimates) {
  constexpr size_t kMaxShown = 3;
  std::vector<std::string> lines;
  for (passes::EstimateKind kind :
       {passes::EstimateKind::kUnnamedInputDim, passes::EstimateKind::kIfBranch,
        passes::EstimateKind::kLoopTrips, passes::EstimateKind::kDataDependentSize}) {
    std::vector<const passes::ShapeEstimate*> of_kind;
    for (const passes::ShapeEstimate& e : estimates) {
      if (e.kind == kind) of_kind.push_back(&e);
    }
    if (of_kind.empty()) continue;
    std::string line = absl::StrCat("estimated ", of_kind.size(), " ",
                                    std::string(passes::EstimateKindName(kind)), "(s): ");
    for (size_t i = 0; i < of_kind.size() && i < kMaxShown; ++i) {
      absl::StrAppend(&line, i ? "; " : "", "'", of_kind[i]->value, "' ", of_kind[i]->assumed);
    }
    if (of_kind.size() > kMaxShown)
      absl::StrAppend(&line, "; and ", of_kind.size() - kMaxShown, " more");
    absl::StrAppend(&line, " (--strict-shapes refuses instead)");
    lines.push_back(std::move(line));
  }
  return lines;
}

void PrintEstimates(const std::vector<passes::ShapeEstimate>& estimates) {
  for (const std::string& line : EstimateLines(estimates)) {
    std::fprintf(stderr, "onnx-autopar: %s\n", line.c_str());
  }
}

}  // namespace autopar::tools
