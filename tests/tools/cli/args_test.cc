#include "tools/cli/args.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace autopar::tools {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::vector<FlagSpec> kSpecs = {
    {"format", true}, {"force", false}, {"dim", true, true}, {"output", true}};

TEST(ArgsTest, ParsesFlagsInEveryForm) {
  absl::StatusOr<ParsedArgs> a = ParseArgs(
      {"m.onnx", "--format", "json", "--dim=a=1", "--dim", "b=2", "-o", "out", "--force"}, kSpecs);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->positional(), ElementsAre("m.onnx"));
  EXPECT_EQ(a->Get("format"), "json");
  EXPECT_THAT(a->GetAll("dim"), ElementsAre("a=1", "b=2"));
  EXPECT_EQ(a->Get("output"), "out");
  EXPECT_TRUE(a->Has("force"));
  EXPECT_FALSE(a->Has("missing"));
}

TEST(ArgsTest, LastValueWinsForSingleFlags) {
  absl::StatusOr<ParsedArgs> a = ParseArgs({"--format", "a", "--format", "b"}, kSpecs);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->Get("format"), "b");
}

TEST(ArgsTest, DoubleDashEndsFlags) {
  absl::StatusOr<ParsedArgs> a = ParseArgs({"--", "--format"}, kSpecs);
  ASSERT_TRUE(a.ok());
  EXPECT_THAT(a->positional(), ElementsAre("--format"));
}

TEST(ArgsTest, Errors) {
  EXPECT_THAT(std::string(ParseArgs({"--nope"}, kSpecs).status().message()),
              HasSubstr("unknown flag '--nope'"));
  EXPECT_THAT(std::string(ParseArgs({"--format"}, kSpecs).status().message()),
              HasSubstr("--format needs a value"));
  EXPECT_THAT(std::string(ParseArgs({"--force=yes"}, kSpecs).status().message()),
              HasSubstr("takes no value"));
}

}  // namespace
}  // namespace autopar::tools
