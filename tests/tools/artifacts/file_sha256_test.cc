// SHA-256 against the FIPS 180-4 example vectors, fed whole and in pieces.
#include "tools/sha256.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace autopar::tools {
namespace {

std::string Digest(const std::string& text, size_t piece) {
  Sha256 hash;
  for (size_t i = 0; i < text.size(); i += piece)
    hash.Update(std::string_view(text).substr(i, piece));
  return hash.HexDigest();
}

TEST(Sha256Test, MatchesTheStandardVectors) {
  const std::string million_a(1000000, 'a');
  const struct {
    std::string text;
    const char* digest;
  } cases[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {million_a, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
  for (const auto& c : cases) {
    // Piece sizes that straddle the 64-byte block and the 56-byte padding edge.
    for (size_t piece : {size_t{1}, size_t{55}, size_t{56}, size_t{63}, size_t{64}, size_t{1000},
                         size_t{1} << 20}) {
      EXPECT_EQ(Digest(c.text, piece), c.digest)
          << c.text.size() << " bytes in pieces of " << piece;
    }
  }
}

TEST(Sha256Test, OfFile) {
  testing::TempDir dir;
  absl::StatusOr<std::string> digest = Sha256OfFile(dir.Write("abc.txt", "abc"));
  ASSERT_TRUE(digest.ok()) << digest.status();
  EXPECT_EQ(*digest, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_FALSE(Sha256OfFile(dir / "missing").ok());
}

}  // namespace
}  // namespace autopar::tools
