#include "tools/cli/quantities.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace autopar::tools {
namespace {

// Splits "16GiB" into 16 and "gib"; false when there is no leading number.
bool SplitNumber(const std::string& text, double& number, std::string& unit) {
  const char* begin = text.c_str();
  char* end = nullptr;
  number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(number)) return false;
  // "16 GiB" as well as "16GiB" (a quoted argument may hold the space).
  unit = absl::AsciiStrToLower(absl::StripAsciiWhitespace(end));
  return true;
}

}  // namespace

absl::StatusOr<int64_t> ParseByteSize(const std::string& text) {
  double number = 0;
  std::string unit;
  if (!SplitNumber(text, number, unit)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a size (e.g. 16GiB, 512MB)"));
  }
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  if (unit == "kb") scale = 1e3;
  if (unit == "mb") scale = 1e6;
  if (unit == "gb") scale = 1e9;
  if (unit == "tb") scale = 1e12;
  if (unit == "kib") scale = 1024.0;
  if (unit == "mib") scale = 1024.0 * 1024;
  if (unit == "gib") scale = 1024.0 * 1024 * 1024;
  if (unit == "tib") scale = 1024.0 * 1024 * 1024 * 1024;
  const double bytes = number * scale;
  if (scale == 0 || bytes < 1 || bytes > 9.2e18) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a positive size (e.g. 16GiB, 512MB)"));
  }
  return static_cast<int64_t>(bytes);
}

absl::StatusOr<double> ParseDurationSeconds(const std::string& text) {
  double number = 0;
  std::string unit;
  if (!SplitNumber(text, number, unit)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a duration (e.g. 10s, 2m)"));
  }
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  if (unit == "ms") scale = 1e-3;
  if (unit == "m" || unit == "min") scale = 60;
  if (unit == "h") scale = 3600;
  if (scale == 0 || number < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a duration (e.g. 10s, 2m)"));
  }
  return number * scale;
}

}  // namespace autopar::tools
