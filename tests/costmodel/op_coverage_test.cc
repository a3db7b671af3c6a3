// Every operator onnx-autopar knows (ir/op_kinds.def) has a cost formula or an
// explicit rule, and no formula crashes or overflows on odd operands: missing
// inputs, unknown shapes, no attributes.
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "costmodel/op_costs.h"
#include "gtest/gtest.h"
#include "tests/costmodel/test_graph.h"

namespace autopar::costmodel {
namespace {

using ir::DType;
using ir::OpKind;
using testing::Dims;
using testing::TestGraph;

std::string Name(OpKind kind) {
  std::string domain(ir::OpKindDomain(kind));
  return domain.empty() ? std::string(ir::OpKindName(kind))
                        : domain + "." + std::string(ir::OpKindName(kind));
}

// One node of `kind` reading `inputs` tensors of `dims` and writing one.
NodeCost CostOfLoneNode(OpKind kind, int inputs, Dims dims) {
  TestGraph g;
  std::vector<ir::ValueId> ids;
  for (int i = 0; i < inputs; ++i) {
    ids.push_back(g.Input("x" + std::to_string(i), DType::kFloat, dims));
  }
  g.Output(g.Op(kind, ids, dims));
  absl::StatusOr<ir::Graph> graph = std::move(g).Build();
  EXPECT_TRUE(graph.ok()) << graph.status();
  return ComputeGraphCosts(*graph)[0];
}

TEST(OpCoverageTest, EveryKnownOperatorHasAFormulaOrARule) {
  std::vector<std::string> missing;
  int formulas = 0;
  int data_movement = 0;
  int metadata = 0;
  int subgraph = 0;
  for (OpKind kind : ir::AllOpKinds()) {
    NodeCost c = CostOfLoneNode(kind, 3, Dims{{2, 3, 4, 5}});
    if (!c.has_formula || c.rule == CostRule::kNone) {
      missing.push_back(Name(kind));
      continue;
    }
    formulas += c.rule == CostRule::kFormula ? 1 : 0;
    data_movement += c.rule == CostRule::kDataMovement ? 1 : 0;
    metadata += c.rule == CostRule::kMetadata ? 1 : 0;
    subgraph += c.rule == CostRule::kSubgraph ? 1 : 0;
  }
  EXPECT_TRUE(missing.empty()) << "no cost rule for: " << absl::StrJoin(missing, ", ");
  std::printf("%zu operators: %d formulas, %d data movement, %d metadata, %d subgraph\n",
              ir::AllOpKinds().size(), formulas, data_movement, metadata, subgraph);
  EXPECT_GE(ir::AllOpKinds().size(), 240u);  // the whole list was seen
}

TEST(OpCoverageTest, FormulasSurviveOddOperands) {
  struct Case {
    const char* what;
    int inputs;
    Dims dims;
  };
  const Case kCases[] = {{"no inputs", 0, Dims{{4}}},
                         {"one scalar", 1, testing::Scalar()},
                         {"unknown shapes", 9, std::nullopt},
                         {"empty tensors", 4, Dims{{0, 3}}},
                         {"huge dims", 3, Dims{{int64_t{1} << 31, int64_t{1} << 31, 8}}}};
  for (const Case& test : kCases) {
    for (OpKind kind : ir::AllOpKinds()) {
      SCOPED_TRACE(Name(kind) + " with " + test.what);
      NodeCost c = CostOfLoneNode(kind, test.inputs, test.dims);
      EXPECT_TRUE(c.has_formula);
      EXPECT_GE(c.flops, c.macs) << "a MAC is two FLOPs";
      EXPECT_GE(c.macs, 0);
      EXPECT_GE(c.bytes_read, 0);
      EXPECT_GE(c.workspace_bytes, 0);
      if (test.dims == std::nullopt) {
        EXPECT_TRUE(c.estimated);
      }
    }
  }
}

}  // namespace
}  // namespace autopar::costmodel
