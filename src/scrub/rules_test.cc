#include "scrub/rules.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "scrub/rule_scrubber.h"

namespace contextd::scrub {
namespace {

TEST(RulesTomlTest, ParsesAllGitleaksFeatures) {
  constexpr std::string_view kToml = R"toml(
title = "t"
[extend]
useDefault = true
disabledRules = ["x"]

[allowlist]
description = "global"
regexes = ['''^foo$''', """bar\tbaz""",]
stopwords = ["STOP"]
paths = ['''\.lock$''']

[[allowlists]]
targetRules = ["r1"]
condition = "AND"
regexTarget = "line"
regexes = ['x']
stopwords = ['y']

[[rules]]
id = "r1"
description = "one"
regex = '''(?i)key=([a-z]+)'''
secretGroup = 1
entropy = 3.5
keywords = ["KEY", "Other"]
tags = ["a", "b"]
[rules.allowlist]
regexes = ['''abc''']
[[rules.allowlists]]
regexTarget = "match"
stopwords = ["zz"]

[[rules]]
id = "r2"
path = '''\.p12$'''
entropy = 2
regex = """
multi
line"""
)toml";
  auto cfg = ParseRulesToml(kToml, "t.toml");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->title, "t");
  EXPECT_TRUE(cfg->extend_use_default);
  EXPECT_EQ(cfg->extend_disabled_rules, std::vector<std::string>{"x"});
  ASSERT_EQ(cfg->allowlists.size(), 2u);
  EXPECT_EQ(cfg->allowlists[0].regexes[1], "bar\tbaz");
  EXPECT_EQ(cfg->allowlists[0].stopwords[0], "stop");
  EXPECT_EQ(cfg->allowlists[1].condition, AllowlistCondition::kAnd);
  EXPECT_EQ(cfg->allowlists[1].regex_target, RegexTarget::kLine);
  EXPECT_EQ(cfg->allowlists[1].target_rules[0], "r1");
  ASSERT_EQ(cfg->rules.size(), 2u);
  const RuleSpec& r1 = cfg->rules[0];
  EXPECT_EQ(r1.secret_group, 1);
  EXPECT_DOUBLE_EQ(r1.entropy, 3.5);
  EXPECT_EQ(r1.keywords, (std::vector<std::string>{"key", "other"}));
  EXPECT_EQ(r1.tags.size(), 2u);
  ASSERT_EQ(r1.allowlists.size(), 2u);
  EXPECT_EQ(r1.allowlists[1].regex_target, RegexTarget::kMatch);
  EXPECT_EQ(cfg->rules[1].regex, "multi\nline");
  EXPECT_EQ(cfg->rules[1].path, "\\.p12$");
}

TEST(RulesTomlTest, SyntaxErrorNamesLine) {
  auto cfg = ParseRulesToml("title = \"x\"\n[[rules]]\nid = \"a\nregex='b'\n", "bad.toml");
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(cfg.status().message().find("bad.toml:3:"), std::string::npos) << cfg.status();
}

TEST(RulesTomlTest, WrongTypeNamesRuleAndKey) {
  auto cfg = ParseRulesToml("[[rules]]\nid = \"myrule\"\nregex = 'a'\nentropy = \"high\"\n", "f");
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("myrule"), std::string::npos) << cfg.status();
  EXPECT_NE(cfg.status().message().find("entropy"), std::string::npos) << cfg.status();
  EXPECT_NE(cfg.status().message().find("line 4"), std::string::npos) << cfg.status();
}

TEST(RulesTomlTest, RuleNeedsIdAndRegexOrPath) {
  EXPECT_FALSE(ParseRulesToml("[[rules]]\nregex = 'a'\n", "f").ok());
  EXPECT_FALSE(ParseRulesToml("[[rules]]\nid = 'a'\n", "f").ok());
  EXPECT_FALSE(ParseRulesToml("[[rules]]\nid = 'a'\nregex='x'\nsecretGroup = -1\n", "f").ok());
  EXPECT_FALSE(ParseRulesToml("[[rules]]\nid='a'\nregex='x'\nkeywords='k'\n", "f").ok());
  EXPECT_FALSE(ParseRulesToml("[allowlist]\nregexTarget='everything'\n", "f").ok());
}

// [extend] path is read as written; with [extend] a rule may carry only its id (an amendment of
// the extended rule); useDefault and path together, or url, are refused.
TEST(RulesTomlTest, ExtendPathAndAmendments) {
  auto cfg = ParseRulesToml(
      "[extend]\npath = 'base.toml'\n[[rules]]\nid = 'x'\n"
      "[[rules.allowlists]]\nregexes = ['y']\n",
      "f");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->extend_path, "base.toml");
  EXPECT_FALSE(cfg->extend_use_default);
  ASSERT_EQ(cfg->rules.size(), 1u);
  EXPECT_TRUE(cfg->rules[0].regex.empty());
  EXPECT_FALSE(cfg->rules[0].require_digit);
  EXPECT_FALSE(ParseRulesToml("[extend]\npath = 'a'\nuseDefault = true\n", "f").ok());
  EXPECT_FALSE(ParseRulesToml("[extend]\nurl = 'https://x'\n", "f").ok());
  EXPECT_FALSE(ParseRulesToml("[extend]\npath = 1\n", "f").ok());
}

TEST(RulesTomlTest, ExtendRulesMergesAsGitleaks) {
  RulesConfig base, top;
  base.title = "base";
  base.rules.resize(3);
  base.rules[0].id = "a";
  base.rules[0].regex = "A";
  base.rules[0].keywords = {"a"};
  base.rules[0].entropy = 3;
  base.rules[1].id = "b";
  base.rules[1].regex = "B";
  base.rules[2].id = "c";
  base.rules[2].regex = "C";
  base.allowlists.resize(1);
  top.extend_use_default = true;
  top.extend_disabled_rules = {"b", "z"};
  top.rules.resize(3);
  top.rules[0].id = "z";  // in disabledRules, but the file's own rule: kept
  top.rules[0].regex = "Z";
  top.rules[1].id = "a";
  top.rules[1].keywords = {"aa"};
  top.rules[1].secret_group = 1;
  top.rules[1].allowlists.resize(1);
  top.rules[2].id = "c";
  top.rules[2].regex = "CC";
  base.rules[2].secret_group = 2;  // of base's regex: the new regex brings its own (0)
  top.allowlists.resize(2);
  RulesConfig out = ExtendRules(base, top);
  EXPECT_EQ(out.title, "base");
  ASSERT_EQ(out.rules.size(), 3u);
  EXPECT_EQ(out.rules[0].id, "a");
  EXPECT_EQ(out.rules[0].regex, "A");
  EXPECT_EQ(out.rules[0].keywords, (std::vector<std::string>{"a", "aa"}));
  EXPECT_EQ(out.rules[0].secret_group, 1);
  EXPECT_EQ(out.rules[0].entropy, 3);
  EXPECT_EQ(out.rules[0].allowlists.size(), 1u);
  EXPECT_EQ(out.rules[1].id, "c");
  EXPECT_EQ(out.rules[1].regex, "CC");
  EXPECT_EQ(out.rules[1].secret_group, 0);
  EXPECT_EQ(out.rules[2].id, "z");
  EXPECT_EQ(out.allowlists.size(), 3u);
  EXPECT_FALSE(out.extend_use_default);
  EXPECT_TRUE(out.extend_disabled_rules.empty());
}

TEST(RulesTomlTest, MissingFileIsNotFound) {
  auto cfg = LoadRulesFile("/nonexistent/rules.toml");
  EXPECT_EQ(cfg.status().code(), absl::StatusCode::kNotFound);
}

TEST(RulesTomlTest, DefaultRulesParseAndCompileWithoutProblems) {
  auto cfg = ParseRulesToml(DefaultRulesToml(), "default");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_GE(cfg->rules.size(), 40u);
  auto s = RuleScrubber::Create(*cfg);
  ASSERT_TRUE(s.ok()) << s.status();
  for (const auto& p : (*s)->problems()) ADD_FAILURE() << p.rule_id << ": " << p.reason;
  for (const auto& r : cfg->rules) EXPECT_FALSE(r.keywords.empty()) << r.id;
}

// The real gitleaks default config (../shared/compat/gitleaks/gitleaks.toml) must load, with every
// rule compiled or reported by id and reason.
TEST(RulesTomlTest, GitleaksDefaultConfigLoads) {
  const char* src = std::getenv("CONTEXTD_SOURCE_DIR");
  if (src == nullptr) GTEST_SKIP() << "CONTEXTD_SOURCE_DIR not set";
  std::filesystem::path path =
      std::filesystem::path(src) / ".." / "shared" / "compat" / "gitleaks" / "gitleaks.toml";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present";
  auto cfg = LoadRulesFile(path.string());
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_GE(cfg->rules.size(), 200u);
  auto s = RuleScrubber::Create(*cfg);
  ASSERT_TRUE(s.ok()) << s.status();
  size_t reported = 0;
  for (const auto& p : (*s)->problems()) {
    EXPECT_FALSE(p.rule_id.empty());
    EXPECT_FALSE(p.reason.empty());
    std::printf("gitleaks rule not active: %s: %s\n", p.rule_id.c_str(), p.reason.c_str());
    ++reported;
  }
  // Every rule is either active or reported (path-only rules are reported).
  std::set<std::string> accounted;
  for (const auto& id : (*s)->rule_ids()) accounted.insert(id);
  for (const auto& p : (*s)->problems()) accounted.insert(p.rule_id);
  for (const auto& r : cfg->rules) EXPECT_TRUE(accounted.count(r.id)) << r.id;
  EXPECT_LE(reported, 5u);
  // And it finds a secret with it.
  auto found = (*s)->Scan("token: ghp_" + std::string("aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"));
  bool github = false;
  for (const auto& f : found) github |= f.rule_id == "github-pat";
  EXPECT_TRUE(github);
}

}  // namespace
}  // namespace contextd::scrub
