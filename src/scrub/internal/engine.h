// The scanner behind RuleScrubber, in the files of its stages:
//   compile.cc    rules and allowlists -> CompiledRule, keyword automaton, RE2::Set (Compile)
//   prefilter.cc  one keyword pass -> per-rule windows, leading-string starts; a scan pass
//                 (ScanOnce), and what a later pass reuses of the last (MapLeadHits, DirtyRanges)
//   match.cc      one rule over one window (RunRule): DFA search, secret bounds, extraction
//   allowlist.cc  allowlists and entropy (Allowed, SurelyAllowed, ShannonEntropy)
//   redact.cc     markers, redaction to a fixpoint (ScrubText), findings
//   decoded_scan.cc  encoded segments (internal/decode.h) decoded in place and scanned
//                 (AddDecodedHits)
// Engine is immutable after Compile(); every const method is thread-safe.
#pragma once

#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "scrub/internal/aho_corasick.h"
#include "scrub/internal/keyword_hits.h"
#include "scrub/rule_scrubber.h"
#include "scrub/rules.h"

namespace contextd::scrub::internal {

inline constexpr std::string_view kMarkerPrefix = "[REDACTED:";
inline constexpr size_t kMaxMarkerId = 64;
// Bytes after a keyword hit that the rule window always covers (then extended to the line end).
inline constexpr size_t kForwardWindow = 96;
// Bytes before a keyword hit that the window covers (gitleaks rules put up to 50 [\w.-] chars,
// and some a whole token, before the keyword).
inline constexpr size_t kBackWindow = 128;
// A window never extends more than this past `reach` even if the line goes on (minified JSON).
inline constexpr size_t kMaxLineTail = 2048;
// Rules whose regex can span many lines (dot-all, [\s\S]) get a larger window.
inline constexpr size_t kWideForwardWindow = 16384;
// A rule whose pattern asks for at most this many line breaks (PatternExtent::max_line_breaks,
// like curl-auth-header's (?:[\r\n]{1,2}.*){1,5}) gets that many more lines on each side of
// its windows; one that asks for more is wide.
inline constexpr size_t kMaxSpanLines = 16;
// Windows of one rule closer than this merge: a short DFA scan is cheaper than another RE2 call.
inline constexpr size_t kWindowGap = 256;
// A finding clipped around an existing marker keeps only pieces at least this long.
inline constexpr size_t kMinClippedPiece = 6;
// Matches at least this long are bounded with BoundSecret before the submatch extraction
// (shorter ones extract cheaply with BitState).
inline constexpr size_t kBoundMinSpan = 256;
// A window is searched from the places a match can start (CompiledRule::anchored) when it has
// fewer than one such place per this many bytes: an anchored RE2 call costs about as much as
// scanning that many bytes with the DFA.
inline constexpr size_t kAnchoredCallBytes = 64;
// ... and is at most this long: an anchored try that fails can run to the window's end (a rule
// like "tok.*;" on a long line), so tries in one window cost at most (window / 64) * window.
inline constexpr size_t kMaxAnchoredWindow = 8192;
// Leading strings of a rule (internal::LeadingLiterals): at most this many, at least this long
// (a shorter string would start an anchored search at too many places).
inline constexpr size_t kMaxLeadingStrings = 64;
inline constexpr size_t kMinLeadingLength = 3;
inline constexpr size_t kMaxLeadingLength = 6;
// Upper bound on redaction passes (each pass strictly shrinks the unredacted text).
inline constexpr int kMaxPasses = 64;

inline bool IsIdChar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}
inline bool IsPreviewChar(unsigned char c) {
  return IsIdChar(c) || c == '+' || c == '/' || c == '=';
}

inline size_t LineStart(std::string_view t, size_t pos) {
  if (pos == 0) return 0;
  const void* nl = memrchr(t.data(), '\n', pos);
  return nl == nullptr ? 0 : static_cast<const char*>(nl) - t.data() + 1;
}
inline size_t LineEnd(std::string_view t, size_t pos) {
  if (pos >= t.size()) return t.size();
  const void* nl = std::memchr(t.data() + pos, '\n', t.size() - pos);
  return nl == nullptr ? t.size() : static_cast<const char*>(nl) - t.data();
}
// End of a scan window: just past the newline that ends the line containing `pos`, so that
// patterns ending in (?:\s|$) can see it.
inline size_t WindowEnd(std::string_view t, size_t pos) {
  size_t e = LineEnd(t, pos);
  return e < t.size() ? e + 1 : e;
}

inline bool ContainsDigit(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// True when every byte of `s` is ASCII (8 bytes at a time).
inline bool IsAscii(std::string_view s) {
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

// RE2::PartialMatch(s, re) without the argument plumbing of DoMatch (allowlists run once per
// candidate finding).
bool ContainsMatch(const RE2& re, std::string_view s);
// Options every rule and allowlist regex is compiled with.
RE2::Options RuleOptions();

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
  double entropy = 0;  // < 0: not computed yet
  // A finding in decoded text (decoded_scan.cc): bits of internal::Encoding of the segments its
  // secret overlaps, and the decoding level it was found at; 0 for plain findings.
  uint8_t encodings = 0;
  uint8_t decode_depth = 0;
};

inline bool HitBefore(const Hit& a, const Hit& b) {
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
  // Without secretGroup: per group, whether it is a label (internal::LabelGroups: it matches only
  // fixed text, like jwt-base64's (?P<alg>aGJHY2lPaU), or only its last repetition, like
  // microsoft-teams-webhook's ([a-z0-9]{4}-){3}). gitleaks' default secret (the first non-empty
  // group) may be one; it still decides entropy and allowlists, but redacting just it would leave
  // the token around it, so the whole match is redacted instead. Empty when no group is one.
  std::vector<bool> label_groups;
  double entropy = 0;
  // Every match starts with one of the rule's leading strings (internal::LeadingLiterals),
  // which are keyword-pass patterns: on ASCII text, the first pass knows every place a match
  // can start, and RunRule tries anchored matches there instead of scanning the whole window.
  bool anchored = false;
  bool require_digit = false;        // RuleSpec::require_digit: the secret must contain a digit
  bool low_priority = false;         // generic, or tagged "generic": runs after the specific rules
  bool has_early_allowlist = false;  // some allowlist (rule or global) needs no secret
  size_t forward_window = kForwardWindow;
  size_t back_window = kBackWindow;
  bool wide = false;  // the regex can span many lines
  // Not wide: its windows reach span_lines lines past the line where they would end, and
  // start up to back_lines lines before the keyword's line (never more than back_window bytes
  // before the keyword). See Compile.
  size_t span_lines = 0;
  size_t back_lines = 0;
  std::vector<std::string> tags;
  std::vector<CompiledAllowlist> allowlists;
};

using Span = std::pair<size_t, size_t>;  // [start, end) in a text

struct Engine {
  std::vector<CompiledRule> rules;
  std::vector<CompiledAllowlist> global;
  std::vector<CompileProblem> problems;
  // Aho-Corasick pattern i: keyword_rules[i] lists the rules it triggers (opens windows for),
  // anchor_rules[i] the anchored rules it is a leading string of (a place a match can start).
  std::unique_ptr<AhoCorasick> ac;
  std::vector<std::vector<uint32_t>> keyword_rules;
  std::vector<std::vector<uint32_t>> anchor_rules;
  bool have_anchored = false;
  // Per keyword: it triggers at least one rule that spans lines (those see every hit in every
  // pass, see ScanOnce).
  std::vector<bool> keyword_wide;
  std::vector<uint32_t> keyword_len;
  size_t max_keyword_len = 0;  // over the patterns that trigger rules
  size_t max_span_lines = 0;   // over the rules (CompiledRule::span_lines)
  size_t max_pattern_len = 0;  // over all patterns
  // Rules without keywords, screened together.
  std::vector<uint32_t> always_rules;
  std::unique_ptr<RE2::Set> always_set;
  // Decoding levels of encoded segments (0: off; see decoded_scan.cc and ScrubConfig).
  int decode_depth = 0;

  // compile.cc. Fills an empty Engine from `config`; InvalidArgument when two rules share an id
  // (everything else that fails to compile is skipped and recorded in `problems`).
  absl::Status Compile(const RulesConfig& config);

  // allowlist.cc. Allowlist checks run in two phases: kEarly (before the secret group is
  // extracted) evaluates allowlists that never look at the secret (regexTarget match/line, no
  // stopwords); kLate the rest. Same result as one pass, but most non-secrets are dropped before
  // the costly extraction.
  enum class Phase { kEarly, kLate };
  static bool NeedsSecret(const CompiledAllowlist& a);
  bool AllowlistMatches(const CompiledAllowlist& a, std::string_view secret, std::string_view match,
                        std::string_view line, std::string_view path) const;
  bool Allowed(const CompiledRule& r, Phase phase, std::string_view text, size_t ms, size_t me,
               std::string_view secret, std::string_view path) const;
  // True when some allowlist of `r` (one that needs the secret) is certain to pass on any secret
  // that contains `inner`: then a match can be dropped without extracting its groups (an NFA
  // pass over the whole match when it is long). Typical case: a later pass, where a private-key
  // match spans an earlier marker ("[REDACTED:" is allowlisted).
  bool SurelyAllowed(const CompiledRule& r, std::string_view inner) const;

  // match.cc. Runs rule `ri` over [from, to) of `text`, appending findings. `markers` (sorted):
  // the redaction markers in `text`; a match that starts inside one reads the marker's own
  // letters ("[REDACTED:generic-password:ab]" has a keyword and a ':') and is skipped, as keyword
  // hits inside markers are (otherwise what a scan finds would depend on how far windows reach,
  // and a second Scrub could find more than the first). With `covered` (sorted hits of specific
  // rules), a match whose tail is already inside one of them is skipped before the
  // (comparatively costly) submatch extraction. `starts` (optional, sorted): every place in
  // `text` where a match of this (anchored) rule can start, for ASCII `text`; when the window
  // has few of them, the search tries anchored matches at just those places.
  // A finding's secret is the one gitleaks reports (detect.go at the commit of
  // ../shared/compat/gitleaks): the match trimmed of newlines at both ends, then, when the regex
  // has groups, its secretGroup (or first non-empty group) in that string on its own
  // (ExtractGroups), or the trimmed match when it has none there. Entropy and allowlists (match:
  // the trimmed match; line: its lines) look at those.
  void RunRule(uint32_t ri, std::string_view text, size_t from, size_t to, std::string_view path,
               const std::vector<Span>& markers, const std::vector<Hit>* covered,
               std::vector<Hit>* out, const std::vector<size_t>* starts = nullptr) const;
  // The leftmost match of `r` in [pos, to) of `sp`, into groups[0] (the span only: the DFA
  // finds it; RunRule extracts groups on just that span).
  static bool FindUnanchored(const CompiledRule& r, const re2::StringPiece& sp, size_t pos,
                             size_t to, re2::StringPiece* groups);
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
                          SecretBounds* b);
  // The groups of the match [ts, te) (trimmed of newlines) as gitleaks finds them: the regex's
  // leftmost match in that string on its own (no text around it, so \b, ^ and $ see its edges as
  // the text's edges); false when there is none (gitleaks then keeps the trimmed match as the
  // secret). On an ASCII-only match the Latin-1 twin of the regex gives the same groups (every
  // rune is one byte, and both encodings match the same ASCII bytes with the same parse
  // priorities) while its program is smaller: no multi-byte UTF-8 branches, so RE2 can use
  // BitState instead of the NFA. Measured 2-3x cheaper on the generic rules' matches.
  static bool ExtractGroups(const CompiledRule& r, std::string_view text, size_t ts, size_t te,
                            re2::StringPiece* groups, int ngroups);
  // True when a hit in `hits` (sorted by start) already covers the tail of [ms, me).
  static bool TailCovered(const std::vector<Hit>& hits, size_t ms, size_t me);

  // prefilter.cc. One scan pass. `markers` receives the spans of existing redaction markers.
  // `only` (optional, sorted disjoint ranges): consider keyword hits (and keyword-less rules)
  // only there; rules that span lines still see every hit.
  // `wide_hits` (optional): without `only`, receives the occurrences of keywords that trigger a
  // wide rule; with `only`, holds them for `text` (mapped from the previous pass) and
  // replaces the scan of the whole text: the keyword pass then only scans around `only`.
  // `lead_hits` (optional), likewise for the leading strings of anchored rules: received from a
  // scan of the whole text, or given for `text` (every occurrence) in a later pass.
  std::vector<Hit> ScanOnce(std::string_view text, std::string_view path,
                            std::vector<Span>* markers, const std::vector<Span>* only,
                            std::vector<KeywordHit>* wide_hits = nullptr,
                            std::vector<KeywordHit>* lead_hits = nullptr) const;
  // Occurrences of leading strings in `text` (the previous pass's text after the redaction
  // `replaced` -> `inserted`), from those of the previous pass: the ones that overlap no
  // replaced span move with the text, and scans around each inserted marker find the ones that
  // overlap it. In order of end, as AhoCorasick reports them.
  std::vector<KeywordHit> MapLeadHits(std::string_view text, const std::vector<KeywordHit>& hits,
                                      const std::vector<Span>& replaced,
                                      const std::vector<Span>& inserted) const;
  // Sorted, merged ranges around newly inserted markers in which a later pass must look for
  // keyword hits: from the line before (a keyword's window reaches kForwardWindow bytes and then
  // to the end of a line) to kBackWindow bytes after (a match may start that far before its
  // keyword).
  // (Rules with span_lines reach that many lines further: the ranges start max_span_lines
  // lines earlier.)
  std::vector<Span> DirtyRanges(std::string_view text, const std::vector<Span>& inserted) const;

  // decoded_scan.cc. Findings in encoded segments of `text`: base64, hex and percent runs whose
  // decoding is text are decoded in place, up to decode_depth levels, in a view of the line
  // around them, which ScanOnce scans; a finding there whose secret overlaps a segment decoded
  // at that level maps back to `text`, widened to the whole encoded segment(s) it overlaps.
  // Added to `hits` (sorted by HitBefore), except those inside a span `hits` already covers.
  // `markers`: the markers in `text` (ScanOnce's). `only` (optional, sorted): look only at the
  // lines these ranges touch. What is found on a line depends on that line alone, so a later
  // pass of ScrubText that looks at the lines around new markers finds all there is.
  void AddDecodedHits(std::string_view text, std::string_view path,
                      const std::vector<Span>& markers, const std::vector<Span>* only,
                      std::vector<Hit>* hits) const;

  // redact.cc. Appends the spans of the well-formed redaction markers in `text`, in order.
  static void FindMarkers(std::string_view text, std::vector<Span>* markers);
  // Findings must never touch an existing marker: cut marker spans out of each
  // finding and keep the remaining pieces that are long enough to be a secret.
  static std::vector<Hit> ClipAroundMarkers(std::vector<Hit> in, const std::vector<Span>& m);
  // Scan + redact until a fixpoint; `first` receives the first pass's hits.
  std::string ScrubText(std::string_view text, std::string_view path,
                        std::vector<Hit>* first) const;
  std::vector<Finding> ToFindings(std::string_view text, const std::vector<Hit>& hits) const;
  // Replaces the (sorted) findings in `text` by markers, merging overlaps.
  // `inserted` (optional) receives the [start, end) of every marker written, in `out`.
  // `replaced` (optional) receives the [start, end) in `text` of every span replaced, in order.
  std::string Redact(std::string_view text, const std::vector<Hit>& found,
                     std::vector<Span>* inserted = nullptr,
                     std::vector<Span>* replaced = nullptr) const;
};

}  // namespace contextd::scrub::internal
