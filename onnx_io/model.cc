#include "onnx_io/model.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "ir/dtype.h"
#include "onnx_io/sort_nodes.h"

namespace autopar::onnx_io {
namespace {

namespace fs = std::filesystem;

// Closes a file descriptor when it goes out of scope.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string ErrnoText() { return std::strerror(errno); }

// A file stream that tells a progress callback how far the parser has read.
// Protobuf pulls buffers through Next(); BackUp() returns what it did not use,
// so ByteCount() is exact.
class ProgressInputStream : public google::protobuf::io::ZeroCopyInputStream {
 public:
  ProgressInputStream(int fd, int64_t file_bytes, const LoadOptions& options)
      : raw_(fd), file_bytes_(file_bytes), on_progress_(options.on_progress) {}

  bool Next(const void** data, int* size) override {
    const bool more = raw_.Next(data, size);
    if (on_progress_) on_progress_(raw_.ByteCount(), file_bytes_);
    return more;
  }
  void BackUp(int count) override { raw_.BackUp(count); }
  bool Skip(int count) override { return raw_.Skip(count); }
  int64_t ByteCount() const override { return raw_.ByteCount(); }

 private:
  google::protobuf::io::FileInputStream raw_;
  int64_t file_bytes_;
  const std::function<void(int64_t, int64_t)>& on_progress_;
};

// Resolves one initializer's external_data entries against the model folder
// and checks that the range lies inside the file.
absl::StatusOr<ExternalDataRef> ResolveExternal(const onnx::TensorProto& tensor,
                                                const fs::path& directory) {
  std::string location;
  ExternalDataRef ref;
  bool has_length = false;
  for (const onnx::StringStringEntryProto& entry : tensor.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset" || entry.key() == "length") {
      int64_t number = 0;
      if (!absl::SimpleAtoi(entry.value(), &number) || number < 0) {
        return absl::InvalidArgumentError(absl::StrCat("initializer '", tensor.name(),
                                                       "': external data ", entry.key(), " '",
                                                       entry.value(), "' is not a number"));
      }
      if (entry.key() == "offset") {
        ref.offset = number;
      } else {
        ref.length = number;
        has_length = true;
      }
    }
  }
  if (location.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("initializer '", tensor.name(), "': external data has no location"));
  }
  fs::path relative(location);
  if (relative.is_absolute() ||
      std::find(relative.begin(), relative.end(), fs::path("..")) != relative.end()) {
    return absl::InvalidArgumentError(absl::StrCat("initializer '", tensor.name(),
                                                   "': external data location '", location,
                                                   "' must be a path inside the model's folder"));
  }
  ref.file = directory / relative;
  std::error_code ec;
  uintmax_t file_size = fs::file_size(ref.file, ec);
  if (ec) {
    return absl::NotFoundError(absl::StrCat("initializer '", tensor.name(),
                                            "': external data file '", ref.file.string(),
                                            "' cannot be read: ", ec.message()));
  }
  auto size = static_cast<int64_t>(file_size);
  if (!has_length) ref.length = size > ref.offset ? size - ref.offset : 0;
  if (ref.offset > size || ref.length > size - ref.offset) {
    // Offset and length, not the range's end: their sum may overflow.
    return absl::InvalidArgumentError(absl::StrCat(
        "initializer '", tensor.name(), "': external data at offset ", ref.offset, ", length ",
        ref.length, " lies outside '", ref.file.string(), "' (", size, " bytes)"));
  }
  absl::StatusOr<int64_t> elements = TensorNumElements(tensor);
  if (!elements.ok()) return elements.status();
  int64_t element_bytes = ir::DTypeSizeBytes(ir::DTypeFromOnnx(tensor.data_type()));
  int64_t expected = 0;
  if (element_bytes > 0 && tensor.data_type() != onnx::TensorProto::STRING &&
      !__builtin_mul_overflow(*elements, element_bytes, &expected) && expected != ref.length) {
    return absl::InvalidArgumentError(absl::StrCat("initializer '", tensor.name(),
                                                   "': external data holds ", ref.length,
                                                   " bytes but its type and dims need ", expected));
  }
  return ref;
}

absl::Status IndexExternalData(Model& model) {
  for (const onnx::TensorProto& tensor : model.proto.graph().initializer()) {
    if (!IsExternal(tensor)) continue;
    absl::StatusOr<ExternalDataRef> ref = ResolveExternal(tensor, model.directory());
    if (!ref.ok()) return ref.status();
    model.external_data[tensor.name()] = *std::move(ref);
  }
  return absl::OkStatus();
}

// A parsed protobuf may still not be a model: random bytes often parse as a
// message of unknown fields. These are the fields every ONNX model has.
absl::Status CheckLooksLikeModel(const onnx::ModelProto& proto) {
  if (proto.ir_version() <= 0) return absl::InvalidArgumentError("it has no ir_version");
  if (!proto.has_graph()) return absl::InvalidArgumentError("it has no graph");
  if (proto.opset_import_size() == 0 && proto.ir_version() >= 3) {
    return absl::InvalidArgumentError("it imports no opset");
  }
  return absl::OkStatus();
}

}  // namespace

bool IsExternal(const onnx::TensorProto& tensor) {
  return tensor.data_location() == onnx::TensorProto::EXTERNAL;
}

absl::StatusOr<int64_t> TensorNumElements(const onnx::TensorProto& tensor) {
  int64_t n = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", tensor.name(), "' has invalid dims"));
    }
  }
  return n;
}

absl::StatusOr<Model> LoadModel(const fs::path& path, const LoadOptions& options) {
  const std::string shown = path.string();
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    return absl::NotFoundError(absl::StrCat("cannot open '", shown, "': no such file"));
  }
  if (fs::is_directory(status)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load '", shown, "': it is a directory, not an ONNX file"));
  }
  FileDescriptor fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open '", shown, "': ", ErrnoText()));
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return absl::InternalError(absl::StrCat("cannot stat '", shown, "': ", ErrnoText()));
  }
  if (st.st_size == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", shown, "' is not an ONNX model: the file is empty"));
  }
  if (st.st_size > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", shown, "' is not an ONNX model: ", st.st_size,
        " bytes is over protobuf's 2 GiB limit (large weights belong in external data)"));
  }

  Model model;
  model.path = fs::absolute(path);
  {
    ProgressInputStream raw(fd.get(), st.st_size, options);
    google::protobuf::io::CodedInputStream coded(&raw);
    coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
    if (!model.proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", shown, "' is not an ONNX model: the protobuf is malformed or truncated"));
    }
  }
  if (absl::Status s = CheckLooksLikeModel(model.proto); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", shown, "' is not an ONNX model: ", s.message()));
  }
  if (absl::Status s = IndexExternalData(model); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("'", shown, "': ", s.message()));
  }
  if (absl::Status s = SortNodes(*model.proto.mutable_graph()); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("'", shown, "': ", s.message()));
  }
  return model;
}

absl::StatusOr<Model> ModelFromProto(onnx::ModelProto proto, const fs::path& directory) {
  Model model;
  model.proto = std::move(proto);
  if (!directory.empty()) model.path = directory / "model.onnx";
  if (absl::Status s = CheckLooksLikeModel(model.proto); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("not an ONNX model: ", s.message()));
  }
  if (absl::Status s = IndexExternalData(model); !s.ok()) return s;
  return model;
}

absl::StatusOr<std::string> ReadTensorBytes(const Model& model, const onnx::TensorProto& tensor) {
  if (IsExternal(tensor)) {
    ExternalDataRef ref;
    if (auto it = model.external_data.find(tensor.name()); it != model.external_data.end()) {
      ref = it->second;
    } else {
      // Tensors outside the main graph's initializers (rare) resolve here.
      absl::StatusOr<ExternalDataRef> resolved = ResolveExternal(tensor, model.directory());
      if (!resolved.ok()) return resolved.status();
      ref = *std::move(resolved);
    }
    FileDescriptor fd(open(ref.file.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
      return absl::NotFoundError(
          absl::StrCat("cannot open '", ref.file.string(), "': ", ErrnoText()));
    }
    std::string bytes(static_cast<size_t>(ref.length), '\0');
    int64_t done = 0;
    while (done < ref.length) {
      ssize_t got = pread(fd.get(), bytes.data() + done, static_cast<size_t>(ref.length - done),
                          ref.offset + done);
      if (got <= 0) {
        return absl::DataLossError(absl::StrCat("cannot read ", ref.length, " bytes of '",
                                                tensor.name(), "' from '", ref.file.string(), "'"));
      }
      done += got;
    }
    return bytes;
  }
  if (tensor.has_raw_data()) return tensor.raw_data();

  // Typed fields: widen or narrow each element into its little-endian bytes.
  ir::DType dtype = ir::DTypeFromOnnx(tensor.data_type());
  const int64_t element_bytes = ir::DTypeSizeBytes(dtype);
  std::string bytes;
  auto append = [&bytes, element_bytes](auto v) {
    const char* p = reinterpret_cast<const char*>(&v);
    bytes.append(p, static_cast<size_t>(element_bytes));
  };
  switch (dtype) {
    case ir::DType::kFloat:
      for (float v : tensor.float_data()) append(v);
      break;
    case ir::DType::kDouble:
      for (double v : tensor.double_data()) append(v);
      break;
    case ir::DType::kInt64:
      for (int64_t v : tensor.int64_data()) append(v);
      break;
    case ir::DType::kUint32:
    case ir::DType::kUint64:
      for (uint64_t v : tensor.uint64_data()) append(v);
      break;
    case ir::DType::kComplex64:
      for (float v : tensor.float_data()) bytes.append(reinterpret_cast<const char*>(&v), 4);
      break;
    case ir::DType::kComplex128:
      for (double v : tensor.double_data()) bytes.append(reinterpret_cast<const char*>(&v), 8);
      break;
    case ir::DType::kString:
      return absl::UnimplementedError(
          absl::StrCat("tensor '", tensor.name(), "' holds strings, which have no raw bytes"));
    case ir::DType::kUndefined:
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", tensor.name(), "' has an undefined data type"));
    default:  // int32, int16, int8, uint8, uint16, bool, float16, bfloat16, 8/4-bit
      for (int32_t v : tensor.int32_data()) append(v);
      break;
  }
  return bytes;
}

int64_t DefaultDomainOpset(const onnx::ModelProto& model) {
  for (const onnx::OperatorSetIdProto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") return op.version();
  }
  return 1;
}

absl::StatusOr<std::vector<int64_t>> ReadTensorInts(const Model& model,
                                                    const onnx::TensorProto& tensor) {
  ir::DType dtype = ir::DTypeFromOnnx(tensor.data_type());
  switch (dtype) {
    case ir::DType::kInt64:
    case ir::DType::kInt32:
    case ir::DType::kInt16:
    case ir::DType::kInt8:
    case ir::DType::kUint8:
    case ir::DType::kUint16:
    case ir::DType::kUint32:
    case ir::DType::kUint64:
    case ir::DType::kBool:
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", tensor.name(), "' is not an integer tensor"));
  }
  absl::StatusOr<std::string> bytes = ReadTensorBytes(model, tensor);
  if (!bytes.ok()) return bytes.status();
  const int64_t element_bytes = ir::DTypeSizeBytes(dtype);
  absl::StatusOr<int64_t> elements = TensorNumElements(tensor);
  if (!elements.ok()) return elements.status();
  if (static_cast<int64_t>(bytes->size()) != *elements * element_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", tensor.name(), "' holds ",
                                                   bytes->size(), " bytes, its dims need ",
                                                   *elements * element_bytes));
  }
  std::vector<int64_t> values(static_cast<size_t>(*elements));
  const char* p = bytes->data();
  for (int64_t i = 0; i < *elements; ++i, p += element_bytes) {
    switch (dtype) {
      case ir::DType::kInt64:
      case ir::DType::kUint64: {
        int64_t v;
        std::memcpy(&v, p, 8);
        values[i] = v;
        break;
      }
      case ir::DType::kInt32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        values[i] = v;
        break;
      }
      case ir::DType::kUint32: {
        uint32_t v;
        std::memcpy(&v, p, 4);
        values[i] = v;
        break;
      }
      case ir::DType::kInt16: {
        int16_t v;
        std::memcpy(&v, p, 2);
        values[i] = v;
        break;
      }
      case ir::DType::kUint16: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        values[i] = v;
        break;
      }
      case ir::DType::kInt8:
        values[i] = static_cast<int8_t>(*p);
        break;
      default:  // uint8, bool
        values[i] = static_cast<uint8_t>(*p);
        break;
    }
  }
  return values;
}

}  // namespace autopar::onnx_io
