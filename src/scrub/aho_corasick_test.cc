#include "scrub/internal/aho_corasick.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <tuple>

namespace contextd::scrub::internal {
namespace {

using Hits = std::multiset<std::pair<uint32_t, size_t>>;

Hits Brute(const std::vector<std::string>& pats, const std::string& text) {
  Hits h;
  auto lower = [](std::string s) {
    for (char& c : s) c = (c >= 'A' && c <= 'Z') ? c + 32 : c;
    return s;
  };
  std::string t = lower(text);
  for (uint32_t i = 0; i < pats.size(); ++i) {
    std::string p = lower(pats[i]);
    if (p.empty()) continue;
    for (size_t pos = t.find(p); pos != std::string::npos; pos = t.find(p, pos + 1)) {
      h.insert({i, pos + p.size()});
    }
  }
  return h;
}

Hits ScanAll(const AhoCorasick& ac, const std::string& text) {
  Hits h;
  ac.Scan(text, [&](uint32_t id, size_t end) { h.insert({id, end}); });
  return h;
}

TEST(AhoCorasickTest, FindsOverlappingCaseInsensitive) {
  std::vector<std::string> pats = {"he", "she", "his", "hers", "", "HERS"};
  AhoCorasick ac(pats);
  std::string text = "uSHErs and HIS hers";
  EXPECT_EQ(ScanAll(ac, text), Brute(pats, text));
  EXPECT_FALSE(ScanAll(ac, text).empty());
}

TEST(AhoCorasickTest, MatchesBruteForceOnRandomInput) {
  std::mt19937 rng(42);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> pats;
    int n = 1 + rng() % 8;
    for (int i = 0; i < n; ++i) {
      std::string p;
      int len = 1 + rng() % 4;
      for (int j = 0; j < len; ++j) p.push_back("abAB-_\xff"[rng() % 7]);
      pats.push_back(p);
    }
    std::string text;
    for (int j = 0; j < 60; ++j) text.push_back("abcAB-_\n\xff"[rng() % 9]);
    AhoCorasick ac(pats);
    ASSERT_EQ(ScanAll(ac, text), Brute(pats, text)) << "round " << round;
  }
}

TEST(AhoCorasickTest, LargeAutomatonUses32BitTable) {
  std::mt19937 rng(7);
  std::vector<std::string> pats;
  for (int i = 0; i < 3000; ++i) {
    std::string p;
    for (int j = 0; j < 8; ++j) p.push_back("abcdefgh"[rng() % 8]);
    pats.push_back(p);
  }
  AhoCorasick ac(pats);
  EXPECT_GT(ac.num_states() * 8 * 2, 65536u);
  std::string text;
  for (int j = 0; j < 5000; ++j) text.push_back("abcdefghXY"[rng() % 10]);
  for (int j = 0; j < 20; ++j) text += pats[j * 100] + "X";
  Hits got = ScanAll(ac, text);
  EXPECT_EQ(got, Brute(pats, text));
  EXPECT_FALSE(got.empty());
}

// Long texts are scanned as interleaved streams; the callback must still see every occurrence
// once, in order of end offset, exactly as a byte-by-byte scan reports them (also across the
// points where the text is cut).
TEST(AhoCorasickTest, LongTextsReportInOrderAcrossStreams) {
  std::mt19937 rng(11);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::string> pats;
    int n = 1 + rng() % 6;
    for (int i = 0; i < n; ++i) {
      std::string p;
      int len = 1 + rng() % 9;
      for (int j = 0; j < len; ++j) p.push_back("abAB"[rng() % 4]);
      pats.push_back(p);
    }
    std::string text;
    const int size = 4096 + static_cast<int>(rng() % 300);
    for (int j = 0; j < size; ++j) text.push_back("abcAB\n"[rng() % 6]);
    AhoCorasick ac(pats);
    std::vector<std::pair<uint32_t, size_t>> seq;
    ac.Scan(text, [&](uint32_t id, size_t end) { seq.emplace_back(id, end); });
    // Reference: the same automaton, one short (single-stream) scan per prefix end.
    std::vector<std::pair<uint32_t, size_t>> want;
    for (size_t end = 1; end <= text.size(); ++end) {
      const size_t from = end > 9 ? end - 9 : 0;
      ac.Scan(std::string_view(text).substr(from, end - from), [&](uint32_t id, size_t e) {
        if (from + e == end) want.emplace_back(id, end);
      });
    }
    ASSERT_EQ(seq, want) << "round " << round;
    Hits h(seq.begin(), seq.end());
    ASSERT_EQ(h, Brute(pats, text)) << "round " << round;
  }
}

TEST(AhoCorasickTest, NoPatternsNoHits) {
  AhoCorasick ac({});
  EXPECT_TRUE(ScanAll(ac, "anything").empty());
  EXPECT_TRUE(ScanAll(ac, std::string(10000, 'a')).empty());
}

}  // namespace
}  // namespace contextd::scrub::internal
