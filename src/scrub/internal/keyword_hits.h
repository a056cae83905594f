// MapKeywordHits: carries keyword occurrences (AhoCorasick hits) of a text across a redaction
// that replaced some spans of it, so that a later pass does not have to rescan the whole text.
// Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace contextd::scrub::internal {

// A keyword occurrence: pattern id and end offset, as AhoCorasick::Scan reports it.
using KeywordHit = std::pair<uint32_t, size_t>;

// `hits`: occurrences in a text, in the order AhoCorasick reports them (by end);
// `pattern_len[id]`: the length of pattern id; `max_len`: the longest pattern.
// `replaced`: sorted, disjoint spans [start, end) of that text that were replaced, and
// `inserted`: where their replacements are in the new text (same count and order).
// Returns the occurrences that overlap no replaced span, at their offsets in the new text, in the
// same order. These are exactly the occurrences in the new text that overlap no replacement
// (the text between replacements is unchanged).
std::vector<KeywordHit> MapKeywordHits(const std::vector<KeywordHit>& hits,
                                       const std::vector<uint32_t>& pattern_len, size_t max_len,
                                       const std::vector<std::pair<size_t, size_t>>& replaced,
                                       const std::vector<std::pair<size_t, size_t>>& inserted);

}  // namespace contextd::scrub::internal
