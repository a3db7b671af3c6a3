// The main command's flags for a Triton Inference Server model repository
// (tools/artifacts/triton/triton_repository.h):
//   --triton              also write OUT_DIR/triton/ (needs --stages)
//   --triton-gpus 0,1,..  device k of the plan runs on the k-th listed GPU;
//                         without it device k runs on GPU k
//   --triton-max-batch N  max_batch_size of a repository whose stages batch
//                         (default 8; 0: never batch)
#ifndef AUTOPAR_TOOLS_CLI_TRITON_FLAGS_H_
#define AUTOPAR_TOOLS_CLI_TRITON_FLAGS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tools/cli/args.h"

namespace autopar::tools {

/// --triton, --triton-gpus, --triton-max-batch.
std::vector<FlagSpec> TritonFlagSpecs();

struct TritonFlags {
  bool write = false;
  /// The GPU of each device; empty: device k runs on GPU k.
  std::vector<int32_t> gpus;
  /// TritonRepositoryOptions::max_batch_size.
  int32_t max_batch_size = 8;
};

/// The flags of TritonFlagSpecs(). --triton without --stages, --triton-gpus
/// or --triton-max-batch without --triton, a batch size that is not a
/// non-negative integer, and a GPU list that is not comma-separated
/// non-negative integers are InvalidArgument errors naming the flag.
absl::StatusOr<TritonFlags> TritonFlagsFromArgs(const ParsedArgs& args);

/// Fails, naming both counts, when --triton-gpus lists fewer GPUs than the
/// plan has devices.
absl::Status CheckTritonGpus(const TritonFlags& flags, int num_devices);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_TRITON_FLAGS_H_
