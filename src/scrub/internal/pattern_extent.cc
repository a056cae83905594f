// MeasurePattern (declared in regex_split.h): how far a match of an RE2 pattern can reach across
// lines, for the keyword windows.

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "scrub/internal/regex_split.h"  // declares MeasurePattern, PatternExtent

namespace contextd::scrub::internal {

namespace {

// Saturating arithmetic on extents (SIZE_MAX: unbounded).
size_t AddSat(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }
size_t MulSat(size_t a, size_t n) {
  if (a == 0 || n == 0) return 0;
  return a > SIZE_MAX / n ? SIZE_MAX : a * n;
}
// `e` after `to`: every newline of `to` is followed by e's bytes (counting them as inner when e
// may be empty overstates, which is the safe side).
void Add(PatternExtent* to, const PatternExtent& e) {
  to->max_bytes = AddSat(to->max_bytes, e.max_bytes);
  to->max_inner_newlines = AddSat(to->max_newlines, e.max_inner_newlines);
  to->max_newlines = AddSat(to->max_newlines, e.max_newlines);
  to->max_line_breaks = AddSat(to->max_line_breaks, e.max_line_breaks);
}
void Max(PatternExtent* to, const PatternExtent& e) {
  to->max_bytes = std::max(to->max_bytes, e.max_bytes);
  to->max_newlines = std::max(to->max_newlines, e.max_newlines);
  to->max_inner_newlines = std::max(to->max_inner_newlines, e.max_inner_newlines);
  to->max_line_breaks = std::max(to->max_line_breaks, e.max_line_breaks);
}
size_t Times(size_t v, size_t n) { return n == SIZE_MAX && v > 0 ? SIZE_MAX : MulSat(v, n); }

// Recursive descent over RE2 syntax computing PatternExtent. Anything it does not know makes
// Parse() return false.
class ExtentParser {
 public:
  explicit ExtentParser(std::string_view p) : p_(p) {}

  bool Parse(PatternExtent* out) {
    Flags flags;
    if (!Alternation(&flags, out)) return false;
    return i_ == p_.size();
  }

 private:
  struct Flags {
    bool i = false, s = false;
  };
  static constexpr int kMaxDepth = 64;
  static constexpr size_t kRune = 4;  // bytes a rune may take in UTF-8

  // What one character-matching element (a byte, escape, class member or class) can match.
  struct Char {
    size_t bytes = 1;
    bool may_newline = false;   // it may match '\n'
    bool must_newline = false;  // it surely matches '\n' (what a negated class then excludes)
    bool line_break = false;    // it matches '\n' because the pattern says so
    int lo = -1, hi = -1;       // the code point range it stands for, if it is one
  };
  // One character: a newline it matches is its last byte.
  static PatternExtent Of(const Char& c) {
    return {c.bytes, c.may_newline ? size_t{1} : 0, c.line_break ? size_t{1} : 0, 0};
  }

  bool Alternation(Flags* flags, PatternExtent* out) {
    *out = PatternExtent();
    for (;;) {
      PatternExtent branch;
      if (!Concat(flags, &branch)) return false;
      Max(out, branch);
      if (i_ < p_.size() && p_[i_] == '|') {
        ++i_;
        continue;
      }
      return true;
    }
  }

  // Flags set by a (?flags) directive last to the end of the enclosing group, across '|'.
  bool Concat(Flags* flags, PatternExtent* out) {
    *out = PatternExtent();
    while (i_ < p_.size() && p_[i_] != '|' && p_[i_] != ')') {
      PatternExtent item;
      if (!Item(flags, &item)) return false;
      Add(out, item);
    }
    return true;
  }

  bool Item(Flags* flags, PatternExtent* out) {
    PatternExtent atom;
    const char c = p_[i_];
    bool zero_width = false;
    if (c == '(') {
      if (!Group(flags, &atom, &zero_width)) return false;
    } else if (c == '[') {
      Char k;
      if (!Class(*flags, &k)) return false;
      atom = Of(k);
    } else if (c == '\\') {
      if (!Escape(*flags, &atom, &zero_width)) return false;
    } else if (c == '^' || c == '$') {
      ++i_;
      zero_width = true;
    } else if (c == '.') {
      ++i_;
      atom = {kRune, flags->s ? size_t{1} : 0, flags->s ? size_t{1} : 0, 0};
    } else if (c == '*' || c == '+' || c == '?' || c == ')' || c == '|') {
      return false;
    } else {
      ++i_;
      Char k;
      k.bytes = Literal(*flags, static_cast<unsigned char>(c));
      k.may_newline = k.must_newline = k.line_break = c == '\n';
      atom = Of(k);
    }
    if (zero_width) {
      *out = PatternExtent();
      return !Quantified(i_);  // RE2 refuses to repeat an empty-width assertion
    }
    return Quantifier(atom, out);
  }

  // Bytes one pattern byte `u` matches: itself, except that under (?i) 'k' and 's' also match
  // KELVIN SIGN and LONG S (3 and 2 bytes) and a non-ASCII letter may fold to another length.
  static size_t Literal(Flags flags, unsigned char u) {
    if (!flags.i) return 1;
    if (u >= 0x80) return kRune;
    const char l = static_cast<char>(u | 0x20);
    return l == 'k' || l == 's' ? 3 : 1;
  }

  bool Quantified(size_t j) const {
    return j < p_.size() && (p_[j] == '*' || p_[j] == '+' || p_[j] == '?' || IsRepeat(j));
  }

  // A '{' that starts a repeat ({n}, {n,}, {n,m}); RE2 reads any other '{' as a literal.
  bool IsRepeat(size_t j) const {
    if (j >= p_.size() || p_[j] != '{') return false;
    size_t k = j + 1;
    const size_t digits = k;
    while (k < p_.size() && p_[k] >= '0' && p_[k] <= '9') ++k;
    if (k == digits) return false;
    if (k < p_.size() && p_[k] == ',') {
      ++k;
      while (k < p_.size() && p_[k] >= '0' && p_[k] <= '9') ++k;
    }
    return k < p_.size() && p_[k] == '}';
  }

  size_t Number(size_t* k) const {
    size_t n = 0;
    while (p_[*k] >= '0' && p_[*k] <= '9')
      n = std::min<size_t>(n * 10 + (p_[(*k)++] - '0'), 100000);
    return n;
  }

  bool Quantifier(const PatternExtent& atom, PatternExtent* out) {
    *out = atom;
    if (i_ >= p_.size()) return true;
    size_t max = 1;
    const char q = p_[i_];
    if (q == '*' || q == '+') {
      max = SIZE_MAX;
      ++i_;
    } else if (q == '?') {
      ++i_;
    } else if (IsRepeat(i_)) {
      size_t k = i_ + 1;
      max = Number(&k);
      if (p_[k] == ',') {
        ++k;
        max = p_[k] == '}' ? SIZE_MAX : Number(&k);
      }
      i_ = k + 1;
    } else {
      return true;
    }
    if (i_ < p_.size() && p_[i_] == '?') ++i_;  // lazy
    if (Quantified(i_)) return false;           // RE2 refuses a double repeat (a**)
    out->max_bytes = Times(atom.max_bytes, max);
    out->max_newlines = Times(atom.max_newlines, max);
    out->max_line_breaks = Times(atom.max_line_breaks, max);
    // All repetitions but the last are followed by another one.
    out->max_inner_newlines =
        max == 0 ? 0
                 : AddSat(Times(atom.max_newlines, max == SIZE_MAX ? max : max - 1),
                          atom.max_inner_newlines);
    return true;
  }

  bool Group(Flags* flags, PatternExtent* out, bool* directive) {
    if (++depth_ > kMaxDepth) return false;
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    ++i_;  // '('
    Flags inner = *flags;
    if (i_ < p_.size() && p_[i_] == '?') {
      size_t j = i_ + 1;
      if (j < p_.size() && (p_[j] == 'P' || p_[j] == '<')) {  // named capture
        const size_t q = p_.find('>', j);
        if (q == std::string_view::npos) return false;
        i_ = q + 1;
      } else {
        bool negate = false;
        Flags set = *flags;
        for (; j < p_.size() && p_[j] != ')' && p_[j] != ':'; ++j) {
          const char f = p_[j];
          if (f == '-') {
            if (negate) return false;
            negate = true;
          } else if (f == 'i') {
            set.i = !negate;
          } else if (f == 's') {
            set.s = !negate;
          } else if (f != 'm' && f != 'U') {
            return false;
          }
        }
        if (j >= p_.size()) return false;
        if (p_[j] == ')') {  // (?flags): for the rest of the enclosing group
          *flags = set;
          i_ = j + 1;
          *directive = true;
          return true;
        }
        inner = set;
        i_ = j + 1;
      }
    }
    if (!Alternation(&inner, out)) return false;
    if (i_ >= p_.size() || p_[i_] != ')') return false;
    ++i_;
    return true;
  }

  // An escape outside a class at i_ (its backslash).
  bool Escape(Flags flags, PatternExtent* out, bool* zero_width) {
    if (i_ + 1 >= p_.size()) return false;
    const char e = p_[i_ + 1];
    if (e == 'b' || e == 'B' || e == 'A' || e == 'z') {
      i_ += 2;
      *zero_width = true;
      return true;
    }
    if (e == 'Q') {
      const size_t end = p_.find("\\E", i_ + 2);
      const size_t stop = end == std::string_view::npos ? p_.size() : end;
      // A quantifier after \Q...\E repeats its last byte; counting the whole run overstates that:
      // an upper bound still.
      *out = PatternExtent();
      for (size_t k = i_ + 2; k < stop; ++k) {
        const size_t nl = p_[k] == '\n' ? 1 : 0;
        Add(out, {Literal(flags, static_cast<unsigned char>(p_[k])), nl, nl, 0});
      }
      i_ = end == std::string_view::npos ? p_.size() : end + 2;
      return true;
    }
    Char c;
    if (!EscapeChar(flags, &c)) return false;
    *out = Of(c);
    return true;
  }

  // An escape at i_ (its backslash), inside or outside a class; advances i_.
  bool EscapeChar(Flags flags, Char* c) {
    const char e = p_[i_ + 1];
    *c = Char();
    if (e == 'x') {
      size_t k = i_ + 2;
      uint32_t v = 0;
      if (k < p_.size() && p_[k] == '{') {
        const size_t q = p_.find('}', k);
        if (q == std::string_view::npos || q == k + 1 || q - k > 9) return false;
        for (size_t d = k + 1; d < q; ++d) {
          if (!std::isxdigit(static_cast<unsigned char>(p_[d]))) return false;
          v = v * 16 + Hex(p_[d]);
        }
        i_ = q + 1;
      } else {
        if (k + 2 > p_.size() || !std::isxdigit(static_cast<unsigned char>(p_[k])) ||
            !std::isxdigit(static_cast<unsigned char>(p_[k + 1]))) {
          return false;
        }
        v = Hex(p_[k]) * 16 + Hex(p_[k + 1]);
        i_ = k + 2;
      }
      c->bytes = v < 0x80 ? Literal(flags, static_cast<unsigned char>(v)) : kRune;
      c->may_newline = c->must_newline = c->line_break = v == '\n';
      c->lo = c->hi = static_cast<int>(std::min<uint32_t>(v, 0x10FFFF));
      return true;
    }
    if (e == 'p' || e == 'P') {
      const size_t k = i_ + 2;
      if (k >= p_.size()) return false;
      std::string_view name;
      if (p_[k] == '{') {
        const size_t q = p_.find('}', k);
        if (q == std::string_view::npos) return false;
        name = p_.substr(k + 1, q - k - 1);
        i_ = q + 1;
      } else {
        name = p_.substr(k, 1);
        i_ = k + 1;
      }
      bool negated = e == 'P';
      if (!name.empty() && name[0] == '^') {
        negated = !negated;
        name.remove_prefix(1);
      }
      // '\n' is in C, Cc and Any; a negated property may hold it.
      const bool control = name.empty() || name[0] == 'C' || name == "Any";
      c->bytes = kRune;
      c->may_newline = negated || control;
      c->must_newline = !negated && (name == "Any" || name == "C" || name == "Cc");
      return true;
    }
    i_ += 2;
    switch (e) {
      case 'n':
        c->may_newline = c->must_newline = c->line_break = true;
        c->lo = c->hi = '\n';
        return true;
      case 't':
        c->lo = c->hi = '\t';
        return true;
      case 'r':
        c->lo = c->hi = '\r';
        return true;
      case 'f':
        c->lo = c->hi = '\f';
        return true;
      case 'v':
        c->lo = c->hi = '\v';
        return true;
      case 'a':
        c->lo = c->hi = '\a';
        return true;
      case 'd':
      case 'w':
        c->bytes = flags.i ? 3 : 1;  // under (?i) \w's k and s fold to non-ASCII letters
        return true;
      case 's':
        c->may_newline = c->must_newline = true;
        return true;
      case 'S':
        c->bytes = kRune;
        return true;
      case 'D':
      case 'W':
        c->bytes = kRune;
        c->may_newline = c->must_newline = true;
        return true;
      case 'C':  // any byte
        c->may_newline = c->must_newline = c->line_break = true;
        return true;
      default:
        break;
    }
    // Escaped punctuation is that byte; other letters and digits (octal, \z in a class, ...)
    // are not read.
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) return false;
    const unsigned char u = static_cast<unsigned char>(e);
    if (u >= 0x80) return false;
    c->bytes = Literal(flags, u);
    c->lo = c->hi = u;
    c->may_newline = c->must_newline = c->line_break = u == '\n';  // a backslash, then a newline
    return true;
  }

  static uint32_t Hex(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

  // A class at i_. It breaks lines on purpose when it lists '\n' (\n, \x0a, a range over it) or
  // holds a class and its complement ([\s\S]); \s or a negated class alone only may.
  bool Class(Flags flags, Char* out) {
    size_t j = i_ + 1;
    bool negated = false;
    if (j < p_.size() && p_[j] == '^') {
      negated = true;
      ++j;
    }
    *out = Char();
    bool first = true;
    std::string perl;  // the \d \D \s \S \w \W members seen
    // One member at j: a byte, an escape, or [:name:].
    auto member = [&](Char* m) {
      *m = Char();
      if (j >= p_.size()) return false;
      if (p_[j] == '[' && j + 1 < p_.size() && p_[j + 1] == ':') {
        const size_t q = p_.find(":]", j + 2);
        if (q == std::string_view::npos) return false;
        std::string_view name = p_.substr(j + 2, q - j - 2);
        j = q + 2;
        const bool neg = !name.empty() && name[0] == '^';
        if (neg) name.remove_prefix(1);
        const bool nl = name == "space" || name == "cntrl";
        m->may_newline = neg || nl;
        m->must_newline = !neg && nl;
        m->bytes = neg ? kRune : (flags.i ? 3 : 1);
        return true;
      }
      if (p_[j] == '\\') {
        if (j + 1 >= p_.size()) return false;
        const char e = p_[j + 1];
        if (std::string_view("dDsSwW").find(e) != std::string_view::npos) perl.push_back(e);
        const size_t save = i_;
        i_ = j;
        const bool ok = EscapeChar(flags, m);
        j = i_;
        i_ = save;
        return ok;
      }
      const unsigned char u = static_cast<unsigned char>(p_[j]);
      if (u >= 0x80) {  // a UTF-8 sequence: one rune
        size_t len = 1;
        while (j + len < p_.size() && (static_cast<unsigned char>(p_[j + len]) & 0xC0) == 0x80) {
          ++len;
        }
        j += len;
        m->bytes = kRune;
        return true;
      }
      ++j;
      m->bytes = Literal(flags, u);
      m->lo = m->hi = u;
      m->may_newline = m->must_newline = m->line_break = u == '\n';
      return true;
    };
    while (j < p_.size() && (p_[j] != ']' || first)) {
      first = false;
      Char a;
      if (!member(&a)) return false;
      if (j + 1 < p_.size() && p_[j] == '-' && p_[j + 1] != ']') {
        ++j;
        Char b;
        if (!member(&b) || a.lo < 0 || b.lo < 0 || b.lo < a.lo) return false;
        const bool nl = a.lo <= '\n' && '\n' <= b.hi;
        a.may_newline = a.must_newline = a.line_break = nl;
        a.bytes = b.hi >= 0x80 ? kRune : (flags.i ? 3 : 1);
      }
      out->bytes = std::max(out->bytes, a.bytes);
      out->may_newline |= a.may_newline;
      out->must_newline |= a.must_newline;
      out->line_break |= a.line_break;
    }
    if (j >= p_.size()) return false;
    i_ = j + 1;
    for (const char* pair : {"sS", "dD", "wW"}) {
      if (perl.find(pair[0]) != std::string::npos && perl.find(pair[1]) != std::string::npos) {
        out->line_break = true;  // everything, newlines included
      }
    }
    if (negated) {
      const bool nl = !out->must_newline;
      *out = Char();
      out->bytes = kRune;
      out->may_newline = nl;
    }
    out->lo = out->hi = -1;
    return true;
  }

  std::string_view p_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

bool MeasurePattern(std::string_view pattern, PatternExtent* out) {
  ExtentParser parser(pattern);
  return parser.Parse(out);
}

}  // namespace contextd::scrub::internal
