// Exit codes of onnx-autopar, documented in the README.
#ifndef AUTOPAR_TOOLS_CLI_EXIT_CODES_H_
#define AUTOPAR_TOOLS_CLI_EXIT_CODES_H_

#include "absl/status/status.h"
#include "pipeline/cluster_request.h"

namespace autopar::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 1;       // bad flags or arguments
inline constexpr int kExitBadInput = 2;    // the model or another input file is unusable
inline constexpr int kExitInfeasible = 3;  // no placement fits the devices
inline constexpr int kExitInternal = 4;    // a bug or an I/O failure on our side

/// The exit code for a failed status.
inline int ExitCodeFor(const absl::Status& status) {
  // A flag combination that cannot work with the input it was given.
  if (pipeline::IsRequestConflict(status)) return kExitUsage;
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kOutOfRange:
      return kExitBadInput;
    case absl::StatusCode::kAlreadyExists:  // an output folder, without --force
      return kExitUsage;
    case absl::StatusCode::kResourceExhausted:
      return kExitInfeasible;
    default:
      return kExitInternal;
  }
}

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_EXIT_CODES_H_
