// A small command-line parser for the onnx-autopar subcommands. Flags live
// only in tools/ (the libraries take option structs, so tests and the
// benchmarks call them without a command line): each command declares the flags it takes
// and maps them onto the option structs of the libraries.
#ifndef AUTOPAR_TOOLS_CLI_ARGS_H_
#define AUTOPAR_TOOLS_CLI_ARGS_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace autopar::tools {

struct FlagSpec {
  std::string name;  // without dashes: "format"
  bool takes_value;  // --format json vs --force
  bool repeatable = false;
};

class ParsedArgs {
 public:
  const std::vector<std::string>& positional() const { return positional_; }
  bool Has(std::string_view flag) const { return values_.contains(std::string(flag)); }
  /// The last value given for a flag.
  std::optional<std::string> Get(std::string_view flag) const;
  /// Every value given for a repeatable flag, in order.
  std::vector<std::string> GetAll(std::string_view flag) const;

 private:
  friend absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>&,
                                              const std::vector<FlagSpec>&);
  std::vector<std::string> positional_;
  std::map<std::string, std::vector<std::string>> values_;
};

/// Parses `--flag value`, `--flag=value`, `-o value` (as --output) and
/// positional arguments; `--` ends the flags. Unknown flags and missing values
/// are errors that name the flag.
absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                                     const std::vector<FlagSpec>& specs);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_ARGS_H_
