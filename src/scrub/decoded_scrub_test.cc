// End-to-end tests of encoded secrets with the built-in rules: real cases (Kubernetes Secrets,
// Basic auth, base64'd .dockerconfigjson and .env, percent-encoded URLs, hex, double encodings)
// are redacted at the encoded span and reported with decoded:* tags; clean look-alikes are left
// alone; decode_depth bounds and disables; Scrub stays a fixpoint.
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scrub/rule_scrubber.h"

namespace contextd::scrub {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Base64(std::string_view in) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int k = 3; k >= 0; --k) out.push_back(abc[(v >> (6 * k)) & 63]);
  }
  if (in.size() - i == 1) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += {abc[(v >> 18) & 63], abc[(v >> 12) & 63], '=', '='};
  } else if (in.size() - i == 2) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {abc[(v >> 18) & 63], abc[(v >> 12) & 63], abc[(v >> 6) & 63], '='};
  }
  return out;
}

std::string Hex(std::string_view in) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : in) out += {d[c >> 4], d[c & 15]};
  return out;
}

const RuleScrubber& WithDepth(int depth) {
  static std::shared_ptr<const RuleScrubber> s[kMaxDecodeDepth + 1];
  if (s[depth] == nullptr) {
    ScrubConfig config;
    config.decode_depth = depth;
    auto b = BuildScrubber(config);
    EXPECT_TRUE(b.ok()) << b.status();
    s[depth] = *b;
  }
  return *s[depth];
}
const RuleScrubber& Defaults() { return WithDepth(kDefaultDecodeDepth); }

// A GitHub token that no rule sees until it is decoded.
const std::string kGhp = "ghp_Zq8vLx3Rk2Wm9Tn4Yp7Hs1Jd6Fg5Bc0Qa2Ew";  // ghp_ + 36

// The finding of `rule` in `r`, or null.
const Finding* FindingOf(const RuleScrubber::Result& r, std::string_view rule) {
  for (const auto& f : r.findings) {
    if (f.rule_id == rule) return &f;
  }
  return nullptr;
}

void ExpectFixpoint(const RuleScrubber& s, std::string_view text) {
  const std::string once = s.Scrub(text);
  EXPECT_EQ(s.Scrub(once), once) << text;
}

TEST(DecodedScrubTest, KubernetesSecretManifest) {
  const std::string db_url = Base64("postgres://app:S3cr3tPassw0rd!@db.internal:5432/app");
  const std::string docker = Base64(
      R"({"auths":{"registry.corp.test":{"username":"deploy","password":"hunter2-Zq8vLx3Rk","auth":"ZGVwbG95Omh1bnRlcjItWnE4dkx4M1Jr"}}})");
  const std::string tls_key = Base64(
      "-----BEGIN RSA PRIVATE KEY-----\n"
      "MIIEowIBAAKCAQEAx3v9Qk2mLr8ZpTn4Wd7Hs1Jf6Gg5Bc0Qa2EwYu3Io9Pl7Kj\n"
      "Rt5Mn2Bv8Cx4Zs6Ad1Fg3Hj7Kl9Qw0Er2Ty4Ui6Op8As1Df3Gh5Jk7Lz9Xc2Vb4\n"
      "-----END RSA PRIVATE KEY-----\n");
  std::string text =
      "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-credentials\ntype: Opaque\ndata:\n"
      "  username: YWRtaW4=\n"
      "  password: UzNjcjN0UGFzc3cwcmQh\n";
  text += "  DATABASE_URL: " + db_url + "\n";
  text += "  .dockerconfigjson: " + docker + "\n";
  text += "  tls.key: " + tls_key + "\n";
  const auto r = Defaults().ScrubWithFindings(text);
  EXPECT_THAT(r.text, Not(HasSubstr("UzNjcjN0UGFzc3cwcmQh")));
  EXPECT_THAT(r.text, Not(HasSubstr(db_url)));
  EXPECT_THAT(r.text, Not(HasSubstr(docker)));
  EXPECT_THAT(r.text, Not(HasSubstr(tls_key)));
  EXPECT_THAT(r.text, HasSubstr("  username: YWRtaW4=\n"));  // "admin" is no secret
  EXPECT_THAT(r.text, HasSubstr("kind: Secret\n"));
  // Decoded findings are reported at the encoded span, with gitleaks' tags.
  const Finding* db = FindingOf(r, "database-url-password");
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(text.substr(db->start, db->end - db->start), db_url);
  EXPECT_THAT(db->tags, Contains("decoded:base64"));
  EXPECT_THAT(db->tags, Contains("decode-depth:1"));
  EXPECT_EQ(db->line, 9u);
  const Finding* key = FindingOf(r, "private-key");
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(text.substr(key->start, key->end - key->start), tls_key);
  ExpectFixpoint(Defaults(), text);
  // Without decoding only the plain finding remains.
  const std::string plain = WithDepth(0).Scrub(text);
  EXPECT_THAT(plain, HasSubstr(db_url));
  EXPECT_THAT(plain, HasSubstr(tls_key));
}

TEST(DecodedScrubTest, BasicAuthHeader) {
  const std::string text = "Authorization: Basic dXNlcjpzM2NyM3QtcGFzc3dvcmQ=\r\n";
  const std::string out = Defaults().Scrub(text);
  EXPECT_THAT(out, Not(HasSubstr("dXNlcjpzM2NyM3QtcGFzc3dvcmQ=")));
  EXPECT_THAT(out, HasSubstr("Authorization: Basic [REDACTED:"));
  ExpectFixpoint(Defaults(), text);
}

TEST(DecodedScrubTest, Base64DotEnvFile) {
  const std::string env = Base64(
      "# production\n"
      "DB_PASSWORD=Tr0ub4dor-and-3-more\n"
      "STRIPE_KEY=sk_live_4eC39HqLyjWDarjtT1zdp7dc\n");
  const std::string text = "ENV_FILE: " + env + "\nREPLICAS: 3\n";
  const auto r = Defaults().ScrubWithFindings(text);
  EXPECT_EQ(r.text,
            "ENV_FILE: [REDACTED:" + (r.findings.empty() ? std::string() : r.findings[0].rule_id) +
                ":" + env.substr(0, 4) + "]\nREPLICAS: 3\n");
  ASSERT_GE(r.findings.size(), 2u);
  for (const auto& f : r.findings) {
    EXPECT_EQ(f.start, 10u) << f.rule_id;
    EXPECT_EQ(f.end, 10 + env.size()) << f.rule_id;
    EXPECT_THAT(f.tags, Contains("decoded:base64"));
  }
  EXPECT_NE(FindingOf(r, "stripe-api-key"), nullptr);
  EXPECT_NE(FindingOf(r, "generic-password"), nullptr);
  // Scan reports the same.
  EXPECT_EQ(Defaults().Scan(text).size(), r.findings.size());
}

TEST(DecodedScrubTest, PercentEncodedTokenAndPasswordInUrls) {
  const std::string pct = "ghp%5F" + kGhp.substr(4);
  const std::string text =
      "GET https://api.corp.test/v1/repos?ref=main&access=" + pct + "&page=2\n";
  const auto r = Defaults().ScrubWithFindings(text);
  EXPECT_EQ(r.text,
            "GET https://api.corp.test/v1/repos?ref=main&access=[REDACTED:github-pat:ghp]"
            "&page=2\n");
  const Finding* f = FindingOf(r, "github-pat");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(text.substr(f->start, f->end - f->start), pct);
  EXPECT_THAT(f->tags, Contains("decoded:percent"));
  EXPECT_EQ(WithDepth(0).Scrub(text), text);  // nothing without decoding

  const std::string db = "DSN=postgres://app:p%40ssw0rd%21xyz@db:5432/app\n";
  const std::string out = Defaults().Scrub(db);
  EXPECT_THAT(out, Not(HasSubstr("ssw0rd")));
  EXPECT_THAT(out, HasSubstr("postgres://app:[REDACTED:"));
  ExpectFixpoint(Defaults(), text);
  ExpectFixpoint(Defaults(), db);
}

TEST(DecodedScrubTest, HexEncodedAwsKey) {
  const std::string hex = Hex("AKIAQZ2RSTUVWX4567AB");
  const std::string text = "aws_key_hex = \"" + hex + "\"\n";
  const auto r = Defaults().ScrubWithFindings(text);
  EXPECT_EQ(r.text, "aws_key_hex = \"[REDACTED:aws-access-key-id:414b]\"\n");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_THAT(r.findings[0].tags, Contains("decoded:hex"));
  EXPECT_EQ(WithDepth(0).Scrub(text), text);
}

TEST(DecodedScrubTest, DoubleEncodingsUpToTheDepth) {
  // base64 of a URL whose token is percent-encoded: two levels.
  const std::string inner = "https://h.corp.test/hook?r=ghp%5F" + kGhp.substr(4);
  const std::string b64 = Base64(inner);
  const std::string text = "WEBHOOK=" + b64 + "\n";
  const auto r = Defaults().ScrubWithFindings(text);
  EXPECT_EQ(r.text, "WEBHOOK=[REDACTED:github-pat:" + b64.substr(0, 4) + "]\n");
  const Finding* f = FindingOf(r, "github-pat");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->start, 8u);
  EXPECT_EQ(f->end, 8 + b64.size());
  EXPECT_THAT(f->tags, Contains("decoded:base64"));
  EXPECT_THAT(f->tags, Contains("decoded:percent"));
  EXPECT_THAT(f->tags, Contains("decode-depth:2"));
  EXPECT_EQ(WithDepth(1).Scrub(text), text);  // one level is not enough

  // base64 of base64 of a token, and a percent-encoded base64 padding (deferred a level).
  const std::string twice = Base64(Base64("token: " + kGhp));
  EXPECT_EQ(Defaults().Scrub("blob " + twice),
            "blob [REDACTED:github-pat:" + twice.substr(0, 4) + "]");
  EXPECT_EQ(WithDepth(1).Scrub("blob " + twice), "blob " + twice);
  const std::string padded = Base64("pw " + kGhp + "!");  // ends in '='
  ASSERT_EQ(padded.back(), '=');
  const std::string escaped = padded.substr(0, padded.size() - 1) + "%3D";
  EXPECT_EQ(Defaults().Scrub("x=" + escaped + ";"),
            "x=[REDACTED:github-pat:" + escaped.substr(0, 4) + "];");
  // Three levels need decode_depth 3.
  const std::string thrice = Base64(twice);
  EXPECT_EQ(Defaults().Scrub("blob " + thrice), "blob " + thrice);
  EXPECT_EQ(WithDepth(3).Scrub("blob " + thrice),
            "blob [REDACTED:github-pat:" + thrice.substr(0, 4) + "]");
  ExpectFixpoint(Defaults(), text);
  ExpectFixpoint(WithDepth(3), "blob " + thrice);
}

TEST(DecodedScrubTest, KeywordContextBeforeTheValueIsKept) {
  // The key name is plain; the value is base64 of a password: generic-password needs both.
  const std::string value = Base64("correct-horse-9-battery");
  const std::string text = "  DB_PASSWORD: " + value + "\n";
  const auto r = Defaults().ScrubWithFindings(text);
  EXPECT_THAT(r.text, Not(HasSubstr(value)));
  ExpectFixpoint(Defaults(), text);
}

TEST(DecodedScrubTest, CleanLookAlikesAreLeftAlone) {
  // clang-format off
  const std::vector<std::string> clean = {
      // base64 of ordinary text, and a JWT-less JSON blob
      "note: " + Base64("this is just a config note, nothing to hide") + "\n",
      "{\"state\": \"eyJ0ZXN0aW5nIjo0Mn0\"}\n",
      // Kubernetes data that is not secret
      "kind: ConfigMap\ndata:\n  greeting: " + Base64("hello world from the config map") +
          "\n  username: YWRtaW4=\n",
      // identifiers, UUIDs, SHAs, digests, lockfile integrity, PNG data
      "def test_parse_config_with_2_sections_and_defaults(self): pass\n",
      "class ThisIsAVeryLongCamelCaseIdentifierForTesting: pass\n",
      "request_id=123e4567-e89b-12d3-a456-426614174000 trace=4bf92f3577b34da6a3ce929d0e0e4736\n",
      "commit da39a3ee5e6b4b0d3255bfef95601890afd80709\nMerge: 3f786850e387550fdab836ed7e6dc881de23001b\n",
      "image@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n",
      "\"integrity\": \"sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==\"\n",
      "<img src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\">\n",
      // percent-encoding in ordinary URLs and format strings
      "GET /search?q=hello%20world%2C%20again&lang=en%2DUS HTTP/1.1\n",
      "printf(\"%20s|%5d|%02x\\n\", name, n, b);\n",
      // hex of text without a secret
      "payload_hex=" + Hex("just some harmless payload text") + "\n",
  };
  // clang-format on
  for (const auto& text : clean) {
    EXPECT_EQ(Defaults().Scrub(text), text);
    EXPECT_TRUE(Defaults().Scan(text).empty()) << text;
  }
}

TEST(DecodedScrubTest, LargeTextsLongLinesAndKeywordlessRules) {
  // Encoded secrets on lines around the 64 KB blocks the text is searched in, and at the end of a
  // line longer than a block.
  const std::string enc = Base64("token: " + kGhp);
  std::string text;
  std::vector<size_t> at;
  for (int i = 0; text.size() < 300000; ++i) {
    if (i % 97 == 0) {
      at.push_back(text.size());
      text += "cfg " + enc + "\n";
    } else if (i == 500) {
      text += std::string(100000, 'w') + " " + enc + "\n";
    } else {
      text += "filler line " + std::to_string(i) + " with some words and numbers 12345\n";
    }
  }
  const std::string out = Defaults().Scrub(text);
  EXPECT_THAT(out, Not(HasSubstr(enc)));
  EXPECT_EQ(Defaults().Scrub(out), out);
  EXPECT_EQ(Defaults().Scan(text).size(), at.size() + 1);

  // A rule without keywords sees decoded text too.
  auto rules = ParseRulesToml(R"([[rules]]
id = "ticket-secret"
regex = '''TKT-[0-9]{8}'''
)",
                              "test.toml");
  ASSERT_TRUE(rules.ok()) << rules.status();
  auto s = RuleScrubber::Create(*rules, 2);
  ASSERT_TRUE(s.ok()) << s.status();
  const std::string hidden = Base64("ref TKT-12345678 ok");
  EXPECT_EQ((*s)->Scrub("x " + hidden + " y"),
            "x [REDACTED:ticket-secret:" + hidden.substr(0, 4) + "] y");
}

TEST(DecodedScrubTest, DecodeDepthIsValidated) {
  ScrubConfig config;
  config.decode_depth = kMaxDecodeDepth + 1;
  EXPECT_EQ(BuildScrubber(config).status().code(), absl::StatusCode::kInvalidArgument);
  config.decode_depth = -1;
  EXPECT_EQ(BuildScrubber(config).status().code(), absl::StatusCode::kInvalidArgument);
  config.decode_depth = 0;
  EXPECT_TRUE(BuildScrubber(config).ok());
}

TEST(DecodedScrubTest, FixpointWithEncodedSecretsNextToMarkersAndEachOther) {
  const std::string a = Base64("password=" + kGhp);
  const std::string b = "ghp%5F" + kGhp.substr(4);
  const std::vector<std::string> texts = {
      "k: " + a + " " + a + " " + b + " [REDACTED:github-pat:ghp_] " + a + "\n",
      "token=" + kGhp + " then " + a + "\n" + b + "\n",
      a + b + a,
      "x" + Hex("AKIAQZ2RSTUVWX4567AB") + "%41" + a,
  };
  for (const auto& t : texts) {
    const std::string once = Defaults().Scrub(t);
    EXPECT_EQ(Defaults().Scrub(once), once) << t;
    EXPECT_THAT(once, Not(HasSubstr(kGhp.substr(4))));
  }
  // Random mixtures of encoded secrets, markers, keywords and noise.
  std::mt19937 rng(7);
  std::vector<std::string> parts = {a, b, Hex("AKIAQZ2RSTUVWX4567AB"), Base64(Base64(kGhp))};
  for (const char* p : {"password: ", "token=", " ", "\n", "%3D", "=", "[REDACTED:jwt:eyJh]",
                        "dXNlcjpzM2NyM3Q", "AAAA"}) {
    parts.push_back(p);
  }
  for (int i = 0; i < 300; ++i) {
    std::string t;
    for (int k = 0; k < 12; ++k) t += parts[rng() % parts.size()];
    const std::string once = Defaults().Scrub(t);
    ASSERT_EQ(Defaults().Scrub(once), once) << t;
  }
}

}  // namespace
}  // namespace contextd::scrub
