#include "trail/trail.h"

#include <gtest/gtest.h>

#include "trail/auto_scope.h"
#include "trail/content_hash.h"

namespace contextd::trail {
namespace {

TEST(ContentHashTest, KnownVectors) {
  EXPECT_EQ(ContentHash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(ContentHash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(EventKindTest, NamesRoundTrip) {
  for (EventKind k : {EventKind::kToolCall, EventKind::kToolResult, EventKind::kBranchCreated,
                      EventKind::kBranchReturned, EventKind::kWarning, EventKind::kForceReturn}) {
    auto parsed = ParseEventKind(EventKindName(k));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, k);
  }
  EXPECT_EQ(ParseEventKind("nope").status().code(), absl::StatusCode::kInvalidArgument);
  auto opened = ParseEventKind("auto_scope_opened");
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(*opened, EventKind::kAutoScopeOpened);
}

TEST(ScopeKindTest, NamesRoundTrip) {
  for (ScopeKind k : {ScopeKind::kSession, ScopeKind::kBranch, ScopeKind::kAuto}) {
    auto parsed = ParseScopeKind(ScopeKindName(k));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, k);
  }
  EXPECT_STREQ(ScopeKindName(ScopeKind::kAuto), "auto");
  EXPECT_EQ(ParseScopeKind("nope").status().code(), absl::StatusCode::kInvalidArgument);
}

// One token per byte: makes the token bound easy to reach in tests.
int64_t Bytes(std::string_view text) { return static_cast<int64_t>(text.size()); }
// One token per whitespace-separated word.
int64_t Words(std::string_view text) {
  int64_t n = 0;
  bool in = false;
  for (char c : text) {
    bool space = c == ' ';
    if (!space && !in) ++n;
    in = !space;
  }
  return n;
}

TEST(ShortArgumentsTest, ObjectsBecomeKeyValuePairs) {
  EXPECT_EQ(ShortArguments(R"({"path":"/w/a.txt"})", 48), "path=/w/a.txt");
  EXPECT_EQ(ShortArguments(R"({"path":"/w","depth":2,"opts":{"a":[1,2]},"q":"say \"hi\""})", 80),
            R"(path=/w, depth=2, opts={"a":[1,2]}, q=say "hi")");
  EXPECT_EQ(ShortArguments("{}", 48), "");
  EXPECT_EQ(ShortArguments("  { }  ", 48), "");
  EXPECT_EQ(ShortArguments(R"({"path":"/a/very/long/path/that/goes/on"})", 16),
            "path=/a/very/lon...");
  // Not an object (or not one it can read): the text itself, on one line.
  EXPECT_EQ(ShortArguments("[1,\n2]", 48), "[1, 2]");
  EXPECT_EQ(ShortArguments(R"({"unterminated)", 48), R"({"unterminated)");
  // A cut never splits a UTF-8 character.
  std::string cut = ShortArguments(R"({"k":"ééééééééé"})", 7);
  EXPECT_EQ(cut.substr(cut.size() - 3), "...");
  EXPECT_EQ(cut.substr(0, 2), "k=");
  EXPECT_EQ((cut.size() - 5) % 2, 0u) << cut;
}

TEST(AutoScopeDigestTest, SummaryNamesToolsArgumentsOutcomeAndErrors) {
  AutoScopeDigest d("fs");
  d.Add("fs__read_text_file", R"({"path":"/w/a.txt"})", "alpha", false, 100);
  d.Add("fs__read_text_file", R"({"path":"/w/b.txt"})", "beta", false, 200);
  d.Add("fs__list_directory", R"({"path":"/w"})", "[FILE] a.txt", false, 30);
  d.Add("fs__read_text_file", R"({"path":"/w/a.txt"})", "alpha", false, 100);  // same args
  d.Add("fs__read_text_file", R"({"path":"/w/c.txt"})", "c", false, 10);
  d.Add("fs__read_text_file", R"({"path":"/w/d.txt"})",
        "Error: ENOENT: no such file or directory, open '/w/d.txt'\nstack...", true, 20);
  d.Add("contextd+upstream://fs/file:///w/a.txt", "", "alpha", false, 5);
  EXPECT_EQ(d.calls(), 7);
  EXPECT_EQ(d.errors(), 1);
  EXPECT_EQ(d.tokens(), 465);
  EXPECT_EQ(d.Summary(Words),
            "fs: 7 calls (6 ok, 1 error), 465 tokens; read_text_file x5 (path=/w/a.txt; "
            "path=/w/b.txt; path=/w/c.txt; +1 more), list_directory x1 (path=/w), resource x1 "
            "(file:///w/a.txt); errors: read_text_file: Error: ENOENT: no such file or directory, "
            "open '/w/d.txt' stack...");
  // Deterministic: the same calls give the same text.
  EXPECT_EQ(d.Summary(Words), d.Summary(Words));
  // Without a counter, words are counted.
  EXPECT_EQ(d.Summary(nullptr), d.Summary(Words));
}

TEST(AutoScopeDigestTest, OneCallAndErrorsWithoutResult) {
  AutoScopeDigest d("git");
  d.Add("git__status", "{}", "", true, 3);
  EXPECT_EQ(d.Summary(Words),
            "git: 1 call (0 ok, 1 error), 3 tokens; status x1; errors: "
            "status: (no result)");
}

TEST(AutoScopeDigestTest, PathsUnderOneDirectoryAreShownRelativeToIt) {
  AutoScopeDigest d("fs");
  d.Add("fs__list_directory", R"({"path":"/home/me/repo/src"})", "a.cc", false, 1);
  d.Add("fs__read_text_file", R"({"path":"/home/me/repo/src/a.cc"})", "x", false, 1);
  d.Add("fs__read_text_file", R"({"path":"/home/me/repo/src/parser/b.cc","head":10})", "x", false,
        1);
  EXPECT_EQ(d.Summary(Words),
            "fs: 3 calls (3 ok, 0 errors), 3 tokens; paths under /home/me/repo/src/: "
            "list_directory x1 (path=.), read_text_file x2 (path=a.cc; path=parser/b.cc, "
            "head=10)");
  // One path is shown whole; so are paths whose common directory is short.
  AutoScopeDigest one("fs");
  one.Add("fs__read_text_file", R"({"path":"/home/me/repo/src/a.cc"})", "x", false, 1);
  EXPECT_EQ(
      one.Summary(Words),
      "fs: 1 call (1 ok, 0 errors), 1 token; read_text_file x1 (path=/home/me/repo/src/a.cc)");
  AutoScopeDigest apart("fs");
  apart.Add("fs__read_text_file", R"({"path":"/home/me/a"})", "x", false, 1);
  apart.Add("fs__read_text_file", R"({"path":"/srv/data/b"})", "x", false, 1);
  EXPECT_EQ(apart.Summary(Words),
            "fs: 2 calls (2 ok, 0 errors), 2 tokens; read_text_file x2 (path=/home/me/a; "
            "path=/srv/data/b)");
  // Long paths keep their informative end once the common directory is taken off.
  AutoScopeDigest deep("fs");
  std::string base = "/very/long/checkout/path/of/the/project/that/goes/on/and/on/src/";
  deep.Add("fs__read_text_file", "{\"path\":\"" + base + "lexer.cc\"}", "x", false, 1);
  deep.Add("fs__read_text_file", "{\"path\":\"" + base + "parser.cc\"}", "x", false, 1);
  EXPECT_NE(deep.Summary(Words).find("(path=lexer.cc; path=parser.cc)"), std::string::npos)
      << deep.Summary(Words);
}

TEST(AutoScopeDigestTest, SummaryStaysWithinItsTokenBound) {
  AutoScopeDigest d("fs");
  for (int i = 0; i < 40; ++i) {
    std::string tool = "fs__a_tool_with_a_rather_long_descriptive_name_" + std::to_string(i);
    d.Add(tool, R"({"path":"/a/rather/long/path/to/file/number/)" + std::to_string(i) + R"("})",
          "Error: something went wrong with a long explanation " + std::to_string(i), i % 2 == 0,
          10);
  }
  for (auto count : {CountTokensFn(Words), CountTokensFn(Bytes)}) {
    std::string s = d.Summary(count);
    EXPECT_LE(count(s), kAutoSummaryMaxTokens) << s;
    EXPECT_EQ(s.rfind("fs: 40 calls (20 ok, 20 errors), 400 tokens", 0), 0u) << s;
  }
  // Words: dropping detail is enough; bytes: the text is also cut.
  std::string by_words = d.Summary(Words);
  EXPECT_NE(by_words.find("+32 more tools"), std::string::npos) << by_words;
  std::string by_bytes = d.Summary(Bytes);
  EXPECT_EQ(by_bytes.substr(by_bytes.size() - 3), "...") << by_bytes;
}

TEST(FoldedViewTextTest, HeaderCarriesTotals) {
  FoldedView view;
  view.root_scope_id = "ses_1";
  view.tokens_unfolded = 1000;
  view.tokens_folded = 100;
  view.scopes_folded = 2;
  std::string text = FoldedViewText(view);
  EXPECT_NE(text.find("1000 tokens unfolded, 100 tokens folded (90% less)"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace contextd::trail
