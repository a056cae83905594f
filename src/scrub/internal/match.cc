// Matching: one rule over one window of a text (see engine.h).

#include <algorithm>
#include <cstring>
#include <iterator>

#include "scrub/internal/engine.h"

namespace contextd::scrub::internal {

void Engine::RunRule(uint32_t ri, std::string_view text, size_t from, size_t to,
                     std::string_view path, const std::vector<Span>& markers,
                     const std::vector<Hit>* covered, std::vector<Hit>* out,
                     const std::vector<size_t>* starts) const {
  const CompiledRule& r = rules[ri];
  // The groups up to the secret group (all of them when the secret is the first non-empty one).
  // A rule with more than 15 of them (jwt-base64 names 34) extracts into the heap; the others
  // keep the stack array.
  const int ngroups = (r.secret_group > 0 ? r.secret_group : r.num_groups) + 1;
  re2::StringPiece small[16];
  std::vector<re2::StringPiece> large;
  re2::StringPiece* groups = small;
  if (ngroups > 16) {
    large.resize(ngroups);
    groups = large.data();
  }
  const re2::StringPiece sp(text.data(), text.size());
  size_t pos = from;
  // Zero-match windows are the common case on clean text (url-basic-auth needs an '@').
  for (const std::string& lit : r.required_literals) {
    if (to < from + lit.size() ||
        memmem(text.data() + from, to - from, lit.data(), lit.size()) == nullptr) {
      return;
    }
  }
  // The anchored search finds the same matches: the leftmost match is the anchored match at
  // the first start that has one, and at one start both searches prefer the same match.
  size_t si = 0, se = 0;
  bool anchored = false;
  if (starts != nullptr) {
    si = std::lower_bound(starts->begin(), starts->end(), from) - starts->begin();
    se = std::lower_bound(starts->begin() + si, starts->end(), to) - starts->begin();
    anchored = to - from <= kMaxAnchoredWindow && (se - si) * kAnchoredCallBytes < to - from;
  }
  while (pos <= to) {
    if (anchored) {
      bool matched = false;
      for (; si < se && !matched; ++si) {
        const size_t c = (*starts)[si];
        matched = c >= pos && r.re->Match(sp, c, to, RE2::ANCHOR_START, groups, 1);
      }
      if (!matched) break;
    } else if (!FindUnanchored(r, sp, pos, to, groups)) {
      break;
    }
    size_t ms = groups[0].data() - text.data();
    size_t me = ms + groups[0].size();
    if (!markers.empty()) {
      auto m = std::upper_bound(markers.begin(), markers.end(), std::make_pair(ms, SIZE_MAX));
      if (m != markers.begin() && ms < std::prev(m)->second) {
        pos = std::prev(m)->second;  // the next match may start where the marker ends
        continue;
      }
    }
    pos = me > ms ? me : ms + 1;
    if (covered != nullptr && me > ms && TailCovered(*covered, ms, me)) continue;
    // A require_digit rule's secret must contain a digit, and the secret lies inside the match: a
    // match without any digit is dropped before the allowlists and the extraction, which cost
    // far more than this scan (on clean text most generic matches are identifiers without
    // digits). Every check here only drops matches, so their order does not change results.
    if (r.require_digit && !ContainsDigit(text.substr(ms, me - ms))) continue;
    // gitleaks trims newlines off both ends of the match; the rest is its Match, where it looks
    // for the secret (as the whole text: no context) and whose lines allowlists see.
    size_t ts = ms, te = me;
    while (ts < te && text[ts] == '\n') ++ts;
    while (te > ts && text[te - 1] == '\n') --te;
    const bool trimmed = ts != ms || te != me;
    if (r.has_early_allowlist && Allowed(r, Phase::kEarly, text, ts, te, {}, path)) continue;
    // Without a group, or when no group is set, the secret is the trimmed match.
    std::string_view secret = text.substr(ts, te - ts);
    int secret_index = 0;  // the group the secret is (0: the trimmed match)
    bool extract = ngroups > 1;
    if (extract && !trimmed && me - ms >= kBoundMinSpan && r.before_secret != nullptr) {
      // Long match: bound the secret with DFA scans before paying for the extraction. (The
      // bounds describe the match's parse in the text, which is the parse of the match alone:
      // the split parts have no assertions, see Compile.)
      SecretBounds b;
      if (BoundSecret(r, text, ms, me, &b)) {
        if (SurelyAllowed(r, text.substr(b.lo, b.hi - b.lo))) continue;
        if (b.exact) {
          // The secret group (set only when it is the configured or the only group).
          if (b.hi > b.lo || r.secret_group > 0) {
            secret = text.substr(b.lo, b.hi - b.lo);
            secret_index = r.secret_group > 0 ? r.secret_group : 1;
          }
          extract = false;
        }
      }
    }
    if (extract && ExtractGroups(r, text, ts, te, groups, ngroups)) {
      if (r.secret_group > 0) {
        secret = std::string_view(groups[r.secret_group].data(), groups[r.secret_group].size());
        secret_index = r.secret_group;
      } else {
        for (int g = 1; g < ngroups; ++g) {
          if (!groups[g].empty()) {
            secret = std::string_view(groups[g].data(), groups[g].size());
            secret_index = g;
            break;
          }
        }
      }
    }
    if (secret.empty() || secret.data() == nullptr) continue;
    double h = -1;  // computed lazily (ToFindings) unless the rule has a threshold
    if (r.entropy > 0) {
      h = ShannonEntropy(secret);
      if (h <= r.entropy) continue;
    }
    if (r.require_digit && !ContainsDigit(secret)) continue;
    if (Allowed(r, Phase::kLate, text, ts, te, secret, path)) continue;
    Hit f;
    f.rule = ri;
    f.start = secret.data() - text.data();
    f.end = f.start + secret.size();
    if (secret_index > 0 && static_cast<size_t>(secret_index) < r.label_groups.size() &&
        r.label_groups[secret_index]) {
      // gitleaks took a label group by default (see CompiledRule::label_groups): its entropy
      // and allowlists decided, but what is redacted is the whole (trimmed) match.
      if (h < 0) h = ShannonEntropy(secret);
      f.start = ts;
      f.end = te;
    }
    f.match_start = ts;
    f.match_end = te;
    f.entropy = h;
    out->push_back(f);
  }
}

bool Engine::FindUnanchored(const CompiledRule& r, const re2::StringPiece& sp, size_t pos,
                            size_t to, re2::StringPiece* groups) {
  // No match starts before the next occurrence of start_prefix. Searching from there gives
  // the same match, and RE2's reverse pass that finds the match start scans back only to
  // there instead of to the window start (private-key windows reach 16 KB back).
  if (!r.start_prefix.empty()) {
    // memmem, not string_view::find: that one calls memchr again at every occurrence of
    // the first byte ('-' is common).
    if (to < pos + r.start_prefix.size()) return false;
    const void* next =
        memmem(sp.data() + pos, to - pos, r.start_prefix.data(), r.start_prefix.size());
    if (next == nullptr) return false;
    pos = static_cast<const char*>(next) - sp.data();
  }
  return r.re->Match(sp, pos, to, RE2::UNANCHORED, groups, 1);
}

bool Engine::BoundSecret(const CompiledRule& r, std::string_view text, size_t ms, size_t me,
                         SecretBounds* b) {
  const re2::StringPiece sp(text.data(), text.size());
  re2::StringPiece m;
  if (!r.before_secret->Match(sp, ms, me, RE2::ANCHOR_START, &m, 1)) return false;
  b->lo = ms + m.size();
  // after_secret ends in \z: search in the text cut at `me` (it has no assertions, so the
  // cut changes nothing else).
  const re2::StringPiece head(text.data(), me);
  if (!r.after_secret->Match(head, ms, me, RE2::UNANCHORED, &m, 1)) return false;
  b->hi = m.data() - text.data();
  if (b->hi < b->lo) return false;
  // Exact when before_secret has no shorter match from ms and after_secret no later start.
  const bool one_end =
      b->lo == ms || !r.before_secret->Match(sp, ms, b->lo - 1, RE2::ANCHOR_START, nullptr, 0);
  const bool one_start =
      b->hi == me || !r.after_secret->Match(head, b->hi + 1, me, RE2::UNANCHORED, nullptr, 0);
  b->exact = one_end && one_start;
  return true;
}

bool Engine::ExtractGroups(const CompiledRule& r, std::string_view text, size_t ts, size_t te,
                           re2::StringPiece* groups, int ngroups) {
  const RE2* re = r.re.get();
  const std::string_view match = text.substr(ts, te - ts);
  if (r.re_latin1 != nullptr && IsAscii(match)) re = r.re_latin1.get();
  // The match on its own, as gitleaks' FindStringSubmatch(match) sees it: its leftmost match
  // (almost always the one at 0, which an anchored search finds without RE2's DFA passes).
  const re2::StringPiece m(match.data(), match.size());
  return re->Match(m, 0, m.size(), RE2::ANCHOR_START, groups, ngroups) ||
         re->Match(m, 0, m.size(), RE2::UNANCHORED, groups, ngroups);
}

bool Engine::TailCovered(const std::vector<Hit>& hits, size_t ms, size_t me) {
  const size_t tail = me >= ms + 3 ? me - 3 : ms;
  // Hits are sorted by start; look at those starting before `me`.
  auto it = std::lower_bound(hits.begin(), hits.end(), me,
                             [](const Hit& h, size_t v) { return h.start < v; });
  for (int k = 0; k < 4 && it != hits.begin(); ++k) {
    --it;
    if (it->end > tail && it->start < me) return true;
  }
  return false;
}

}  // namespace contextd::scrub::internal
