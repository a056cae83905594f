// gitleaks' own examples (../shared/compat/gitleaks/cases.jsonl, 6,361 cases over 219 rules of
// the gitleaks.toml beside it; see ../shared/compat/README.md) scrubbed with that config ALONE
// (no built-in rules): every secret case must lose every byte of its secret, and no clean case
// may change (a clean case that is a real match of another rule, listed in other_rules, is
// scrubbed with its own rule alone). Cases known to be wrong are listed below with the reason;
// the test fails on any other failure, and on a listed entry that no failing case needs.
// Skipped when CONTEXTD_SOURCE_DIR is unset or the files are absent (a checkout without
// ../shared).
#include <gtest/gtest.h>
#include <re2/re2.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "scrub/compat_cases.h"
#include "scrub/rule_scrubber.h"

namespace contextd::scrub {
namespace {

// A case (by id, or every case of a rule, by "rule:<id>") whose expectation is wrong, and why.
struct KnownWrong {
  const char* key;
  const char* reason;
  // The case's secret holds more than the rule can match (a sample that gitleaks' own test only
  // checks for "one finding"): then the test checks instead that the secret gitleaks reports
  // for the case's secret string (the rule's secret group of its match there) is redacted.
  bool check_reported_secret;
};

const KnownWrong kKnownWrong[] = {
    {"rule:perplexity-api-key",
     "the generator's sample secret ends in a stray quote (gitleaks' perplexity.go passes "
     "\"pplx-...eT'\" to GenerateSampleSecrets); the rule's secret group stops before it, so "
     "gitleaks reports the secret without the quote and the quote survives",
     true},
    {"rule:slack-legacy-workspace-token",
     "the sample token xoxa-2-511111111-31111111111-3111111111111-e039d02840a0b9379c has dashes "
     "the regex xox[ar]-(?:\\d-)?[0-9a-zA-Z]{8,48} cannot cross: gitleaks itself reports only "
     "xoxa-2-511111111 (its test only counts one finding); the rest survives",
     true},
    // Negative only by file name: gitleaks tests these texts under a path its rule's path regex
    // rejects ("some.xml" for nuget.config$; the freemius and hashicorp-tf texts are the same as
    // their positive examples). cases.jsonl has no paths, and on text without a path contextd
    // applies a path+regex rule on its regex alone (RuleScrubber::ScrubWithFindings).
    {"gl-freemius-secret-key-fp-4", "negative only under a non-.php path", false},
    {"gl-hashicorp-tf-password-fp-3", "negative only under a non-.tf/.hcl path", false},
    {"gl-nuget-config-password-fp-1", "negative only under the path some.xml", false},
};

const KnownWrong* FindKnown(const CompatCase& c) {
  for (const KnownWrong& k : kKnownWrong) {
    if (c.id == k.key || "rule:" + c.rule_id == k.key) return &k;
  }
  return nullptr;
}

std::filesystem::path CompatDir() {
  const char* src = std::getenv("CONTEXTD_SOURCE_DIR");
  if (src == nullptr) return {};
  return std::filesystem::path(src) / ".." / "shared" / "compat" / "gitleaks";
}

// What gitleaks reports as the secret of `rule` in `s`: the secret group (secretGroup, or the
// first non-empty group) of the regex's leftmost match, or the match; empty without a match.
std::string ReportedSecret(const RuleSpec& rule, const std::string& s) {
  RE2 re(rule.regex);
  const int n = re.NumberOfCapturingGroups();
  std::vector<re2::StringPiece> groups(n + 1);
  if (!re.Match(s, 0, s.size(), RE2::UNANCHORED, groups.data(), n + 1)) return "";
  if (rule.secret_group > 0) return std::string(groups[rule.secret_group]);
  for (int g = 1; g <= n; ++g) {
    if (!groups[g].empty()) return std::string(groups[g]);
  }
  return std::string(groups[0]);
}

TEST(SecretRedactedTest, AlignsKeptTextAroundMarkers) {
  EXPECT_TRUE(SecretRedacted("k=abc123 x", "abc123", "k=[REDACTED:r:a] x"));
  EXPECT_TRUE(SecretRedacted("abc123", "abc123", "[REDACTED:r:a]"));
  // A byte of the secret left after the marker, or before it.
  EXPECT_FALSE(SecretRedacted("k=abc123 x", "abc123", "k=[REDACTED:r:a]3 x"));
  EXPECT_FALSE(SecretRedacted("k=abc123", "abc123", "k=a[REDACTED:r:b]"));
  // Every occurrence must go.
  EXPECT_FALSE(SecretRedacted("abc123 abc123", "abc123", "[REDACTED:r:a] abc123"));
  EXPECT_TRUE(SecretRedacted("abc123 abc123", "abc123", "[REDACTED:r:a] [REDACTED:r:a]"));
  // Unchanged text, or a secret that is not in the text.
  EXPECT_FALSE(SecretRedacted("k=abc123", "abc123", "k=abc123"));
  EXPECT_FALSE(SecretRedacted("k=abc123", "zzz", "k=[REDACTED:r:a]"));
  // A '[' that is not a marker is text.
  EXPECT_TRUE(SecretRedacted("[k]=abc123", "abc123", "[k]=[REDACTED:r:a]"));
}

TEST(GitleaksCompatTest, GitleaksConfigAloneRedactsItsExamples) {
  const std::filesystem::path dir = CompatDir();
  if (dir.empty()) GTEST_SKIP() << "CONTEXTD_SOURCE_DIR not set";
  if (!std::filesystem::exists(dir / "cases.jsonl") ||
      !std::filesystem::exists(dir / "gitleaks.toml")) {
    GTEST_SKIP() << dir << " has no cases.jsonl / gitleaks.toml";
  }
  ScrubConfig sc;
  sc.rules_file = (dir / "gitleaks.toml").string();
  sc.extend_default = false;  // gitleaks' config alone
  auto config = ResolveRules(sc);
  ASSERT_TRUE(config.ok()) << config.status();
  auto file = LoadRulesFile(sc.rules_file);
  ASSERT_TRUE(file.ok());
  ASSERT_EQ(config->rules.size(), file->rules.size());  // no built-in rule added
  auto cases = LoadCompatCases((dir / "cases.jsonl").string());
  ASSERT_TRUE(cases.ok()) << cases.status();
  ASSERT_GT(cases->size(), 6000u);

  std::map<std::string, const CompatCase*> by_id;
  std::map<std::string, const RuleSpec*> rules;
  for (const CompatCase& c : *cases) by_id[c.id] = &c;
  for (const RuleSpec& r : config->rules) rules[r.id] = &r;
  auto join = [](const std::vector<std::string>& ids) {
    std::string s;
    for (const auto& id : ids) s += "\n  " + id;
    return s;
  };

  auto whole = RuleScrubber::Create(*config);
  ASSERT_TRUE(whole.ok());
  std::map<std::string, std::unique_ptr<RuleScrubber>> alone;
  auto Alone = [&](const std::string& id) -> const RuleScrubber& {
    auto& s = alone[id];
    if (s == nullptr) {
      RulesConfig one;
      one.allowlists = config->allowlists;
      one.rules = {*rules.at(id)};
      s = *RuleScrubber::Create(one);
    }
    return *s;
  };

  // With the whole config, and (for the secret cases) with each case's own rule alone, as
  // gitleaks tests its examples: another rule must not be what redacts a secret.
  for (bool own_rule_only : {false, true}) {
    SCOPED_TRACE(own_rule_only ? "each secret case with its own rule alone" : "whole config");
    auto report = ScoreCompatCases(*config, *cases, own_rule_only);
    ASSERT_TRUE(report.ok()) << report.status();
    for (const std::string& p : report->problems) {
      // Only the path-only rule may be inactive: it matches file names, and text has none.
      EXPECT_EQ(p.rfind("pkcs12-file:", 0), 0u) << p;
    }
    std::vector<std::string> unexpected;
    std::set<std::string> failed(report->missed.begin(), report->missed.end());
    failed.insert(report->changed.begin(), report->changed.end());
    for (const std::string& id : failed) {
      const CompatCase& c = *by_id.at(id);
      const KnownWrong* known = FindKnown(c);
      if (known == nullptr) {
        unexpected.push_back(id);
        continue;
      }
      if (known->check_reported_secret && c.expect_secret) {
        const RuleScrubber& scrubber = own_rule_only ? Alone(c.rule_id) : **whole;
        const std::string reported = ReportedSecret(*rules.at(c.rule_id), c.secret);
        EXPECT_FALSE(reported.empty()) << id;
        EXPECT_TRUE(SecretRedacted(c.text, reported, scrubber.Scrub(c.text)))
            << id << ": the secret gitleaks reports, " << reported << ", survives";
      }
    }
    // An entry that no failing case needs: the list is out of date.
    std::vector<std::string> stale;
    for (const KnownWrong& k : kKnownWrong) {
      bool used = false;
      for (const std::string& id : failed) used |= FindKnown(*by_id.at(id)) == &k;
      if (!used) stale.push_back(k.key);
    }
    EXPECT_TRUE(unexpected.empty()) << unexpected.size() << " cases fail:" << join(unexpected);
    EXPECT_TRUE(stale.empty()) << "kKnownWrong entries that no failing case needs:" << join(stale);
    std::printf(
        "gitleaks examples, gitleaks.toml alone%s: %zu/%zu secret cases redacted, "
        "%zu/%zu clean cases changed, %zu of the failures listed as known-wrong\n",
        own_rule_only ? " (secret cases: own rule alone)" : "", report->total.secret_redacted,
        report->total.secret_cases, report->total.clean_changed, report->total.clean_cases,
        failed.size() - unexpected.size());
  }
}

// gitleaks' config on top of the built-in rules (the server's default, extend_default): rules
// with the same id (private-key, jwt, ...) are amended, and every one still compiles. (A
// secretGroup that numbered the built-in regex's groups goes with it when gitleaks' regex
// replaces it.)
TEST(GitleaksCompatTest, GitleaksConfigOverBuiltInsCompiles) {
  const std::filesystem::path dir = CompatDir();
  if (dir.empty()) GTEST_SKIP() << "CONTEXTD_SOURCE_DIR not set";
  if (!std::filesystem::exists(dir / "gitleaks.toml")) GTEST_SKIP() << dir << " has no config";
  ScrubConfig sc;
  sc.rules_file = (dir / "gitleaks.toml").string();
  sc.extend_default = true;
  auto s = BuildScrubber(sc);
  ASSERT_TRUE(s.ok()) << s.status();
  for (const auto& p : (*s)->problems()) EXPECT_EQ(p.rule_id, "pkcs12-file") << p.reason;
  const std::string key = "-----BEGIN RSA PRIVATE KEY-----\n" + std::string(64, 'A') +
                          "\n-----END RSA PRIVATE KEY-----\n";
  EXPECT_EQ((*s)->Scrub(key).find(std::string(64, 'A')), std::string::npos);
}

}  // namespace
}  // namespace contextd::scrub
