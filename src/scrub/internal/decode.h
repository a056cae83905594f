// Encoded segments for the secret scanner: a linear pass that finds base64 (standard and
// URL-safe, padded or not), hex and percent-encoded runs, decoders that accept a run only when
// its decoding is text, and views of a piece of text with segments decoded in place that map
// every byte back to the original (a decoded byte maps to its whole encoded segment).
// Free functions and value types, no global state; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace contextd::scrub::internal {

// An encoding, as a bit: a segment decoded at depth 2 can carry several (base64 of percent).
enum class Encoding : uint8_t { kPercent = 1, kHex = 2, kBase64 = 4 };
// "percent", "hex", "base64" (the names gitleaks puts in its "decoded:<name>" tags).
std::string_view EncodingName(Encoding e);

// Shortest runs tried: a base64 run of 16 characters decodes to 12 bytes, a hex run of 32 to 16
// (what gitleaks uses). Shorter runs are common in code (identifiers, ids) and hold no secret.
inline constexpr size_t kMinBase64Run = 16;
inline constexpr size_t kMinHexRun = 32;

// True when `s` is text: printable ASCII, tab, newline, \v, \f, \r, or well-formed UTF-8 of a
// non-control code point (no overlong forms, surrogates, or C1 controls). Binary (hashes, PNG,
// compressed or random key material) fails on some byte almost at once.
bool IsText(std::string_view s);

// Decoders: append the decoding of `in` to `*out` and return true when `in` is well-formed in
// that encoding and its decoding is text (IsText); otherwise false and `*out` is unspecified.
// Base64: standard (+/) or URL-safe (-_) alphabet, not both; padding optional but, if present,
// correct (at most 2 '='); unused bits of the last character zero (as every encoder writes them);
// at least kMinBase64Run characters without padding, one of them a digit or one of "+/-_" (a
// run of letters only is a word or an identifier far more often than base64).
bool DecodeBase64(std::string_view in, std::string* out);
// Hex: even length, at least kMinHexRun digits, at least one of them 0-9; any case.
bool DecodeHex(std::string_view in, std::string* out);
// Percent: one or more "%XX" escapes back to back, nothing else.
bool DecodePercent(std::string_view in, std::string* out);

// A run in a text that looks encoded: [start, end) with its encoding. `deferred`: it touches a
// percent run (as "dXNlcjpwYXNz%3D" does), so it is decoded at the next depth, once the percent
// run is decoded and joins it (gitleaks defers the lower-precedence encoding the same way).
struct Candidate {
  size_t start = 0, end = 0;
  Encoding kind = Encoding::kBase64;
  bool deferred = false;
};

// Appends to `*out`, in order of start, the candidates in [from, to) of `text`: maximal runs of
// [A-Za-z0-9+/_-] (with up to 3 trailing '=') of at least kMinBase64Run characters (hex when
// all are hex digits and there are at least kMinHexRun of them, else base64), and maximal runs of
// "%XX" escapes. A run that overlaps a span of `skip` (sorted, disjoint: redaction markers) is
// left out. Cost: one pass that classifies 64 bytes at a time into a bit mask (SSE2 when the
// target has it) and looks at the bytes of a run only when it is long enough, and a memchr for '%'.
void FindCandidates(std::string_view text, size_t from, size_t to,
                    const std::vector<std::pair<size_t, size_t>>& skip,
                    std::vector<Candidate>* out);

// Decodes one candidate of `text` (DecodeBase64/DecodeHex/DecodePercent by its kind); false if
// it is deferred or not accepted.
bool DecodeCandidate(std::string_view text, const Candidate& c, std::string* out);

// A candidate that decoded, with its decoding.
struct DecodedSegment {
  size_t start = 0, end = 0;  // in the text it was found in
  Encoding kind = Encoding::kBase64;
  std::string decoded;
};

// A piece of text with segments decoded in place (possibly several times over), and how each
// byte maps back to the original text.
class DecodedView {
 public:
  // A run of the view: bytes [view_start, view_end) are either copied from the original text
  // (encodings == 0; byte i maps to orig_start + (i - view_start)) or decoded (encodings != 0:
  // every byte maps to the whole encoded span [orig_start, orig_end)).
  struct Piece {
    size_t view_start = 0, view_end = 0;
    size_t orig_start = 0, orig_end = 0;
    uint8_t encodings = 0;  // bits of Encoding
    uint8_t depth = 0;      // the decoding level that made the piece (0: copied)
  };

  // The view of original[from, to) with `segments` (sorted, disjoint, inside [from, to), found in
  // `original`) decoded in place: level 1.
  static DecodedView Make(std::string_view original, size_t from, size_t to,
                          const std::vector<DecodedSegment>& segments);

  // The next level: candidates of this view that overlap or touch a piece of the last level
  // (the others were tried at an earlier level already), decoded in place; candidates that
  // overlap a span of `skip` (sorted: the redaction markers in text()) are left alone. Returns
  // false (and leaves *next alone) when none decodes.
  bool DecodeNext(const std::vector<std::pair<size_t, size_t>>& skip, DecodedView* next) const;

  // Maps the view span [a, b) (a < b <= text().size()) to the original text: copied bytes map
  // one to one, a decoded byte widens the result to its piece's whole encoded span. `encodings`
  // and `depth` (optional) receive the bits and the highest level of the decoded pieces the span
  // overlaps; `at_level` (optional) whether one of them is of the last level.
  std::pair<size_t, size_t> ToOriginal(size_t a, size_t b, uint8_t* encodings = nullptr,
                                       uint8_t* depth = nullptr, bool* at_level = nullptr) const;

  const std::string& text() const { return text_; }
  const std::vector<Piece>& pieces() const { return pieces_; }
  int level() const { return level_; }

 private:
  // Appends view bytes [a, b) of `in` (copied, with their mapping) to this view.
  void CopyFrom(const DecodedView& in, size_t a, size_t b);
  // Appends a decoded piece.
  void AppendDecoded(std::string_view decoded, size_t orig_start, size_t orig_end,
                     uint8_t encodings);

  std::string text_;
  std::vector<Piece> pieces_;
  int level_ = 0;
};

}  // namespace contextd::scrub::internal
