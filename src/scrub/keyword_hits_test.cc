#include "scrub/internal/keyword_hits.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "scrub/internal/aho_corasick.h"

namespace contextd::scrub::internal {
namespace {

std::vector<KeywordHit> ScanHits(const AhoCorasick& ac, const std::string& text) {
  std::vector<KeywordHit> hits;
  ac.Scan(text, [&](uint32_t id, size_t end) { hits.emplace_back(id, end); });
  return hits;
}

// Against the reference: scan the redacted text and keep the hits that overlap no replacement.
TEST(MapKeywordHitsTest, MatchesARescanOfTheRedactedText) {
  std::mt19937 rng(17);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> pats;
    const int n = 1 + static_cast<int>(rng() % 5);
    for (int i = 0; i < n; ++i) {
      std::string p;
      const int len = 1 + static_cast<int>(rng() % 6);
      for (int j = 0; j < len; ++j) p.push_back("abAB"[rng() % 4]);
      pats.push_back(p);
    }
    std::vector<uint32_t> lens;
    size_t max_len = 0;
    for (const auto& p : pats) {
      lens.push_back(static_cast<uint32_t>(p.size()));
      max_len = std::max(max_len, p.size());
    }
    AhoCorasick ac(pats);
    // Long enough for the interleaved scan too.
    std::string text;
    const size_t size = 100 + rng() % 6000;
    for (size_t j = 0; j < size; ++j) text.push_back("abcAB["[rng() % 6]);
    // Replace random disjoint spans by "[M..]" strings of other lengths.
    std::vector<std::pair<size_t, size_t>> replaced, inserted;
    std::string out;
    size_t pos = 0;
    while (true) {
      const size_t s = pos + rng() % 200;
      const size_t e = s + rng() % 40;
      if (e > text.size()) break;
      out.append(text, pos, s - pos);
      const size_t at = out.size();
      out.append("[M" + std::string(rng() % 12, 'x') + "]");
      replaced.emplace_back(s, e);
      inserted.emplace_back(at, out.size());
      pos = e;
    }
    out.append(text, pos, std::string::npos);

    std::vector<KeywordHit> want;
    for (const auto& [id, end] : ScanHits(ac, out)) {
      const size_t start = end - lens[id];
      bool overlaps = false;
      for (const auto& [ms, me] : inserted) overlaps |= ms < end && me > start;
      if (!overlaps) want.emplace_back(id, end);
    }
    EXPECT_EQ(MapKeywordHits(ScanHits(ac, text), lens, max_len, replaced, inserted), want)
        << "round " << round;
  }
}

}  // namespace
}  // namespace contextd::scrub::internal
