// Numbers as people read them, in every output: "44.6 MiB", "11,689,512".
#ifndef AUTOPAR_TOOLS_ARTIFACTS_HUMAN_NUMBERS_H_
#define AUTOPAR_TOOLS_ARTIFACTS_HUMAN_NUMBERS_H_

#include <cstdint>
#include <string>

#include "costmodel/node_times.h"

namespace autopar::tools {

/// "44.6 MiB", "512 B".
std::string FormatBytes(int64_t bytes);

/// "11,689,512".
std::string FormatCount(int64_t count);

/// Where the node times come from: "cost model", or "measured for 120
/// nodes; 3 more predicted x 1.42 (median measured / predicted)".
std::string CostSourceText(const costmodel::CostSource& source);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_ARTIFACTS_HUMAN_NUMBERS_H_
