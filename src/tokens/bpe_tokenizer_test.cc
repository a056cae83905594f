#include "tokens/bpe_tokenizer.h"

#include <openssl/evp.h>

#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tokens/internal/byte_pair.h"
#include "tokens/internal/embedded_vocab.h"
#include "tokens/internal/utf8.h"

namespace contextd::tokens {
namespace {

using ::testing::ElementsAre;

const BpeTokenizer& O200k() {
  auto t = GetEncoding("o200k_base");
  EXPECT_TRUE(t.ok()) << t.status();
  return **t;
}
const BpeTokenizer& Cl100k() {
  auto t = GetEncoding("cl100k_base");
  EXPECT_TRUE(t.ok()) << t.status();
  return **t;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char d[32];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), d, &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += "0123456789abcdef"[d[i] >> 4];
    hex += "0123456789abcdef"[d[i] & 15];
  }
  return hex;
}

std::string Base64(std::string_view in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t w = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += k[(w >> s) & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t w = uint8_t(in[i]) << 16;
    out += k[w >> 18];
    out += k[(w >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t w = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += k[w >> 18];
    out += k[(w >> 12) & 63];
    out += k[(w >> 6) & 63];
    out += '=';
  }
  return out;
}

// A toy vocabulary: every byte (rank = byte value), then `extra` in rank order from 256.
std::string ToyRankFile(const std::vector<std::string>& extra) {
  std::string file;
  for (int b = 0; b < 256; ++b)
    file += Base64(std::string(1, char(b))) + " " + std::to_string(b) + "\n";
  for (size_t i = 0; i < extra.size(); ++i)
    file += Base64(extra[i]) + " " + std::to_string(256 + i) + "\n";
  return file;
}

absl::StatusOr<std::unique_ptr<BpeTokenizer>> Toy(const std::string& file) {
  return BpeTokenizer::Create(EncodingSpec{
      "toy", internal::SplitPattern::kO200k, file, Sha256Hex(file), {{"<|end|>", 1000}}});
}

TEST(BpeTokenizerTest, KnownIds) {
  EXPECT_THAT(O200k().Encode("hello world"), ElementsAre(24912, 2375));
  EXPECT_THAT(Cl100k().Encode("hello world"), ElementsAre(15339, 1917));
  EXPECT_EQ(O200k().Count("hello world"), 2u);
  EXPECT_TRUE(O200k().Encode("").empty());
  EXPECT_EQ(O200k().Count(""), 0u);
  EXPECT_EQ(O200k().name(), "o200k_base");
  EXPECT_EQ(Cl100k().name(), "cl100k_base");
  EXPECT_EQ(O200k().vocab_size(), 200000u);
  EXPECT_EQ(Cl100k().vocab_size(), 100261u);
}

TEST(BpeTokenizerTest, SpecialTokensOnlyWhenAllowed) {
  std::string text = "a<|endoftext|>b";
  EXPECT_THAT(O200k().Encode("<|endoftext|>", true), ElementsAre(199999));
  EXPECT_THAT(Cl100k().Encode("<|endoftext|>", true), ElementsAre(100257));
  std::vector<uint32_t> plain = O200k().Encode(text, false);
  EXPECT_GT(plain.size(), 3u);
  for (uint32_t id : plain) EXPECT_NE(id, 199999u);
  std::vector<uint32_t> special = O200k().Encode(text, true);
  EXPECT_EQ(special.size(), 3u);
  EXPECT_EQ(special[1], 199999u);
  EXPECT_EQ(O200k().Count(text), plain.size());
  EXPECT_EQ(O200k().Count(text, true), 3u);
  EXPECT_THAT(Cl100k().Encode("<|fim_prefix|><|endofprompt|>", true), ElementsAre(100258, 100276));
}

TEST(BpeTokenizerTest, InvalidUtf8CountsAsReplacementCharacter) {
  for (const BpeTokenizer* t : {&O200k(), &Cl100k()}) {
    EXPECT_EQ(t->Encode("x\xFFy"), t->Encode("x\xEF\xBF\xBDy"));
    EXPECT_EQ(t->Encode("\xE2\x82"), t->Encode("\xEF\xBF\xBD"));
    EXPECT_EQ(t->Count("\xED\xA0\x80"), t->Encode("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD").size());
  }
}

TEST(BpeTokenizerTest, DecodeRoundTripsAndRejectsUnknownIds) {
  std::mt19937 rng(3);
  const char* pieces[] = {"a",
                          "Z",
                          " ",
                          "\n",
                          "\xC3\xA9",
                          "\xE8\xAF\xAD",
                          "\xF0\x9F\x98\x80",
                          "'s",
                          "1",
                          "<|endoftext|>",
                          "\xCC\x81",
                          "\t",
                          "\xC2\x85",
                          ".",
                          "//"};
  for (int i = 0; i < 500; ++i) {
    std::string s;
    for (int k = rng() % 30; k > 0; --k) s += pieces[rng() % std::size(pieces)];
    for (const BpeTokenizer* t : {&O200k(), &Cl100k()}) {
      for (bool allow : {false, true}) {
        std::vector<uint32_t> ids = t->Encode(s, allow);
        EXPECT_EQ(t->Count(s, allow), ids.size());
        auto back = t->Decode(ids);
        ASSERT_TRUE(back.ok()) << back.status();
        EXPECT_EQ(*back, s);
      }
    }
  }
  std::vector<uint32_t> bad = {24912, 199998};
  EXPECT_EQ(O200k().Decode(bad).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<uint32_t> special = {199999};
  EXPECT_EQ(*O200k().Decode(special), "<|endoftext|>");
}

TEST(BpeTokenizerTest, LoadErrors) {
  EXPECT_EQ(LoadEncoding("p50k_base").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GetEncoding("").status().code(), absl::StatusCode::kInvalidArgument);
  auto spec = BuiltinEncodingSpec("cl100k_base");
  ASSERT_TRUE(spec.ok());
  std::string corrupted(spec->rank_file);
  corrupted[100] ^= 1;
  spec->rank_file = corrupted;
  EXPECT_EQ(BpeTokenizer::Create(*spec).status().code(), absl::StatusCode::kDataLoss);
  // Malformed files with a matching hash are still rejected.
  for (std::string file :
       {std::string(""), std::string("YQ== 0\nYQ== 1\n"), std::string("not base64! 0\n"),
        std::string("YQ==\n"), std::string("YQ== x\n"), ToyRankFile({}) + "YWI= 7\n"}) {
    EXPECT_EQ(Toy(file).status().code(), absl::StatusCode::kInvalidArgument) << file.substr(0, 20);
  }
}

TEST(BpeTokenizerTest, GetEncodingSharesOneInstanceAcrossThreads) {
  std::vector<const BpeTokenizer*> seen(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back(
        [&seen, i] { seen[i] = *GetEncoding(i % 2 ? "cl100k_base" : "o200k_base"); });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(seen[i], seen[i % 2]);
  EXPECT_NE(seen[0], seen[1]);
}

TEST(BpeTokenizerTest, ConcurrentEncodesAgree) {
  std::string text;
  for (int i = 0; i < 2000; ++i)
    text += "identifier_" + std::to_string(i) + " \xE8\xAF\xAD\xE8\xA8\x80 ";
  std::vector<uint32_t> want = O200k().Encode(text);
  std::vector<std::vector<uint32_t>> got(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&, i] { got[i] = O200k().Encode(text); });
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, want);
}

TEST(BpeTokenizerTest, ToyVocabularyMergesLowestRankFirst) {
  // Ranks: "ab" 256, "bc" 257, "abc" 258, "cd" 259, "bcd" 260.
  auto toy = Toy(ToyRankFile({"ab", "bc", "abc", "cd", "bcd"}));
  ASSERT_TRUE(toy.ok()) << toy.status();
  EXPECT_THAT((*toy)->Encode("abc"), ElementsAre(258));        // whole piece is a token
  EXPECT_THAT((*toy)->Encode("abcd"), ElementsAre(258, 'd'));  // ab, then abc; cd never forms
  EXPECT_THAT((*toy)->Encode("bcd"), ElementsAre(260));
  EXPECT_THAT((*toy)->Encode("xbcd"), ElementsAre('x', 260));  // bc (257) before cd (259)
  EXPECT_THAT((*toy)->Encode("abab"), ElementsAre(256, 256));  // leftmost first on equal ranks
  EXPECT_THAT((*toy)->Encode("<|end|>", true), ElementsAre(1000));
}

TEST(BpeTokenizerTest, ShortAndLongMergesAgree) {
  auto spec = BuiltinEncodingSpec("o200k_base");
  auto table = internal::RankTable::Parse(spec->rank_file);
  ASSERT_TRUE(table.ok());
  std::mt19937 rng(11);
  const std::string alphabets[] = {"abcdefghijklmnopqrstuvwxyz", "etaoin ", "ab",
                                   "0123456789abcdef", "\xE8\xAF\xAD\xE8\xA8\x80\xE5\xA4\x84"};
  for (int i = 0; i < 3000; ++i) {
    const std::string& alpha = alphabets[i % std::size(alphabets)];
    size_t n = 2 + rng() % (internal::kShortPieceMax - 1);
    std::string s(n, 'a');
    for (char& c : s) c = alpha[rng() % alpha.size()];
    const auto* p = reinterpret_cast<const uint8_t*>(s.data());
    uint32_t ids[internal::kShortPieceMax];
    size_t k = internal::BytePairEncodeShort(*table, p, n, ids);
    std::vector<uint32_t> longer;
    internal::BytePairEncodeLong(*table, p, n, &longer);
    ASSERT_EQ(std::vector<uint32_t>(ids, ids + k), longer) << s;
  }
}

// Random vocabularies over "abcd" have ranks that do not follow merge order (a merge can create a
// pair of lower rank than the one just merged), which exercises every path of the long and huge
// merges. tiktoken's array scan (BytePairEncodeShort) is the reference.
TEST(BpeTokenizerTest, MergesAgreeOnRandomVocabularies) {
  std::mt19937 rng(17);
  for (int v = 0; v < 20; ++v) {
    std::vector<std::string> extra;
    std::set<std::string> seen;
    while (extra.size() < 60) {
      std::string t(2 + rng() % 4, 'a');
      for (char& c : t) c = "abcd"[rng() % 4];
      if (seen.insert(t).second) extra.push_back(t);
    }
    auto table = internal::RankTable::Parse(ToyRankFile(extra));
    ASSERT_TRUE(table.ok()) << table.status();
    for (int i = 0; i < 200; ++i) {
      size_t n = 2 + rng() % (i < 150 ? internal::kShortPieceMax - 1 : 5000);
      std::string s(n, 'a');
      for (char& c : s) c = "abcd"[rng() % 4];
      const auto* p = reinterpret_cast<const uint8_t*>(s.data());
      std::vector<uint32_t> heap, huge;
      internal::BytePairEncodeLong(*table, p, n, &heap);
      internal::BytePairEncodeHuge(*table, p, n, &huge);
      ASSERT_EQ(heap, huge) << "vocabulary " << v << " text " << s;
      if (n <= internal::kShortPieceMax) {
        uint32_t ids[internal::kShortPieceMax];
        size_t k = internal::BytePairEncodeShort(*table, p, n, ids);
        ASSERT_EQ(std::vector<uint32_t>(ids, ids + k), heap) << "vocabulary " << v << " text " << s;
      }
    }
  }
}

TEST(BpeTokenizerTest, HugeMergeMatchesHeapOnRealVocabulary) {
  auto spec = BuiltinEncodingSpec("cl100k_base");
  auto table = internal::RankTable::Parse(spec->rank_file);
  ASSERT_TRUE(table.ok());
  std::mt19937 rng(23);
  for (int i = 0; i < 40; ++i) {
    std::string s(100 + rng() % 20000, 'a');
    const char* alpha = i % 2 ? "abcdefghijklmnopqrstuvwxyz" : "aeiou";
    for (char& c : s) c = alpha[rng() % std::strlen(alpha)];
    const auto* p = reinterpret_cast<const uint8_t*>(s.data());
    std::vector<uint32_t> heap, huge;
    internal::BytePairEncodeLong(*table, p, s.size(), &heap);
    internal::BytePairEncodeHuge(*table, p, s.size(), &huge);
    ASSERT_EQ(heap, huge);
  }
}

TEST(BpeTokenizerTest, LongUnbrokenInputIsConsistent) {
  std::mt19937 rng(5);
  std::string s(300000, 'a');
  for (char& c : s) c = static_cast<char>('a' + rng() % 26);
  for (const BpeTokenizer* t : {&O200k(), &Cl100k()}) {
    std::vector<uint32_t> ids = t->Encode(s);
    EXPECT_EQ(t->Count(s), ids.size());
    EXPECT_GT(ids.size(), s.size() / 4);
    EXPECT_EQ(*t->Decode(ids), s);
  }
}

TEST(BpeTokenizerTest, EmbeddedVocabularyIsTheVerifiedFile) {
  EXPECT_EQ(Sha256Hex(internal::EmbeddedO200kBase()),
            "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d");
  EXPECT_EQ(Sha256Hex(internal::EmbeddedCl100kBase()),
            "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7");
  EXPECT_GT(O200k().MemoryUsage(), 0u);
}

}  // namespace
}  // namespace contextd::tokens
