#include "onnx_io/export.h"

#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "google/protobuf/field_mask.pb.h"
#include "google/protobuf/util/field_mask_util.h"

namespace autopar::onnx_io {

absl::StatusOr<onnx::ModelProto> ExportModel(const ir::Graph& graph, const Model& source) {
  const onnx::GraphProto& source_graph = source.proto.graph();
  onnx::ModelProto out = source.proto;  // copies metadata, functions, opsets
  onnx::GraphProto* g = out.mutable_graph();
  g->clear_node();
  for (const ir::Node& node : graph.nodes()) {
    if (node.proto_index < 0 || node.proto_index >= source_graph.node_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name, "' has no source NodeProto to copy"));
    }
    *g->add_node() = source_graph.node(node.proto_index);
  }
  return out;
}

namespace {

// Appends tensors' bytes to one external-data file and rewrites each
// TensorProto to point at its range.
// Every field of a ModelProto but graph.node, as a field mask.
const google::protobuf::FieldMask& AllButNodes() {
  static const google::protobuf::FieldMask* mask = [] {
    auto* m = new google::protobuf::FieldMask;
    const google::protobuf::Descriptor* model = onnx::ModelProto::descriptor();
    for (int i = 0; i < model->field_count(); ++i) {
      if (model->field(i)->name() != "graph") m->add_paths(model->field(i)->name());
    }
    const google::protobuf::Descriptor* graph = onnx::GraphProto::descriptor();
    for (int i = 0; i < graph->field_count(); ++i) {
      if (graph->field(i)->name() != "node") m->add_paths("graph." + graph->field(i)->name());
    }
    return m;
  }();
  return *mask;
}

// Lends `from`'s nodes to `to` for its lifetime, without copying them.
class BorrowedNodes {
 public:
  BorrowedNodes(const onnx::GraphProto& from, onnx::GraphProto& to) : to_(to) {
    to_.mutable_node()->Reserve(from.node_size());
    for (const onnx::NodeProto& node : from.node()) {
      to_.mutable_node()->UnsafeArenaAddAllocated(const_cast<onnx::NodeProto*>(&node));
    }
  }
  BorrowedNodes(const BorrowedNodes&) = delete;
  BorrowedNodes& operator=(const BorrowedNodes&) = delete;
  ~BorrowedNodes() { to_.mutable_node()->UnsafeArenaExtractSubrange(0, to_.node_size(), nullptr); }

 private:
  onnx::GraphProto& to_;
};

class ExternalDataWriter {
 public:
  ExternalDataWriter(std::filesystem::path file) : file_(std::move(file)) {}

  /// Tensor bytes written so far, padding excluded.
  int64_t data_bytes() const { return data_bytes_; }

  absl::Status Move(const Model& source, onnx::TensorProto& tensor) {
    absl::StatusOr<std::string> bytes = ReadTensorBytes(source, tensor);
    if (!bytes.ok()) return bytes.status();
    if (!stream_.is_open()) {
      stream_.open(file_, std::ios::binary | std::ios::trunc);
      if (!stream_) {
        return absl::PermissionDeniedError(absl::StrCat("cannot write '", file_.string(), "'"));
      }
    }
    // Keep every tensor 64-byte aligned so that runtimes can map it.
    while (offset_ % 64 != 0) {
      stream_.put('\0');
      ++offset_;
    }
    stream_.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
    if (!stream_) {
      return absl::DataLossError(absl::StrCat("cannot write '", file_.string(), "'"));
    }
    tensor.clear_raw_data();
    tensor.clear_float_data();
    tensor.clear_int32_data();
    tensor.clear_int64_data();
    tensor.clear_double_data();
    tensor.clear_uint64_data();
    tensor.clear_external_data();
    tensor.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&tensor](const char* key, std::string value) {
      onnx::StringStringEntryProto* e = tensor.add_external_data();
      e->set_key(key);
      e->set_value(std::move(value));
    };
    add("location", file_.filename().string());
    add("offset", absl::StrCat(offset_));
    add("length", absl::StrCat(bytes->size()));
    offset_ += static_cast<int64_t>(bytes->size());
    data_bytes_ += static_cast<int64_t>(bytes->size());
    return absl::OkStatus();
  }

  absl::Status Close() {
    if (!stream_.is_open()) return absl::OkStatus();
    stream_.close();
    if (!stream_) return absl::DataLossError(absl::StrCat("cannot write '", file_.string(), "'"));
    return absl::OkStatus();
  }

 private:
  std::filesystem::path file_;
  std::ofstream stream_;
  int64_t offset_ = 0;
  int64_t data_bytes_ = 0;
};

// Size of a tensor's data as stored in the proto (0 when external).
int64_t InlineBytes(const onnx::TensorProto& t) {
  if (IsExternal(t)) return 0;
  return static_cast<int64_t>(t.raw_data().size()) + 4LL * t.float_data_size() +
         4LL * t.int32_data_size() + 8LL * t.int64_data_size() + 8LL * t.double_data_size() +
         8LL * t.uint64_data_size();
}

// Whether SaveModel moves the initializer into `<file>.data`.
bool GoesExternal(const onnx::TensorProto& t, const SaveOptions& options) {
  return IsExternal(t) || (t.data_type() != onnx::TensorProto::STRING &&
                           InlineBytes(t) >= options.external_threshold_bytes);
}

}  // namespace

int64_t ExternalDataBytes(const onnx::ModelProto& proto, const Model& source,
                          const SaveOptions& options) {
  int64_t total = 0;
  for (const onnx::TensorProto& t : proto.graph().initializer()) {
    if (!GoesExternal(t, options)) continue;
    if (!IsExternal(t)) {
      total += InlineBytes(t);
    } else if (auto it = source.external_data.find(t.name()); it != source.external_data.end()) {
      total += it->second.length;
    }
  }
  return total;
}

absl::Status SaveModel(const onnx::ModelProto& proto, const Model& source,
                       const std::filesystem::path& path, const SaveOptions& options) {
  // The file differs from `proto` only in its initializers, so `out` copies
  // everything but the graph's nodes and borrows those: on a million-node
  // model a copy of the nodes is a gigabyte. BorrowedNodes hands them back
  // before `out` is destroyed (RepeatedPtrField's documented "temporary
  // ownership" use of UnsafeArenaAddAllocated).
  onnx::ModelProto out;
  google::protobuf::util::FieldMaskUtil::MergeMessageTo(
      proto, AllButNodes(), google::protobuf::util::FieldMaskUtil::MergeOptions(), &out);
  BorrowedNodes borrowed(proto.graph(), *out.mutable_graph());
  ExternalDataWriter writer(std::filesystem::path(path.string() + ".data"));
  const int64_t total_bytes = options.on_progress ? ExternalDataBytes(proto, source, options) : 0;
  for (onnx::TensorProto& t : *out.mutable_graph()->mutable_initializer()) {
    if (!GoesExternal(t, options)) continue;
    if (absl::Status s = writer.Move(source, t); !s.ok()) return s;
    if (options.on_progress) options.on_progress(writer.data_bytes(), total_bytes);
  }
  if (absl::Status s = writer.Close(); !s.ok()) return s;
  size_t size = out.ByteSizeLong();
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot write '", path.string(), "': the model would be ", size,
                     " bytes, over protobuf's 2 GiB limit; lower the external-data threshold"));
  }
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  if (!stream || !out.SerializeToOstream(&stream)) {
    return absl::PermissionDeniedError(absl::StrCat("cannot write '", path.string(), "'"));
  }
  return absl::OkStatus();
}

}  // namespace autopar::onnx_io
