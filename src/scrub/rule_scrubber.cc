#include "scrub/rule_scrubber.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <unordered_map>
#include <unordered_set>

#include <re2/filtered_re2.h>
#include <re2/re2.h>
#include <re2/set.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "scrub/internal/aho_corasick.h"
#include "scrub/internal/keyword_hits.h"
#include "scrub/internal/regex_split.h"
#include "scrub/internal/sv.h"
#include "scrub/originals_archive.h"

namespace contextd::scrub {
namespace {

constexpr std::string_view kMarkerPrefix = "[REDACTED:";
constexpr size_t kMaxMarkerId = 64;
// Bytes after a keyword hit that the rule window always covers (then extended to the line end).
constexpr size_t kForwardWindow = 96;
// Bytes before a keyword hit that the window covers (gitleaks rules put up to 50 [\w.-] chars,
// and some a whole token, before the keyword).
constexpr size_t kBackWindow = 128;
// A window never extends more than this past `reach` even if the line goes on (minified JSON).
constexpr size_t kMaxLineTail = 2048;
// Rules whose regex can span many lines (dot-all, [\s\S]) get a larger window.
constexpr size_t kWideForwardWindow = 16384;
// Windows of one rule closer than this merge: a short DFA scan is cheaper than another RE2 call.
constexpr size_t kWindowGap = 256;
// A finding clipped around an existing marker keeps only pieces at least this long.
constexpr size_t kMinClippedPiece = 6;
// Matches at least this long are bounded with BoundSecret before the submatch extraction
// (shorter ones extract cheaply with BitState).
constexpr size_t kBoundMinSpan = 256;
// A window is searched from the places a match can start (CompiledRule::anchored) when it has
// fewer than one such place per this many bytes: an anchored RE2 call costs about as much as
// scanning that many bytes with the DFA.
constexpr size_t kAnchoredCallBytes = 64;
// ... and is at most this long: an anchored try that fails can run to the window's end (a rule
// like "tok.*;" on a long line), so tries in one window cost at most (window / 64) * window.
constexpr size_t kMaxAnchoredWindow = 8192;
// Leading strings of a rule (internal::LeadingLiterals): at most this many, at least this long
// (a shorter string would start an anchored search at too many places).
constexpr size_t kMaxLeadingStrings = 64;
constexpr size_t kMinLeadingLength = 3;
constexpr size_t kMaxLeadingLength = 6;
// Upper bound on redaction passes (each pass strictly shrinks the unredacted text).
constexpr int kMaxPasses = 64;

bool IsIdChar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}
bool IsPreviewChar(unsigned char c) {
  return IsIdChar(c) || c == '+' || c == '/' || c == '=';
}

std::string MarkerId(std::string_view id) {
  std::string out;
  for (unsigned char c : id.substr(0, kMaxMarkerId)) out.push_back(IsIdChar(c) ? c : '-');
  if (out.empty()) out = "rule";
  return out;
}

RE2::Options RuleOptions() {
  RE2::Options o;
  o.set_log_errors(false);
  o.set_max_mem(64 << 20);
  return o;
}

struct CompiledAllowlist {
  AllowlistCondition condition = AllowlistCondition::kOr;
  RegexTarget target = RegexTarget::kSecret;
  std::vector<std::unique_ptr<RE2>> regexes;
  // The regexes without empty-width assertions, as one alternation (null if none): a match of it
  // anywhere inside a string implies a match inside every string containing that one.
  std::unique_ptr<RE2> context_free;
  // A passing regex (resp. stopword) check alone makes the allowlist pass: condition OR, or it
  // is the only configured check.
  bool regex_decides = false;
  bool stopword_decides = false;
  std::vector<std::string> stopwords;
  std::vector<std::unique_ptr<RE2>> paths;
  bool has_commits = false;
  std::unordered_set<std::string> target_rules;
};

// A finding inside the scanner: the rule by index, no strings (converted to Finding on output).
struct Hit {
  uint32_t rule = 0;
  size_t start = 0, end = 0, match_start = 0, match_end = 0;
  double entropy = 0;
};

bool HitBefore(const Hit& a, const Hit& b) {
  return a.start != b.start ? a.start < b.start : a.end > b.end;
}

struct CompiledRule {
  std::string id;
  std::string marker_id;
  std::unique_ptr<RE2> re;
  // The same pattern compiled with Latin-1 encoding, for submatch extraction on ASCII spans
  // (see ExtractGroups); null when the pattern is not pure ASCII or does not compile alike.
  std::unique_ptr<RE2> re_latin1;
  std::unique_ptr<RE2> path;
  // The pattern before the secret group (leftmost-longest) and "(?:after it)\z", when the
  // secret group is an element of the pattern's top-level concatenation and the part after it
  // has no assertions; they bound where the secret can lie in a match (BoundSecret).
  std::unique_ptr<RE2> before_secret;
  std::unique_ptr<RE2> after_secret;
  // Bytes every match starts with (empty if unknown); RunRule moves the search start to their
  // next occurrence. Set only for patterns without assertions, whose matches do not depend on the
  // text around them.
  std::string start_prefix;
  // Strings every match contains, made only of ASCII bytes that are not letters (so no case
  // folding can produce them otherwise): from RE2's prefilter (FilteredRE2). A window without
  // one of them has no match, and RunRule skips it without running the regex.
  std::vector<std::string> required_literals;
  int secret_group = 0;
  int num_groups = 0;
  double entropy = 0;
  // Every match starts with one of the rule's leading strings (internal::LeadingLiterals),
  // which are keyword-pass patterns: on ASCII text, the first pass knows every place a match
  // can start, and RunRule tries anchored matches there instead of scanning the whole window.
  bool anchored = false;
  bool generic = false;       // id starts with "generic": the secret must contain a digit
  bool low_priority = false;  // generic, or tagged "generic": runs after the specific rules
  bool has_early_allowlist = false;  // some allowlist (rule or global) needs no secret
  size_t forward_window = kForwardWindow;
  size_t back_window = kBackWindow;
  bool wide = false;  // the regex can span many lines
  std::vector<std::string> tags;
  std::vector<CompiledAllowlist> allowlists;
};

size_t LineStart(std::string_view t, size_t pos) {
  if (pos == 0) return 0;
  const void* nl = memrchr(t.data(), '\n', pos);
  return nl == nullptr ? 0 : static_cast<const char*>(nl) - t.data() + 1;
}
size_t LineEnd(std::string_view t, size_t pos) {
  if (pos >= t.size()) return t.size();
  const void* nl = std::memchr(t.data() + pos, '\n', t.size() - pos);
  return nl == nullptr ? t.size() : static_cast<const char*>(nl) - t.data();
}

// End of a scan window: just past the newline that ends the line containing `pos`, so that
// patterns ending in (?:\s|$) can see it.
size_t WindowEnd(std::string_view t, size_t pos) {
  size_t e = LineEnd(t, pos);
  return e < t.size() ? e + 1 : e;
}

bool IsAscii(std::string_view s) {
  // Eight bytes at a time (the byte loop was not vectorized, and every first pass runs this
  // over the whole text).
  uint64_t any = 0;
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    any |= w;
  }
  for (; i < s.size(); ++i) any |= static_cast<unsigned char>(s[i]);
  return (any & 0x8080808080808080ull) == 0;
}

// The prefilter atoms of `pattern` that every match contains (an atom is required when the
// prefilter fails as soon as only that atom is missing: the prefilter is a monotone AND/OR of
// atoms), keeping those made of ASCII non-letters only: the atoms are lower-cased and meant for
// case-insensitive search, and only for such bytes is the raw text as good as its lower case.
std::vector<std::string> RequiredLiterals(const std::string& pattern) {
  std::vector<std::string> out;
  re2::FilteredRE2 filter(1);
  int id = 0;
  if (filter.Add(pattern, RuleOptions(), &id) != RE2::NoError) return out;
  std::vector<std::string> atoms;
  filter.Compile(&atoms);
  // One AllPotentials over all atoms per atom: quadratic, and a shortcut only.
  if (atoms.size() > 64) return out;
  std::vector<int> all, potential;
  for (int i = 0; i < static_cast<int>(atoms.size()); ++i) all.push_back(i);
  filter.AllPotentials(all, &potential);
  if (potential.empty()) return out;
  for (int a = 0; a < static_cast<int>(atoms.size()); ++a) {
    const std::string& atom = atoms[a];
    const bool caseless = !atom.empty() && std::all_of(atom.begin(), atom.end(), [](char c) {
      const unsigned char u = static_cast<unsigned char>(c);
      return u < 0x80 && !((u | 0x20) >= 'a' && (u | 0x20) <= 'z');
    });
    if (!caseless) continue;
    std::vector<int> rest;
    for (int i : all) {
      if (i != a) rest.push_back(i);
    }
    filter.AllPotentials(rest, &potential);
    if (potential.empty()) out.push_back(atom);
  }
  return out;
}

// RE2::PartialMatch(s, re) without the argument plumbing of DoMatch (allowlists run once per
// candidate finding).
bool ContainsMatch(const RE2& re, std::string_view s) {
  return re.Match(re2::StringPiece(s.data(), s.size()), 0, s.size(), RE2::UNANCHORED, nullptr, 0);
}

bool ContainsDigit(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

double ShannonEntropy(std::string_view data) {
  if (data.empty()) return 0;
  size_t ascii[128] = {0};
  std::unordered_map<std::string_view, size_t> wide;
  for (size_t i = 0; i < data.size();) {
    unsigned char c = static_cast<unsigned char>(data[i]);
    if (c < 0x80) {
      ++ascii[c];
      ++i;
      continue;
    }
    size_t len = 1;
    while (i + len < data.size() && len < 4 &&
           (static_cast<unsigned char>(data[i + len]) & 0xC0) == 0x80) {
      ++len;
    }
    ++wide[data.substr(i, len)];
    i += len;
  }
  const double inv = 1.0 / static_cast<double>(data.size());
  double h = 0;
  // Most characters of a secret occur once or twice: the term of each small count is computed
  // once (the same expression, so the sum is bit-for-bit the same) instead of one log2 per
  // distinct character.
  double small_terms[32];
  bool have_term[32] = {false};
  auto add = [&](size_t count) {
    if (count == 0) return;
    if (count < 32) {
      if (!have_term[count]) {
        const double f = static_cast<double>(count) * inv;
        small_terms[count] = f * std::log2(f);
        have_term[count] = true;
      }
      h -= small_terms[count];
      return;
    }
    double f = static_cast<double>(count) * inv;
    h -= f * std::log2(f);
  };
  for (size_t c : ascii) add(c);
  for (const auto& [k, v] : wide) add(v);
  return h;
}

bool ParseMarker(std::string_view text, size_t pos, size_t* len) {
  if (text.compare(pos, kMarkerPrefix.size(), kMarkerPrefix) != 0) return false;
  size_t i = pos + kMarkerPrefix.size();
  size_t id_len = 0;
  while (i < text.size() && IsIdChar(text[i]) && id_len < kMaxMarkerId) {
    ++i;
    ++id_len;
  }
  if (id_len == 0 || i >= text.size() || text[i] != ':') return false;
  ++i;
  size_t p = 0;
  while (i < text.size() && p < 4 && IsPreviewChar(text[i])) {
    ++i;
    ++p;
  }
  if (i >= text.size() || text[i] != ']') return false;
  *len = i + 1 - pos;
  return true;
}

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

struct RuleScrubber::Impl {
  std::vector<CompiledRule> rules;
  std::vector<CompiledAllowlist> global;
  std::vector<CompileProblem> problems;
  // Aho-Corasick pattern i: keyword_rules[i] lists the rules it triggers (opens windows for),
  // anchor_rules[i] the anchored rules it is a leading string of (a place a match can start).
  std::unique_ptr<internal::AhoCorasick> ac;
  std::vector<std::vector<uint32_t>> keyword_rules;
  std::vector<std::vector<uint32_t>> anchor_rules;
  bool have_anchored = false;
  // Per keyword: it triggers at least one rule that spans lines (those see every hit in every
  // pass, see ScanOnce).
  std::vector<bool> keyword_wide;
  std::vector<uint32_t> keyword_len;
  size_t max_keyword_len = 0;  // over the patterns that trigger rules
  size_t max_pattern_len = 0;  // over all patterns
  // Rules without keywords, screened together.
  std::vector<uint32_t> always_rules;
  std::unique_ptr<RE2::Set> always_set;

  bool AllowlistMatches(const CompiledAllowlist& a, std::string_view secret, std::string_view match,
                        std::string_view line, std::string_view path) const {
    // Each configured check yields true/false; OR needs one true, AND needs all true.
    int configured = 0, passed = 0;
    if (a.has_commits) ++configured;  // no commit for plain text: never passes
    if (!a.paths.empty()) {
      ++configured;
      if (!path.empty()) {
        for (const auto& re : a.paths) {
          if (RE2::PartialMatch(path, *re)) {
            ++passed;
            break;
          }
        }
      }
    }
    if (!a.regexes.empty()) {
      ++configured;
      std::string_view target = a.target == RegexTarget::kMatch  ? match
                                : a.target == RegexTarget::kLine ? line
                                                                 : secret;
      for (const auto& re : a.regexes) {
        if (ContainsMatch(*re, target)) {
          ++passed;
          break;
        }
      }
    }
    if (!a.stopwords.empty()) {
      ++configured;
      std::string lower(secret);
      for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? c + 32 : c;
      for (const auto& w : a.stopwords) {
        if (lower.find(w) != std::string::npos) {
          ++passed;
          break;
        }
      }
    }
    if (configured == 0) return false;
    return a.condition == AllowlistCondition::kOr ? passed > 0 : passed == configured;
  }

  // Allowlist checks run in two phases: kEarly (before the secret group is extracted) evaluates
  // allowlists that never look at the secret (regexTarget match/line, no stopwords); kLate the
  // rest. Same result as one pass, but most non-secrets are dropped before the costly extraction.
  enum class Phase { kEarly, kLate };
  static bool NeedsSecret(const CompiledAllowlist& a) {
    return !a.stopwords.empty() || (!a.regexes.empty() && a.target == RegexTarget::kSecret);
  }
  bool Allowed(const CompiledRule& r, Phase phase, std::string_view text, size_t ms, size_t me,
               std::string_view secret, std::string_view path) const {
    std::string_view match = text.substr(ms, me - ms);
    std::string_view line;
    bool have_line = false;
    auto check = [&](const CompiledAllowlist& a) {
      if (NeedsSecret(a) != (phase == Phase::kLate)) return false;
      if (!have_line && a.target == RegexTarget::kLine && !a.regexes.empty()) {
        size_t ls = LineStart(text, ms);
        size_t le = LineEnd(text, me > ms ? me - 1 : me);
        line = text.substr(ls, le - ls);
        have_line = true;
      }
      return AllowlistMatches(a, secret, match, line, path);
    };
    for (const auto& a : global) {
      if (!a.target_rules.empty() && a.target_rules.count(r.id) == 0) continue;
      if (check(a)) return true;
    }
    for (const auto& a : r.allowlists) {
      if (check(a)) return true;
    }
    return false;
  }

  // Runs rule `ri` over [from, to) of `text`, appending findings. `markers` (sorted): the
  // redaction markers in `text`; a match that starts inside one reads the marker's own letters
  // ("[REDACTED:generic-password:ab]" has a keyword and a ':') and is skipped, as keyword hits
  // inside markers are (otherwise what a scan finds would depend on how far windows reach, and a
  // second Scrub could find more than the first). With `covered` (sorted hits of
  // specific rules), a match whose tail is already inside one of them is skipped before the
  // (comparatively costly) submatch extraction. `starts` (optional, sorted): every place in
  // `text` where a match of this (anchored) rule can start, for ASCII `text`; when the window
  // has few of them, the search tries anchored matches at just those places.
  void RunRule(uint32_t ri, std::string_view text, size_t from, size_t to, std::string_view path,
               const std::vector<std::pair<size_t, size_t>>& markers,
               const std::vector<Hit>* covered, std::vector<Hit>* out,
               const std::vector<size_t>* starts = nullptr) const {
    const CompiledRule& r = rules[ri];
    re2::StringPiece groups[16];
    const int ngroups = std::min(r.num_groups + 1, 16);
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
      // A generic rule's secret must contain a digit, and the secret lies inside the match: a
      // match without any digit is dropped before the allowlists and the extraction, which cost
      // far more than this scan (on clean text most generic matches are identifiers without
      // digits). Every check here only drops matches, so their order does not change results.
      if (r.generic && !ContainsDigit(text.substr(ms, me - ms))) continue;
      if (r.has_early_allowlist && Allowed(r, Phase::kEarly, text, ms, me, {}, path)) continue;
      std::string_view secret(groups[0].data(), groups[0].size());
      bool extract = ngroups > 1;
      if (extract && me - ms >= kBoundMinSpan && r.before_secret != nullptr) {
        // Long match: bound the secret with DFA scans before paying for the extraction.
        SecretBounds b;
        if (BoundSecret(r, text, ms, me, &b)) {
          if (SurelyAllowed(r, text.substr(b.lo, b.hi - b.lo))) continue;
          if (b.exact) {
            // The secret group (set only when it is the configured or the only group).
            if (b.hi > b.lo || r.secret_group > 0) secret = text.substr(b.lo, b.hi - b.lo);
            extract = false;
          }
        }
      }
      if (extract && !ExtractGroups(r, sp, ms, me, groups, ngroups)) continue;
      if (!extract) {
        // secret is set above (or is the whole match when there are no groups).
      } else if (r.secret_group > 0) {
        if (r.secret_group < ngroups) {
          secret = std::string_view(groups[r.secret_group].data(), groups[r.secret_group].size());
        }
      } else {
        for (int g = 1; g < ngroups; ++g) {
          if (!groups[g].empty()) {
            secret = std::string_view(groups[g].data(), groups[g].size());
            break;
          }
        }
      }
      if (secret.empty() || secret.data() == nullptr) continue;
      double h = -1;  // computed lazily (ToFindings) unless the rule has a threshold
      if (r.entropy > 0) {
        h = ShannonEntropy(secret);
        if (h <= r.entropy) continue;
      }
      if (r.generic && !ContainsDigit(secret)) continue;
      if (Allowed(r, Phase::kLate, text, ms, me, secret, path)) continue;
      Hit f;
      f.rule = ri;
      f.start = secret.data() - text.data();
      f.end = f.start + secret.size();
      f.match_start = ms;
      f.match_end = me;
      f.entropy = h;
      out->push_back(f);
    }
  }

  // The leftmost match of `r` in [pos, to) of `sp`, into groups[0] (the span only: the DFA
  // finds it; RunRule extracts groups on just that span).
  static bool FindUnanchored(const CompiledRule& r, const re2::StringPiece& sp, size_t pos,
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

  // Bounds on the secret group of a match [ms, me), from DFA scans only. Every parse of the match
  // is before_secret, secret, after_secret back to back, so the secret starts at or before `lo`,
  // the end of the longest before_secret match, and ends at or after `hi`, the leftmost start of
  // an after_secret match that ends at `me`: it contains [lo, hi). `exact`: those are the only
  // places where before_secret can end and after_secret can start, so the secret is [lo, hi).
  struct SecretBounds {
    size_t lo = 0, hi = 0;
    bool exact = false;
  };
  static bool BoundSecret(const CompiledRule& r, std::string_view text, size_t ms, size_t me,
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

  // True when some allowlist of `r` (one that needs the secret) is certain to pass on any secret
  // that contains `inner`: then a match can be dropped without extracting its groups (an NFA
  // pass over the whole match when it is long). Typical case: a later pass, where a private-key
  // match spans an earlier marker ("[REDACTED:" is allowlisted).
  bool SurelyAllowed(const CompiledRule& r, std::string_view inner) const {
    std::string lower;
    auto sure = [&](const CompiledAllowlist& a) {
      if (a.regex_decides && a.target == RegexTarget::kSecret && a.context_free != nullptr &&
          ContainsMatch(*a.context_free, inner)) {
        return true;
      }
      if (a.stopword_decides) {
        if (lower.empty()) {
          lower.assign(inner);
          for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? c + 32 : c;
        }
        for (const auto& w : a.stopwords) {
          if (lower.find(w) != std::string::npos) return true;
        }
      }
      return false;
    };
    for (const auto& a : global) {
      if (!a.target_rules.empty() && a.target_rules.count(r.id) == 0) continue;
      if (sure(a)) return true;
    }
    for (const auto& a : r.allowlists) {
      if (sure(a)) return true;
    }
    return false;
  }

  // Submatch extraction on the match span [ms, me). On an ASCII-only span the Latin-1 twin of
  // the regex gives the same groups (every rune is one byte, and both encodings match the same
  // ASCII bytes with the same parse priorities; \b, ^ and $ look at bytes of the context in
  // both) while its program is smaller: no multi-byte UTF-8 branches, so RE2 can use BitState
  // instead of the NFA. Measured 2-3x cheaper on the generic rules' matches.
  static bool ExtractGroups(const CompiledRule& r, const re2::StringPiece& sp, size_t ms, size_t me,
                            re2::StringPiece* groups, int ngroups) {
    const RE2* re = r.re.get();
    if (r.re_latin1 != nullptr && IsAscii(std::string_view(sp.data() + ms, me - ms))) {
      re = r.re_latin1.get();
    }
    return re->Match(sp, ms, me, RE2::ANCHOR_BOTH, groups, ngroups);
  }

  static bool TailCovered(const std::vector<Hit>& hits, size_t ms, size_t me) {
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

  struct Window {
    size_t from = 0, to = 0;
    bool open = false;
  };

  // One scan pass. `markers` receives the spans of existing redaction markers.
  // `only` (optional, sorted disjoint ranges): consider keyword hits (and keyword-less rules) only
  // there; rules that span lines still see every hit.
  using KeywordHit = internal::KeywordHit;

  // `wide_hits` (optional): without `only`, receives the occurrences of keywords that trigger a
  // wide rule; with `only`, holds them for `text` (mapped from the previous pass) and
  // replaces the scan of the whole text: the keyword pass then only scans around `only`.
  // `lead_hits` (optional), likewise for the leading strings of anchored rules: received from a
  // scan of the whole text, or given for `text` (every occurrence) in a later pass.
  std::vector<Hit> ScanOnce(std::string_view text, std::string_view path,
                            std::vector<std::pair<size_t, size_t>>* markers,
                            const std::vector<std::pair<size_t, size_t>>* only,
                            std::vector<KeywordHit>* wide_hits = nullptr,
                            std::vector<KeywordHit>* lead_hits = nullptr) const {
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
    for (size_t pos = text.find(kMarkerPrefix); pos != std::string_view::npos;
         pos = text.find(kMarkerPrefix, pos + 1)) {
      size_t len = 0;
      if (ParseMarker(text, pos, &len)) markers->emplace_back(pos, pos + len);
    }
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
        if (r.path != nullptr && path.empty()) continue;  // path rule, no path: not applicable
        if (outside && !r.wide) continue;
        if ((which == Which::kWide && !r.wide) || (which == Which::kNarrow && r.wide)) continue;
        Window& w = win[ri];
        const size_t reach = std::min(text.size(), end + r.forward_window);
        // The window runs from a little before the keyword (at most back_window bytes, not
        // before its line unless the rule spans lines) to the end of the line `reach` is on
        // (at most kMaxLineTail bytes further).
        const size_t to = std::min(line_ends[r.wide ? 1 : 0].WindowEnd(text, reach),
                                   reach + kMaxLineTail);
        if (w.open && kw_start < w.to) {  // inside the open window: extend it if needed
          if (to > w.to) w.to = to;
          continue;
        }
        size_t from = kw_start > r.back_window ? kw_start - r.back_window : 0;
        if (!r.wide) from = std::max(from, LineStart(text, kw_start));
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
        have_anchored && lead_hits != nullptr && (whole_scan || !lead_hits->empty()) &&
        IsAscii(text);
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
          auto it =
              std::upper_bound(only->begin(), only->end(), std::make_pair(kw_start, SIZE_MAX));
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
        if (rules[ri].path != nullptr && path.empty()) continue;
        if (only != nullptr && !rules[ri].wide) {
          for (const auto& [from, to] : *only) {
            RunRule(ri, text, from, to, path, *markers, nullptr, &found);
          }
        } else {
          RunRule(ri, text, 0, text.size(), path, *markers, nullptr, &found);
        }
      }
    }
    if (!path.empty()) {
      for (uint32_t ri = 0; ri < rules.size(); ++ri) {
        const CompiledRule& r = rules[ri];
        if (r.path != nullptr && !RE2::PartialMatch(path, *r.path)) {
          found.erase(std::remove_if(found.begin(), found.end(),
                                     [&](const Hit& f) { return f.rule == ri; }),
                      found.end());
        }
      }
    }
    std::sort(found.begin(), found.end(), HitBefore);
    if (!markers->empty() && !found.empty()) found = ClipAroundMarkers(std::move(found), *markers);
    return found;
  }

  // Findings must never touch an existing marker: cut marker spans out of each finding and keep
  // the remaining pieces that are long enough to be a secret.
  static std::vector<Hit> ClipAroundMarkers(std::vector<Hit> in,
                                            const std::vector<std::pair<size_t, size_t>>& m) {
    std::vector<Hit> out;
    for (Hit& f : in) {
      auto it = std::upper_bound(m.begin(), m.end(), std::make_pair(f.start, SIZE_MAX));
      if (it != m.begin()) --it;
      size_t cur = f.start;
      bool clipped = false;
      for (; it != m.end() && it->first < f.end; ++it) {
        if (it->second <= cur) continue;
        clipped = true;
        if (it->first > cur && it->first - cur >= kMinClippedPiece) {
          Hit p = f;
          p.start = cur;
          p.end = it->first;
          out.push_back(p);
        }
        cur = std::max(cur, it->second);
      }
      if (!clipped) {
        out.push_back(f);
      } else if (cur < f.end && f.end - cur >= kMinClippedPiece) {
        f.start = cur;
        out.push_back(f);
      }
    }
    std::sort(out.begin(), out.end(), HitBefore);
    return out;
  }

  // Scan + redact until a fixpoint; `first` receives the first pass's hits.
  std::string ScrubText(std::string_view text, std::string_view path,
                        std::vector<Hit>* first) const {
    std::vector<std::pair<size_t, size_t>> markers;
    std::vector<KeywordHit> wide_hits, lead_hits;
    *first = ScanOnce(text, path, &markers, nullptr, &wide_hits, &lead_hits);
    if (first->empty()) return std::string(text);
    std::vector<std::pair<size_t, size_t>> inserted, replaced;
    std::string out = Redact(text, *first, &inserted, &replaced);
    // Redaction changes the context of nearby text; repeat until nothing more is found so that
    // the output is a fixpoint (idempotence). Text away from the new markers is unchanged and was
    // already scanned, so later passes only look at keyword hits near a new marker.
    for (int pass = 1; pass < kMaxPasses; ++pass) {
      std::vector<std::pair<size_t, size_t>> dirty = DirtyRanges(out, inserted);
      wide_hits = internal::MapKeywordHits(wide_hits, keyword_len, max_keyword_len, replaced,
                                           inserted);
      if (!lead_hits.empty()) lead_hits = MapLeadHits(out, lead_hits, replaced, inserted);
      markers.clear();
      std::vector<Hit> more = ScanOnce(out, path, &markers, &dirty, &wide_hits, &lead_hits);
      if (more.empty()) break;
      inserted.clear();
      replaced.clear();
      out = Redact(out, more, &inserted, &replaced);
    }
    return out;
  }

  // Occurrences of leading strings in `text` (the previous pass's text after the redaction
  // `replaced` -> `inserted`), from those of the previous pass: the ones that overlap no
  // replaced span move with the text, and scans around each inserted marker find the ones that
  // overlap it. In order of end, as AhoCorasick reports them.
  std::vector<KeywordHit> MapLeadHits(
      std::string_view text, const std::vector<KeywordHit>& hits,
      const std::vector<std::pair<size_t, size_t>>& replaced,
      const std::vector<std::pair<size_t, size_t>>& inserted) const {
    std::vector<KeywordHit> out =
        internal::MapKeywordHits(hits, keyword_len, max_pattern_len, replaced, inserted);
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

  // Sorted, merged ranges around newly inserted markers in which a later pass must look for
  // keyword hits: from the line before (a keyword's window reaches kForwardWindow bytes and then
  // to the end of a line) to kBackWindow bytes after (a match may start that far before its
  // keyword).
  static std::vector<std::pair<size_t, size_t>> DirtyRanges(
      std::string_view text, const std::vector<std::pair<size_t, size_t>>& inserted) {
    std::vector<std::pair<size_t, size_t>> out;
    for (const auto& [ms, me] : inserted) {
      size_t from = LineStart(text, ms > kForwardWindow ? ms - kForwardWindow : 0);
      if (from > 0) from = LineStart(text, from - 1);
      size_t to = WindowEnd(text, std::min(text.size(), me + kBackWindow));
      if (!out.empty() && from <= out.back().second) {
        out.back().second = std::max(out.back().second, to);
      } else {
        out.emplace_back(from, to);
      }
    }
    return out;
  }

  std::vector<Finding> ToFindings(std::string_view text, const std::vector<Hit>& hits) const {
    std::vector<Finding> out;
    out.reserve(hits.size());
    size_t line = 1, at = 0;
    for (const Hit& h : hits) {
      line += std::count(text.begin() + at, text.begin() + h.start, '\n');
      at = h.start;
      Finding f;
      f.rule_id = rules[h.rule].id;
      f.start = h.start;
      f.end = h.end;
      f.match_start = h.match_start;
      f.match_end = h.match_end;
      f.line = line;
      f.entropy = h.entropy >= 0 ? h.entropy : ShannonEntropy(text.substr(h.start, h.end - h.start));
      f.tags = rules[h.rule].tags;
      out.push_back(std::move(f));
    }
    return out;
  }

  // Replaces the (sorted) findings in `text` by markers, merging overlaps.
  // `inserted` (optional) receives the [start, end) of every marker written, in `out`.
  // `replaced` (optional) receives the [start, end) in `text` of every span replaced, in order.
  std::string Redact(std::string_view text, const std::vector<Hit>& found,
                     std::vector<std::pair<size_t, size_t>>* inserted = nullptr,
                     std::vector<std::pair<size_t, size_t>>* replaced = nullptr) const {
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    size_t i = 0;
    while (i < found.size()) {
      size_t s = found[i].start, e = found[i].end;
      const std::string& id = rules[found[i].rule].marker_id;
      size_t j = i + 1;
      while (j < found.size() && found[j].start < e) {
        e = std::max(e, found[j].end);
        ++j;
      }
      out.append(text.substr(pos, s - pos));
      std::string_view secret = text.substr(s, e - s);
      size_t keep = std::min<size_t>(4, secret.size() / 4);
      size_t p = 0;
      while (p < keep && IsPreviewChar(secret[p])) ++p;
      const size_t marker_start = out.size();
      absl::StrAppend(&out, internal::Av(kMarkerPrefix), id, ":",
                      internal::Av(secret.substr(0, p)), "]");
      if (inserted != nullptr) inserted->emplace_back(marker_start, out.size());
      if (replaced != nullptr) replaced->emplace_back(s, e);
      pos = e;
      i = j;
    }
    out.append(text.substr(pos));
    return out;
  }
};

RuleScrubber::RuleScrubber(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RuleScrubber::~RuleScrubber() = default;

absl::StatusOr<std::unique_ptr<RuleScrubber>> RuleScrubber::Create(const RulesConfig& config) {
  auto impl = std::make_unique<Impl>();
  auto compile_allowlist = [&](const AllowlistSpec& spec, const std::string& owner,
                               CompiledAllowlist* a) {
    a->condition = spec.condition;
    a->target = spec.regex_target;
    a->stopwords = spec.stopwords;
    a->has_commits = !spec.commits.empty();
    a->target_rules.insert(spec.target_rules.begin(), spec.target_rules.end());
    std::string combined, context_free;
    for (const auto& src : spec.regexes) {
      auto re = std::make_unique<RE2>(src, RuleOptions());
      if (!re->ok()) {
        impl->problems.push_back({owner, absl::StrCat("allowlist regex '", src,
                                                      "' skipped: ", re->error())});
        continue;
      }
      absl::StrAppend(&combined, combined.empty() ? "" : "|", "(?:", src, ")");
      if (!internal::MayHaveAssertions(src)) {
        absl::StrAppend(&context_free, context_free.empty() ? "" : "|", "(?:", src, ")");
      }
      a->regexes.push_back(std::move(re));
    }
    if (!context_free.empty()) {
      auto re = std::make_unique<RE2>(context_free, RuleOptions());
      if (re->ok()) a->context_free = std::move(re);
    }
    // One alternation instead of N calls: allowlists run once per finding, so this matters.
    if (a->regexes.size() > 1) {
      auto re = std::make_unique<RE2>(combined, RuleOptions());
      if (re->ok()) {
        a->regexes.clear();
        a->regexes.push_back(std::move(re));
      }
    }
    for (const auto& src : spec.paths) {
      auto re = std::make_unique<RE2>(src, RuleOptions());
      if (!re->ok()) {
        impl->problems.push_back({owner, absl::StrCat("allowlist path '", src,
                                                      "' skipped: ", re->error())});
        continue;
      }
      a->paths.push_back(std::move(re));
    }
    // Same count of configured checks as AllowlistMatches.
    const int configured = (a->has_commits ? 1 : 0) + (a->paths.empty() ? 0 : 1) +
                           (a->regexes.empty() ? 0 : 1) + (a->stopwords.empty() ? 0 : 1);
    const bool alone_decides = a->condition == AllowlistCondition::kOr || configured == 1;
    a->regex_decides = alone_decides && !a->regexes.empty();
    a->stopword_decides = alone_decides && !a->stopwords.empty();
  };
  for (const auto& spec : config.allowlists) {
    CompiledAllowlist a;
    compile_allowlist(spec, "(global allowlist)", &a);
    impl->global.push_back(std::move(a));
  }
  std::unordered_set<std::string> ids;
  std::unordered_map<std::string, uint32_t> keyword_index;
  std::vector<std::string> keywords;
  for (const RuleSpec& spec : config.rules) {
    if (!ids.insert(spec.id).second) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate rule id '", spec.id, "'"));
    }
    if (spec.regex.empty()) {
      impl->problems.push_back(
          {spec.id, "path-only rule (matches file names, not text): not applicable"});
      continue;
    }
    CompiledRule r;
    r.id = spec.id;
    r.marker_id = MarkerId(spec.id);
    r.re = std::make_unique<RE2>(spec.regex, RuleOptions());
    if (!r.re->ok()) {
      impl->problems.push_back({spec.id, absl::StrCat("regex does not compile with RE2: ",
                                                      r.re->error())});
      continue;
    }
    if (!spec.path.empty()) {
      r.path = std::make_unique<RE2>(spec.path, RuleOptions());
      if (!r.path->ok()) {
        impl->problems.push_back({spec.id, absl::StrCat("path regex does not compile with RE2: ",
                                                        r.path->error())});
        continue;
      }
    }
    r.num_groups = r.re->NumberOfCapturingGroups();
    if (r.num_groups > 0 && IsAscii(spec.regex)) {
      RE2::Options latin1 = RuleOptions();
      latin1.set_encoding(RE2::Options::EncodingLatin1);
      auto re = std::make_unique<RE2>(spec.regex, latin1);
      if (re->ok() && re->NumberOfCapturingGroups() == r.num_groups) r.re_latin1 = std::move(re);
    }
    if (spec.secret_group > r.num_groups) {
      impl->problems.push_back(
          {spec.id, absl::StrCat("secretGroup ", spec.secret_group, " but the regex has only ",
                                 r.num_groups, " groups")});
      continue;
    }
    if (r.num_groups >= 16 && spec.secret_group >= 16) {
      impl->problems.push_back({spec.id, "secretGroup beyond 15 is not supported"});
      continue;
    }
    r.secret_group = spec.secret_group;
    r.required_literals = RequiredLiterals(spec.regex);
    if (!internal::MayHaveAssertions(spec.regex)) {
      // Every match is an anchored match of the pattern, so it lies between PossibleMatchRange's
      // min and max and starts with their common prefix.
      std::string min, max;
      if (r.re->PossibleMatchRange(&min, &max, 64)) {
        size_t n = 0;
        while (n < min.size() && n < max.size() && min[n] == max[n]) ++n;
        r.start_prefix = min.substr(0, n);
      }
    }
    // The group whose text is the secret: the configured one, or the only one. (With several
    // groups and no secretGroup it is the first non-empty one: no bounds for that.)
    const int secret_index = spec.secret_group > 0 ? spec.secret_group
                             : r.num_groups == 1   ? 1
                                                   : 0;
    internal::GroupSplit split;
    if (secret_index > 0 && internal::SplitAtGroup(spec.regex, secret_index, &split) &&
        !internal::MayHaveAssertions(split.after)) {
      RE2::Options longest = RuleOptions();
      longest.set_longest_match(true);
      auto before = std::make_unique<RE2>(split.before, longest);
      auto after = std::make_unique<RE2>(absl::StrCat("(?:", split.after, ")\\z"), RuleOptions());
      // The group counts confirm that the split is where RE2 sees the group.
      if (before->ok() && after->ok() && before->NumberOfCapturingGroups() == secret_index - 1 &&
          after->NumberOfCapturingGroups() == r.num_groups - secret_index) {
        r.before_secret = std::move(before);
        r.after_secret = std::move(after);
      }
    }
    r.entropy = spec.entropy;
    r.generic = absl::StartsWith(spec.id, "generic");
    r.low_priority =
        r.generic || std::find(spec.tags.begin(), spec.tags.end(), "generic") != spec.tags.end();
    if (absl::StrContains(spec.regex, "(?s") || absl::StrContains(spec.regex, "\\s\\S") ||
        absl::StrContains(spec.regex, "\\S\\s")) {
      r.forward_window = kWideForwardWindow;
      r.back_window = kWideForwardWindow;
      r.wide = true;
    }
    r.tags = spec.tags;
    for (const auto& a : spec.allowlists) {
      CompiledAllowlist ca;
      compile_allowlist(a, spec.id, &ca);
      r.allowlists.push_back(std::move(ca));
    }
    for (const auto& a : r.allowlists) r.has_early_allowlist |= !Impl::NeedsSecret(a);
    for (const auto& a : impl->global) r.has_early_allowlist |= !Impl::NeedsSecret(a);
    const uint32_t ri = static_cast<uint32_t>(impl->rules.size());
    // Adds rule ri to `lists` (keyword_rules or anchor_rules) of pattern k, adding the pattern.
    auto add_pattern = [&](const std::string& k, std::vector<std::vector<uint32_t>>& lists) {
      auto [it, inserted] = keyword_index.emplace(k, static_cast<uint32_t>(keywords.size()));
      if (inserted) {
        keywords.push_back(k);
        impl->keyword_rules.emplace_back();
        impl->anchor_rules.emplace_back();
      }
      auto& list = lists[it->second];
      if (list.empty() || list.back() != ri) list.push_back(ri);
    };
    bool any_keyword = false;
    for (const std::string& k : spec.keywords) {
      if (k.empty()) continue;
      any_keyword = true;
      add_pattern(k, impl->keyword_rules);
    }
    if (!any_keyword) impl->always_rules.push_back(ri);
    // Leading strings, for a rule the keyword pass runs (windows). Not for rules searched across
    // lines: their windows are few and long, and start_prefix already skips to a possible start.
    std::vector<std::string> leads;
    if (any_keyword && !r.wide &&
        internal::LeadingLiterals(spec.regex, kMaxLeadingStrings, kMinLeadingLength, &leads)) {
      r.anchored = true;
      impl->have_anchored = true;
      // A prefix of a leading string is one too; short ones keep the automaton small.
      for (const std::string& lead : leads) {
        add_pattern(lead.substr(0, kMaxLeadingLength), impl->anchor_rules);
      }
    }
    impl->rules.push_back(std::move(r));
  }
  for (const auto& rule_list : impl->keyword_rules) {
    bool wide = false;
    for (uint32_t ri : rule_list) wide |= impl->rules[ri].wide;
    impl->keyword_wide.push_back(wide);
  }
  for (size_t i = 0; i < keywords.size(); ++i) {
    impl->keyword_len.push_back(static_cast<uint32_t>(keywords[i].size()));
    impl->max_pattern_len = std::max(impl->max_pattern_len, keywords[i].size());
    if (!impl->keyword_rules[i].empty()) {
      impl->max_keyword_len = std::max(impl->max_keyword_len, keywords[i].size());
    }
  }
  impl->ac = std::make_unique<internal::AhoCorasick>(keywords);
  if (impl->always_rules.size() > 1) {
    auto set = std::make_unique<RE2::Set>(RuleOptions(), RE2::UNANCHORED);
    bool ok = true;
    for (uint32_t ri : impl->always_rules) {
      std::string err;
      if (set->Add(impl->rules[ri].re->pattern(), &err) < 0) ok = false;
    }
    if (ok && set->Compile()) impl->always_set = std::move(set);
  }
  return std::unique_ptr<RuleScrubber>(new RuleScrubber(std::move(impl)));
}

std::vector<Finding> RuleScrubber::Scan(std::string_view text, std::string_view path) const {
  std::vector<std::pair<size_t, size_t>> markers;
  std::vector<Hit> hits = impl_->ScanOnce(text, path, &markers, nullptr);
  return impl_->ToFindings(text, hits);
}

RuleScrubber::Result RuleScrubber::ScrubWithFindings(std::string_view text,
                                                     std::string_view path) const {
  Result r;
  std::vector<Hit> first;
  r.text = impl_->ScrubText(text, path, &first);
  r.findings = impl_->ToFindings(text, first);
  return r;
}

std::string RuleScrubber::Scrub(std::string_view text) const {
  std::vector<Hit> first;
  return impl_->ScrubText(text, {}, &first);
}

const std::vector<CompileProblem>& RuleScrubber::problems() const { return impl_->problems; }
size_t RuleScrubber::num_rules() const { return impl_->rules.size(); }
std::vector<std::string> RuleScrubber::rule_ids() const {
  std::vector<std::string> ids;
  for (const auto& r : impl_->rules) ids.push_back(r.id);
  return ids;
}

absl::StatusOr<RulesConfig> ResolveRules(const ScrubConfig& config) {
  ASSIGN_OR_RETURN(RulesConfig defaults, ParseRulesToml(DefaultRulesToml(), "default_rules.toml"));
  if (config.rules_file.empty()) return defaults;
  ASSIGN_OR_RETURN(RulesConfig user, LoadRulesFile(config.rules_file));
  if (!config.extend_default && !user.extend_use_default) return user;
  RulesConfig merged = std::move(defaults);
  std::unordered_set<std::string> disabled(user.extend_disabled_rules.begin(),
                                           user.extend_disabled_rules.end());
  std::unordered_set<std::string> user_ids;
  for (const auto& r : user.rules) user_ids.insert(r.id);
  merged.rules.erase(std::remove_if(merged.rules.begin(), merged.rules.end(),
                                    [&](const RuleSpec& r) {
                                      return disabled.count(r.id) > 0 || user_ids.count(r.id) > 0;
                                    }),
                     merged.rules.end());
  for (auto& r : user.rules) {
    if (disabled.count(r.id) == 0) merged.rules.push_back(std::move(r));
  }
  for (auto& a : user.allowlists) merged.allowlists.push_back(std::move(a));
  if (!user.title.empty()) merged.title = user.title;
  return merged;
}

absl::StatusOr<std::shared_ptr<const RuleScrubber>> BuildScrubber(const ScrubConfig& config) {
  if (config.archive_originals) {
    if (config.key_file.empty()) {
      return absl::InvalidArgumentError(
          "scrub.archive_originals is true but scrub.key_file is not set");
    }
    ASSIGN_OR_RETURN(ArchiveKey key, LoadArchiveKey(config.key_file));
    (void)key;
  }
  ASSIGN_OR_RETURN(RulesConfig rules, ResolveRules(config));
  ASSIGN_OR_RETURN(std::unique_ptr<RuleScrubber> s, RuleScrubber::Create(rules));
  return std::shared_ptr<const RuleScrubber>(std::move(s));
}

}  // namespace contextd::scrub
