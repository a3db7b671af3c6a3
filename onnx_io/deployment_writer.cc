#include "onnx_io/deployment_writer.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2 (glibc, _GNU_SOURCE)
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <system_error>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace autopar::onnx_io {
namespace {

namespace fs = std::filesystem;

// "out/" and "out/." name the folder "out".
fs::path NormalizedDir(const fs::path& dir) {
  fs::path p = fs::absolute(dir).lexically_normal();
  while (p.has_parent_path() && p.filename().empty()) p = p.parent_path();
  return p;
}

absl::Status CheckRelativePath(const std::string& path, std::set<std::string>& seen) {
  const fs::path p = fs::path(path).lexically_normal();
  if (path.empty() || p.is_absolute() || p.empty() || *p.begin() == ".." || p.filename().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write '", path, "': not a file path inside the output folder"));
  }
  if (!seen.insert(p.string()).second) {
    return absl::InvalidArgumentError(absl::StrCat("the file '", path, "' is written twice"));
  }
  return absl::OkStatus();
}

// True when `inner` is `outer` or lies inside it.
bool IsWithin(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(inner, ec);
  if (ec) return false;
  const fs::path b = fs::weakly_canonical(outer, ec);
  if (ec) return false;
  auto [end_b, end_a] = std::mismatch(b.begin(), b.end(), a.begin(), a.end());
  return end_b == b.end();
}

std::string ErrnoText(int err) { return std::strerror(err); }

// Creates a hidden sibling folder of `out_dir` (same file system, so the
// final rename is atomic). mkdir applies the umask, unlike mkdtemp's 0700,
// so the output folder gets the permissions a plain mkdir would give it.
absl::StatusOr<fs::path> MakeTempSibling(const fs::path& out_dir) {
  std::random_device random;
  for (int attempt = 0; attempt < 100; ++attempt) {
    fs::path path =
        out_dir.parent_path() / absl::StrCat(".", out_dir.filename().string(), ".tmp-", getpid(),
                                             "-", absl::Hex(random(), absl::kZeroPad8));
    if (mkdir(path.c_str(), 0777) == 0) return path;
    if (errno != EEXIST) {
      const int err = errno;
      return absl::PermissionDeniedError(absl::StrCat(
          "cannot create a folder in '", out_dir.parent_path().string(), "': ", ErrnoText(err)));
    }
  }
  return absl::PermissionDeniedError(
      absl::StrCat("cannot create a temporary folder in '", out_dir.parent_path().string(), "'"));
}

// Removes the temporary folder unless the write succeeded.
class TempDirGuard {
 public:
  explicit TempDirGuard(fs::path path) : path_(std::move(path)) {}
  TempDirGuard(const TempDirGuard&) = delete;
  TempDirGuard& operator=(const TempDirGuard&) = delete;
  ~TempDirGuard() {
    if (path_.empty()) return;
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  void Release() { path_.clear(); }

 private:
  fs::path path_;
};

absl::Status WriteFile(const fs::path& path, const std::string& contents) {
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  stream.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  stream.close();
  if (!stream)
    return absl::PermissionDeniedError(absl::StrCat("cannot write '", path.string(), "'"));
  return absl::OkStatus();
}

// A second file of a model already written to `first` (a stage model is also
// a Triton repository's model.onnx): its weights file is a hard link to the
// first one's (a copy where the file system cannot link), so tens of GB of
// weights are written once; the small protobuf is the first one's with its
// external-data location renamed.
absl::Status WriteCopyOf(const fs::path& first, const fs::path& path) {
  onnx::ModelProto proto;
  {
    std::ifstream stream(first, std::ios::binary);
    if (!stream || !proto.ParseFromIstream(&stream)) {
      return absl::DataLossError(absl::StrCat("cannot read back '", first.string(), "'"));
    }
  }
  const std::string first_data = first.filename().string() + ".data";
  const std::string data = path.filename().string() + ".data";
  bool external = false;
  for (onnx::TensorProto& t : *proto.mutable_graph()->mutable_initializer()) {
    for (onnx::StringStringEntryProto& e : *t.mutable_external_data()) {
      if (e.key() != "location" || e.value() != first_data) continue;
      e.set_value(data);
      external = true;
    }
  }
  if (external) {
    const fs::path from = fs::path(first.string() + ".data");
    const fs::path to = fs::path(path.string() + ".data");
    std::error_code linked;
    fs::create_hard_link(from, to, linked);
    if (linked) {
      std::error_code copied;
      fs::copy_file(from, to, copied);
      if (copied) {
        return absl::PermissionDeniedError(
            absl::StrCat("cannot write '", to.string(), "': ", copied.message()));
      }
    }
  }
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  if (!stream || !proto.SerializeToOstream(&stream)) {
    return absl::PermissionDeniedError(absl::StrCat("cannot write '", path.string(), "'"));
  }
  return absl::OkStatus();
}

absl::Status MakeParents(const fs::path& file) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create '", file.parent_path().string(), "': ", ec.message()));
  }
  return absl::OkStatus();
}

// Moves the finished temporary folder to `out_dir`, which must not exist.
absl::Status CommitNew(const fs::path& temp, const fs::path& out_dir) {
  if (renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, out_dir.c_str(), RENAME_NOREPLACE) == 0) {
    return absl::OkStatus();
  }
  int err = errno;
  if (err == EINVAL || err == ENOSYS) {
    // The file system cannot refuse to replace; plain rename (which still
    // fails on a non-empty folder).
    if (rename(temp.c_str(), out_dir.c_str()) == 0) return absl::OkStatus();
    err = errno;
  }
  if (err == EEXIST || err == ENOTEMPTY) {
    return absl::AlreadyExistsError(absl::StrCat("the output folder '", out_dir.string(),
                                                 "' already exists (use --force to replace it)"));
  }
  return absl::PermissionDeniedError(
      absl::StrCat("cannot create '", out_dir.string(), "': ", ErrnoText(err)));
}

// Replaces the existing folder `out_dir` with `temp`; the old contents end up
// in `temp`'s place, for the caller to delete.
absl::Status CommitReplace(const fs::path& temp, const fs::path& out_dir) {
  if (renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, out_dir.c_str(), RENAME_EXCHANGE) == 0) {
    return absl::OkStatus();
  }
  int err = errno;
  if (err != EINVAL && err != ENOSYS) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot replace '", out_dir.string(), "': ", ErrnoText(err)));
  }
  // No atomic exchange here: move the old folder aside, the new one in, and
  // the old one back where the new one was.
  fs::path aside = temp;
  aside += ".old";
  if (rename(out_dir.c_str(), aside.c_str()) != 0) {
    err = errno;
    return absl::PermissionDeniedError(
        absl::StrCat("cannot replace '", out_dir.string(), "': ", ErrnoText(err)));
  }
  if (rename(temp.c_str(), out_dir.c_str()) != 0) {
    err = errno;
    rename(aside.c_str(), out_dir.c_str());  // put the old folder back
    return absl::PermissionDeniedError(
        absl::StrCat("cannot replace '", out_dir.string(), "': ", ErrnoText(err)));
  }
  if (rename(aside.c_str(), temp.c_str()) != 0) {
    std::error_code ec;
    fs::remove_all(aside, ec);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteDeployment(const fs::path& out_dir_arg, const Model& source,
                             const DeploymentFiles& files, const WriteOptions& options) {
  const fs::path out_dir = NormalizedDir(out_dir_arg);
  const fs::path parent = out_dir.parent_path();
  if (out_dir.filename().empty() || out_dir == parent) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", out_dir_arg.string(), "' cannot be an output folder"));
  }
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) {
    return absl::NotFoundError(absl::StrCat("cannot write '", out_dir_arg.string(),
                                            "': the folder '", parent.string(),
                                            "' does not exist"));
  }
  const fs::file_status status = fs::symlink_status(out_dir, ec);
  const bool exists = fs::exists(status);
  if (exists && !options.force) {
    return absl::AlreadyExistsError(absl::StrCat("the output folder '", out_dir_arg.string(),
                                                 "' already exists (use --force to replace it)"));
  }
  if (exists && !fs::is_directory(status)) {
    return absl::AlreadyExistsError(
        absl::StrCat("'", out_dir_arg.string(), "' exists and is not a folder; not replacing it"));
  }
  if (exists && !source.path.empty() && IsWithin(source.path, out_dir)) {
    return absl::InvalidArgumentError(
        absl::StrCat("not replacing '", out_dir_arg.string(), "': it holds the input model"));
  }
  // Once per weights file, not per tensor: IsWithin resolves paths on disk,
  // and a large model has hundreds of thousands of tensors in one file.
  std::set<fs::path> weight_files;
  if (exists) {
    for (const auto& [name, ref] : source.external_data) weight_files.insert(ref.file);
  }
  for (const fs::path& file : weight_files) {
    if (IsWithin(file, out_dir)) {
      return absl::InvalidArgumentError(absl::StrCat("not replacing '", out_dir_arg.string(),
                                                     "': it holds the input model's weights"));
    }
  }

  std::set<std::string> seen;
  for (const ModelFile& file : files.models) {
    if (file.model == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("no model given for '", file.path, "'"));
    }
    if (absl::Status s = CheckRelativePath(file.path, seen); !s.ok()) return s;
    if (absl::Status s = CheckRelativePath(file.path + ".data", seen); !s.ok()) return s;
  }
  for (const auto& [path, contents] : files.extra_files) {
    if (absl::Status s = CheckRelativePath(path, seen); !s.ok()) return s;
  }
  for (const std::string& folder : files.folders) {
    if (absl::Status s = CheckRelativePath(folder, seen); !s.ok()) return s;
  }

  absl::StatusOr<fs::path> temp_path = MakeTempSibling(out_dir);
  if (!temp_path.ok()) return temp_path.status();
  TempDirGuard temp(*std::move(temp_path));

  // A model listed twice is written once, then copied (WriteCopyOf): per
  // file, the index of the first file of its model.
  std::vector<size_t> first_of(files.models.size());
  {
    std::map<const onnx::ModelProto*, size_t> first_by_model;
    for (size_t i = 0; i < files.models.size(); ++i) {
      first_of[i] = first_by_model.emplace(files.models[i].model, i).first->second;
    }
  }
  // Progress over all files: each file's bytes count on from the files before;
  // a copy counts nothing.
  std::vector<int64_t> file_bytes;
  int64_t total_bytes = 0;
  if (options.on_progress) {
    for (size_t i = 0; i < files.models.size(); ++i) {
      file_bytes.push_back(
          first_of[i] == i ? ExternalDataBytes(*files.models[i].model, source, options.save) : 0);
      total_bytes += file_bytes.back();
    }
  }
  int64_t bytes_before = 0;
  SaveOptions save = options.save;
  if (options.on_progress) {
    save.on_progress = [&](int64_t written, int64_t) {
      options.on_progress(bytes_before + written, total_bytes);
    };
  }
  for (size_t i = 0; i < files.models.size(); ++i) {
    const ModelFile& file = files.models[i];
    const fs::path path = temp.path() / file.path;
    if (absl::Status s = MakeParents(path); !s.ok()) return s;
    absl::Status saved = first_of[i] == i
                             ? SaveModel(*file.model, source, path, save)
                             : WriteCopyOf(temp.path() / files.models[first_of[i]].path, path);
    if (!saved.ok()) {
      return absl::Status(saved.code(),
                          absl::StrCat("writing '", file.path, "': ", saved.message()));
    }
    if (options.on_progress) bytes_before += file_bytes[i];
  }
  for (const auto& [name, contents] : files.extra_files) {
    const fs::path path = temp.path() / name;
    if (absl::Status s = MakeParents(path); !s.ok()) return s;
    if (absl::Status s = WriteFile(path, contents); !s.ok()) return s;
  }
  for (const std::string& folder : files.folders) {
    std::error_code made;
    fs::create_directories(temp.path() / folder, made);
    if (made) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create '", folder, "': ", made.message()));
    }
  }

  if (!exists) {
    if (absl::Status s = CommitNew(temp.path(), out_dir); !s.ok()) return s;
    temp.Release();
    return absl::OkStatus();
  }
  // After the exchange the temporary name holds the old folder; the guard
  // deletes it.
  return CommitReplace(temp.path(), out_dir);
}

}  // namespace autopar::onnx_io
