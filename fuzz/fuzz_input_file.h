// A private scratch file for fuzz targets whose code under test reads a path:
// each input is written to it, so the target runs the same file-reading code
// the CLI does (external-data locations resolve inside the private folder).
#ifndef AUTOPAR_FUZZ_FUZZ_INPUT_FILE_H_
#define AUTOPAR_FUZZ_FUZZ_INPUT_FILE_H_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/status/status.h"

namespace autopar::fuzz {

/// A file named `name` in a fresh temporary folder of its own, removed with
/// the object.
class FuzzInputFile {
 public:
  explicit FuzzInputFile(const std::string& name);
  FuzzInputFile(const FuzzInputFile&) = delete;
  FuzzInputFile& operator=(const FuzzInputFile&) = delete;
  ~FuzzInputFile();

  /// Replaces the file's contents with `data` and returns its path.
  const std::filesystem::path& Write(const uint8_t* data, size_t size);

 private:
  std::filesystem::path directory_;
  std::filesystem::path path_;
};

/// Aborts (a finding) when `status` is an internal error: the code under test
/// says one of its own invariants broke, which bad input must never cause.
/// Any other error is the expected answer to bad input.
void AbortOnInternalError(const absl::Status& status);

}  // namespace autopar::fuzz

#endif  // AUTOPAR_FUZZ_FUZZ_INPUT_FILE_H_
