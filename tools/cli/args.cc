#include "tools/cli/args.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace autopar::tools {

std::optional<std::string> ParsedArgs::Get(std::string_view flag) const {
  auto it = values_.find(std::string(flag));
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> ParsedArgs::GetAll(std::string_view flag) const {
  auto it = values_.find(std::string(flag));
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                                     const std::vector<FlagSpec>& specs) {
  ParsedArgs parsed;
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (flags_done || arg == "-" || !absl::StartsWith(arg, "-")) {
      parsed.positional_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    std::string name = arg == "-o" ? "output" : arg.substr(absl::StartsWith(arg, "--") ? 2 : 1);
    std::optional<std::string> value;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& s : specs) {
      if (s.name == name) spec = &s;
    }
    if (spec == nullptr)
      return absl::InvalidArgumentError(absl::StrCat("unknown flag '", arg, "'"));
    if (spec->takes_value && !value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
      }
      value = args[++i];
    }
    if (!spec->takes_value && value) {
      return absl::InvalidArgumentError(absl::StrCat("flag --", name, " takes no value"));
    }
    std::vector<std::string>& slot = parsed.values_[name];
    if (!spec->repeatable) slot.clear();
    slot.push_back(value.value_or(""));
  }
  return parsed;
}

}  // namespace autopar::tools
