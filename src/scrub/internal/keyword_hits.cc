#include "scrub/internal/keyword_hits.h"

namespace contextd::scrub::internal {

std::vector<KeywordHit> MapKeywordHits(const std::vector<KeywordHit>& hits,
                                       const std::vector<uint32_t>& pattern_len, size_t max_len,
                                       const std::vector<std::pair<size_t, size_t>>& replaced,
                                       const std::vector<std::pair<size_t, size_t>>& inserted) {
  std::vector<KeywordHit> out;
  out.reserve(hits.size());
  // Spans before j end before every later hit starts: hits come by end, and a hit starts at
  // most max_len bytes before its end.
  size_t j = 0;
  for (const auto& [pattern, end] : hits) {
    const size_t start = end - pattern_len[pattern];
    while (j < replaced.size() && replaced[j].second + max_len <= end) ++j;
    size_t k = j;
    bool gone = false;
    for (; k < replaced.size() && replaced[k].first < end; ++k) {
      if (replaced[k].second > start) {
        gone = true;
        break;
      }
    }
    if (gone) continue;
    // Spans before k are all before the hit: it moves with the end of the last of them.
    out.emplace_back(pattern,
                     k == 0 ? end : inserted[k - 1].second + (end - replaced[k - 1].second));
  }
  return out;
}

}  // namespace contextd::scrub::internal
