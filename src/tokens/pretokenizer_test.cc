#include "tokens/internal/pretokenizer.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace contextd::tokens::internal {
namespace {

std::vector<std::string> Split(SplitPattern pattern, std::string_view text) {
  std::vector<std::string> out;
  Pretokenizer(pattern, text).ForEach([&](std::string_view piece) { out.emplace_back(piece); });
  return out;
}

using V = std::vector<std::string>;
constexpr auto kO200k = SplitPattern::kO200k;
constexpr auto kCl100k = SplitPattern::kCl100k;

TEST(PretokenizerTest, WordsSpacesAndNumbers) {
  EXPECT_EQ(Split(kO200k, "Hello world  again"), (V{"Hello", " world", " ", " again"}));
  EXPECT_EQ(Split(kO200k, "x  "), (V{"x", "  "}));
  EXPECT_EQ(Split(kO200k, "1234567 "), (V{"123", "456", "7", " "}));
  EXPECT_EQ(Split(kO200k, " 12"), (V{" ", "12"}));
  EXPECT_EQ(Split(kCl100k, "\tfoo bar"), (V{"\tfoo", " bar"}));
  EXPECT_EQ(Split(kO200k, ""), V{});
}

TEST(PretokenizerTest, NewlinesAndWhitespaceRuns) {
  EXPECT_EQ(Split(kO200k, "a\n\n b"), (V{"a", "\n\n", " b"}));
  EXPECT_EQ(Split(kO200k, "a \r\n  \n\tb"), (V{"a", " \r\n  \n", "\tb"}));
  EXPECT_EQ(Split(kCl100k, "a   b"), (V{"a", "  ", " b"}));
  // U+0085 is White_Space in Rust's regex (JavaScript ports disagree); U+FEFF is not.
  EXPECT_EQ(Split(kO200k,
                  "a\xC2\x85\xC2\x85"
                  "b"),
            (V{"a", "\xC2\x85",
               "\xC2\x85"
               "b"}));
  EXPECT_EQ(Split(kO200k,
                  "a \xEF\xBB\xBF"
                  "b"),
            (V{"a", " \xEF\xBB\xBF", "b"}));
}

TEST(PretokenizerTest, O200kCaseRuns) {
  EXPECT_EQ(Split(kO200k, "HTTPServer iPhone"), (V{"HTTPServer", " i", "Phone"}));
  EXPECT_EQ(Split(kO200k, "ABC def"), (V{"ABC", " def"}));
  // "カA": the upper run takes both, then backtracks to the Lo character for the lower run.
  EXPECT_EQ(Split(kO200k,
                  "\xE3\x82\xAB"
                  "A "),
            (V{"\xE3\x82\xAB", "A", " "}));
  // A leading mark: the prefix try fails ("ABC" has no lower-set character), then the mark
  // alone is the lower run.
  EXPECT_EQ(Split(kO200k,
                  "\xCC\x81"
                  "ABC"),
            (V{"\xCC\x81", "ABC"}));
}

TEST(PretokenizerTest, Contractions) {
  EXPECT_EQ(Split(kO200k, "don't WE'LL"), (V{"don't", " WE'LL"}));
  EXPECT_EQ(Split(kCl100k, "don't WE'LL"), (V{"don", "'t", " WE", "'LL"}));
  EXPECT_EQ(Split(kCl100k, "'sa"), (V{"'s", "a"}));
  // Case-insensitive 's' also matches U+017F LATIN SMALL LETTER LONG S.
  EXPECT_EQ(Split(kCl100k, "x'\xC5\xBF"), (V{"x", "'\xC5\xBF"}));
}

TEST(PretokenizerTest, Punctuation) {
  EXPECT_EQ(Split(kO200k, "a //x\n/"), (V{"a", " //", "x", "\n", "/"}));
  EXPECT_EQ(Split(kO200k, "x;\n\ny"), (V{"x", ";\n\n", "y"}));
  EXPECT_EQ(Split(kCl100k, "x;\n/y"), (V{"x", ";\n", "/y"}));
}

TEST(PretokenizerTest, ClassTableMatchesUtf8proc) {
  const UnicodeClasses& table = UnicodeClasses::Get();
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    ASSERT_EQ(table.Of(cp), UnicodeClasses::Compute(cp)) << cp;
  }
  EXPECT_EQ(table.Of(0x85), kSpace);
  EXPECT_EQ(table.Of(0xFEFF), 0);
  EXPECT_EQ(table.Of(0x301), kMark | kUpperSet | kLowerSet);
  EXPECT_EQ(table.Of('A'), kLetter | kUpperSet);
  EXPECT_EQ(table.Of(0x2167), kNumber);  // ROMAN NUMERAL EIGHT (Nl)
}

}  // namespace
}  // namespace contextd::tokens::internal
