// SHA-256 (FIPS 180-4) of a file, for plan.json's "source.sha256": it ties a
// deployment to the exact model bytes it was made from. Streams the file, so
// a multi-gigabyte model costs no memory.
#ifndef AUTOPAR_TOOLS_SHA256_H_
#define AUTOPAR_TOOLS_SHA256_H_

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace autopar::tools {

/// Incremental SHA-256: Update() any number of times, then HexDigest() once.
class Sha256 {
 public:
  Sha256();
  void Update(std::string_view bytes);
  /// The digest as 64 lowercase hex digits. Finishes the hash: call once.
  std::string HexDigest();

 private:
  void Compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

/// The SHA-256 of a file's contents, as 64 lowercase hex digits.
absl::StatusOr<std::string> Sha256OfFile(const std::filesystem::path& path);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_SHA256_H_
