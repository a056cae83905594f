#include "scrub/internal/regex_split.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace contextd::scrub::internal {
namespace {

TEST(SplitAtGroupTest, SplitsTopLevelConcatenation) {
  GroupSplit s;
  ASSERT_TRUE(SplitAtGroup(
      R"((?i)(-----BEGIN[ A-Z]*KEY-----)([\s\S]{64,}?)(-----END[ A-Z]*KEY-----))", 2, &s));
  EXPECT_EQ(s.before, "(?i)(-----BEGIN[ A-Z]*KEY-----)");
  // The top-level flags before the group stay in effect after it.
  EXPECT_EQ(s.after, "(?i)(-----END[ A-Z]*KEY-----)");

  ASSERT_TRUE(SplitAtGroup(R"(\b(tok_[a-z]{4})(?:[^\w-]|$))", 1, &s));
  EXPECT_EQ(s.before, R"(\b)");
  EXPECT_EQ(s.after, R"((?:[^\w-]|$))");

  // Named groups count; non-capturing groups, classes with ( ) ] and escapes do not.
  ASSERT_TRUE(SplitAtGroup(R"((?:a|b)[()\]x](?P<n>c)\((d)e)", 2, &s));
  EXPECT_EQ(s.before, R"((?:a|b)[()\]x](?P<n>c)\()");
  EXPECT_EQ(s.after, "e");
  ASSERT_TRUE(SplitAtGroup(R"([[:alpha:]](x)\Q(|)\E(y))", 2, &s));
  EXPECT_EQ(s.before, R"([[:alpha:]](x)\Q(|)\E)");
  EXPECT_EQ(s.after, "");
  // A flag group scoped to a parenthesis does not leak out of it.
  ASSERT_TRUE(SplitAtGroup(R"((?:(?i)k)(v)z)", 1, &s));
  EXPECT_EQ(s.after, "z");
}

TEST(SplitAtGroupTest, RefusesOtherShapes) {
  GroupSplit s;
  EXPECT_FALSE(SplitAtGroup(R"(a(b)|c)", 1, &s));     // top-level alternation
  EXPECT_FALSE(SplitAtGroup(R"(a(?:(b)c))", 1, &s));  // nested group
  EXPECT_FALSE(SplitAtGroup(R"(a(b)+)", 1, &s));      // quantified
  EXPECT_FALSE(SplitAtGroup(R"(a(b)?c)", 1, &s));
  EXPECT_FALSE(SplitAtGroup(R"(a(b){2})", 1, &s));
  EXPECT_FALSE(SplitAtGroup(R"(a(b))", 2, &s));  // no such group
  EXPECT_FALSE(SplitAtGroup(R"(a(b))", 0, &s));
  EXPECT_FALSE(SplitAtGroup(R"(a(?=b)(c))", 1, &s));  // unknown construct
  EXPECT_FALSE(SplitAtGroup(R"(a[b(c))", 1, &s));     // unterminated class
}

TEST(MayHaveAssertionsTest, FindsAssertionsOutsideClasses) {
  EXPECT_FALSE(MayHaveAssertions(R"((?i)placeholder|change[_-]me|x{6,})"));
  EXPECT_FALSE(MayHaveAssertions(R"([$^]\$\^\\b)"));
  EXPECT_TRUE(MayHaveAssertions(R"(^x)"));
  EXPECT_TRUE(MayHaveAssertions(R"(x$)"));
  EXPECT_TRUE(MayHaveAssertions(R"(\bx)"));
  EXPECT_TRUE(MayHaveAssertions(R"(x\B)"));
  EXPECT_TRUE(MayHaveAssertions(R"(\Ax\z)"));
  EXPECT_TRUE(MayHaveAssertions(R"(a[b)"));  // not understood: assume the worst
}

std::vector<std::string> Lead(std::string_view pattern, size_t max = 64, size_t min_len = 2) {
  std::vector<std::string> out;
  if (!LeadingLiterals(pattern, max, min_len, &out)) return {"<none>"};
  return out;
}

TEST(LeadingLiteralsTest, ExpandsTheFiniteStartOfEveryMatch) {
  using V = std::vector<std::string>;
  // The first element decides; what follows it is unbounded, so the strings stop there.
  EXPECT_EQ(Lead(R"((?i)(?:token|api[_.-]?key|credentials?)(?:[\w.-]{0,20})[:=]\s*(\w+))"),
            (V{"api-key", "api.key", "api_key", "apikey", "credential", "credentials", "token"}));
  // Assertions and flags consume nothing; top-level alternatives are all expanded.
  EXPECT_EQ(Lead(R"(\b(SK[0-9a-f]{32})\b|(?i)twilio[\w.-]{0,20}?(?:auth|token))", 20),
            (V{"sk0", "sk1", "sk2", "sk3", "sk4", "sk5", "sk6", "sk7", "sk8", "sk9", "ska", "skb",
               "skc", "skd", "ske", "skf", "twilio"}));
  EXPECT_EQ(Lead(R"((?i)\b(?:https?|ftps?|sftp)://[^:/\s'"@]+:([^/\s'"]{6,})@)"),
            (V{"ftp://", "ftps://", "http://", "https://", "sftp://"}));
  EXPECT_EQ(Lead(R"((?:ab){2}c\d)"), (V{"ababc"}));
  EXPECT_EQ(Lead(R"(x?yz)"), (V{"xyz", "yz"}));
  EXPECT_EQ(Lead(R"(hooks\.slack\.com/(?:services|workflows)/)"),
            (V{"hooks.slack.com/services/", "hooks.slack.com/workflows/"}));
  EXPECT_EQ(Lead(R"((?P<k>ab)c+d)"), (V{"abc"}));  // c+ : at least one c, then unknown
  EXPECT_EQ(Lead(R"([Aa][Kk][Ii][Aa]\d{16})"), (V{"akia"}));
  // Strings stop at 64 bytes: what follows is left unknown.
  EXPECT_EQ(Lead(R"((?:a{60}){10}b)"), (V{std::string(60, 'a')}));
  EXPECT_EQ(Lead(R"((?:(?:a{1000}){1000})b)"), (V{std::string(64, 'a')}));
}

TEST(LeadingLiteralsTest, RefusesWhenAMatchMayStartAnywhere) {
  EXPECT_EQ(Lead(R"([\w.-]{0,20}password)"), (std::vector<std::string>{"<none>"}));
  EXPECT_EQ(Lead(R"(a{0,3}bc)"), (std::vector<std::string>{"<none>"}));  // may start with b
  EXPECT_EQ(Lead(R"([^a]bc)"), (std::vector<std::string>{"<none>"}));
  EXPECT_EQ(Lead(R"(.abc)"), (std::vector<std::string>{"<none>"}));
  EXPECT_EQ(Lead(R"(\Qabc\E)"), (std::vector<std::string>{"<none>"}));
  EXPECT_EQ(Lead(R"(ab|c)"), (std::vector<std::string>{"<none>"}));  // "c" is below min_length
  EXPECT_EQ(Lead(R"(ab|c)", 64, 1), (std::vector<std::string>{"ab", "c"}));
  EXPECT_EQ(Lead(R"(abc|)"), (std::vector<std::string>{"<none>"}));  // the empty match
  EXPECT_EQ(Lead(R"(\bx*)"), (std::vector<std::string>{"<none>"}));
  EXPECT_EQ(Lead(R"((abc)"), (std::vector<std::string>{"<none>"}));  // unbalanced
  EXPECT_EQ(Lead(R"(abc))"), (std::vector<std::string>{"<none>"}));
  EXPECT_EQ(Lead(R"(\b+abc)"), (std::vector<std::string>{"<none>"}));
  // Too many strings: [a-p]{3} has 4096; the first 16 are only one byte long.
  EXPECT_EQ(Lead(R"([a-p][a-p][a-p])"), (std::vector<std::string>{"<none>"}));
  EXPECT_EQ(Lead(R"([a-p][a-p][a-p])", 64, 1).size(), 16u);
  // Non-ASCII bytes and classes like \w give no strings.
  EXPECT_EQ(Lead("\xc3\xa9t\xc3\xa9"), (std::vector<std::string>{"<none>"}));
  EXPECT_EQ(Lead(R"(\wabc)"), (std::vector<std::string>{"<none>"}));
  // Class members read only byte by byte: an escaped range end (\x7e is '~', so y and z are in
  // the class) or a '[' inside a class (which could start [:alnum:]) give up the analysis
  // rather than risk a class read wrong.
  EXPECT_EQ(Lead(R"([n-\x7e]bc)"), (std::vector<std::string>{"<none>"}));
  // \xHH and \p{...} are skipped whole: the rest of the pattern still parses.
  EXPECT_EQ(Lead(R"((?:tok|key)[\x60'"\s=]{0,5}\p{L}+)"), (std::vector<std::string>{"key", "tok"}));
  EXPECT_EQ(Lead(R"(\x41bc|\p{Greek}x)"), (std::vector<std::string>{"<none>"}));
  EXPECT_EQ(Lead(R"(token[[(]\w+|secret=[[:alnum:]]{20})"), (std::vector<std::string>{"<none>"}));
  // Nesting deeper than 64 groups is refused (the parser recurses).
  EXPECT_EQ(Lead(std::string(100, '(') + "abc" + std::string(100, ')')),
            (std::vector<std::string>{"<none>"}));
  EXPECT_EQ(Lead(std::string(10, '(') + "abc" + std::string(10, ')')),
            (std::vector<std::string>{"abc"}));
}

TEST(LabelGroupsTest, FixedTextAndRepeatedGroups) {
  using V = std::vector<bool>;
  EXPECT_EQ(LabelGroups(R"(\bZXlK(?:(?P<alg>aGJHY2lPaU)|(?P<x5c>NE5XTWlP))[a-z]{40,})"),
            (V{false, true, true}));
  EXPECT_EQ(LabelGroups(R"((ghp_)([a-z0-9]{36}))"), (V{false, true, false}));
  // Literal alternatives, nested groups, escaped punctuation and flags are still fixed text.
  EXPECT_EQ(LabelGroups(R"((?i)((?:ab|c\.d)|e\x41)k)"), (V{false, true}));
  // Classes, \w, '.', quantifiers are not.
  EXPECT_EQ(LabelGroups(R"(([a-z])(\w)(.)(ab+)(a?))"),
            (V{false, false, false, false, false, false}));
  // Repeated groups (and groups inside them) keep only their last iteration; '?' and {1} do not
  // repeat.
  EXPECT_EQ(LabelGroups(R"(x([a-z]{4}-){3}(?:(\d+)-)+([a-z]{4})?(\d{2}){1})"),
            (V{false, true, true, false, false}));
  // Unknown construct or unbalanced: no answer.
  EXPECT_EQ(LabelGroups(R"((a)(?=b))"), V{});
  EXPECT_EQ(LabelGroups("no groups"), V{false});
}

TEST(MeasurePatternTest, BytesNewlinesAndLineBreaks) {
  PatternExtent e;
  ASSERT_TRUE(MeasurePattern(R"(ab[0-9]{3}x?)", &e));
  EXPECT_EQ(e.max_bytes, 6u);
  EXPECT_EQ(e.max_newlines, 0u);
  // \s may take a newline; a trailing one-character element's newline ends the match.
  ASSERT_TRUE(MeasurePattern(R"(key[\s'"]{0,3}=(\w{4})(?:[\s;]|$))", &e));
  EXPECT_EQ(e.max_bytes, 3u + 3 + 1 + 4 + 1);
  EXPECT_EQ(e.max_newlines, 4u);
  EXPECT_EQ(e.max_inner_newlines, 3u);
  EXPECT_EQ(e.max_line_breaks, 0u);
  ASSERT_TRUE(MeasurePattern(R"(\b(tok_\w{8})(?:[^\w-]|$))", &e));
  EXPECT_EQ(e.max_newlines, 1u);
  EXPECT_EQ(e.max_inner_newlines, 0u);
  // Line breaks on purpose: \n, [\r\n], (?s)., [\s\S]; unbounded ones are SIZE_MAX.
  ASSERT_TRUE(MeasurePattern(R"(\bcurl\b(?:.*|.*(?:[\r\n]{1,2}.*){1,5})[ \t\n\r]-u)", &e));
  EXPECT_EQ(e.max_line_breaks, 11u);
  EXPECT_EQ(e.max_bytes, SIZE_MAX);
  ASSERT_TRUE(MeasurePattern(R"((?s:.){0,200}x)", &e));
  EXPECT_EQ(e.max_line_breaks, 200u);
  EXPECT_EQ(e.max_bytes, 801u);
  ASSERT_TRUE(MeasurePattern(R"(-----BEGIN[\s\S]{64,}?END)", &e));
  EXPECT_EQ(e.max_line_breaks, SIZE_MAX);
  // '.' without (?s), a negated class that lists \n, \S: no newline.
  ASSERT_TRUE(MeasurePattern(R"(.*[^\n"]+\S)", &e));
  EXPECT_EQ(e.max_newlines, 0u);
  // A negated class that does not list \n, \W, [[:space:]]: may, not on purpose.
  ASSERT_TRUE(MeasurePattern(R"([^"]\W[[:space:]])", &e));
  EXPECT_EQ(e.max_newlines, 3u);
  EXPECT_EQ(e.max_line_breaks, 0u);
  // Flags: (?s) directive for the rest of its group; (?i) k and s may be 3 bytes.
  ASSERT_TRUE(MeasurePattern(R"((?:(?s).)(.)|(?i)k)", &e));
  EXPECT_EQ(e.max_line_breaks, 1u);
  EXPECT_EQ(e.max_bytes, 8u);
  ASSERT_TRUE(MeasurePattern(R"((?i)k)", &e));
  EXPECT_EQ(e.max_bytes, 3u);
  // Not read: octal escapes, lookarounds.
  EXPECT_FALSE(MeasurePattern(R"(\123)", &e));
  EXPECT_FALSE(MeasurePattern(R"(a(?=b))", &e));
  EXPECT_FALSE(MeasurePattern(R"((a)", &e));
}

}  // namespace
}  // namespace contextd::scrub::internal
