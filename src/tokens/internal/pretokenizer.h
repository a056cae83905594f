// The pre-tokenization step of tiktoken: splitting text into the pieces its split regex matches,
// written by hand for the two patterns we support so that it is exact (leftmost-first alternation
// with the backtracking the regex would do) and linear. Operates on well-formed UTF-8 only.
// Immutable; thread-safe.
//
// o200k_base:
//   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//   |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//   |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
// cl100k_base:
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*
//   |\s*[\r\n]+|\s+(?!\S)|\s+
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tokens/internal/unicode_classes.h"
#include "tokens/internal/utf8.h"

namespace contextd::tokens::internal {

// Which split pattern to apply.
enum class SplitPattern { kO200k, kCl100k };

class Pretokenizer {
 public:
  // `text` must be well-formed UTF-8 and outlive this object.
  Pretokenizer(SplitPattern pattern, std::string_view text)
      : pattern_(pattern),
        cls_(UnicodeClasses::Get()),
        s_(reinterpret_cast<const uint8_t*>(text.data())),
        n_(text.size()) {}

  // End (exclusive byte offset) of the piece that starts at `pos` (< size). Always > pos.
  size_t NextEnd(size_t pos) const {
    return pattern_ == SplitPattern::kO200k ? NextO200k(pos) : NextCl100k(pos);
  }

  // Calls f(piece) for every piece of the text, in order.
  template <typename F>
  void ForEach(F&& f) const {
    size_t pos = 0;
    while (pos < n_) {
      size_t end = NextEnd(pos);
      f(std::string_view(reinterpret_cast<const char*>(s_ + pos), end - pos));
      pos = end;
    }
  }

 private:
  static constexpr size_t kFail = ~size_t{0};
  static constexpr uint8_t kLetterOrMark = kUpperSet | kLowerSet;  // \p{L} or \p{M}

  struct Ch {
    uint32_t cp;
    size_t len;
    uint8_t cls;
  };

  Ch At(size_t pos) const {
    uint8_t b = s_[pos];
    if (b < 0x80) return Ch{b, 1, cls_.ascii()[b]};
    Ch c;
    c.cp = DecodeValid(s_ + pos, &c.len);
    c.cls = cls_.Of(c.cp);
    return c;
  }

  // [^\r\n\p{L}\p{N}]
  static bool PrefixEligible(const Ch& c) {
    return !(c.cls & (kLetter | kNumber)) && c.cp != '\r' && c.cp != '\n';
  }
  // [^\s\p{L}\p{N}]
  static bool IsOther(const Ch& c) { return !(c.cls & (kSpace | kLetter | kNumber)); }

  // (?i:'s|'t|'re|'ve|'m|'ll|'d) at `pos`: end of the match or kFail. Case-insensitive matching
  // in Rust's regex uses simple case folding, so 's' also matches U+017F LATIN SMALL LETTER LONG S.
  size_t Contraction(size_t pos) const {
    if (pos + 1 >= n_ || s_[pos] != '\'') return kFail;
    auto lower = [this](size_t i) -> int { return i < n_ ? (s_[i] | 0x20) : -1; };
    int c1 = lower(pos + 1);
    switch (c1) {
      case 's':
      case 't':
      case 'm':
      case 'd':
        return pos + 2;
      case 'r':
      case 'v':
        return lower(pos + 2) == 'e' ? pos + 3 : kFail;
      case 'l':
        return lower(pos + 2) == 'l' ? pos + 3 : kFail;
      default:
        break;
    }
    // U+017F is C5 BF.
    if (s_[pos + 1] == 0xC5 && pos + 2 < n_ && s_[pos + 2] == 0xBF) return pos + 3;
    return kFail;
  }

  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+ from `s`, with backtracking.
  size_t UpperStarLowerPlus(size_t s) const {
    size_t pos = s, last_lower_end = kFail;
    while (pos < n_) {
      Ch c = At(pos);
      if (!(c.cls & kUpperSet)) {
        if (c.cls & kLowerSet) {
          // A lowercase letter (Ll): the lower run starts here; take it greedily.
          pos += c.len;
          while (pos < n_) {
            Ch d = At(pos);
            if (!(d.cls & kLowerSet)) break;
            pos += d.len;
          }
          return pos;
        }
        break;
      }
      if (c.cls & kLowerSet) last_lower_end = pos + c.len;
      pos += c.len;
    }
    // The upper run swallowed everything: the regex backtracks to the last character that is in
    // both sets (Lm, Lo, M), which then forms the one-character lower run.
    return last_lower_end;
  }

  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]* from `s`.
  size_t UpperPlusLowerStar(size_t s) const {
    if (s >= n_) return kFail;
    size_t pos = s;
    Ch c = At(pos);
    if (!(c.cls & kUpperSet)) return kFail;
    pos += c.len;
    while (pos < n_ && ((c = At(pos)).cls & kUpperSet)) pos += c.len;
    while (pos < n_ && ((c = At(pos)).cls & kLowerSet)) pos += c.len;
    return pos;
  }

  size_t WithContraction(size_t end) const {
    size_t e = Contraction(end);
    return e == kFail ? end : e;
  }

  // \p{N}{1,3} from `pos` whose first character `c` is a number.
  size_t Digits(size_t pos, const Ch& c) const {
    pos += c.len;
    for (int k = 1; k < 3 && pos < n_; ++k) {
      Ch d = At(pos);
      if (!(d.cls & kNumber)) break;
      pos += d.len;
    }
    return pos;
  }

  // ` ?[^\s\p{L}\p{N}]+` then [\r\n]* (cl100k) or [\r\n/]* (o200k), `c` being the character at
  // `pos`. kFail when it does not match.
  size_t Punctuation(size_t pos, const Ch& c, bool slash) const {
    size_t p = pos;
    if (c.cp == ' ' && pos + 1 < n_ && IsOther(At(pos + 1))) {
      p = pos + 1;
    } else if (!IsOther(c)) {
      return kFail;
    }
    Ch d;
    while (p < n_ && IsOther(d = At(p))) p += d.len;
    while (p < n_ && (s_[p] == '\r' || s_[p] == '\n' || (slash && s_[p] == '/'))) ++p;
    return p;
  }

  // \s*[\r\n]+|\s+(?!\S)|\s+ from `pos` whose character is whitespace.
  size_t Whitespace(size_t pos) const {
    size_t p = pos, last_newline_end = kFail, last_start = pos;
    while (p < n_) {
      Ch c = At(p);
      if (!(c.cls & kSpace)) break;
      if (c.cp == '\r' || c.cp == '\n') last_newline_end = p + c.len;
      last_start = p;
      p += c.len;
    }
    if (last_newline_end != kFail) return last_newline_end;  // \s*[\r\n]+
    if (p == n_) return p;                                   // \s+(?!\S) at the end
    if (last_start > pos) return last_start;                 // \s+(?!\S): all but the last
    return p;                                                // \s+
  }

  size_t NextO200k(size_t pos) const {
    Ch c = At(pos);
    if (c.cls & (kLetter | kMark) || PrefixEligible(c)) {
      size_t e;
      bool prefix = PrefixEligible(c);
      size_t after = pos + c.len;
      if (prefix && (e = UpperStarLowerPlus(after)) != kFail) return WithContraction(e);
      if ((c.cls & kLetterOrMark) && (e = UpperStarLowerPlus(pos)) != kFail) {
        return WithContraction(e);
      }
      if (prefix && (e = UpperPlusLowerStar(after)) != kFail) return WithContraction(e);
      if ((c.cls & kUpperSet) && (e = UpperPlusLowerStar(pos)) != kFail) {
        return WithContraction(e);
      }
    }
    if (c.cls & kNumber) return Digits(pos, c);
    size_t e = Punctuation(pos, c, /*slash=*/true);
    if (e != kFail) return e;
    if (c.cls & kSpace) return Whitespace(pos);
    return pos + c.len;  // unreachable: every character matches some alternative
  }

  size_t NextCl100k(size_t pos) const {
    Ch c = At(pos);
    if (c.cp == '\'') {
      size_t e = Contraction(pos);
      if (e != kFail) return e;
    }
    if (PrefixEligible(c) && pos + c.len < n_) {
      Ch d = At(pos + c.len);
      if (d.cls & kLetter) return LetterRun(pos + c.len + d.len);
    }
    if (c.cls & kLetter) return LetterRun(pos + c.len);
    if (c.cls & kNumber) return Digits(pos, c);
    size_t e = Punctuation(pos, c, /*slash=*/false);
    if (e != kFail) return e;
    if (c.cls & kSpace) return Whitespace(pos);
    return pos + c.len;  // unreachable: every character matches some alternative
  }

  size_t LetterRun(size_t pos) const {
    Ch c;
    while (pos < n_ && ((c = At(pos)).cls & kLetter)) pos += c.len;
    return pos;
  }

  SplitPattern pattern_;
  const UnicodeClasses& cls_;
  const uint8_t* s_;
  size_t n_;
};

}  // namespace contextd::tokens::internal
