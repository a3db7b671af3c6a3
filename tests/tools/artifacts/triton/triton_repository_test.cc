// The Triton model repository: one config per stage and an ensemble wiring
// them, configs that parse back into the same message, awkward tensor names,
// shapes Triton can state, GPUs per device, model names.
#include "tools/artifacts/triton/triton_repository.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "onnx_io/import.h"
#include "passes/infer_shapes.h"
#include "passes/partition.h"
#include "tests/passes/partition_test_util.h"

namespace autopar::tools {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// x -> Relu -> a -> Neg -> b, Add(a, b) -> y: on devices 0, 1, 0 the stages
// are {Relu} on 0, {Neg} on 1, {Add} on 0.
constexpr char kChain[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  g (float[2,3] x) => (float[2,3] y) {
    a = Relu(x)
    b = Neg(a)
    y = Add(a, b)
  }
)";

struct Split {
  passes::testing::Loaded loaded;
  passes::Deployment deployment;
};

// Renames a tensor everywhere in the graph (inputs, outputs, node operands).
void Rename(onnx::GraphProto& g, const std::string& from, const std::string& to) {
  auto fix = [&](std::string* name) {
    if (*name == from) *name = to;
  };
  for (onnx::ValueInfoProto& v : *g.mutable_input()) fix(v.mutable_name());
  for (onnx::ValueInfoProto& v : *g.mutable_output()) fix(v.mutable_name());
  for (onnx::NodeProto& n : *g.mutable_node()) {
    for (std::string& s : *n.mutable_input()) fix(&s);
    for (std::string& s : *n.mutable_output()) fix(&s);
  }
}

// The model `text`, its graph changed by `edit` when given.
absl::StatusOr<onnx_io::Model> ParseEdited(const std::string& text,
                                           const std::function<void(onnx::GraphProto&)>& edit) {
  absl::StatusOr<onnx::ModelProto> proto = onnx_io::ParseModelText(text);
  EXPECT_TRUE(proto.ok()) << proto.status();
  if (edit) edit(*proto->mutable_graph());
  absl::StatusOr<onnx_io::Model> model = onnx_io::ModelFromProto(*std::move(proto));
  EXPECT_TRUE(model.ok()) << model.status();
  return model;
}

// Splits `text`, changed by `edit`, with one device per node as given.
Split SplitText(const std::string& text, const std::vector<int32_t>& node_device,
                const std::function<void(onnx::GraphProto&)>& edit = nullptr) {
  absl::StatusOr<onnx_io::Model> model = ParseEdited(text, edit);
  absl::StatusOr<passes::testing::Loaded> loaded =
      passes::testing::Analyze(*std::move(model), /*require_static=*/false);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  absl::StatusOr<passes::Deployment> deployment =
      passes::Partition(loaded->model, loaded->graph, node_device, 2, {.stages = true});
  EXPECT_TRUE(deployment.ok()) << deployment.status();
  return {*std::move(loaded), *std::move(deployment)};
}

// The graph's first output declared as a tensor of unknown rank.
void ClearOutputShape(onnx::GraphProto& g) {
  g.mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
}

// SplitText with shapes inferred under `options` (--dim, --input-value).
Split SplitBound(const std::string& text, const std::vector<int32_t>& node_device,
                 const passes::ShapeOptions& options,
                 const std::function<void(onnx::GraphProto&)>& edit = nullptr) {
  absl::StatusOr<onnx_io::Model> model = ParseEdited(text, edit);
  absl::StatusOr<ir::Graph> graph = onnx_io::BuildGraph(*model);
  EXPECT_TRUE(graph.ok()) << graph.status();
  EXPECT_TRUE(passes::InferShapes(*model, options, *graph).ok());
  passes::testing::Loaded loaded{*std::move(model), *std::move(graph)};
  absl::StatusOr<passes::Deployment> deployment =
      passes::Partition(loaded.model, loaded.graph, node_device, 2, {.stages = true});
  EXPECT_TRUE(deployment.ok()) << deployment.status();
  return {std::move(loaded), *std::move(deployment)};
}

// The config of `name` among the repository's models.
const triton::ModelConfig& ConfigOf(const TritonRepository& repository, const std::string& name) {
  for (const TritonModel& model : repository.models) {
    if (model.config.name() == name) return model.config;
  }
  ADD_FAILURE() << "no model " << name;
  return repository.models.back().config;
}

// The dims of every input or output named `tensor` in the repository's
// configs, one list per appearance.
std::vector<std::vector<int64_t>> DimsEverywhere(const TritonRepository& repository,
                                                 const std::string& tensor) {
  std::vector<std::vector<int64_t>> all;
  for (const TritonModel& model : repository.models) {
    for (const triton::ModelInput& io : model.config.input()) {
      if (io.name() == tensor) all.push_back({io.dims().begin(), io.dims().end()});
    }
    for (const triton::ModelOutput& io : model.config.output()) {
      if (io.name() == tensor) all.push_back({io.dims().begin(), io.dims().end()});
    }
  }
  return all;
}

TritonRepository Build(const passes::Deployment& deployment,
                       const TritonRepositoryOptions& options = {.model_name = "chain"}) {
  absl::StatusOr<TritonRepository> repository = BuildTritonRepository(deployment, options);
  EXPECT_TRUE(repository.ok()) << repository.status();
  return *std::move(repository);
}

std::vector<int64_t> Dims(const auto& io) { return {io.dims().begin(), io.dims().end()}; }

std::map<std::string, std::string> MapOf(const google::protobuf::Map<std::string, std::string>& m) {
  return {m.begin(), m.end()};
}

void ExpectRoundTrip(const triton::ModelConfig& config) {
  const std::string text = TritonConfigText(config);
  triton::ModelConfig parsed;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &parsed)) << text;
  google::protobuf::util::MessageDifferencer differencer;
  std::string differences;
  differencer.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differencer.Compare(config, parsed)) << differences << "\n" << text;
}

TEST(TritonRepositoryTest, OneOnnxRuntimeModelPerStageAndAnEnsembleWiringThem) {
  const Split split = SplitText(kChain, {0, 1, 0});
  ASSERT_EQ(split.deployment.stages.size(), 3u);
  const TritonRepository repository = Build(split.deployment);
  ASSERT_EQ(repository.models.size(), 4u);

  const triton::ModelConfig& s0 = repository.models[0].config;
  EXPECT_EQ(s0.name(), "chain_s0");
  EXPECT_EQ(s0.platform(), "onnxruntime_onnx");
  EXPECT_TRUE(s0.has_max_batch_size());
  EXPECT_EQ(s0.max_batch_size(), 0);
  ASSERT_EQ(s0.input_size(), 1);
  EXPECT_EQ(s0.input(0).name(), "x");
  EXPECT_EQ(s0.input(0).data_type(), triton::TYPE_FP32);
  EXPECT_THAT(Dims(s0.input(0)), ElementsAre(2, 3));
  ASSERT_EQ(s0.output_size(), 1);
  EXPECT_EQ(s0.output(0).name(), "a");
  ASSERT_EQ(s0.instance_group_size(), 1);
  EXPECT_EQ(s0.instance_group(0).kind(), triton::ModelInstanceGroup::KIND_GPU);
  EXPECT_EQ(s0.instance_group(0).count(), 1);
  EXPECT_THAT(s0.instance_group(0).gpus(), ElementsAre(0));
  EXPECT_EQ(repository.models[0].model, &split.deployment.stages[0].proto);
  EXPECT_THAT(repository.models[1].config.instance_group(0).gpus(), ElementsAre(1));

  const triton::ModelConfig& ensemble = repository.models.back().config;
  EXPECT_EQ(repository.models.back().model, nullptr);
  EXPECT_EQ(ensemble.name(), "chain");
  EXPECT_EQ(ensemble.platform(), "ensemble");
  EXPECT_EQ(ensemble.instance_group_size(), 0);
  ASSERT_EQ(ensemble.input_size(), 1);
  EXPECT_EQ(ensemble.input(0).name(), "x");
  EXPECT_THAT(Dims(ensemble.input(0)), ElementsAre(2, 3));
  ASSERT_EQ(ensemble.output_size(), 1);
  EXPECT_EQ(ensemble.output(0).name(), "y");
  const triton::ModelEnsembling& steps = ensemble.ensemble_scheduling();
  ASSERT_EQ(steps.step_size(), 3);
  EXPECT_EQ(steps.step(0).model_name(), "chain_s0");
  EXPECT_EQ(steps.step(0).model_version(), -1);
  EXPECT_THAT(MapOf(steps.step(0).input_map()), ElementsAre(Pair("x", "x")));
  EXPECT_THAT(MapOf(steps.step(0).output_map()), ElementsAre(Pair("a", "a")));
  EXPECT_THAT(MapOf(steps.step(1).input_map()), ElementsAre(Pair("a", "a")));
  EXPECT_THAT(MapOf(steps.step(1).output_map()), ElementsAre(Pair("b", "b")));
  EXPECT_THAT(MapOf(steps.step(2).input_map()), ElementsAre(Pair("a", "a"), Pair("b", "b")));
  EXPECT_THAT(MapOf(steps.step(2).output_map()), ElementsAre(Pair("y", "y")));
}

TEST(TritonRepositoryTest, EveryConfigParsesBackIntoTheSameMessage) {
  const Split split = SplitText(kChain, {0, 1, 0});
  for (const TritonModel& model : Build(split.deployment).models) ExpectRoundTrip(model.config);
}

TEST(TritonRepositoryTest, TheTextStatesNoBatchingAndTheInstanceGroupAsTritonDocumentsThem) {
  const Split split = SplitText(kChain, {0, 1, 0});
  const TritonRepository repository =
      Build(split.deployment, {.model_name = "chain", .gpus = {3, 5}});
  const std::string stage = TritonConfigText(repository.models[1].config);
  EXPECT_THAT(stage, HasSubstr("platform: \"onnxruntime_onnx\"\n"));
  EXPECT_THAT(stage, HasSubstr("max_batch_size: 0\n"));
  EXPECT_THAT(stage, HasSubstr("kind: KIND_GPU\n"));
  EXPECT_THAT(stage, HasSubstr("gpus: 5\n"));
  EXPECT_THAT(stage, HasSubstr("data_type: TYPE_FP32\n"));
  const std::string ensemble = TritonConfigText(repository.models.back().config);
  EXPECT_THAT(ensemble, HasSubstr("platform: \"ensemble\"\n"));
  EXPECT_THAT(ensemble, HasSubstr("ensemble_scheduling {\n"));
  EXPECT_THAT(ensemble, HasSubstr("model_version: -1\n"));
}

TEST(TritonRepositoryTest, QuotesSlashesAndNonAsciiNamesSurviveTheRoundTrip) {
  const std::string quoted = "in \"quoted\" 'x'";
  const std::string slashed = "layer/0\\relu:0";
  const std::string unicode = "ausgabe_\xc3\xbc\xe2\x86\x92\xe6\x97\xa5";  // ü→日
  const Split split = SplitText(kChain, {0, 1, 0}, [&](onnx::GraphProto& g) {
    Rename(g, "x", quoted);
    Rename(g, "a", slashed);
    Rename(g, "y", unicode);
  });
  const TritonRepository repository = Build(split.deployment);
  for (const TritonModel& model : repository.models) ExpectRoundTrip(model.config);
  const triton::ModelConfig& ensemble = repository.models.back().config;
  EXPECT_EQ(ensemble.input(0).name(), quoted);
  EXPECT_EQ(ensemble.output(0).name(), unicode);
  EXPECT_THAT(MapOf(ensemble.ensemble_scheduling().step(1).input_map()),
              ElementsAre(Pair(slashed, slashed)));
  // UTF-8 is written as such; quotes and backslashes are escaped.
  const std::string text = TritonConfigText(ensemble);
  EXPECT_THAT(text, HasSubstr(unicode));
  EXPECT_THAT(text, HasSubstr(R"(name: "in \"quoted\" \'x\'")"));
  EXPECT_THAT(text, HasSubstr(R"("layer/0\\relu:0")"));
}

TEST(TritonRepositoryTest, SymbolicDimsAreMinusOneAndScalarsAreReshapedOnTheStageOnly) {
  // s is a scalar crossing from device 0 to device 1.
  const Split split = SplitText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N,3] x) => (float[N,3] y) {
      s = ReduceSum <keepdims = 0> (x)
      y = Mul(x, s)
    }
  )",
                                {0, 1});
  const TritonRepository repository = Build(split.deployment);
  ASSERT_EQ(repository.models.size(), 3u);
  const triton::ModelConfig& s0 = repository.models[0].config;
  EXPECT_THAT(Dims(s0.input(0)), ElementsAre(-1, 3));
  const triton::ModelOutput& scalar_out = s0.output(0);
  EXPECT_EQ(scalar_out.name(), "s");
  EXPECT_THAT(Dims(scalar_out), ElementsAre(1));
  ASSERT_TRUE(scalar_out.has_reshape());
  EXPECT_EQ(scalar_out.reshape().shape_size(), 0);
  const triton::ModelConfig& s1 = repository.models[1].config;
  bool found = false;
  for (const triton::ModelInput& input : s1.input()) {
    if (input.name() != "s") continue;
    found = true;
    EXPECT_THAT(Dims(input), ElementsAre(1));
    EXPECT_TRUE(input.has_reshape());
  }
  EXPECT_TRUE(found);
  EXPECT_THAT(TritonConfigText(s0), HasSubstr("reshape {\n"));
  for (const TritonModel& model : repository.models) ExpectRoundTrip(model.config);
  // The ensemble states its outputs without reshape: Triton compares the
  // ensemble's reshape (when given) with the steps' dims.
  EXPECT_FALSE(repository.models.back().config.output(0).has_reshape());
}

TEST(TritonRepositoryTest, GpusMapDevicesAndAMissingGpuIsAnError) {
  const Split split = SplitText(kChain, {0, 1, 0});
  const TritonRepository repository = Build(split.deployment, {.model_name = "m", .gpus = {7, 7}});
  for (size_t i = 0; i + 1 < repository.models.size(); ++i) {
    EXPECT_THAT(repository.models[i].config.instance_group(0).gpus(), ElementsAre(7));
  }
  absl::StatusOr<TritonRepository> short_list =
      BuildTritonRepository(split.deployment, {.model_name = "m", .gpus = {0}});
  EXPECT_EQ(short_list.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(short_list.status().message(), HasSubstr("device 1"));
}

TEST(TritonRepositoryTest, ModelNamesAreUniqueAndNeverTheEnsembles) {
  // Many stages: a random placement over a longer chain.
  std::string text = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4] x) => (float[4] y) {
      v0 = Relu(x)
  )";
  for (int i = 1; i < 12; ++i) text += absl::StrCat("v", i, " = Neg(v", i - 1, ")\n");
  text += "y = Relu(v11)\n}\n";
  const Split split = SplitText(text, {0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 0});
  const TritonRepository repository = Build(split.deployment, {.model_name = "m_s1"});
  std::set<std::string> names;
  for (const TritonModel& model : repository.models) {
    EXPECT_TRUE(names.insert(model.config.name()).second) << model.config.name();
    EXPECT_TRUE(IsValidTritonModelName(model.config.name()));
  }
  EXPECT_EQ(names.size(), split.deployment.stages.size() + 1);
  EXPECT_TRUE(names.contains("m_s1_s1"));
}

TEST(TritonRepositoryTest, ATensorWithoutRankOrTritonTypeIsAnErrorNamingIt) {
  const Split unranked =
      SplitText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y) {
      a = Relu(x)
      y = Neg(a)
    }
  )",
                {0, 1}, [](onnx::GraphProto& g) {
                  g.mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
                  g.mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
                });
  absl::StatusOr<TritonRepository> repository =
      BuildTritonRepository(unranked.deployment, {.model_name = "m"});
  EXPECT_EQ(repository.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(repository.status().message(), HasSubstr("rank of 'x'"));

  const Split complex = SplitText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (complex64[2] x) => (complex64[2] y) {
      y = Identity(x)
    }
  )",
                                  {0});
  repository = BuildTritonRepository(complex.deployment, {.model_name = "m"});
  EXPECT_EQ(repository.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(repository.status().message(), HasSubstr("COMPLEX64"));
}

TEST(TritonRepositoryTest, WithoutStagesThereIsNothingToServe) {
  const Split split = SplitText(kChain, {0, 1, 0});
  passes::Deployment no_stages = split.deployment;
  no_stages.stages.clear();
  EXPECT_EQ(BuildTritonRepository(no_stages, {.model_name = "m"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildTritonRepository(split.deployment, {.model_name = "a/b"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TritonRepositoryTest, FilesAreTheConfigsTheStageModelsAndTheEnsemblesVersionFolder) {
  const Split split = SplitText(kChain, {0, 1, 0});
  const TritonRepository repository = Build(split.deployment);
  onnx_io::DeploymentFiles files;
  AddTritonRepositoryFiles(repository, "triton", files);
  std::vector<std::string> configs;
  for (const auto& [path, text] : files.extra_files) configs.push_back(path);
  EXPECT_THAT(configs, ElementsAre("triton/chain/config.pbtxt", "triton/chain_s0/config.pbtxt",
                                   "triton/chain_s1/config.pbtxt", "triton/chain_s2/config.pbtxt"));
  std::vector<std::string> models;
  for (const onnx_io::ModelFile& file : files.models) models.push_back(file.path);
  EXPECT_THAT(models, ElementsAre("triton/chain_s0/1/model.onnx", "triton/chain_s1/1/model.onnx",
                                  "triton/chain_s2/1/model.onnx"));
  EXPECT_THAT(files.folders, ElementsAre("triton/chain/1"));
  EXPECT_EQ(files.extra_files["triton/chain_s1/config.pbtxt"],
            TritonConfigText(repository.models[1].config));
}

TEST(TritonRepositoryTest, OutputDimsComeFromShapeInferenceOnTheStageModel) {
  // y is declared [N, 3] and then without any shape; ONNX Runtime fixes it
  // to [2, 3] from x, and would refuse a config saying -1 for N.
  constexpr char kDeclaredN[] = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float[N,3] y) {
      a = Relu(x)
      y = Neg(a)
    }
  )";
  for (const bool declared : {true, false}) {
    SCOPED_TRACE(declared ? "declared [N, 3]" : "declared without shape");
    const Split split = SplitText(kDeclaredN, {0, 1}, [&](onnx::GraphProto& g) {
      if (!declared) ClearOutputShape(g);
    });
    // Without the planner's shapes: the stage model alone.
    const TritonRepository repository = Build(split.deployment, {.model_name = "m"});
    EXPECT_THAT(Dims(ConfigOf(repository, "m_s1").output(0)), ElementsAre(2, 3));
    EXPECT_THAT(Dims(ConfigOf(repository, "m").output(0)), ElementsAre(2, 3));
  }
}

TEST(TritonRepositoryTest, ThePlannersShapesFillWhatOnnxInferenceCannotReach) {
  // A Reshape to a shape computed at run time: ONNX 1.12 infers no rank for
  // y on the stage, the planner (data propagation, folding) knows [4, 2].
  constexpr char kReshape[] = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,4] x) => (float[2,4] y) {
      t = Transpose <perm = [1, 0]> (x)
      s = Shape(t)
      y = Reshape(x, s)
    }
  )";
  const Split split = SplitText(kReshape, {0, 0, 1}, ClearOutputShape);
  absl::StatusOr<TritonRepository> alone =
      BuildTritonRepository(split.deployment, {.model_name = "m"});
  EXPECT_THAT(alone.status().message(), HasSubstr("rank of 'y'"));
  const TritonRepository repository =
      Build(split.deployment, {.model_name = "m", .graph = &split.loaded.graph});
  EXPECT_THAT(DimsEverywhere(repository, "y"), ::testing::Each(ElementsAre(4, 2)));
}

// --dim N=4 on a model whose every tensor leads with N: the stages are
// planned at [4, 3], but dim 0 is N itself everywhere (passes/symbolic_dims.h).
constexpr char kLeadingSymbol[] = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N,3] x) => (float[N,3] y) {
      a = Relu(x)
      y = Neg(a)
    }
  )";

TEST(TritonRepositoryTest, BoundSymbolsStayOpenWhereverTheDimIsTheSymbol) {
  // Unbatched, the configs say -1 there, not the planned 4.
  const Split split = SplitBound(kLeadingSymbol, {0, 1}, {.dim_values = {{"N", 4}}});
  const TritonRepository repository = Build(
      split.deployment, {.model_name = "m", .graph = &split.loaded.graph, .max_batch_size = 0});
  EXPECT_EQ(repository.max_batch_size, 0);
  EXPECT_EQ(repository.unbatched_reason, "--triton-max-batch 0");
  for (const char* tensor : {"x", "a", "y"}) {
    SCOPED_TRACE(tensor);
    EXPECT_THAT(DimsEverywhere(repository, tensor), ::testing::Each(ElementsAre(-1, 3)));
  }
}

TEST(TritonRepositoryTest, StagesThatAllLeadWithTheSymbolBatch) {
  const Split split = SplitBound(kLeadingSymbol, {0, 1}, {.dim_values = {{"N", 4}}});
  const TritonRepository repository =
      Build(split.deployment, {.model_name = "m", .graph = &split.loaded.graph});
  EXPECT_EQ(repository.max_batch_size, 8);
  EXPECT_EQ(repository.batch_dim, "N");
  for (const TritonModel& model : repository.models) {
    SCOPED_TRACE(model.config.name());
    EXPECT_EQ(model.config.max_batch_size(), 8);
    // Stages batch dynamically; the ensemble has its own scheduling.
    EXPECT_EQ(model.config.has_dynamic_batching(), model.model != nullptr);
  }
  for (const char* tensor : {"x", "a", "y"}) {
    SCOPED_TRACE(tensor);
    EXPECT_THAT(DimsEverywhere(repository, tensor), ::testing::Each(ElementsAre(3)));
  }
}

TEST(TritonRepositoryTest, ATensorThatDoesNotLeadWithTheBatchKeepsItUnbatched) {
  // The cut passes a [3, N] transpose: dim 0 is not the batch.
  const Split split = SplitBound(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N,3] x) => (float[N,3] y) {
      t = Transpose <perm = [1, 0]> (x)
      y = Transpose <perm = [1, 0]> (t)
    }
  )",
                                 {0, 1}, {.dim_values = {{"N", 4}}});
  const TritonRepository repository =
      Build(split.deployment, {.model_name = "m", .graph = &split.loaded.graph});
  EXPECT_EQ(repository.max_batch_size, 0);
  EXPECT_THAT(repository.unbatched_reason, HasSubstr("'t' is [3,N]: its dim 0 is not 'N'"));
  EXPECT_THAT(DimsEverywhere(repository, "t"), ::testing::Each(ElementsAre(3, -1)));
}

TEST(TritonRepositoryTest, EstimatedDimsStayMinusOne) {
  // The If's branches give [2, 3] and [2, 5]; the condition is not known, so
  // the planner assumes the larger, an estimate: only dim 0 is a fact.
  const Split split = SplitText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (bool c, float[2,3] x, float[2,2] w) => (float[2,3] y) {
      z = If (c) <
        then_branch = then_g () => (float[2,3] t) { t = Relu(x) },
        else_branch = else_g () => (float[2,5] e) { e = Concat <axis = 1> (x, w) }
      >
      y = Neg(z)
    }
  )",
                                {0, 1}, ClearOutputShape);
  const ir::Graph& graph = split.loaded.graph;
  ASSERT_TRUE(graph.value(*graph.FindValue("z")).shape_estimated);
  const TritonRepository repository = Build(split.deployment, {.model_name = "m", .graph = &graph});
  // The stage that computes z: ONNX's inference merges the branches.
  EXPECT_THAT(Dims(ConfigOf(repository, "m_s0").output(0)), ElementsAre(2, -1));
  for (const char* tensor : {"z", "y"}) {
    SCOPED_TRACE(tensor);
    const std::vector<std::vector<int64_t>> all = DimsEverywhere(repository, tensor);
    ASSERT_FALSE(all.empty());
    for (const std::vector<int64_t>& dims : all) {
      ASSERT_EQ(dims.size(), 2u);
      EXPECT_EQ(dims[1], -1);
    }
  }
}

TEST(TritonRepositoryTest, ShapesThatFollowAGivenInputValueStayOpen) {
  // --input-value r=2,1 plans t as [4, 3]; a request may send other repeats.
  const Split split = SplitBound(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x, int64[2] r) => (float[4,3] y) {
      a = Relu(x)
      t = Tile(a, r)
      y = Neg(t)
    }
  )",
                                 {0, 1, 1}, {.input_values = {{"r", {2, 1}}}}, ClearOutputShape);
  const ir::Graph& graph = split.loaded.graph;
  ASSERT_EQ(graph.value(*graph.FindValue("y")).shape.ToString(), "[4,3]");
  EXPECT_THAT(DimsEverywhere(Build(split.deployment, {.model_name = "m", .graph = &graph}), "y"),
              ::testing::Each(ElementsAre(4, 3)));
  const TritonRepository repository =
      Build(split.deployment, {.model_name = "m", .graph = &graph, .given_inputs = {"r"}});
  EXPECT_THAT(DimsEverywhere(repository, "y"), ::testing::Each(ElementsAre(-1, -1)));
  EXPECT_THAT(DimsEverywhere(repository, "a"), ::testing::Each(ElementsAre(2, 3)));
}

TEST(TritonRepositoryTest, InitializersListedAsGraphInputsAreNoTritonInputs) {
  // b is a weight the graph also lists as an input (ONNX Runtime lets a
  // caller override it); Triton would demand it in every request.
  const Split split = SplitText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x, float[3] b) => (float[2,3] y)
      <float[3] b = {1.0, 2.0, 3.0}>
    {
      a = Add(x, b)
      y = Neg(a)
    }
  )",
                                {0, 1});
  const TritonRepository repository = Build(split.deployment, {.model_name = "m"});
  bool stage_lists_b = false;
  for (const passes::Stage& stage : split.deployment.stages) {
    for (const onnx::ValueInfoProto& input : stage.proto.graph().input()) {
      stage_lists_b = stage_lists_b || input.name() == "b";
    }
  }
  EXPECT_TRUE(stage_lists_b) << "the case this test is about did not arise";
  EXPECT_TRUE(DimsEverywhere(repository, "b").empty());
  for (const triton::ModelEnsembling::Step& step :
       repository.models.back().config.ensemble_scheduling().step()) {
    EXPECT_FALSE(step.input_map().contains("b")) << step.model_name();
  }
  EXPECT_THAT(DimsEverywhere(repository, "x"), ::testing::Each(ElementsAre(2, 3)));
}

TEST(TritonModelNameTest, KeepsSafeCharactersAndReplacesEveryOtherCharacterOnce) {
  EXPECT_EQ(TritonModelName("resnet50-v1.5_int8"), "resnet50-v1.5_int8");
  EXPECT_EQ(TritonModelName("my model (final)"), "my_model__final_");
  EXPECT_EQ(TritonModelName("mod\xc3\xa8le"), "mod_le");  // è is one character
  EXPECT_EQ(TritonModelName(".hidden"), "_hidden");
  EXPECT_EQ(TritonModelName(""), "model");
  EXPECT_EQ(TritonModelName(std::string(300, 'a')).size(), 100u);
  EXPECT_TRUE(IsValidTritonModelName("bert_base"));
  EXPECT_FALSE(IsValidTritonModelName("a/b"));
  EXPECT_FALSE(IsValidTritonModelName(""));
}

}  // namespace
}  // namespace autopar::tools
