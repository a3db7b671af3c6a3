#include "tools/cli/shape_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace autopar::tools {

std::vector<FlagSpec> ShapeFlagSpecs() {
  return {{"dim", true, true}, {"input-shape", true, true}};
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
  return options;
}

}  // namespace autopar::tools
