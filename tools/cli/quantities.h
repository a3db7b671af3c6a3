// Sizes and durations as users type them: "16GiB", "512MB", "1.5e9", "10s",
// "2m", "250ms".
#ifndef AUTOPAR_TOOLS_CLI_QUANTITIES_H_
#define AUTOPAR_TOOLS_CLI_QUANTITIES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace autopar::tools {

/// Bytes: a number with an optional unit B, KB/MB/GB/TB (powers of 1000) or
/// KiB/MiB/GiB/TiB (powers of 1024); case-insensitive; must be positive.
absl::StatusOr<int64_t> ParseByteSize(const std::string& text);

/// Seconds: a number with an optional unit ms, s (default), m, h.
absl::StatusOr<double> ParseDurationSeconds(const std::string& text);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_QUANTITIES_H_
