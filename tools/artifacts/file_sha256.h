// SHA-256 of a file, for plan.json's "source.sha256": it ties a deployment to
// the exact model bytes it was made from. OpenSSL's libcrypto does the
// hashing; the file is streamed, so a multi-gigabyte model costs no memory.
#ifndef AUTOPAR_TOOLS_ARTIFACTS_FILE_SHA256_H_
#define AUTOPAR_TOOLS_ARTIFACTS_FILE_SHA256_H_

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"

namespace autopar::tools {

/// The SHA-256 of a file's contents, as 64 lowercase hex digits.
absl::StatusOr<std::string> Sha256OfFile(const std::filesystem::path& path);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_ARTIFACTS_FILE_SHA256_H_
