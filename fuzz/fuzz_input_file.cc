#include "fuzz/fuzz_input_file.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <system_error>

namespace autopar::fuzz {

FuzzInputFile::FuzzInputFile(const std::string& name) {
  std::string pattern = (std::filesystem::temp_directory_path() / "autopar-fuzz-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    std::perror("autopar fuzz: cannot create a temporary folder");
    std::abort();
  }
  directory_ = pattern;
  path_ = directory_ / name;
}

FuzzInputFile::~FuzzInputFile() {
  std::error_code ignored;
  std::filesystem::remove_all(directory_, ignored);
}

const std::filesystem::path& FuzzInputFile::Write(const uint8_t* data, size_t size) {
  std::ofstream out(path_, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "autopar fuzz: cannot write %s\n", path_.c_str());
    std::abort();
  }
  return path_;
}

void AbortOnInternalError(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kInternal) return;
  std::fprintf(stderr, "autopar fuzz: internal error: %s\n", status.ToString().c_str());
  std::abort();
}

}  // namespace autopar::fuzz
