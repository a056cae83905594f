// Unit tests of the decoder (internal/decode.h): each encoding, the text check, candidates
// (against a byte-at-a-time reference), decoded views and their mapping, levels.
#include "scrub/internal/decode.h"

#include <cctype>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace contextd::scrub::internal {
namespace {

using Spans = std::vector<std::pair<size_t, size_t>>;

std::string Base64(std::string_view in, bool url = false, bool pad = true) {
  const char* std_abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const char* url_abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const char* abc = url ? url_abc : std_abc;
  std::string out;
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int k = 3; k >= 0; --k) out.push_back(abc[(v >> (6 * k)) & 63]);
  }
  if (in.size() - i == 1) {
    uint32_t v = uint8_t(in[i]) << 16;
    out.push_back(abc[(v >> 18) & 63]);
    out.push_back(abc[(v >> 12) & 63]);
    if (pad) out += "==";
  } else if (in.size() - i == 2) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out.push_back(abc[(v >> 18) & 63]);
    out.push_back(abc[(v >> 12) & 63]);
    out.push_back(abc[(v >> 6) & 63]);
    if (pad) out += "=";
  }
  return out;
}

std::string Hex(std::string_view in) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : in) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

std::string B64(std::string_view in) {
  std::string out;
  EXPECT_TRUE(DecodeBase64(in, &out)) << in;
  return out;
}

bool B64Fails(std::string_view in) {
  std::string out;
  return !DecodeBase64(in, &out);
}

TEST(IsTextTest, PrintableAsciiWhitespaceAndUtf8) {
  EXPECT_TRUE(IsText("user:s3cr3t password!~"));
  EXPECT_TRUE(IsText("a\tb\nc\r\n"));
  EXPECT_TRUE(IsText("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x91"));  // é € 🔑
  EXPECT_TRUE(IsText(""));
  EXPECT_FALSE(IsText(std::string("a\0b", 3)));
  EXPECT_FALSE(IsText("bell\x07"));
  EXPECT_FALSE(IsText("del\x7f"));
  EXPECT_FALSE(IsText("\x89PNG"));           // lone continuation-range lead byte
  EXPECT_FALSE(IsText("\xc3"));              // truncated sequence
  EXPECT_FALSE(IsText("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsText("\xe0\x80\xaf"));      // overlong
  EXPECT_FALSE(IsText("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(IsText("\xc2\x85"));          // C1 control (NEL)
  EXPECT_FALSE(IsText("\xf4\x90\x80\x80"));  // above U+10FFFF
}

TEST(DecodeBase64Test, StandardUrlSafePaddedOrNot) {
  EXPECT_EQ(B64("dXNlcjpzM2NyM3QtcGFzc3dvcmQ="), "user:s3cr3t-password");
  EXPECT_EQ(B64("dXNlcjpzM2NyM3QtcGFzc3dvcmQ"), "user:s3cr3t-password");
  EXPECT_EQ(B64("UzNjcjN0UGFzc3cwcmQh"), "S3cr3tPassw0rd!");
  const std::string text = "~~~?>>> url-safe text??";
  const std::string url = Base64(text, /*url=*/true, /*pad=*/false);
  ASSERT_NE(url.find_first_of("-_"), std::string::npos) << url;
  EXPECT_EQ(B64(url), text);
  EXPECT_EQ(B64(Base64(text, true, true)), text);
  const std::string std_form = Base64(text);
  ASSERT_NE(std_form.find_first_of("+/"), std::string::npos) << std_form;
  EXPECT_EQ(B64(std_form), text);
}

TEST(DecodeBase64Test, RejectsMalformedAndNonText) {
  EXPECT_TRUE(B64Fails("dXNlcjpzM2NyM3Q"));                // 15 characters: too short
  EXPECT_TRUE(B64Fails("dXNlcjpzM2NyM3QtcGFzc3dvcmQ=="));  // wrong padding
  EXPECT_TRUE(B64Fails("dXNlcjpzM2NyM3QtcGFzc3dvcmQ==="));
  EXPECT_TRUE(B64Fails("dXNlcjpzM2NyM3QtcGFzc3dvcmQx1"));  // 4n+1 characters
  EXPECT_TRUE(B64Fails("dXNlcjpzM2NyM3QtcGFzc3dvcmR"));    // last character's unused bits set
  EXPECT_TRUE(B64Fails("ab+cd/ef-gh_ij0123456"));          // two alphabets
  EXPECT_TRUE(B64Fails("YmFyIGRvZyBzYXQgdGhlIGlz"));       // "bar dog sat the is", but letters only
  EXPECT_TRUE(B64Fails("iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB"));  // PNG header: binary
  EXPECT_TRUE(B64Fails("3q2+7wAAAAAAAAAAAAAAAAAAAAAA"));      // binary
  EXPECT_TRUE(B64Fails("dXNlcjpz M2NyM3Q"));                  // not a run
}

TEST(DecodeHexTest, EvenLengthDigitsText) {
  std::string out;
  ASSERT_TRUE(DecodeHex(Hex("AKIAQZ2RSTUVWX4567AB"), &out));
  EXPECT_EQ(out, "AKIAQZ2RSTUVWX4567AB");
  out.clear();
  EXPECT_TRUE(DecodeHex("414B4941515A3252535455565758343536374142", &out));  // upper case
  out.clear();
  EXPECT_FALSE(DecodeHex("414B4941515A325253545556575834353637414200", &out));  // NUL
  out.clear();
  EXPECT_FALSE(DecodeHex("414b4941515a3252535455565758343536374", &out));  // odd length
  out.clear();
  EXPECT_FALSE(DecodeHex(Hex("short text"), &out));  // < 32 digits
  out.clear();
  EXPECT_FALSE(DecodeHex("da39a3ee5e6b4b0d3255bfef95601890afd80709", &out));  // sha1: binary
  out.clear();
  EXPECT_FALSE(DecodeHex("abcdefabcdefabcdefabcdefabcdefabcdef", &out));  // no digit
}

TEST(DecodePercentTest, EscapesOnly) {
  std::string out;
  ASSERT_TRUE(DecodePercent("%5F", &out));
  EXPECT_EQ(out, "_");
  out.clear();
  ASSERT_TRUE(DecodePercent("%C3%A9%40", &out));
  EXPECT_EQ(out, "\xc3\xa9@");
  out.clear();
  EXPECT_FALSE(DecodePercent("%00", &out));
  out.clear();
  EXPECT_FALSE(DecodePercent("%C3", &out));  // half a character
  out.clear();
  EXPECT_FALSE(DecodePercent("%5G", &out));
  out.clear();
  EXPECT_FALSE(DecodePercent("%5F_", &out));
}

// The candidates of `text`, as "kind:start-end" (deferred ones with a '*').
std::vector<std::string> Cands(std::string_view text, const Spans& skip = {}, size_t from = 0,
                               size_t to = std::string::npos) {
  std::vector<Candidate> c;
  FindCandidates(text, from, std::min(to, text.size()), skip, &c);
  std::vector<std::string> out;
  for (const auto& x : c) {
    out.push_back(std::string(EncodingName(x.kind)) + ":" + std::to_string(x.start) + "-" +
                  std::to_string(x.end) + (x.deferred ? "*" : ""));
  }
  return out;
}

TEST(FindCandidatesTest, KindsPaddingAndBounds) {
  using ::testing::ElementsAre;
  EXPECT_THAT(Cands("x: dXNlcjpzM2NyM3QtcGFzc3dvcmQ= y"), ElementsAre("base64:3-31"));
  EXPECT_THAT(Cands("da39a3ee5e6b4b0d3255bfef95601890afd80709"), ElementsAre("hex:0-40"));
  EXPECT_THAT(Cands("short_identifier ok"), ElementsAre("base64:0-16"));
  EXPECT_THAT(Cands("short_identifie ok"), ElementsAre());
  EXPECT_THAT(Cands("a%20b %C3%A9 100%"), ElementsAre("percent:1-4", "percent:6-12"));
  // A run touching a percent run waits for it to be decoded (next level).
  EXPECT_THAT(Cands("dXNlcjpzM2NyM3QtcGFzc3dvcmQ%3D"),
              ElementsAre("base64:0-27*", "percent:27-30"));
  EXPECT_THAT(Cands("%2BdXNlcjpzM2NyM3QtcGFz"), ElementsAre("percent:0-3", "base64:3-23*"));
  // Spans to skip (markers), and a sub-range.
  EXPECT_THAT(Cands("[REDACTED:github-fine-grained-pat:ab] dXNlcjpzM2NyM3QtcGFz", {{0, 37}}),
              ElementsAre("base64:38-58"));
  EXPECT_THAT(Cands("aaaaaaaaaaaaaaaaaaaa bbbbbbbbbbbbbbbbbbbb", {}, 21),
              ElementsAre("base64:21-41"));
}

// Reference: maximal runs of [A-Za-z0-9+/_-] found byte by byte.
std::vector<std::pair<size_t, size_t>> NaiveRuns(std::string_view t) {
  auto run = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '-' ||
           c == '_';
  };
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < t.size();) {
    if (!run(t[i])) {
      ++i;
      continue;
    }
    size_t e = i;
    while (e < t.size() && run(t[e])) ++e;
    if (e - i >= kMinBase64Run) out.emplace_back(i, e);
    i = e;
  }
  return out;
}

TEST(FindCandidatesTest, EveryByteValueIsClassified) {
  for (int b = 0; b < 256; ++b) {
    const std::string t(70, static_cast<char>(b));  // one SIMD chunk and a tail
    std::vector<Candidate> c;
    FindCandidates(t, 0, t.size(), {}, &c);
    const bool run = std::isalnum(b) || b == '+' || b == '/' || b == '-' || b == '_';
    EXPECT_EQ(c.size(), run ? 1u : 0u) << b;
  }
}

TEST(FindCandidatesTest, RunsMatchByteAtATimeReferenceAcrossChunks) {
  std::mt19937 rng(19);
  // Run characters, and bytes next to their ranges that are not ('=' and '%' left out: they
  // change candidates on purpose).
  const std::string run = "aAzZ09+/-_mM5";
  const std::string other = std::string(" .:\n,@[`{\x7f\x80\xff\x2a\x3a\x3b", 15) + '\0';
  for (int iter = 0; iter < 3000; ++iter) {
    std::string t;
    const size_t n = rng() % 400;
    // Long stretches of run characters, broken now and then, so runs cross 64-byte chunks.
    const int breaks = 1 + static_cast<int>(rng() % 40);
    for (size_t i = 0; i < n; ++i) {
      t.push_back(static_cast<int>(rng() % 100) < breaks ? other[rng() % other.size()]
                                                         : run[rng() % run.size()]);
    }
    std::vector<Candidate> c;
    FindCandidates(t, 0, t.size(), {}, &c);
    std::vector<std::pair<size_t, size_t>> got;
    for (const auto& x : c) got.emplace_back(x.start, x.end);
    ASSERT_EQ(got, NaiveRuns(t)) << iter << ": " << t;
  }
}

TEST(DecodedViewTest, MakeMapsCopiedBytesOneToOneAndDecodedToTheSegment) {
  const std::string text = "pw: dXNlcjpzM2NyM3QtcGFzc3dvcmQ= end";
  std::vector<Candidate> c;
  FindCandidates(text, 0, text.size(), {}, &c);
  ASSERT_EQ(c.size(), 1u);
  std::string decoded;
  ASSERT_TRUE(DecodeCandidate(text, c[0], &decoded));
  DecodedView v =
      DecodedView::Make(text, 0, text.size(), {{c[0].start, c[0].end, c[0].kind, decoded}});
  EXPECT_EQ(v.text(), "pw: user:s3cr3t-password end");
  EXPECT_EQ(v.level(), 1);
  uint8_t enc = 0, depth = 0;
  bool at_level = false;
  // Copied bytes.
  EXPECT_EQ(v.ToOriginal(0, 2, &enc, &depth, &at_level), std::make_pair(size_t{0}, size_t{2}));
  EXPECT_EQ(enc, 0);
  EXPECT_FALSE(at_level);
  // A piece of the decoded text: the whole encoded segment.
  const size_t s = v.text().find("s3cr3t");
  EXPECT_EQ(v.ToOriginal(s, s + 6, &enc, &depth, &at_level), std::make_pair(size_t{4}, size_t{32}));
  EXPECT_EQ(enc, static_cast<uint8_t>(Encoding::kBase64));
  EXPECT_EQ(depth, 1);
  EXPECT_TRUE(at_level);
  // Across: copied part exact, decoded part widened.
  const size_t e = v.text().find(" end");
  EXPECT_EQ(v.ToOriginal(2, e + 2), std::make_pair(size_t{2}, size_t{34}));
  // A view of part of a text keeps original offsets.
  DecodedView w = DecodedView::Make(text, 2, 33, {{c[0].start, c[0].end, c[0].kind, decoded}});
  EXPECT_EQ(w.text(), ": user:s3cr3t-password ");
  EXPECT_EQ(w.ToOriginal(0, 1), std::make_pair(size_t{2}, size_t{3}));
}

// Builds the level-1 view of the whole `text` and returns the deepest view reached within
// `depth` levels.
DecodedView Decode(std::string_view text, int depth) {
  std::vector<Candidate> c;
  FindCandidates(text, 0, text.size(), {}, &c);
  std::vector<DecodedSegment> segs;
  for (const auto& x : c) {
    std::string d;
    if (DecodeCandidate(text, x, &d)) segs.push_back({x.start, x.end, x.kind, d});
  }
  DecodedView v = DecodedView::Make(text, 0, text.size(), segs);
  while (v.level() < depth) {
    DecodedView next;
    if (!v.DecodeNext({}, &next)) break;
    v = std::move(next);
  }
  return v;
}

TEST(DecodedViewTest, SecondLevelDecodesBase64OfPercentAndMapsToTheOuterSegment) {
  const std::string inner = "https://h.test/x?r=ghp%5Fabc";
  const std::string enc = Base64(inner);
  const std::string text = "cfg " + enc + " ok";
  DecodedView one = Decode(text, 1);
  EXPECT_EQ(one.text(), "cfg " + inner + " ok");
  DecodedView two = Decode(text, 2);
  EXPECT_EQ(two.level(), 2);
  EXPECT_EQ(two.text(), "cfg https://h.test/x?r=ghp_abc ok");
  const size_t s = two.text().find("ghp_abc");
  uint8_t enc_bits = 0, depth = 0;
  bool at_level = false;
  EXPECT_EQ(two.ToOriginal(s, s + 7, &enc_bits, &depth, &at_level),
            std::make_pair(size_t{4}, size_t{4 + enc.size()}));
  EXPECT_EQ(enc_bits,
            static_cast<uint8_t>(Encoding::kBase64) | static_cast<uint8_t>(Encoding::kPercent));
  EXPECT_EQ(depth, 2);
  EXPECT_TRUE(at_level);
  // "https" lies in level-1 text only.
  EXPECT_EQ(two.ToOriginal(4, 9, nullptr, nullptr, &at_level),
            std::make_pair(size_t{4}, size_t{4 + enc.size()}));
  EXPECT_FALSE(at_level);
}

TEST(DecodedViewTest, DeferredRunJoinsTheDecodedPercentRunAtTheNextLevel) {
  const std::string text = "auth=dXNlcjpzM2NyM3QtcGFzc3dvcmQ%3D;";
  EXPECT_EQ(Decode(text, 1).text(), "auth=dXNlcjpzM2NyM3QtcGFzc3dvcmQ=;");
  DecodedView two = Decode(text, 2);
  EXPECT_EQ(two.text(), "auth=user:s3cr3t-password;");
  const size_t s = two.text().find("s3cr3t");
  EXPECT_EQ(two.ToOriginal(s, s + 6), std::make_pair(size_t{5}, text.size() - 1));
}

TEST(DecodedViewTest, DepthBoundsNesting) {
  std::string text = "s3cr3t=deep-inside!";
  for (int i = 0; i < 4; ++i) text = Base64(text);
  text = "v: " + text;
  EXPECT_EQ(Decode(text, 3).level(), 3);
  EXPECT_NE(Decode(text, 3).text(), "v: s3cr3t=deep-inside!");
  EXPECT_EQ(Decode(text, 4).text(), "v: s3cr3t=deep-inside!");
  // Later levels only look near what the last level decoded: nothing else is retried.
  DecodedView next;
  EXPECT_FALSE(Decode(text, 4).DecodeNext({}, &next));
}

TEST(DecodedViewTest, LeavesBinaryHashesAndIdentifiersAlone) {
  // clang-format off
  const std::string text =
      "commit da39a3ee5e6b4b0d3255bfef95601890afd80709 id 123e4567-e89b-12d3-a456-426614174000\n"
      "\"integrity\": \"sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==\"\n"
      "digest sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
      "img data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\n"
      "def test_parse_config_with_2_sections_and_defaults(): ThisIsAVeryLongCamelCaseIdentifier\n";
  // clang-format on
  DecodedView v = Decode(text, 2);
  EXPECT_EQ(v.text(), text);
}

}  // namespace
}  // namespace contextd::scrub::internal
