#include "tools/artifacts/triton/triton_repository.h"

#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "onnx_io/shape_inference.h"

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

// A stage model's tensor types by name: what ONNX's shape inference gives on
// a weight-free copy of the stage, which merges in what the stage declares.
// Best effort: when inference fails, the declared types.
class StageTypes {
 public:
  explicit StageTypes(const onnx::ModelProto& stage) {
    absl::StatusOr<onnx::ModelProto> inferred = onnx_io::InferShapesOfCopy(stage);
    if (inferred.ok()) inferred_ = *std::move(inferred);
    const onnx::GraphProto& g = inferred.ok() ? inferred_.graph() : stage.graph();
    for (const auto* list : {&g.input(), &g.value_info(), &g.output()}) {
      for (const onnx::ValueInfoProto& info : *list) types_.emplace(info.name(), &info.type());
    }
  }

  // The type of `info`'s tensor as inferred, else as `info` declares it.
  const onnx::TypeProto& Of(const onnx::ValueInfoProto& info) const {
    auto it = types_.find(info.name());
    return it == types_.end() ? info.type() : *it->second;
  }

 private:
  onnx::ModelProto inferred_;
  std::map<std::string, const onnx::TypeProto*> types_;
};

// The element type and Triton dims of a stage's input or output `name` of
// type `type`. `planned` is the IR's value (null when the IR lacks it): its
// rank stands in for an unknown one, and with `planned_dims` (see
// ShapesThatLend) its numbers for dims the type leaves open: the plan binds
// symbols (--dim), ONNX Runtime's inference fixes dims that ONNX 1.12's
// cannot, and Triton refuses a -1 where ONNX Runtime has a number. Any other
// dim is -1.
absl::StatusOr<TensorSpec> SpecOf(const std::string& name, const onnx::TypeProto& type,
                                  const ir::Value* planned, bool planned_dims) {
  if (!type.has_tensor_type()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' is not a tensor; Triton passes only tensors"));
  }
  const onnx::TypeProto::Tensor& tensor = type.tensor_type();
  absl::StatusOr<triton::DataType> data_type = TritonDataType(tensor.elem_type());
  if (!data_type.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("'", name, "': ", data_type.status().message()));
  }
  const bool planned_rank = planned != nullptr && planned->shape.has_rank();
  if (!tensor.has_shape() && !planned_rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the rank of '", name, "' is not known; Triton needs the dims of every input and ",
        "output (give the input shapes with --input-shape or --dim)"));
  }
  const size_t rank = tensor.has_shape() ? tensor.shape().dim_size() : planned->shape.rank();
  const bool lends = planned_dims && planned_rank && planned->shape.rank() == rank;
  TensorSpec spec{.data_type = *data_type};
  for (size_t i = 0; i < rank; ++i) {
    int64_t dim = -1;
    const onnx::TensorShapeProto::Dimension* d =
        tensor.has_shape() ? &tensor.shape().dim(static_cast<int>(i)) : nullptr;
    if (d != nullptr && d->has_dim_value() && d->dim_value() >= 0) {
      dim = d->dim_value();
    } else if (lends && planned->shape.dim(i).known() && planned->shape.dim(i).symbol.empty() &&
               !(i < planned->unnamed_symbolic_dims.size() && planned->unnamed_symbolic_dims[i])) {
      // A bound symbol, or a dim derived from one (passes/symbolic_dims.h),
      // is the planned number only at that binding: it stays -1.
      dim = planned->shape.dim(i).value;
    }
    spec.dims.push_back(dim);
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

// Per value of `graph`: whether the planner's shape may stand in for dims
// the stage models leave open. Not for graph inputs (they keep their
// symbols), values whose shape rests on an estimate, or values computed,
// directly or not, from an input in `given` (--input-value).
std::vector<bool> ShapesThatLend(const ir::Graph& graph, const std::set<std::string>& given) {
  std::vector<bool> follows_given(graph.num_values(), false);
  for (ir::ValueId in : graph.inputs()) {
    follows_given[in.index()] = given.contains(graph.value(in).name);
  }
  for (const ir::Node& node : graph.nodes()) {  // topological order
    bool follows = false;
    for (ir::ValueId in : node.inputs)
      follows = follows || (in.valid() && follows_given[in.index()]);
    for (ir::ValueId in : node.captured) follows = follows || follows_given[in.index()];
    if (!follows) continue;
    for (ir::ValueId out : node.outputs) {
      if (out.valid()) follows_given[out.index()] = true;
    }
  }
  std::vector<bool> lends(graph.num_values(), false);
  for (size_t i = 0; i < graph.num_values(); ++i) {
    const ir::Value& v = graph.values()[i];
    lends[i] = v.kind != ir::ValueKind::kGraphInput && !v.shape_estimated && !follows_given[i];
  }
  return lends;
}

// The initializers of `graph` (weights, even those it lists among its
// inputs).
std::set<std::string> InitializerNames(const onnx::GraphProto& graph) {
  std::set<std::string> names;
  for (const onnx::TensorProto& t : graph.initializer()) names.insert(t.name());
  return names;
}

// A stage model's config: its inputs and outputs as ONNX Runtime sees them,
// one instance on `gpu`.
absl::StatusOr<triton::ModelConfig> StageConfig(const std::string& name, const passes::Stage& stage,
                                                int32_t gpu, const ir::Graph* planned,
                                                const std::vector<bool>& lends,
                                                std::map<std::string, TensorSpec>& specs) {
  triton::ModelConfig config;
  config.set_name(name);
  config.set_platform("onnxruntime_onnx");
  config.set_max_batch_size(0);
  const onnx::GraphProto& graph = stage.proto.graph();
  const StageTypes types(stage.proto);
  auto spec_of = [&](const onnx::ValueInfoProto& info) -> absl::StatusOr<TensorSpec> {
    const ir::Value* value = nullptr;
    bool value_dims = false;
    if (planned != nullptr) {
      if (std::optional<ir::ValueId> id = planned->FindValue(info.name())) {
        value = &planned->value(*id);
        value_dims = lends[id->index()];
      }
    }
    absl::StatusOr<TensorSpec> spec = SpecOf(info.name(), types.Of(info), value, value_dims);
    if (!spec.ok()) {
      return absl::Status(spec.status().code(),
                          absl::StrCat("stage ", stage.id, ": ", spec.status().message()));
    }
    return spec;
  };
  const std::set<std::string> weights = InitializerNames(graph);
  for (const onnx::ValueInfoProto& input : graph.input()) {
    if (weights.contains(input.name())) continue;
    absl::StatusOr<TensorSpec> spec = spec_of(input);
    if (!spec.ok()) return spec.status();
    SetIo(input.name(), *spec, /*reshape_scalar=*/true, *config.add_input());
    specs.emplace(input.name(), *spec);
  }
  for (const onnx::ValueInfoProto& output : graph.output()) {
    absl::StatusOr<TensorSpec> spec = spec_of(output);
    if (!spec.ok()) return spec.status();
    SetIo(output.name(), *spec, /*reshape_scalar=*/true, *config.add_output());
    specs.emplace(output.name(), *spec);
  }
  triton::ModelInstanceGroup* group = config.add_instance_group();
  group->set_kind(triton::ModelInstanceGroup::KIND_GPU);
  group->set_count(1);
  group->add_gpus(gpu);
  return config;
}

// Note [Triton batching]: Triton's batching puts requests side by side along
// dim 0 of every input and output of a model, so a model batches only when
// dim 0 of each of them is the one batch dim; an ensemble batches only when
// all its steps do. A tensor of another leading dim that crosses stages (a
// shape tensor [4], attention's [seq, batch, hidden], batch × heads) keeps
// the whole repository unbatched. The batch dim is the symbol the stage
// models declare there: one that planning bound to a number keeps its name
// (passes/symbolic_dims.h), so the check reads the written models.

// The symbolic dim 0 of `info`'s tensor type, or "" when it has none.
std::string LeadingSymbol(const onnx::ValueInfoProto& info) {
  if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return "";
  const onnx::TensorShapeProto& shape = info.type().tensor_type().shape();
  if (shape.dim_size() < 2) return "";  // no dims besides the batch: not batched
  return shape.dim(0).has_dim_param() ? shape.dim(0).dim_param() : "";
}

// The one symbol dim 0 of every input and output of every stage is, or ""
// with `why` set.
std::string CommonBatchDim(const passes::Deployment& deployment, std::string& why) {
  std::string batch;
  for (const passes::Stage& stage : deployment.stages) {
    const onnx::GraphProto& graph = stage.proto.graph();
    const std::set<std::string> weights = InitializerNames(graph);
    auto check = [&](const onnx::ValueInfoProto& info, const char* what) {
      if (weights.contains(info.name())) return true;
      const std::string symbol = LeadingSymbol(info);
      if (symbol.empty() || (!batch.empty() && symbol != batch)) {
        std::string dims;
        if (info.type().has_tensor_type() && info.type().tensor_type().has_shape()) {
          for (const onnx::TensorShapeProto::Dimension& d :
               info.type().tensor_type().shape().dim()) {
            absl::StrAppend(&dims, dims.empty() ? "" : ",",
                            d.has_dim_value()   ? absl::StrCat(d.dim_value())
                            : d.has_dim_param() ? d.dim_param()
                                                : "?");
          }
        }
        why = absl::StrCat(
            "stage ", stage.id, " ", what, " '", info.name(), "' is [", dims,
            "]: its dim 0 is not ",
            batch.empty() ? "a symbolic dim with others after it" : absl::StrCat("'", batch, "'"));
        return false;
      }
      batch = symbol;
      return true;
    };
    for (const onnx::ValueInfoProto& input : graph.input()) {
      if (!check(input, "input")) return "";
    }
    for (const onnx::ValueInfoProto& output : graph.output()) {
      if (!check(output, "output")) return "";
    }
  }
  return batch;
}

// Leaves dim 0 (the batch) out of every input and output of `config`.
void DropBatchDim(triton::ModelConfig& config) {
  for (triton::ModelInput& io : *config.mutable_input())
    io.mutable_dims()->erase(io.dims().begin());
  for (triton::ModelOutput& io : *config.mutable_output()) {
    io.mutable_dims()->erase(io.dims().begin());
  }
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

  const std::vector<bool> lends = options.graph != nullptr
                                      ? ShapesThatLend(*options.graph, options.given_inputs)
                                      : std::vector<bool>();
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
    absl::StatusOr<triton::ModelConfig> config =
        StageConfig(name, stage, gpu, options.graph, lends, specs);
    if (!config.ok()) return config.status();
    repository.models.push_back({.config = *std::move(config), .model = &stage.proto});

    triton::ModelEnsembling::Step* step = scheduling->add_step();
    step->set_model_name(name);
    step->set_model_version(-1);
    for (const triton::ModelInput& input : repository.models.back().config.input()) {
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

  // Note [Triton batching].
  std::string why;
  const std::string batch = CommonBatchDim(deployment, why);
  if (options.max_batch_size <= 0) {
    repository.unbatched_reason = "--triton-max-batch 0";
  } else if (batch.empty()) {
    repository.unbatched_reason = why;
  } else {
    repository.max_batch_size = options.max_batch_size;
    repository.batch_dim = batch;
    for (TritonModel& model : repository.models) {
      model.config.set_max_batch_size(options.max_batch_size);
      DropBatchDim(model.config);
      if (model.model != nullptr) model.config.mutable_dynamic_batching();
    }
  }
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
