#include "tokens/internal/utf8.h"

#include <random>
#include <string>

#include "gtest/gtest.h"

namespace contextd::tokens::internal {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

std::string Rep(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += kFffd;
  return s;
}

TEST(Utf8Test, ValidInputIsUnchanged) {
  for (std::string s : {std::string(""), std::string("ascii"), std::string("h\xC3\xA9llo"),
                        std::string("\xE2\x82\xAC \xF0\x9F\x98\x80 \xED\x9F\xBF \xEE\x80\x80"),
                        std::string("\xF4\x8F\xBF\xBF"), std::string("nul\0byte", 8)}) {
    EXPECT_TRUE(IsValidUtf8(s)) << s;
    EXPECT_EQ(ReplaceInvalidUtf8(s), s);
  }
}

// Expected values are what Python 3's bytes.decode("utf-8", "replace") returns.
TEST(Utf8Test, ReplacesMaximalSubpartsLikePython) {
  struct Case {
    std::string in, out;
  } cases[] = {
      {"a\x80"
       "b",
       "a\xEF\xBF\xBD"
       "b"},
      {"\xBF\xBF", Rep(2)},
      {"\xC0\xAF", Rep(2)},  // C0 is never valid
      {"\xC1\xBF", Rep(2)},
      {"\xE0\x80\xAF", Rep(3)},  // E0 needs A0..BF next
      {"\xE2\x82", Rep(1)},      // truncated: one maximal subpart
      {"\xE2\x82x", Rep(1) + "x"},
      {"\xF0\x9F\x98", Rep(1)},
      {"\xF0\x9F\x98"
       "A",
       Rep(1) + "A"},
      {"\xF0\x80\x80\xAF", Rep(4)},  // F0 needs 90..BF next
      {"\xED\xA0\x80", Rep(3)},      // surrogate
      {"\xF4\x90\x80\x80", Rep(4)},  // above U+10FFFF
      {"\xF5\x80", Rep(2)},
      {"\xFF\xFE", Rep(2)},
      {"\xC3", Rep(1)},
      {"\xC3\xC3\xA9", Rep(1) + "\xC3\xA9"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(IsValidUtf8(c.in));
    EXPECT_EQ(ReplaceInvalidUtf8(c.in), c.out) << "input bytes: " << c.in.size();
  }
}

TEST(Utf8Test, RandomBytesBecomeValid) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string s(rng() % 40, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 4 == 0 ? rng() % 128 : 0x80 + rng() % 128);
    std::string fixed = ReplaceInvalidUtf8(s);
    EXPECT_TRUE(IsValidUtf8(fixed));
    EXPECT_EQ(IsValidUtf8(s), fixed == s);
    EXPECT_EQ(ReplaceInvalidUtf8(fixed), fixed);
  }
}

TEST(Utf8Test, DecodeValid) {
  size_t len;
  EXPECT_EQ(DecodeValid(reinterpret_cast<const uint8_t*>("A"), &len), 0x41u);
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(DecodeValid(reinterpret_cast<const uint8_t*>("\xC5\xBF"), &len), 0x17Fu);
  EXPECT_EQ(len, 2u);
  EXPECT_EQ(DecodeValid(reinterpret_cast<const uint8_t*>("\xEF\xBB\xBF"), &len), 0xFEFFu);
  EXPECT_EQ(len, 3u);
  EXPECT_EQ(DecodeValid(reinterpret_cast<const uint8_t*>("\xF0\x9F\x98\x80"), &len), 0x1F600u);
  EXPECT_EQ(len, 4u);
}

}  // namespace
}  // namespace contextd::tokens::internal
