// Encoded secrets: findings in decoded base64, hex and percent segments (see engine.h and
// internal/decode.h).
//
// Design (as gitleaks' decoder, bounded for a server that scrubs every tool result):
// - Candidates come from one cheap linear pass over the text (FindCandidates); a candidate is
//   decoded only when its decoding is text (binary blobs, hashes, digests, PNG data fail at once).
// - Decoded text replaces the segment in place, in a view of the line around it, so the context
//   (a key name such as DB_PASSWORD: before a base64 value) is there for rules that need a
//   keyword. Only the view is scanned, not the whole text again.
// - A view is a function of its line alone (never of other lines or of a per-text budget), so a
//   later redaction pass that rescans the lines around new markers keeps Scrub a fixpoint.
// - Work is bounded without a budget: every decoding is shorter than its encoding, so a level's
//   views hold at most the bytes of the lines they come from, and there are decode_depth levels.

#include <algorithm>

#include "scrub/internal/decode.h"
#include "scrub/internal/engine.h"

namespace contextd::scrub::internal {
namespace {

// Context kept around the segments of a line in a view: a rule's match starts at most a few dozen
// bytes before its secret (the keyword and the assignment), and ends a few bytes after it.
constexpr size_t kViewBefore = 256;
constexpr size_t kViewAfter = 128;
// Texts are searched for candidates this many bytes at a time (rounded up to a line end).
constexpr size_t kBlockBytes = 64 << 10;

// The lines the ranges of `only` touch, merged.
std::vector<Span> LineRanges(std::string_view text, const std::vector<Span>* only) {
  std::vector<Span> out;
  if (only == nullptr) {
    out.emplace_back(0, text.size());
    return out;
  }
  for (const auto& [a, b] : *only) {
    const size_t s = LineStart(text, std::min(a, text.size()));
    const size_t e = LineEnd(text, b > a ? b - 1 : a);
    if (!out.empty() && s <= out.back().second) {
      out.back().second = std::max(out.back().second, e);
    } else {
      out.emplace_back(s, e);
    }
  }
  return out;
}

inline bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Moves `pos` out of a marker that contains it: to its start (`down`) or end.
size_t OutOfMarker(const std::vector<Span>& markers, size_t pos, bool down) {
  auto it = std::upper_bound(markers.begin(), markers.end(), std::make_pair(pos, SIZE_MAX));
  if (it == markers.begin()) return pos;
  --it;
  if (it->first < pos && pos < it->second) return down ? it->first : it->second;
  return pos;
}

}  // namespace

void Engine::AddDecodedHits(std::string_view text, std::string_view path,
                            const std::vector<Span>& markers, const std::vector<Span>* only,
                            std::vector<Hit>* hits) const {
  if (decode_depth <= 0) return;
  std::vector<Hit> found;
  std::vector<Candidate> candidates;
  std::vector<DecodedSegment> group;
  // Whether ScanOnce can find anything in a view: with keyword-less rules, maybe; otherwise only
  // if some keyword occurs in it. Most views (text that decodes, with no keyword around it) stop
  // here, at the cost of one automaton pass over the view.
  auto worth_scanning = [&](std::string_view view) {
    if (!always_rules.empty()) return true;
    bool any = false;
    ac->Scan(view, [&](uint32_t pattern, size_t) { any |= !keyword_rules[pattern].empty(); });
    return any;
  };
  auto scan_group = [&]() {
    const size_t line_start = LineStart(text, group.front().start);
    const size_t line_end = LineEnd(text, group.back().end);
    const size_t first = group.front().start, last = group.back().end;
    size_t from = first - line_start > kViewBefore ? first - kViewBefore : line_start;
    size_t to = line_end - last > kViewAfter ? last + kViewAfter : line_end;
    // A view cut inside a line starts and ends between words: \b at its ends means what it
    // means in the text.
    if (from > line_start) {
      while (from < first && IsWordChar(text[from - 1])) ++from;
    }
    if (to < line_end) {
      while (to > last && IsWordChar(text[to])) --to;
    }
    // A view never cuts a marker in two: a marker's letters are not text.
    from = OutOfMarker(markers, from, true);
    to = OutOfMarker(markers, to, false);
    DecodedView view = DecodedView::Make(text, from, to, group);
    group.clear();
    for (;;) {
      std::vector<Span> view_markers;
      if (worth_scanning(view.text())) {
        for (const Hit& h : ScanOnce(view.text(), path, &view_markers, nullptr)) {
          uint8_t encodings = 0;
          bool at_level = false;
          const auto [s, e] = view.ToOriginal(h.start, h.end, &encodings, nullptr, &at_level);
          // A secret that overlaps no segment of this level: in plain text, it is the plain
          // pass's business; in text decoded at an earlier level, that level's.
          if (!at_level) continue;
          const auto [ms, me] =
              view.ToOriginal(std::min(h.match_start, h.start), std::max(h.match_end, h.end));
          Hit o;
          o.rule = h.rule;
          o.start = s;
          o.end = e;
          o.match_start = ms;
          o.match_end = me;
          // The entropy of the secret as found (decoded), as gitleaks reports it.
          o.entropy = ShannonEntropy(view.text().substr(h.start, h.end - h.start));
          o.encodings = encodings;
          o.decode_depth = static_cast<uint8_t>(view.level());
          found.push_back(o);
        }
      } else {
        // ScanOnce would have collected the markers; the next level must not decode in one.
        FindMarkers(view.text(), &view_markers);
      }
      if (view.level() >= decode_depth) break;
      DecodedView next;
      if (!view.DecodeNext(view_markers, &next)) break;
      view = std::move(next);
    }
  };
  // Block by block (whole lines, so that no group is cut), to keep memory small on large texts.
  for (const auto& [a, b] : LineRanges(text, only)) {
    for (size_t block = a; block < b;) {
      const size_t block_end = b - block > kBlockBytes ? WindowEnd(text, block + kBlockBytes) : b;
      candidates.clear();
      FindCandidates(text, block, std::min(block_end, b), markers, &candidates);
      for (const Candidate& c : candidates) {
        std::string decoded;
        if (!DecodeCandidate(text, c, &decoded)) continue;
        if (!group.empty()) {
          const size_t prev_end = group.back().end;
          const bool same_line =
              std::memchr(text.data() + prev_end, '\n', c.start - prev_end) == nullptr;
          if (!same_line || c.start - prev_end > kViewBefore + kViewAfter) scan_group();
        }
        group.push_back({c.start, c.end, c.kind, std::move(decoded)});
      }
      if (!group.empty()) scan_group();  // a block ends at a line end
      block = block_end;
    }
  }
  if (found.empty()) return;

  std::sort(found.begin(), found.end(), [](const Hit& a, const Hit& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.end != b.end) return a.end > b.end;
    return a.rule < b.rule;
  });
  found.erase(std::unique(found.begin(), found.end(),
                          [](const Hit& a, const Hit& b) {
                            return a.start == b.start && a.end == b.end && a.rule == b.rule;
                          }),
              found.end());
  if (!markers.empty()) found = ClipAroundMarkers(std::move(found), markers);
  // Drop what a plain finding covers already: it is redacted either way, and reported once.
  // `hits` is sorted by start: sweep it with the furthest end seen so far.
  std::vector<Hit> added;
  size_t hi = 0, reach = 0;
  bool any = false;
  for (const Hit& d : found) {
    for (; hi < hits->size() && (*hits)[hi].start <= d.start; ++hi) {
      reach = std::max(reach, (*hits)[hi].end);
      any = true;
    }
    if (any && d.end <= reach) continue;
    added.push_back(d);
  }
  if (added.empty()) return;
  hits->insert(hits->end(), added.begin(), added.end());
  std::stable_sort(hits->begin(), hits->end(), HitBefore);  // a plain finding first on ties
}

}  // namespace contextd::scrub::internal
