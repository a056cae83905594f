// The conversation rows written once for both backends: the frontier's stored encoding. The
// mappers' errors on a real file are in sqlite/sqlite_conversation_store_test.cc.
#include "store/conversation_rows.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "store/conversation_store_contract.h"

namespace contextd::store {
namespace {

TEST(FrontierCodecTest, RoundTripsAnyBytesAndLengths) {
  std::vector<std::string> hashes = {"", Hash(1), std::string(127, 'a'), std::string(128, 'b'),
                                     std::string(70000, '\0')};
  std::string blob = EncodeFrontier(hashes);
  EXPECT_EQ(static_cast<unsigned char>(blob[0]), 0u);   // "" is one zero byte
  EXPECT_EQ(static_cast<unsigned char>(blob[1]), 16u);  // a 16-byte hash costs one byte more
  auto back = DecodeFrontier(blob);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, hashes);
  EXPECT_EQ(EncodeFrontier({}), "");
  auto none = DecodeFrontier("");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(FrontierCodecTest, RejectsEveryTruncationOfAValidBlob) {
  std::string blob = EncodeFrontier({Hash(1), std::string(200, 'z')});
  for (size_t n = 1; n < blob.size(); ++n) {
    auto decoded = DecodeFrontier(std::string_view(blob).substr(0, n));
    // A cut exactly between entries is a shorter valid list; anywhere else is an error.
    if (n == 17) {
      ASSERT_TRUE(decoded.ok());
      EXPECT_EQ(*decoded, std::vector<std::string>{Hash(1)});
    } else {
      EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument) << n;
    }
  }
}

}  // namespace
}  // namespace contextd::store
