#include "tools/artifacts/human_numbers.h"

#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace autopar::tools {

std::string FormatBytes(int64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? absl::StrCat(bytes, " B") : absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

std::string FormatCount(int64_t count) {
  std::string digits = absl::StrCat(count < 0 ? -count : count);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return count < 0 ? "-" + out : out;
}

std::string CostSourceText(const costmodel::CostSource& source) {
  if (!source.measured) return "cost model";
  std::string text = absl::StrCat("measured for ", source.measured_nodes,
                                  source.measured_nodes == 1 ? " node" : " nodes");
  if (source.scaled_nodes > 0) {
    absl::StrAppend(
        &text, "; ", source.scaled_nodes,
        absl::StrFormat(" more predicted x %.3g (median measured / predicted)", source.scale));
  }
  return text;
}

}  // namespace autopar::tools
