#include "tools/cli/triton_flags.h"

#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace autopar::tools {

std::vector<FlagSpec> TritonFlagSpecs() {
  return {{"triton", false}, {"triton-gpus", true}, {"triton-max-batch", true}};
}

absl::StatusOr<TritonFlags> TritonFlagsFromArgs(const ParsedArgs& args) {
  TritonFlags flags{.write = args.Has("triton")};
  if (flags.write && !args.Has("stages")) {
    return absl::InvalidArgumentError("--triton needs --stages (Triton serves the stage models)");
  }
  if (std::optional<std::string> batch = args.Get("triton-max-batch")) {
    if (!flags.write)
      return absl::InvalidArgumentError("--triton-max-batch applies to --triton only");
    if (!absl::SimpleAtoi(*batch, &flags.max_batch_size) || flags.max_batch_size < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--triton-max-batch takes a batch size (0: no batching); '", *batch, "' is not one"));
    }
  }
  std::optional<std::string> gpus = args.Get("triton-gpus");
  if (!gpus) return flags;
  if (!flags.write) return absl::InvalidArgumentError("--triton-gpus applies to --triton only");
  for (absl::string_view item : absl::StrSplit(*gpus, ',')) {
    int32_t gpu = -1;
    if (!absl::SimpleAtoi(item, &gpu) || gpu < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--triton-gpus takes GPU indices like 0,1,2,3; '", item, "' is not one"));
    }
    flags.gpus.push_back(gpu);
  }
  return flags;
}

absl::Status CheckTritonGpus(const TritonFlags& flags, int num_devices) {
  if (flags.gpus.empty() || flags.gpus.size() >= static_cast<size_t>(num_devices)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("the plan has ", num_devices,
                                                 " devices but --triton-gpus lists ",
                                                 flags.gpus.size(), "; give a GPU for each"));
}

}  // namespace autopar::tools
