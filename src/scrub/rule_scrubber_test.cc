#include "scrub/rule_scrubber.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

namespace contextd::scrub {
namespace {

std::unique_ptr<RuleScrubber> Make(std::string_view toml) {
  auto cfg = ParseRulesToml(toml, "test.toml");
  EXPECT_TRUE(cfg.ok()) << cfg.status();
  auto s = RuleScrubber::Create(*cfg);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

TEST(EntropyTest, MatchesGitleaksDefinition) {
  EXPECT_DOUBLE_EQ(ShannonEntropy(""), 0);
  EXPECT_DOUBLE_EQ(ShannonEntropy("aaaa"), 0);
  EXPECT_DOUBLE_EQ(ShannonEntropy("ab"), 1);
  EXPECT_DOUBLE_EQ(ShannonEntropy("abcd"), 2);
  // Runes counted, divided by byte length (as gitleaks does): "é" is 2 bytes, 1 rune.
  EXPECT_DOUBLE_EQ(ShannonEntropy("\xc3\xa9"), -0.5 * std::log2(0.5));
}

constexpr std::string_view kTokenRule = R"(
[[rules]]
id = "tok"
regex = '''\b(tok_[a-zA-Z0-9]{16})\b'''
keywords = ["tok_"]
)";

TEST(RuleScrubberTest, RedactsWithIdAndShortPreview) {
  auto s = Make(kTokenRule);
  EXPECT_EQ(s->Scrub("x tok_abcdEFGH12345678 y"), "x [REDACTED:tok:tok_] y");
  // 20-char secret: preview is 4. A 12-char secret gets 3, an 7-char one 1.
  auto short_rule = Make(R"(
[[rules]]
id = "s"
regex = '''K=([a-z0-9]+)'''
keywords = ["k="]
)");
  EXPECT_EQ(short_rule->Scrub("K=abcdefghijkl"), "K=[REDACTED:s:abc]");
  EXPECT_EQ(short_rule->Scrub("K=abcdefg"), "K=[REDACTED:s:a]");
  EXPECT_EQ(short_rule->Scrub("K=abc"), "K=[REDACTED:s:]");
}

TEST(RuleScrubberTest, KeywordIsRequiredAndCaseInsensitive) {
  auto s = Make(R"(
[[rules]]
id = "kw"
regex = '''(?i)secret([0-9]{6})'''
keywords = ["SECRET"]
)");
  EXPECT_EQ(s->Scrub("SeCrEt123456"), "SeCrEt[REDACTED:kw:1]");
  auto s2 = Make(R"(
[[rules]]
id = "kw2"
regex = '''[0-9]{6}'''
keywords = ["zzz"]
)");
  EXPECT_EQ(s2->Scrub("123456"), "123456");
  EXPECT_EQ(s2->Scrub("zzz 123456"), "zzz [REDACTED:kw2:1]");
}

TEST(RuleScrubberTest, KeywordlessRulesRunThroughTheSet) {
  auto s = Make(R"(
[[rules]]
id = "a"
regex = '''AAA[0-9]{8}'''
[[rules]]
id = "b"
regex = '''BBB[0-9]{8}'''
[[rules]]
id = "c"
regex = '''(CCC)[0-9]{8}'''
)");
  // (CCC) is a label group (fixed text): the whole match is redacted, not just it.
  EXPECT_EQ(s->Scrub("AAA12345678 and BBB12345678, CCC12345678"),
            "[REDACTED:a:AA] and [REDACTED:b:BB], [REDACTED:c:CC]");
  EXPECT_EQ(s->Scrub("nothing here"), "nothing here");
}

TEST(RuleScrubberTest, SecretGroupAndEntropy) {
  auto s = Make(R"(
[[rules]]
id = "g"
regex = '''(user)=(\w+):(\w+)'''
secretGroup = 3
entropy = 2.0
keywords = ["user="]
)");
  EXPECT_EQ(s->Scrub("user=bob:aaaaaaaa"), "user=bob:aaaaaaaa");  // entropy 0
  EXPECT_EQ(s->Scrub("user=bob:a1b2c3d4"), "user=bob:[REDACTED:g:a1]");
  auto f = s->Scan("x\nuser=bob:a1b2c3d4");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].start, 11u);
  EXPECT_EQ(f[0].end, 19u);
  EXPECT_EQ(f[0].match_start, 2u);
  EXPECT_EQ(f[0].line, 2u);
  EXPECT_DOUBLE_EQ(f[0].entropy, 3.0);
}

// gitleaks trims newlines off the match (strings.Trim(match, "\n")): a rule whose match ends in
// a newline does not redact it, and the entropy is the trimmed match's.
TEST(RuleScrubberTest, MatchIsTrimmedOfNewlines) {
  auto s = Make(R"(
[[rules]]
id = "t"
regex = '''tok_[a-z0-9]+\s'''
entropy = 2.5
keywords = ["tok_"]
)");
  EXPECT_EQ(s->Scrub("x tok_a1b2c3\nnext"), "x [REDACTED:t:to]\nnext");
  auto f = s->Scan("tok_a1b2c3\n");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].end, 10u);
  EXPECT_EQ(f[0].match_end, 10u);
  EXPECT_DOUBLE_EQ(f[0].entropy, ShannonEntropy("tok_a1b2c3"));
}

// gitleaks looks for the secret group in the (trimmed) match on its own, as if it were the whole
// text: its leftmost match there, where `$` matches at the match's end. Here that takes the first
// alternative (groups "ab", "cd"), while in the text only the second one matches.
TEST(RuleScrubberTest, SecretGroupIsFoundInTheMatchAlone) {
  auto s = Make(R"(
[[rules]]
id = "r"
regex = '''(\w{2})(\w*)$|(\w{4})'''
keywords = ["ab"]
)");
  EXPECT_EQ(s->Scrub("abcd."), "[REDACTED:r:]cd.");
  auto with_entropy = Make(R"(
[[rules]]
id = "r"
regex = '''(\w{2})(\w*)$|(\w{4})'''
entropy = 1.5
keywords = ["ab"]
)");
  // entropy("ab") = 1: gitleaks drops it (the in-text group "abcd" would have entropy 2).
  EXPECT_EQ(with_entropy->Scrub("abcd."), "abcd.");
  // No match in the trimmed match on its own: the secret is the trimmed match.
  auto fallback = Make(R"(
[[rules]]
id = "f"
regex = '''k=(\w)\w+\n'''
keywords = ["k="]
)");
  EXPECT_EQ(fallback->Scrub("k=abcdef\nz"), "[REDACTED:f:k=]\nz");
}

// gitleaks' default secret is the first non-empty group. When that group is a label (fixed text,
// like jwt-base64's (?P<alg>aGJHY2lPaU)) or repeated (it holds only its last iteration), its
// entropy and allowlists decide as in gitleaks, but the whole match is redacted: redacting the
// label alone would leave the token around it.
TEST(RuleScrubberTest, LabelGroupsRedactTheWholeMatch) {
  auto s = Make(R"(
[[rules]]
id = "jwtish"
regex = '''\bZXlK(?:(?P<alg>aGJHY2lPaU)|(?P<typ>MGVYQWlPaUp))[a-zA-Z0-9_-]{20,}'''
entropy = 2
keywords = ["zxlk"]
[[rules]]
id = "hook"
regex = '''hook/([a-z0-9]{4}-){2}[a-z0-9]{6}'''
keywords = ["hook/"]
[[rules]]
id = "plain"
regex = '''key=([A-Za-z0-9]{10})(x|y)?'''
keywords = ["key="]
)");
  EXPECT_EQ(s->Scrub("t ZXlKaGJHY2lPaUpJVXpJMU5pSXNJblI1Y0NJNklrcFhWQ0o5 end"),
            "t [REDACTED:jwtish:ZXlK] end");
  auto f = s->Scan("ZXlKaGJHY2lPaUpJVXpJMU5pSXNJblI1Y0NJNklrcFhWQ0o5");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].start, 0u);
  EXPECT_DOUBLE_EQ(f[0].entropy, ShannonEntropy("aGJHY2lPaU"));  // the label's, as gitleaks
  EXPECT_EQ(s->Scrub("url hook/ab12-cd34-ef5678 x"), "url [REDACTED:hook:hook] x");
  // A group that can hold a secret is redacted alone, as before.
  EXPECT_EQ(s->Scrub("key=A1b2C3d4E5x"), "key=[REDACTED:plain:A1]x");
}

// Windows around keyword hits reach as far as a match can (see Engine::Compile): a line before
// the keyword's when a newline may come inside the match before it, and as many lines further as
// the pattern asks for line breaks.
TEST(RuleScrubberTest, WindowsFollowMatchesAcrossLines) {
  auto s = Make(R"(
[[rules]]
id = "value-keyword"
regex = '''(?i)[\w.-]{0,50}?token(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:)[\x60'"\s=]{0,5}(val_[a-f0-9]{12})(?:[\x60'"\s;]|$)'''
keywords = ["val_"]
[[rules]]
id = "curlish"
regex = '''\bcurl\b(?:.*|.*(?:[\r\n]{1,2}.*){1,5})[ \t\n\r]-H '(Authorization: Basic [a-zA-Z0-9+/=]{8,})\''''
keywords = ["curl"]
[[rules]]
id = "line-start"
regex = '''(?:^|[\s=])([a-z]{3}\dQ~[a-z]{10})(?:$|[\s,])'''
keywords = ["q~"]
)");
  // The match starts at "myToken>" on the line before its keyword "val_".
  EXPECT_EQ(s->Scrub("<myToken>\n    val_0123456789ab\n</myToken>"),
            "<myToken>\n    [REDACTED:value-keyword:val_]\n</myToken>");
  // The header is three lines and more than 96 bytes after "curl".
  const std::string curl = "curl -X POST \\\n  https://api.example.com/v3/" + std::string(80, 'p') +
                           " \\\n  -H 'Authorization: Basic YXBpOmtleS1hN2Mz'\n";
  EXPECT_EQ(s->Scrub(curl), "curl -X POST \\\n  https://api.example.com/v3/" +
                                std::string(80, 'p') + " \\\n  -H '[REDACTED:curlish:Auth]'\n");
  // The match takes the newline before the secret (not the text's start): it starts on the line
  // before the keyword's.
  EXPECT_EQ(s->Scrub("x\nabc1Q~abcdefghij\n"), "x\n[REDACTED:line-start:abc1]\n");
}

// More than 15 groups: the secret may be any of them (jwt-base64 in gitleaks' config names 34
// alternatives; its secret is the first non-empty one), and entropy is computed on it.
TEST(RuleScrubberTest, ManyGroups) {
  std::string alternatives;
  for (int i = 0; i < 20; ++i) {
    alternatives += (i ? "|" : "") + std::string("(L[") + static_cast<char>('a' + i) + "]x)";
  }
  auto first_non_empty = Make("[[rules]]\nid = 'm'\nregex = '''Z(?:" + alternatives +
                              ")([0-9]{6})'''\nentropy = 1.5\nkeywords = ['z']\n");
  // Group 19 ("Lsx", entropy 1.58) is the secret, not the whole match.
  EXPECT_EQ(first_non_empty->Scrub("ZLsx123456"), "Z[REDACTED:m:]123456");
  // secretGroup 21: the digits, with their own entropy.
  auto configured = Make("[[rules]]\nid = 'c'\nregex = '''Z(?:" + alternatives +
                         ")([0-9]{6})'''\nsecretGroup = 21\nentropy = 1.5\nkeywords = ['z']\n");
  EXPECT_EQ(configured->Scrub("ZLsx123456"), "ZLsx[REDACTED:c:1]");
  EXPECT_EQ(configured->Scrub("ZLsx111111"), "ZLsx111111");  // entropy 0
  EXPECT_EQ(configured->problems().size(), 0u);
}

// gitleaks dropped its "generic ids need a digit" check (8.19): a rules file's generic rules
// follow it. Only contextd's built-in generic rules keep the requirement (RuleSpec::require_digit,
// set by DefaultRules).
TEST(RuleScrubberTest, OnlyBuiltInGenericRulesNeedADigit) {
  constexpr char kRule[] = R"(
[[rules]]
id = "generic-x"
regex = '''pw=(\w+)'''
keywords = ["pw="]
)";
  auto s = Make(kRule);
  EXPECT_EQ(s->Scrub("pw=abcdefgh"), "pw=[REDACTED:generic-x:ab]");
  auto cfg = ParseRulesToml(kRule, "t");
  ASSERT_TRUE(cfg.ok());
  cfg->rules[0].require_digit = true;
  auto d = RuleScrubber::Create(*cfg);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)->Scrub("pw=abcdefgh"), "pw=abcdefgh");
  EXPECT_EQ((*d)->Scrub("pw=abcdefg1"), "pw=[REDACTED:generic-x:ab]");
  auto defaults = DefaultRules();
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  size_t generic = 0;
  for (const auto& r : defaults->rules) {
    EXPECT_EQ(r.require_digit, r.id.rfind("generic", 0) == 0) << r.id;
    generic += r.require_digit ? 1 : 0;
  }
  EXPECT_GT(generic, 0u);
}

TEST(RuleScrubberTest, AllowlistsTargetsAndConditions) {
  auto s = Make(R"(
[allowlist]
stopwords = ["Fake"]
[[rules]]
id = "t"
regex = '''key=(\w{8,})'''
keywords = ["key="]
[[rules.allowlists]]
regexTarget = "line"
regexes = ['''^#''']
[[rules.allowlists]]
regexTarget = "match"
condition = "AND"
regexes = ['''key=zz''']
stopwords = ["zzq"]
)");
  EXPECT_EQ(s->Scrub("key=abcfake123"), "key=abcfake123");        // global stopword
  EXPECT_EQ(s->Scrub("# key=abc123456\n"), "# key=abc123456\n");  // line target
  EXPECT_EQ(s->Scrub("key=zzqabc123"), "key=zzqabc123");          // AND: both pass
  EXPECT_EQ(s->Scrub("key=zzabc1234"), "key=[REDACTED:t:zz]");    // AND: only regex
  EXPECT_EQ(s->Scrub("key=abc123456"), "key=[REDACTED:t:ab]");
}

TEST(RuleScrubberTest, GlobalAllowlistTargetRules) {
  auto s = Make(R"(
[[allowlists]]
targetRules = ["a"]
regexes = ['''^1''']
[[rules]]
id = "a"
regex = '''a=(\d{6})'''
keywords = ["a="]
[[rules]]
id = "b"
regex = '''b=(\d{6})'''
keywords = ["b="]
)");
  EXPECT_EQ(s->Scrub("a=123456 b=123456"), "a=123456 b=[REDACTED:b:1]");
}

// A rule with path and regex: with a path, both must match (as gitleaks); without one (contextd
// cannot know which file a text came from) the regex alone decides, where gitleaks on stdin
// would skip the rule. A path-only rule matches file names, never text.
TEST(RuleScrubberTest, PathRulesWithoutAPathUseTheRegex) {
  auto s = Make(R"(
[[rules]]
id = "p"
regex = '''pass=(\w{6})'''
path = '''\.php$'''
keywords = ["pass="]
[[rules]]
id = "onlypath"
path = '''\.p12$'''
)");
  EXPECT_EQ(s->Scrub("pass=abc123"), "pass=[REDACTED:p:a]");
  EXPECT_EQ(s->ScrubWithFindings("pass=abc123", "x.php").text, "pass=[REDACTED:p:a]");
  EXPECT_EQ(s->ScrubWithFindings("pass=abc123", "x.txt").text, "pass=abc123");
  ASSERT_EQ(s->problems().size(), 1u);
  EXPECT_EQ(s->problems()[0].rule_id, "onlypath");
}

TEST(RuleScrubberTest, BadRegexIsReportedAndOthersStillWork) {
  auto s = Make(R"(
[[rules]]
id = "lookahead"
regex = '''foo(?=bar)'''
keywords = ["foo"]
[[rules]]
id = "ok"
regex = '''foo(\d{6})'''
keywords = ["foo"]
)");
  ASSERT_EQ(s->problems().size(), 1u);
  EXPECT_EQ(s->problems()[0].rule_id, "lookahead");
  EXPECT_NE(s->problems()[0].reason.find("RE2"), std::string::npos);
  EXPECT_EQ(s->Scrub("foo123456"), "foo[REDACTED:ok:1]");
}

TEST(RuleScrubberTest, DuplicateIdsAreAnError) {
  auto cfg = ParseRulesToml("[[rules]]\nid='a'\nregex='x'\n[[rules]]\nid='a'\nregex='y'\n", "f");
  ASSERT_TRUE(cfg.ok());
  EXPECT_FALSE(RuleScrubber::Create(*cfg).ok());
}

TEST(RuleScrubberTest, OverlappingFindingsMerge) {
  auto s = Make(R"(
[[rules]]
id = "one"
regex = '''AB[0-9]{10}'''
keywords = ["ab"]
[[rules]]
id = "two"
regex = '''[0-9]{10}CD'''
keywords = ["cd"]
)");
  // AB0123456789 and 0123456789CD overlap: one marker over the union (14 bytes: preview 3).
  EXPECT_EQ(s->Scrub("x AB0123456789CD y"), "x [REDACTED:one:AB0] y");
}

TEST(RuleScrubberTest, MarkersAreNeverMatchedAgain) {
  auto s = Make(R"(
[[rules]]
id = "greedy"
regex = '''secret=(\S{8,})'''
keywords = ["secret="]
[[rules]]
id = "word"
regex = '''REDACTED'''
keywords = ["redacted"]
)");
  std::string once = s->Scrub("secret=hunter2hunter2 and secret=abcdefgh1");
  EXPECT_EQ(once, "secret=[REDACTED:greedy:hun] and secret=[REDACTED:greedy:ab]");
  EXPECT_EQ(s->Scrub(once), once);
  // A secret glued to a marker is still redacted; the marker itself is kept.
  EXPECT_EQ(s->Scrub("secret=[REDACTED:x:ab]Zq9Zq9Zq9Zq9"),
            "secret=[REDACTED:x:ab][REDACTED:greedy:Zq9]");
}

TEST(RuleScrubberTest, IdempotentWhenRedactionChangesContext) {
  // Rule b needs a non-word char before its secret; redacting rule a's secret provides one.
  auto s = Make(R"(
[[rules]]
id = "a"
regex = '''aaa[0-9]{6}'''
keywords = ["aaa"]
[[rules]]
id = "b"
regex = '''\bbbb[0-9]{6}'''
keywords = ["bbb"]
)");
  std::string once = s->Scrub("aaa123456bbb654321");
  EXPECT_EQ(once, "[REDACTED:a:aa][REDACTED:b:bb]");
  EXPECT_EQ(s->Scrub(once), once);
}

TEST(RuleScrubberTest, LettersOfAMarkerAreNotKeywords) {
  // "REDACTED" contains the keyword "a"; if marker letters opened windows, every pass would reach
  // further down the text (found by scrub_rules_fuzzer).
  auto s = Make(R"(
[[rules]]
id = "t"
regex = '''a|t+'''
keywords = ["a"]
)");
  std::string text = "a\n";
  for (int i = 0; i < 40; ++i) text += std::string(90, 'x') + " ttt\n";
  std::string once = s->Scrub(text);
  EXPECT_EQ(s->Scrub(once), once);
  EXPECT_EQ(once.rfind("[REDACTED:t:]\n", 0), 0u) << once.substr(0, 200);
  EXPECT_NE(once.find(" ttt\n"), std::string::npos);  // far from any keyword: not scanned
}

TEST(RuleScrubberTest, AMatchNeverStartsInsideAMarker) {
  // The marker's rule id ends in "password" and its preview follows a ':': generic-password read
  // "password:p]@p_aB3dE5gH7jK" as an assignment whenever a window (here, the one of the "pwd"
  // on the line before) reached the marker, so a second Scrub redacted more than the first
  // (found by scrub_fuzzer).
  auto s = BuildScrubber(ScrubConfig{});
  ASSERT_TRUE(s.ok()) << s.status();
  const std::string text =
      "the pwd list\npostgres://u:[REDACTED:database-url-password:p]@p_aB3dE5gH7jK'\n";
  EXPECT_TRUE((*s)->Scan(text).empty());
  EXPECT_EQ((*s)->Scrub(text), text);
  // Outside a marker the same text is an assignment.
  const std::string plain = "the pwd list\npostgres://u:password:p]@p_aB3dE5gH7jK'\n";
  EXPECT_FALSE((*s)->Scan(plain).empty());
}

TEST(RuleScrubberTest, MarkerIdIsSanitised) {
  auto s = Make(R"(
[[rules]]
id = "weird id]:x"
regex = '''Q[0-9]{8}'''
keywords = ["q"]
)");
  std::string out = s->Scrub("Q12345678");
  EXPECT_EQ(out, "[REDACTED:weird-id--x:Q1]");
  size_t len = 0;
  EXPECT_TRUE(ParseMarker(out, 0, &len));
  EXPECT_EQ(len, out.size());
}

class ResolveRulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("scrub_resolve_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& body, const std::string& name = "rules.toml") {
    std::string p = (dir_ / name).string();
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p) << body;
    return p;
  }
  static size_t Count(const std::vector<std::string>& ids, const std::string& id) {
    return std::count(ids.begin(), ids.end(), id);
  }
  std::filesystem::path dir_;
};

TEST_F(ResolveRulesTest, ExtendAddsAndReplacesById) {
  ScrubConfig c;
  c.rules_file = Write(R"(
[extend]
disabledRules = ["jwt"]
[[rules]]
id = "github-pat"
regex = '''mygh_[0-9]{6}'''
keywords = ["mygh_"]
[[rules]]
id = "custom"
regex = '''CUST[0-9]{6}'''
keywords = ["cust"]
)");
  auto s = BuildScrubber(c);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->Scrub("CUST123456 mygh_123456"), "[REDACTED:custom:CU] [REDACTED:github-pat:my]");
  EXPECT_EQ((*s)->Scrub("ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"),
            "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5");
  auto ids = (*s)->rule_ids();
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "jwt"), 0);
  EXPECT_GT(ids.size(), 30u);
}

constexpr char kOnlyRule[] =
    "[[rules]]\nid = 'only'\nregex = '''ONLY[0-9]{6}'''\nkeywords=['only']\n";
constexpr char kGithubToken[] = "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5";

// A file without [extend] replaces the built-in rules, as in gitleaks, unless the server keeps
// them (extend_default, its default).
TEST_F(ResolveRulesTest, FileWithoutExtendReplacesDefaultsUnlessTheServerKeepsThem) {
  ScrubConfig c;
  c.rules_file = Write(kOnlyRule);
  c.extend_default = false;
  auto s = BuildScrubber(c);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->rule_ids(), std::vector<std::string>{"only"});
  EXPECT_EQ((*s)->Scrub(kGithubToken), kGithubToken);
  EXPECT_EQ((*s)->Scrub("ONLY123456"), "[REDACTED:only:ON]");

  c.extend_default = true;
  s = BuildScrubber(c);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT((*s)->num_rules(), 30u);
  EXPECT_EQ((*s)->Scrub(kGithubToken), "[REDACTED:github-pat:ghp_]");
  EXPECT_EQ((*s)->Scrub("ONLY123456"), "[REDACTED:only:ON]");
}

// [extend] useDefault = true: the built-in rules, minus disabledRules, amended by the file's
// rules of the same id (gitleaks merges field by field), then the file's other rules. A
// disabledRules entry drops only an extended rule, never one of the file's own.
TEST_F(ResolveRulesTest, UseDefaultAmendsAndDisablesBuiltIns) {
  auto defaults = DefaultRules();
  ASSERT_TRUE(defaults.ok());
  const RuleSpec* pat = nullptr;
  for (const auto& r : defaults->rules) {
    if (r.id == "github-pat") pat = &r;
  }
  ASSERT_NE(pat, nullptr);
  for (bool server_default : {false, true}) {
    ScrubConfig c;
    c.extend_default = server_default;
    c.rules_file = Write(R"(
[extend]
useDefault = true
disabledRules = ["jwt", "mine"]
[[rules]]
id = "github-pat"
[[rules.allowlists]]
regexes = ['''NOTREAL''']
[[rules]]
id = "mine"
regex = '''MINE[0-9]{6}'''
keywords = ["mine"]
)");
    auto rules = ResolveRules(c);
    ASSERT_TRUE(rules.ok()) << rules.status();
    std::vector<std::string> ids;
    for (const auto& r : rules->rules) ids.push_back(r.id);
    EXPECT_EQ(ids.size(), defaults->rules.size());  // - jwt + mine
    EXPECT_EQ(Count(ids, "jwt"), 0u);
    EXPECT_EQ(Count(ids, "mine"), 1u);
    ASSERT_EQ(Count(ids, "github-pat"), 1u);
    const RuleSpec& merged =
        rules->rules[std::find(ids.begin(), ids.end(), "github-pat") - ids.begin()];
    EXPECT_EQ(merged.regex, pat->regex);  // kept: the amendment has none
    EXPECT_EQ(merged.allowlists.size(), pat->allowlists.size() + 1);
    auto s = RuleScrubber::Create(*rules);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ((*s)->Scrub(kGithubToken), "[REDACTED:github-pat:ghp_]");
    EXPECT_EQ((*s)->Scrub("ghp_NOTREALaB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1"),
              "ghp_NOTREALaB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1");
    EXPECT_EQ((*s)->Scrub("MINE123456"), "[REDACTED:mine:MI]");
  }
}

// An amendment's regex replaces the built-in one; its keywords are added.
TEST_F(ResolveRulesTest, AmendmentReplacesRegexAndAddsKeywords) {
  ScrubConfig c;
  c.extend_default = false;
  c.rules_file = Write(R"(
[extend]
useDefault = true
[[rules]]
id = "github-pat"
regex = '''mygh_[0-9]{6}'''
keywords = ["mygh_"]
)");
  auto s = BuildScrubber(c);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->Scrub("mygh_123456"), "[REDACTED:github-pat:my]");
  EXPECT_EQ((*s)->Scrub(kGithubToken), kGithubToken);
}

// [extend] path: another rules file underneath, relative to the extending file, at most 2 files
// deep; the extended file may itself use the defaults.
TEST_F(ResolveRulesTest, ExtendPath) {
  Write(
      "[[rules]]\nid = 'base'\nregex = '''BASE[0-9]{6}'''\nkeywords=['base']\n"
      "[[rules]]\nid = 'gone'\nregex = '''GONE[0-9]{6}'''\nkeywords=['gone']\n",
      "shared/base.toml");
  ScrubConfig c;
  c.extend_default = false;
  c.rules_file = Write(std::string("[extend]\npath = 'shared/base.toml'\n"
                                   "disabledRules = ['gone']\n") +
                           kOnlyRule,
                       "top.toml");
  auto s = BuildScrubber(c);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->rule_ids(), (std::vector<std::string>{"base", "only"}));

  // The server's extend_default puts the built-ins under the whole chain.
  c.extend_default = true;
  s = BuildScrubber(c);
  ASSERT_TRUE(s.ok()) << s.status();
  auto ids = (*s)->rule_ids();
  EXPECT_EQ(Count(ids, "base") + Count(ids, "only") + Count(ids, "github-pat"), 3u);
  EXPECT_EQ(Count(ids, "gone"), 0u);

  // Two files deep, the deeper one with useDefault.
  Write("[extend]\nuseDefault = true\n[[rules]]\nid = 'mid'\nregex = 'MID[0-9]{6}'\n",
        "shared/mid.toml");
  c.extend_default = false;
  c.rules_file = Write(std::string("[extend]\npath = 'shared/mid.toml'\n") + kOnlyRule, "top.toml");
  s = BuildScrubber(c);
  ASSERT_TRUE(s.ok()) << s.status();
  ids = (*s)->rule_ids();
  EXPECT_EQ(Count(ids, "mid") + Count(ids, "only") + Count(ids, "github-pat"), 3u);

  // Three deep (or a cycle) is refused, naming the chain.
  Write("[extend]\npath = '../top.toml'\n", "shared/loop.toml");
  c.rules_file =
      Write(std::string("[extend]\npath = 'shared/loop.toml'\n") + kOnlyRule, "top.toml");
  auto bad = ResolveRules(c);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("more than 2 files deep"), std::string::npos)
      << bad.status();
  EXPECT_NE(bad.status().message().find("loop.toml"), std::string::npos) << bad.status();

  c.rules_file = Write("[extend]\npath = 'nowhere.toml'\n", "top.toml");
  EXPECT_EQ(ResolveRules(c).status().code(), absl::StatusCode::kNotFound);
  c.rules_file = Write("[extend]\npath = 'x.toml'\nuseDefault = true\n", "top.toml");
  EXPECT_EQ(ResolveRules(c).status().code(), absl::StatusCode::kInvalidArgument);
}

// A rule without regex or path must amend a rule of the extended config.
TEST_F(ResolveRulesTest, AmendmentOfNothingIsAnError) {
  ScrubConfig c;
  c.extend_default = false;
  c.rules_file = Write(
      "[extend]\nuseDefault = true\n[[rules]]\nid = 'no-such-rule'\n"
      "keywords = ['x']\n");
  auto s = ResolveRules(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("no-such-rule"), std::string::npos) << s.status();
  // Without [extend] such a rule is a parse error, as before.
  c.rules_file = Write("[[rules]]\nid = 'x'\nkeywords = ['x']\n");
  c.extend_default = true;
  EXPECT_EQ(ResolveRules(c).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ResolveRulesTest, BadFileIsAClearError) {
  ScrubConfig c;
  c.rules_file = Write("[[rules]]\nid = 'x'\nregex = 'a'\nsecretGroup = 'one'\n");
  auto s = BuildScrubber(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("secretGroup"), std::string::npos) << s.status();
  c.rules_file = (dir_ / "missing.toml").string();
  EXPECT_EQ(BuildScrubber(c).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ResolveRulesTest, ArchiveNeedsA0600KeyFile) {
  ScrubConfig c;
  c.archive_originals = true;
  EXPECT_FALSE(BuildScrubber(c).ok());
  std::string key = (dir_ / "key").string();
  std::ofstream(key) << std::string(64, 'a') << "\n";
  ::chmod(key.c_str(), 0644);
  c.key_file = key;
  auto s = BuildScrubber(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("0600"), std::string::npos) << s.status();
  ::chmod(key.c_str(), 0600);
  EXPECT_TRUE(BuildScrubber(c).ok());
}

// The scanner's fast paths (search from the prefix every match starts with; secret bounds from
// the parts of the pattern around the secret group; dropping a long match whose secret an
// allowlist surely passes; skipping windows without a literal every match needs) must give
// exactly what the plain path gives. The plain path is forced by wrapping each pattern in
// "(?:|^)(?:...)|\x01\x02": the same matches on these texts, but an assertion, nested groups and
// an alternative without the literals turn the fast paths off.
TEST(RuleScrubberTest, FastPathsGiveTheSameFindingsAsTheExtraction) {
  constexpr std::string_view kRules = R"(
[allowlist]
regexes = ['''(?i)redacted''', '''^x+$''']
[[rules]]
id = "pem"
regex = '''(?i)(-----BEGIN[ A-Z]*KEY-----)([\s\S]{64,}?)(-----END[ A-Z]*KEY-----)'''
secretGroup = 2
keywords = ["-----begin"]
[[rules]]
id = "blob"
regex = '''blob:([a-z0-9+/]{200,})'''
keywords = ["blob:"]
[[rules.allowlists]]
stopwords = ["zzzz"]
[[rules]]
id = "amb"
regex = '''(k+)(k[a-z0-9]{250,}?)(9+)'''
secretGroup = 2
keywords = ["kk"]
[[rules]]
id = "url"
regex = '''(?i)(?:https?|ftp)://[^:/\s@]+:([^/\s@]{6,})@[a-z0-9.-]{2}'''
keywords = ["://"]
)";
  std::string wrapped(kRules);
  for (std::string_view re : {R"((?i)(-----BEGIN)", R"(blob:()", R"((k+)()", R"((?i)(?:https)"}) {
    size_t at = wrapped.find(re);
    ASSERT_NE(at, std::string::npos);
    wrapped.insert(at, "(?:|^)(?:");
    size_t end = wrapped.find("'''", at);
    wrapped.insert(end, R"()|\x01\x02)");
  }
  auto fast = Make(kRules);
  auto slow = Make(wrapped);
  ASSERT_EQ(fast->num_rules(), 4u);
  ASSERT_EQ(slow->num_rules(), 4u);
  const std::vector<std::string> pieces = {"-----BEGIN RSA PRIVATE KEY-----\n",
                                           "-----END RSA PRIVATE KEY-----\n",
                                           "-----BEGIN KEY-----",
                                           "-----END KEY-----",
                                           "[REDACTED:pem:MIIE]",
                                           "blob:",
                                           "zzzz",
                                           "kk",
                                           "kkk",
                                           "999",
                                           "\n",
                                           " ",
                                           std::string(70, 'A'),
                                           std::string(130, 'b'),
                                           std::string(90, 'k'),
                                           "x",
                                           "https://",
                                           "ftp://user:",
                                           "p4ssw0rd99",
                                           "@host.example",
                                           "@db1.internal "};
  std::mt19937 rng(5);
  int found = 0;
  for (int round = 0; round < 400; ++round) {
    std::string text;
    const int n = 2 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) text += pieces[rng() % pieces.size()];
    auto a = fast->ScrubWithFindings(text);
    auto b = slow->ScrubWithFindings(text);
    ASSERT_EQ(a.text, b.text) << text;
    ASSERT_EQ(a.findings.size(), b.findings.size()) << text;
    found += static_cast<int>(a.findings.size());
    for (size_t i = 0; i < a.findings.size(); ++i) {
      EXPECT_EQ(a.findings[i].rule_id, b.findings[i].rule_id) << text;
      EXPECT_EQ(a.findings[i].start, b.findings[i].start) << text;
      EXPECT_EQ(a.findings[i].end, b.findings[i].end) << text;
      EXPECT_EQ(a.findings[i].match_start, b.findings[i].match_start) << text;
    }
  }
  EXPECT_GT(found, 100);
}

// Later redaction passes reuse the keyword hits of the earlier pass for rules that span lines
// and rescan only around the new markers for the others. Outputs pinned from the code before
// that change (private keys next to each other and to other secrets, an existing marker).
TEST(RuleScrubberTest, MultiPassOutputIsPinned) {
  auto built = BuildScrubber(ScrubConfig{});
  ASSERT_TRUE(built.ok()) << built.status();
  const RuleScrubber& s = **built;
  const std::string body =
      "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKjMzEfYyjiWA4R4";
  const std::string t1 = "-----BEGIN PRIVATE KEY-----\n" + body +
                         "\n-----END PRIVATE KEY-----\npassword=hunter2xyz9\n"
                         "-----BEGIN RSA PRIVATE KEY-----\nshort\n-----END RSA PRIVATE KEY-----\n"
                         "token: ghp_abcdefghijklmnopqrstuvwxyz0123456789 [REDACTED:x:ab]\n"
                         "-----BEGIN PRIVATE KEY-----\n" +
                         body + body + "\n-----END PRIVATE KEY-----\n";
  EXPECT_EQ(s.Scrub(t1),
            "-----BEGIN PRIVATE KEY-----[REDACTED:private-key:]-----END PRIVATE KEY-----\n"
            "password=[REDACTED:generic-password:hu]\n"
            "-----BEGIN RSA PRIVATE KEY-----\nshort\n-----END RSA PRIVATE KEY-----\n"
            "token: [REDACTED:github-pat:ghp_] [REDACTED:x:ab]\n"
            "-----BEGIN PRIVATE KEY-----[REDACTED:private-key:]-----END PRIVATE KEY-----\n");
  const std::string t2 = "a=\"-----BEGIN PRIVATE KEY-----\\n" + body +
                         "\\n-----END PRIVATE KEY-----\\n\" secret_key=Zx9Qw8Er7Ty6Ui5Op4As3\n"
                         "-----BEGIN EC PRIVATE KEY-----\n" +
                         body + "\n-----END EC PRIVATE KEY-----";
  EXPECT_EQ(s.Scrub(t2),
            "a=\"-----BEGIN PRIVATE KEY-----[REDACTED:private-key:]-----END PRIVATE KEY-----\\n\" "
            "secret_key=[REDACTED:generic-secret:Zx9Q]\n"
            "-----BEGIN EC PRIVATE KEY-----[REDACTED:private-key:]-----END EC PRIVATE KEY-----");
  EXPECT_EQ(s.Scrub(s.Scrub(t1)), s.Scrub(t1));
  EXPECT_EQ(s.Scrub(s.Scrub(t2)), s.Scrub(t2));
}

}  // namespace
}  // namespace contextd::scrub
