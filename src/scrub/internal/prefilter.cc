// The keyword prefilter: one Aho-Corasick pass decides which rules run where; a scan pass
// (see engine.h).

#include <algorithm>
#include <iterator>

#include "scrub/internal/engine.h"

namespace contextd::scrub::internal {
namespace {

// WindowEnd(t, pos) with a memo: the last newline found and the position the search started at;
// any pos in between has the same line end.
struct NextNewline {
  size_t from = 1, nl = 0;  // valid for from <= pos <= nl (empty at first)
  size_t WindowEnd(std::string_view t, size_t pos) {
    if (pos < from || pos > nl) {
      from = pos;
      nl = LineEnd(t, pos);
    }
    return nl < t.size() ? nl + 1 : nl;
  }
};

struct Window {
  size_t from = 0, to = 0;
  bool open = false;
};

}  // namespace

std::vector<Hit> Engine::ScanOnce(std::string_view text, std::string_view path,
                                  std::vector<Span>* markers, const std::vector<Span>* only,
                                  std::vector<KeywordHit>* wide_hits,
                                  std::vector<KeywordHit>* lead_hits) const {
  std::vector<Hit> found;
  std::vector<Window> win(rules.size());
  // Windows per rule, collected during the keyword pass and run afterwards: specific rules
  // first, then low-priority (generic) ones, which skip matches a specific rule already found.
  std::vector<std::vector<std::pair<size_t, size_t>>> spans(rules.size());
  auto flush = [&](uint32_t ri) {
    Window& w = win[ri];
    if (w.open) spans[ri].emplace_back(w.from, w.to);
    w.open = false;
  };
  // Existing markers first: keyword hits inside a marker are not text (the marker's own letters
  // must not open windows, or each pass would find more than the last).
  FindMarkers(text, markers);
  // Keyword hits come every ~70 bytes on clean text; on a long line, searching for its end at
  // every hit (for every rule) cost more than the rest of the window logic. Reaches grow with
  // the hits, so a one-entry cache per reach distance (normal, wide) finds each newline once.
  NextNewline line_ends[2];
  size_t mi = 0;  // first marker that may still overlap a hit (hits come in order of `end`)
  // Which rules a hit is for: all of its rules, only the wide ones, only the others.
  enum class Which { kAll, kWide, kNarrow };
  auto on_hit = [&](uint32_t pattern, size_t end, Which which) {
    const size_t kw_start = end - keyword_len[pattern];
    if (!markers->empty()) {
      while (mi < markers->size() && (*markers)[mi].second + max_keyword_len <= end) ++mi;
      for (size_t k = mi; k < markers->size() && (*markers)[k].first < end; ++k) {
        if ((*markers)[k].second > kw_start) return;
      }
    }
    bool outside = false;
    if (only != nullptr && which == Which::kAll) {
      auto it = std::upper_bound(only->begin(), only->end(), std::make_pair(kw_start, SIZE_MAX));
      outside = it == only->begin() || std::prev(it)->second <= kw_start;
    }
    for (uint32_t ri : keyword_rules[pattern]) {
      const CompiledRule& r = rules[ri];
      if (outside && !r.wide) continue;
      if ((which == Which::kWide && !r.wide) || (which == Which::kNarrow && r.wide)) continue;
      Window& w = win[ri];
      const size_t reach = std::min(text.size(), end + r.forward_window);
      // The window runs from a little before the keyword (at most back_window bytes; unless
      // the rule is wide, not before its line, or the back_lines lines before it) to the end of
      // the line `reach` is on (at most kMaxLineTail bytes further), and span_lines lines on.
      size_t to = std::min(line_ends[r.wide ? 1 : 0].WindowEnd(text, reach), reach + kMaxLineTail);
      for (size_t k = 0; k < r.span_lines && to < text.size(); ++k) {
        to = std::min(WindowEnd(text, to), to + kMaxLineTail);
      }
      if (w.open && kw_start < w.to) {  // inside the open window: extend it if needed
        if (to > w.to) w.to = to;
        continue;
      }
      size_t from = kw_start > r.back_window ? kw_start - r.back_window : 0;
      if (!r.wide) {
        size_t line = LineStart(text, kw_start);
        for (size_t k = 0; k < r.back_lines && line > from; ++k) line = LineStart(text, line - 1);
        from = std::max(from, line);
      }
      if (w.open && from <= w.to + kWindowGap) {
        w.to = to;
        continue;
      }
      flush(ri);
      w.open = true;
      w.from = from;
      w.to = to;
    }
  };
  // Where anchored rules' matches can start: from every occurrence of their leading strings
  // in the text, usable on ASCII text only (see CompiledRule::anchored).
  const bool whole_scan = only == nullptr || wide_hits == nullptr;
  std::vector<KeywordHit> own_lead_hits;
  if (lead_hits == nullptr && whole_scan) lead_hits = &own_lead_hits;
  const bool use_starts =
      have_anchored && lead_hits != nullptr && (whole_scan || !lead_hits->empty()) && IsAscii(text);
  if (whole_scan) {
    if (use_starts) lead_hits->clear();
    ac->Scan(text, [&](uint32_t pattern, size_t end) {
      if (use_starts && !anchor_rules[pattern].empty()) lead_hits->emplace_back(pattern, end);
      if (keyword_rules[pattern].empty()) return;
      if (wide_hits != nullptr && keyword_wide[pattern]) wide_hits->emplace_back(pattern, end);
      on_hit(pattern, end, Which::kAll);
    });
  } else {
    // A later pass. Each rule's windows depend only on its own hits, in order, so the wide
    // rules can take theirs from `wide_hits` (every occurrence in the text: the text outside
    // the new markers is unchanged, and hits overlapping a marker are skipped anyway) and the
    // other rules, which only look at hits starting inside `only`, from scans of just those
    // ranges (plus max_keyword_len, merged when they touch, so the hits still come in order of
    // end). Saves rescanning the whole text with the automaton in every pass.
    for (const auto& [pattern, end] : *wide_hits) on_hit(pattern, end, Which::kWide);
    mi = 0;
    for (size_t i = 0; i < only->size();) {
      const size_t a = (*only)[i].first;
      size_t b = std::min(text.size(), (*only)[i].second + max_keyword_len);
      for (++i; i < only->size() && (*only)[i].first <= b; ++i) {
        b = std::max(b, std::min(text.size(), (*only)[i].second + max_keyword_len));
      }
      ac->Scan(text.substr(a, b - a), [&](uint32_t pattern, size_t e) {
        if (keyword_rules[pattern].empty()) return;
        const size_t end = a + e;
        const size_t kw_start = end - keyword_len[pattern];
        auto it = std::upper_bound(only->begin(), only->end(), std::make_pair(kw_start, SIZE_MAX));
        if (it == only->begin() || std::prev(it)->second <= kw_start) return;
        on_hit(pattern, end, Which::kNarrow);
      });
    }
  }
  for (uint32_t ri = 0; ri < rules.size(); ++ri) flush(ri);
  std::vector<std::vector<size_t>> starts;
  if (use_starts) {
    starts.resize(rules.size());
    for (const auto& [pattern, end] : *lead_hits) {
      for (uint32_t ri : anchor_rules[pattern]) {
        if (!spans[ri].empty()) starts[ri].push_back(end - keyword_len[pattern]);
      }
    }
    // Hits come in order of their end; starts of strings of different lengths can swap.
    for (auto& list : starts) {
      if (!std::is_sorted(list.begin(), list.end())) std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
    }
  }
  for (uint32_t ri = 0; ri < rules.size(); ++ri) {
    if (rules[ri].low_priority) continue;
    const std::vector<size_t>* s = use_starts && rules[ri].anchored ? &starts[ri] : nullptr;
    for (const auto& [from, to] : spans[ri]) {
      RunRule(ri, text, from, to, path, *markers, nullptr, &found, s);
    }
  }
  std::vector<Hit> specific;
  bool have_generic_spans = false;
  for (uint32_t ri = 0; ri < rules.size(); ++ri) {
    have_generic_spans |= rules[ri].low_priority && !spans[ri].empty();
  }
  if (have_generic_spans) {
    specific = found;
    std::sort(specific.begin(), specific.end(), HitBefore);
    for (uint32_t ri = 0; ri < rules.size(); ++ri) {
      if (!rules[ri].low_priority) continue;
      const std::vector<size_t>* s = use_starts && rules[ri].anchored ? &starts[ri] : nullptr;
      for (const auto& [from, to] : spans[ri]) {
        RunRule(ri, text, from, to, path, *markers, &specific, &found, s);
      }
    }
  }
  if (!always_rules.empty()) {
    std::vector<int> hit;
    bool screened = false;
    if (always_set != nullptr) {
      RE2::Set::ErrorInfo err;
      screened = always_set->Match(re2::StringPiece(text.data(), text.size()), &hit, &err) ||
                 err.kind == RE2::Set::kNoError;
    }
    if (!screened) {
      hit.clear();
      for (size_t i = 0; i < always_rules.size(); ++i) hit.push_back(static_cast<int>(i));
    }
    for (int i : hit) {
      uint32_t ri = always_rules[i];
      if (only != nullptr && !rules[ri].wide && rules[ri].span_lines == 0) {
        for (const auto& [from, to] : *only) {
          RunRule(ri, text, from, to, path, *markers, nullptr, &found);
        }
      } else {
        RunRule(ri, text, 0, text.size(), path, *markers, nullptr, &found);
      }
    }
  }
  // A rule with a path applies where the path matches; on text without a path (what contextd
  // scrubs almost everywhere: it cannot know which file a text came from) its regex alone
  // decides. gitleaks on stdin would skip it.
  if (!path.empty()) {
    for (uint32_t ri = 0; ri < rules.size(); ++ri) {
      const CompiledRule& r = rules[ri];
      if (r.path != nullptr && !RE2::PartialMatch(path, *r.path)) {
        found.erase(
            std::remove_if(found.begin(), found.end(), [&](const Hit& f) { return f.rule == ri; }),
            found.end());
      }
    }
  }
  std::sort(found.begin(), found.end(), HitBefore);
  if (!markers->empty() && !found.empty()) found = ClipAroundMarkers(std::move(found), *markers);
  return found;
}

std::vector<KeywordHit> Engine::MapLeadHits(std::string_view text,
                                            const std::vector<KeywordHit>& hits,
                                            const std::vector<Span>& replaced,
                                            const std::vector<Span>& inserted) const {
  std::vector<KeywordHit> out =
      MapKeywordHits(hits, keyword_len, max_pattern_len, replaced, inserted);
  std::vector<KeywordHit> added;  // the ones overlapping a marker
  for (const auto& span : inserted) {
    // Not a structured binding: clang 14 cannot capture one in the lambda below.
    const size_t ms = span.first, me = span.second;
    const size_t a = ms >= max_pattern_len ? ms - max_pattern_len : 0;
    const size_t b = std::min(text.size(), me + max_pattern_len);
    ac->Scan(text.substr(a, b - a), [&](uint32_t pattern, size_t e) {
      const size_t end = a + e;
      if (anchor_rules[pattern].empty() || end <= ms || end - keyword_len[pattern] >= me) return;
      added.emplace_back(pattern, end);  // overlaps the marker
    });
  }
  if (added.empty()) return out;
  // Scans of neighbouring markers can overlap (and report one hit twice), and hits of one
  // scan can end after hits of the next: sort the few added ones, then merge.
  auto by_end = [](const KeywordHit& x, const KeywordHit& y) {
    return x.second != y.second ? x.second < y.second : x.first < y.first;
  };
  std::sort(added.begin(), added.end(), by_end);
  added.erase(std::unique(added.begin(), added.end()), added.end());
  std::vector<KeywordHit> merged;
  merged.reserve(out.size() + added.size());
  std::merge(out.begin(), out.end(), added.begin(), added.end(), std::back_inserter(merged),
             by_end);
  return merged;
}

std::vector<Span> Engine::DirtyRanges(std::string_view text,
                                      const std::vector<Span>& inserted) const {
  std::vector<std::pair<size_t, size_t>> out;
  for (const auto& [ms, me] : inserted) {
    size_t from = LineStart(text, ms > kForwardWindow ? ms - kForwardWindow : 0);
    for (size_t k = 0; k <= max_span_lines && from > 0; ++k) from = LineStart(text, from - 1);
    size_t to = WindowEnd(text, std::min(text.size(), me + kBackWindow));
    if (!out.empty() && from <= out.back().second) {
      out.back().second = std::max(out.back().second, to);
    } else {
      out.emplace_back(from, to);
    }
  }
  return out;
}

}  // namespace contextd::scrub::internal
