#include "tools/cli/mode_flags.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace autopar::tools {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<costmodel::StepOptions> Parse(const std::vector<std::string>& args) {
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, ModeFlagSpecs());
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return StepOptionsFromArgs(*parsed);
}

TEST(ModeFlagsTest, DefaultsToInference) {
  absl::StatusOr<costmodel::StepOptions> step = Parse({});
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(step->mode, costmodel::StepMode::kInference);
  EXPECT_EQ(StepDescription(*step), "inference");
}

TEST(ModeFlagsTest, TrainingWithEachOptimizer) {
  absl::StatusOr<costmodel::StepOptions> adam = Parse({"--mode", "training"});
  ASSERT_TRUE(adam.ok());
  EXPECT_EQ(adam->mode, costmodel::StepMode::kTraining);
  EXPECT_EQ(adam->optimizer, costmodel::Optimizer::kAdam);
  EXPECT_EQ(StepDescription(*adam), "training (adam)");
  absl::StatusOr<costmodel::StepOptions> sgd = Parse({"--mode=training", "--optimizer", "sgd"});
  ASSERT_TRUE(sgd.ok());
  EXPECT_EQ(sgd->optimizer, costmodel::Optimizer::kSgd);
  absl::StatusOr<costmodel::StepOptions> momentum =
      Parse({"--optimizer", "momentum", "--mode", "training"});
  ASSERT_TRUE(momentum.ok());
  EXPECT_EQ(momentum->optimizer, costmodel::Optimizer::kMomentum);
}

TEST(ModeFlagsTest, BadValuesNameTheFlag) {
  absl::StatusOr<costmodel::StepOptions> mode = Parse({"--mode", "train"});
  ASSERT_FALSE(mode.ok());
  EXPECT_THAT(mode.status().message(), HasSubstr("--mode must be inference or training"));
  absl::StatusOr<costmodel::StepOptions> optimizer =
      Parse({"--mode", "training", "--optimizer", "lamb"});
  ASSERT_FALSE(optimizer.ok());
  EXPECT_THAT(optimizer.status().message(), HasSubstr("'lamb'"));
  absl::StatusOr<costmodel::StepOptions> alone = Parse({"--optimizer", "sgd"});
  ASSERT_FALSE(alone.ok());
  EXPECT_THAT(alone.status().message(), HasSubstr("--mode training"));
}

}  // namespace
}  // namespace autopar::tools
