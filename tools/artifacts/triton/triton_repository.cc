#include "tools/artifacts/triton/triton_repository.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"

namespace autopar::tools {
namespace {

constexpr size_t kMaxModelNameBytes = 100;

absl::StatusOr<triton::DataType> TritonDataType(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::BOOL:
      return triton::TYPE_BOOL;
    case onnx::TensorProto::UINT8:
      return triton::TYPE_UINT8;
    case onnx::TensorProto::UINT16:
      return triton::TYPE_UINT16;
    case onnx::TensorProto::UINT32:
      return triton::TYPE_UINT32;
    case onnx::TensorProto::UINT64:
      return triton::TYPE_UINT64;
    case onnx::TensorProto::INT8:
      return triton::TYPE_INT8;
    case onnx::TensorProto::INT16:
      return triton::TYPE_INT16;
    case onnx::TensorProto::INT32:
      return triton::TYPE_INT32;
    case onnx::TensorProto::INT64:
      return triton::TYPE_INT64;
    case onnx::TensorProto::FLOAT16:
      return triton::TYPE_FP16;
    case onnx::TensorProto::FLOAT:
      return triton::TYPE_FP32;
    case onnx::TensorProto::DOUBLE:
      return triton::TYPE_FP64;
    case onnx::TensorProto::STRING:
      return triton::TYPE_STRING;
    case onnx::TensorProto::BFLOAT16:
      return triton::TYPE_BF16;
    default:
      break;
  }
  const std::string name = onnx::TensorProto::DataType_IsValid(elem_type)
                               ? onnx::TensorProto::DataType_Name(elem_type)
                               : absl::StrCat("element type ", elem_type);
  return absl::InvalidArgumentError(absl::StrCat("Triton has no data type for ", name));
}

// The element type and Triton dims of a stage model's input or output.
struct TensorSpec {
  triton::DataType data_type = triton::TYPE_INVALID;
  std::vector<int64_t> dims;
  bool scalar = false;
};

absl::StatusOr<TensorSpec> SpecOf(const onnx::ValueInfoProto& info) {
  if (!info.type().has_tensor_type()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", info.name(), "' is not a tensor; Triton passes only tensors"));
  }
  const onnx::TypeProto::Tensor& tensor = info.type().tensor_type();
  absl::StatusOr<triton::DataType> data_type = TritonDataType(tensor.elem_type());
  if (!data_type.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", info.name(), "': ", data_type.status().message()));
  }
  if (!tensor.has_shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the rank of '", info.name(), "' is not known; Triton needs the dims of every input and ",
        "output (give the input shapes with --input-shape or --dim)"));
  }
  TensorSpec spec{.data_type = *data_type};
  for (const onnx::TensorShapeProto::Dimension& d : tensor.shape().dim()) {
    spec.dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1);
  }
  if (spec.dims.empty()) {
    spec.scalar = true;
    spec.dims.push_back(1);
  }
  return spec;
}

// Fills a ModelInput or ModelOutput. `reshape_scalar`: a scalar gets an empty
// reshape, so the backend sees the model's own rank 0 behind `dims: [1]`.
template <typename Io>
void SetIo(const std::string& name, const TensorSpec& spec, bool reshape_scalar, Io& io) {
  io.set_name(name);
  io.set_data_type(spec.data_type);
  for (int64_t d : spec.dims) io.add_dims(d);
  if (spec.scalar && reshape_scalar) io.mutable_reshape();
}

// A stage model's config: its inputs and outputs as ONNX Runtime sees them,
// one instance on `gpu`.
absl::StatusOr<triton::ModelConfig> StageConfig(const std::string& name, const passes::Stage& stage,
                                                int32_t gpu,
                                                std::map<std::string, TensorSpec>& specs) {
  triton::ModelConfig config;
  config.set_name(name);
  config.set_platform("onnxruntime_onnx");
  config.set_max_batch_size(0);
  const onnx::GraphProto& graph = stage.proto.graph();
  auto where = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat("stage ", stage.id, ": ", s.message()));
  };
  for (const onnx::ValueInfoProto& input : graph.input()) {
    absl::StatusOr<TensorSpec> spec = SpecOf(input);
    if (!spec.ok()) return where(spec.status());
    SetIo(input.name(), *spec, /*reshape_scalar=*/true, *config.add_input());
    specs.emplace(input.name(), *spec);
  }
  for (const onnx::ValueInfoProto& output : graph.output()) {
    absl::StatusOr<TensorSpec> spec = SpecOf(output);
    if (!spec.ok()) return where(spec.status());
    SetIo(output.name(), *spec, /*reshape_scalar=*/true, *config.add_output());
    specs.emplace(output.name(), *spec);
  }
  triton::ModelInstanceGroup* group = config.add_instance_group();
  group->set_kind(triton::ModelInstanceGroup::KIND_GPU);
  group->set_count(1);
  group->add_gpus(gpu);
  return config;
}

}  // namespace

absl::StatusOr<TritonRepository> BuildTritonRepository(const passes::Deployment& deployment,
                                                       const TritonRepositoryOptions& options) {
  if (deployment.stages.empty()) {
    return absl::InvalidArgumentError("a Triton repository needs the stage models (--stages)");
  }
  if (!IsValidTritonModelName(options.model_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", options.model_name, "' is not a valid Triton model name"));
  }
  std::set<std::string> graph_inputs;
  for (const passes::InputUse& input : deployment.inputs) graph_inputs.insert(input.name);

  TritonRepository repository;
  triton::ModelConfig ensemble;
  ensemble.set_name(options.model_name);
  ensemble.set_platform("ensemble");
  ensemble.set_max_batch_size(0);
  triton::ModelEnsembling* scheduling = ensemble.mutable_ensemble_scheduling();
  // Type and dims of every tensor a stage takes or gives, by name: the
  // ensemble's inputs and outputs are stated as the stages see them.
  std::map<std::string, TensorSpec> specs;
  std::set<std::string> stage_names;
  for (const passes::Stage& stage : deployment.stages) {
    int32_t gpu = stage.device;
    if (!options.gpus.empty()) {
      if (stage.device < 0 || static_cast<size_t>(stage.device) >= options.gpus.size()) {
        return absl::InvalidArgumentError(absl::StrCat("stage ", stage.id, " runs on device ",
                                                       stage.device, ", but only ",
                                                       options.gpus.size(), " GPUs are given"));
      }
      gpu = options.gpus[stage.device];
    }
    // Unique because stage ids are; never the ensemble's name, which lacks
    // the suffix.
    const std::string name = absl::StrCat(options.model_name, "_s", stage.id);
    if (!stage_names.insert(name).second) {
      return absl::InternalError(absl::StrCat("two stages are named '", name, "'"));
    }
    absl::StatusOr<triton::ModelConfig> config = StageConfig(name, stage, gpu, specs);
    if (!config.ok()) return config.status();
    repository.models.push_back({.config = *std::move(config), .model = &stage.proto});

    triton::ModelEnsembling::Step* step = scheduling->add_step();
    step->set_model_name(name);
    step->set_model_version(-1);
    for (const onnx::ValueInfoProto& input : stage.proto.graph().input()) {
      (*step->mutable_input_map())[input.name()] = input.name();
    }
    for (const onnx::ValueInfoProto& output : stage.proto.graph().output()) {
      // A graph input passed through as a graph output is the ensemble's
      // input already; a second producer would be ambiguous.
      if (graph_inputs.contains(output.name())) continue;
      (*step->mutable_output_map())[output.name()] = output.name();
    }
  }
  // Graph inputs that no stage reads are left out: Triton refuses an
  // ensemble input no step uses.
  for (const passes::InputUse& input : deployment.inputs) {
    auto it = specs.find(input.name);
    if (input.devices.empty() || it == specs.end()) continue;
    SetIo(input.name, it->second, /*reshape_scalar=*/false, *ensemble.add_input());
  }
  for (const passes::OutputOwner& output : deployment.outputs) {
    auto it = specs.find(output.name);
    if (it == specs.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the graph output '", output.name, "' is produced by no stage"));
    }
    SetIo(output.name, it->second, /*reshape_scalar=*/false, *ensemble.add_output());
  }
  repository.models.push_back({.config = std::move(ensemble), .model = nullptr});
  return repository;
}

std::string TritonConfigText(const triton::ModelConfig& config) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetUseUtf8StringEscaping(true);
  std::string text;
  // Printing into a string fails only when the message is not initialized,
  // which a proto3 message always is.
  printer.PrintToString(config, &text);
  return text;
}

void AddTritonRepositoryFiles(const TritonRepository& repository, const std::string& folder,
                              onnx_io::DeploymentFiles& files) {
  for (const TritonModel& model : repository.models) {
    const std::string dir = absl::StrCat(folder, "/", model.config.name());
    files.extra_files[absl::StrCat(dir, "/config.pbtxt")] = TritonConfigText(model.config);
    if (model.model != nullptr) {
      files.models.push_back({.path = absl::StrCat(dir, "/1/model.onnx"), .model = model.model});
    } else {
      files.folders.push_back(absl::StrCat(dir, "/1"));
    }
  }
}

std::string TritonModelName(std::string_view stem) {
  std::string name;
  for (size_t i = 0; i < stem.size() && name.size() < kMaxModelNameBytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(stem[i]);
    if ((c & 0xC0) == 0x80) continue;  // a UTF-8 continuation byte: one '_' per character
    const bool kept = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-' || c == '.';
    name.push_back(kept ? static_cast<char>(c) : '_');
  }
  if (name.empty()) return "model";
  if (name[0] == '.') name[0] = '_';
  return name;
}

bool IsValidTritonModelName(std::string_view name) { return TritonModelName(name) == name; }

}  // namespace autopar::tools
