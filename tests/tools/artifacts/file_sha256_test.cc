// SHA-256 of files against the FIPS 180-4 example vectors.
#include "tools/artifacts/file_sha256.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace autopar::tools {
namespace {

TEST(FileSha256Test, MatchesTheStandardVectors) {
  testing::TempDir dir;
  const struct {
    std::string name;
    std::string text;
    const char* digest;
  } cases[] = {
      {"empty", "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"two_blocks", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"million_a", std::string(1000000, 'a'),
       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
      // Larger than the 1 MiB read buffer: the file is hashed in pieces
      // (digest from Python's hashlib).
      {"three_million_a", std::string(3000000, 'a'),
       "2a152c894398719c0570f83fac34ac03a0f6e8e474b995c2403aa5434f7b9dd4"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<std::string> digest = Sha256OfFile(dir.Write(c.name, c.text));
    ASSERT_TRUE(digest.ok()) << digest.status();
    EXPECT_EQ(*digest, c.digest) << c.name;
  }
}

TEST(FileSha256Test, MissingFileIsAnError) {
  testing::TempDir dir;
  EXPECT_FALSE(Sha256OfFile(dir / "missing").ok());
}

}  // namespace
}  // namespace autopar::tools
