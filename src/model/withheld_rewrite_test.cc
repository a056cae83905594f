#include "model/withheld_rewrite.h"

#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scrub/private_spans.h"
#include "scrub/rule_scrubber.h"

namespace contextd::model {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const scrub::RuleScrubber& Rules() {
  static const auto scrubber = *scrub::BuildScrubber(scrub::ScrubConfig{});
  return *scrubber;
}

std::string Token(std::mt19937& rng) {
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string t = "ghp_";
  for (int i = 0; i < 36; ++i) t.push_back(kAlnum[rng() % 62]);
  return t;
}

// Aligns what the rule scrubber made of `text` and checks that the edits rebuild it.
void ExpectAligned(const std::string& text) {
  std::string scrubbed = Rules().Scrub(text);
  auto edits = AlignRedactions(text, scrubbed);
  ASSERT_TRUE(edits.has_value()) << text << "\n-> " << scrubbed;
  auto rebuilt = ApplyRedactions(text, *edits);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_EQ(*rebuilt, scrubbed) << text;
}

TEST(WithheldRewriteTest, AlignsTheRuleScrubbersRedactions) {
  std::mt19937 rng(7);
  ExpectAligned("nothing to see");
  ExpectAligned(Token(rng));
  ExpectAligned("a " + Token(rng) + " b " + Token(rng) + " c");
  ExpectAligned(Token(rng) + Token(rng));
  ExpectAligned("<private>" + Token(rng) + "</private> and " + Token(rng));
  // A marker that was in the text already stays as it was.
  ExpectAligned("seen before: [REDACTED:github-pat:ghp_] then " + Token(rng) + "\n");
  ExpectAligned("aws_access_key_id = AKIAIOSFODNN7EXAMPLF\npassword = \"hunter2hunter2x\"\n");
}

TEST(WithheldRewriteTest, AlignsRandomTexts) {
  std::mt19937 rng(11);
  const std::vector<std::string> words = {"a",    " ",         "\n",         "key",
                                          "=",    "<private>", "</private>", "[REDACTED:x:ab]",
                                          "ghp_", "token: ",   "REDACTED",   "]"};
  for (int round = 0; round < 300; ++round) {
    std::string text;
    int parts = 1 + static_cast<int>(rng() % 12);
    for (int p = 0; p < parts; ++p) {
      text += rng() % 3 == 0 ? Token(rng) : words[rng() % words.size()];
    }
    ExpectAligned(text);
  }
}

TEST(WithheldRewriteTest, TheStoredFormHoldsNoText) {
  std::mt19937 rng(3);
  std::string token = Token(rng);
  std::string text = "<private>PRIVATE-NOTE " + token + "</private> " + Token(rng);
  std::string scrubbed = Rules().Scrub(text);
  ASSERT_THAT(scrubbed, HasSubstr("PRIVATE-NOTE"));  // the model gets the span
  auto edits = AlignRedactions(text, scrubbed);
  ASSERT_TRUE(edits.has_value());
  ASSERT_EQ(edits->size(), 2u);
  WithheldRewrite w;
  w.digest = BlockDigest(scrubbed);
  w.spans = std::vector<std::vector<RedactionEdit>>{*edits, {}};
  std::string value = w.Serialize();
  EXPECT_TRUE(WithheldRewrite::Is(value));
  EXPECT_THAT(value, Not(HasSubstr("PRIVATE")));
  EXPECT_THAT(value, Not(HasSubstr(token.substr(4, 8))));
  auto parsed = WithheldRewrite::Parse(value);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->digest, w.digest);
  EXPECT_EQ(parsed->spans, w.spans);

  WithheldRewrite unaligned;
  unaligned.digest = "d";
  auto back = WithheldRewrite::Parse(unaligned.Serialize());
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->spans.has_value());
  // A block value (JSON) is never taken for one.
  EXPECT_FALSE(WithheldRewrite::Is(R"({"type":"text","text":"#withheld-rewrite/1 "})"));
  for (std::string_view bad :
       {"#withheld-rewrite/1 ", "#withheld-rewrite/1 {}",
        "#withheld-rewrite/1 {\"digest\":\"d\",\"spans\":[[[1,2,3]]]}",
        "#withheld-rewrite/1 {\"digest\":\"d\",\"spans\":[[[-1,2,0,\"r\"]]]}",
        "{\"digest\":\"d\",\"spans\":null}"}) {
    EXPECT_EQ(WithheldRewrite::Parse(bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(WithheldRewriteTest, OtherScrubbersOutputIsNotAligned) {
  EXPECT_FALSE(AlignRedactions("token SECRET123", "token [REDACTED]").has_value());
  EXPECT_FALSE(AlignRedactions("abc", "xyz").has_value());
  EXPECT_FALSE(AlignRedactions("abc", "abc[REDACTED:r:zz]").has_value());  // preview not in it
}

TEST(WithheldRewriteTest, ApplyRejectsEditsThatDoNotFit) {
  EXPECT_EQ(*ApplyRedactions("abcdef", {{1, 3, 1, "r"}}), "a[REDACTED:r:b]def");
  EXPECT_FALSE(ApplyRedactions("abc", {{1, 9, 0, "r"}}).ok());
  EXPECT_FALSE(ApplyRedactions("abc", {{2, 2, 0, "r"}}).ok());
  EXPECT_FALSE(ApplyRedactions("abcdef", {{2, 4, 0, "r"}, {3, 5, 0, "r"}}).ok());
  EXPECT_FALSE(ApplyRedactions("abcdef", {{2, 4, 3, "r"}}).ok());
}

}  // namespace
}  // namespace contextd::model
