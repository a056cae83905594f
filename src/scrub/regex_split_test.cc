#include "scrub/internal/regex_split.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace contextd::scrub::internal
