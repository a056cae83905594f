#include "scrub/internal/regex_split.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

namespace contextd::scrub::internal {
namespace {

struct Token {
  enum class Kind { kOpenCapture, kOpenGroup, kFlags, kClose, kAlt, kAssert, kQuant, kOther };
  Kind kind;
  size_t begin, end;
};

bool IsFlagChar(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-'; }

// Splits an RE2 pattern into the tokens that matter for its structure. Returns false on a
// construct it does not know (the callers then take the slow path).
bool Tokenize(std::string_view p, std::vector<Token>* out) {
  using K = Token::Kind;
  const size_t n = p.size();
  size_t i = 0;
  while (i < n) {
    const char c = p[i];
    if (c == '\\') {
      if (i + 1 >= n) return false;
      const char e = p[i + 1];
      size_t end = i + 2;
      K kind = K::kOther;
      if (e == 'Q') {
        size_t q = p.find("\\E", i + 2);
        end = q == std::string_view::npos ? n : q + 2;
      } else if (e == 'b' || e == 'B' || e == 'A' || e == 'z') {
        kind = K::kAssert;
      } else if ((e == 'p' || e == 'P' || e == 'x') && end < n && p[end] == '{') {
        size_t q = p.find('}', end);
        if (q == std::string_view::npos) return false;
        end = q + 1;
      }
      out->push_back({kind, i, end});
      i = end;
    } else if (c == '[') {
      size_t j = i + 1;
      if (j < n && p[j] == '^') ++j;
      if (j < n && p[j] == ']') ++j;
      for (;;) {
        if (j >= n) return false;
        if (p[j] == '\\') {
          j += 2;
        } else if (p[j] == '[' && j + 1 < n && p[j + 1] == ':') {
          size_t q = p.find(":]", j + 2);
          if (q == std::string_view::npos) return false;
          j = q + 2;
        } else if (p[j] == ']') {
          ++j;
          break;
        } else {
          ++j;
        }
      }
      out->push_back({K::kOther, i, j});
      i = j;
    } else if (c == '(') {
      if (i + 1 < n && p[i + 1] == '?') {
        size_t j = i + 2;
        if (j < n && (p[j] == 'P' || p[j] == '<')) {
          size_t q = p.find('>', j);
          if (q == std::string_view::npos) return false;
          out->push_back({K::kOpenCapture, i, q + 1});
          i = q + 1;
          continue;
        }
        while (j < n && IsFlagChar(p[j])) ++j;
        if (j >= n) return false;
        if (p[j] == ')') {
          out->push_back({K::kFlags, i, j + 1});
        } else if (p[j] == ':') {
          out->push_back({K::kOpenGroup, i, j + 1});
        } else {
          return false;
        }
        i = j + 1;
      } else {
        out->push_back({K::kOpenCapture, i, i + 1});
        ++i;
      }
    } else {
      K kind = c == ')'                                         ? K::kClose
               : c == '|'                                       ? K::kAlt
               : (c == '^' || c == '$')                         ? K::kAssert
               : (c == '*' || c == '+' || c == '?' || c == '{') ? K::kQuant
                                                                : K::kOther;
      out->push_back({kind, i, i + 1});
      ++i;
    }
  }
  return true;
}

}  // namespace

bool SplitAtGroup(std::string_view pattern, int group, GroupSplit* out) {
  using K = Token::Kind;
  std::vector<Token> tokens;
  if (group < 1 || !Tokenize(pattern, &tokens)) return false;
  int depth = 0, captures = 0;
  size_t open = SIZE_MAX, close = SIZE_MAX;  // token indexes of the group's parens
  std::string directives;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const Token& tok = tokens[t];
    switch (tok.kind) {
      case K::kOpenCapture:
        if (++captures == group) {
          if (depth != 0) return false;
          open = t;
        }
        ++depth;
        break;
      case K::kOpenGroup:
        ++depth;
        break;
      case K::kClose:
        if (--depth < 0) return false;
        if (depth == 0 && open != SIZE_MAX && close == SIZE_MAX) close = t;
        break;
      case K::kAlt:
        if (depth == 0) return false;  // a top-level alternation is not one concatenation
        break;
      case K::kFlags:
        if (depth == 0 && open == SIZE_MAX) {
          directives.append(pattern.substr(tok.begin, tok.end - tok.begin));
        }
        break;
      default:
        break;
    }
  }
  if (depth != 0 || open == SIZE_MAX || close == SIZE_MAX) return false;
  // A quantifier on the group ("(x)+", "(x)?", "(x){2}") repeats or skips it.
  if (close + 1 < tokens.size() && tokens[close + 1].kind == K::kQuant) return false;
  out->before = std::string(pattern.substr(0, tokens[open].begin));
  out->after = directives;
  out->after.append(pattern.substr(tokens[close].end));
  return true;
}

bool MayHaveAssertions(std::string_view pattern) {
  std::vector<Token> tokens;
  if (!Tokenize(pattern, &tokens)) return true;
  for (const Token& t : tokens) {
    if (t.kind == Token::Kind::kAssert) return true;
  }
  return false;
}

std::vector<bool> LabelGroups(std::string_view pattern) {
  using K = Token::Kind;
  std::vector<Token> tokens;
  if (!Tokenize(pattern, &tokens)) return {};
  // A token that matches one fixed string.
  auto literal = [&](const Token& t) {
    const std::string_view x = pattern.substr(t.begin, t.end - t.begin);
    if (x[0] == '[' || x == ".") return false;
    if (x[0] != '\\') return true;
    if (x.size() < 2) return false;
    const char e = x[1];
    if (e == 'Q' || e == 'x' || e == 'n' || e == 't' || e == 'r' || e == 'f' || e == 'v' ||
        e == 'a') {
      return true;
    }
    // Escaped punctuation is a literal; \d \w \s \pL \C and the like are classes.
    return !((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'));
  };
  auto repeats = [&](size_t t) {  // the quantifier token t repeats (max > 1)
    const std::string_view q = pattern.substr(tokens[t].begin);
    if (q[0] == '*' || q[0] == '+') return true;
    if (q[0] != '{') return false;
    const size_t close = q.find('}');
    if (close == std::string_view::npos) return false;
    const std::string_view body = q.substr(1, close - 1);
    const size_t comma = body.find(',');
    if (comma == std::string_view::npos) return body != "0" && body != "1";
    const std::string_view max = body.substr(comma + 1);
    return max.empty() || (max != "0" && max != "1");
  };
  struct Open {
    size_t token;
    int capture;  // 0: not a capturing group
    bool literal = true;
  };
  std::vector<bool> label(1, false);
  std::vector<Open> stack;
  int captures = 0;
  // Per capture: the token range of its body, to mark repeated enclosing groups' captures.
  std::vector<std::pair<size_t, size_t>> body(1);
  for (size_t t = 0; t < tokens.size(); ++t) {
    const Token& tok = tokens[t];
    switch (tok.kind) {
      case K::kOpenCapture:
        stack.push_back({t, ++captures});
        label.push_back(false);
        body.emplace_back(t, t);
        break;
      case K::kOpenGroup:
        stack.push_back({t, 0});
        break;
      case K::kClose: {
        if (stack.empty()) return std::vector<bool>(captures + 1, false);
        const Open open = stack.back();
        stack.pop_back();
        if (open.capture > 0) {
          body[open.capture].second = t;
          label[open.capture] = open.literal;
        }
        const bool repeated =
            t + 1 < tokens.size() && tokens[t + 1].kind == K::kQuant && repeats(t + 1);
        if (repeated) {
          for (int c = 1; c <= captures; ++c) {
            if (body[c].first >= open.token && body[c].second <= t) label[c] = true;
          }
        }
        // The enclosing group stays literal only if this one was and is not quantified.
        if (!stack.empty() &&
            (!open.literal || (t + 1 < tokens.size() && tokens[t + 1].kind == K::kQuant))) {
          stack.back().literal = false;
        }
        break;
      }
      case K::kQuant:
        if (!stack.empty()) stack.back().literal = false;
        break;
      case K::kOther:
        if (!stack.empty() && !literal(tok)) stack.back().literal = false;
        break;
      default:  // kAlt, kFlags, kAssert: still fixed text
        break;
    }
  }
  if (!stack.empty()) return std::vector<bool>(captures + 1, false);
  return label;
}

namespace {

// The language of a regex element, as far as LeadingLiterals needs it: `strings` is a set of
// prefixes one of which each match of the element starts with; `complete` says the element's
// matches are exactly those strings (so what follows can be appended).
struct Lead {
  std::set<std::string> strings;
  bool complete = true;
};

// Recursive descent over the pattern subset LeadingLiterals understands. Anything else gives
// {""} (no information) and stops the concatenation it is in.
class LeadParser {
 public:
  LeadParser(std::string_view p, size_t max_strings) : p_(p), max_(max_strings) {}

  // alternation := concat ('|' concat)*, up to ')' or the end.
  bool Alternation(Lead* out) {
    out->strings.clear();
    out->complete = true;
    for (;;) {
      Lead branch;
      if (!Concat(&branch)) return false;
      out->strings.insert(branch.strings.begin(), branch.strings.end());
      out->complete &= branch.complete;
      if (out->strings.size() > max_) return false;
      if (i_ < p_.size() && p_[i_] == '|') {
        ++i_;
        continue;
      }
      return true;
    }
  }

  size_t pos() const { return i_; }

 private:
  // Strings stop growing at this length (callers want short prefixes; a{1000}{1000} must not
  // build a megabyte string).
  static constexpr size_t kMaxLength = 64;

  static bool IsMeta(char c) {
    return std::string_view("\\.+*?()|[]{}^$").find(c) != std::string_view::npos;
  }
  static char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }
  static bool Printable(char c) { return c > 0x20 && c < 0x7f; }

  // concat := item*, up to '|' or ')' or the end. Once an item is not complete, the rest is
  // skipped (still parsed, so that the caller finds its '|' or ')').
  bool Concat(Lead* out) {
    out->strings = {""};
    out->complete = true;
    while (i_ < p_.size() && p_[i_] != '|' && p_[i_] != ')') {
      Lead item;
      if (!Item(&item)) return false;
      if (!out->complete) continue;
      std::set<std::string> next;
      if (!Product(out->strings, item.strings, &next)) {  // keep the prefixes found so far
        out->complete = false;
        continue;
      }
      out->strings = std::move(next);
      out->complete = item.complete;
    }
    return true;
  }

  // One element with its quantifier.
  bool Item(Lead* out) {
    const char c = p_[i_];
    Lead atom;
    bool zero_width = false;
    if (c == '(') {
      if (!Group(&atom, &zero_width)) return false;
    } else if (c == '[') {
      if (!Class(&atom)) return false;
    } else if (c == '\\') {
      if (i_ + 1 >= p_.size()) return false;
      const char e = p_[i_ + 1];
      if (e == 'b' || e == 'B' || e == 'A') {  // assertions consume nothing
        zero_width = true;
        i_ += 2;
      } else if (const size_t n = HexOrPropertyEscape(i_)) {
        atom.strings = {""};  // \x41, \p{L}: not read
        atom.complete = false;
        i_ += n;
      } else if (e == 'Q' || e == 'p' || e == 'P' || e == 'x' || e == 'z' || e == 'C' ||
                 (e >= '0' && e <= '9')) {
        return false;  // rare here (octal, \Q...\E, a cut-off escape); not worth parsing
      } else if (Printable(e) &&
                 !((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))) {
        atom.strings = {std::string(1, e)};
        i_ += 2;
      } else {  // \d \w \s \n ...: many bytes, or a byte this scanner keeps out of its strings
        atom.strings = {""};
        atom.complete = false;
        i_ += 2;
      }
    } else if (c == '^' || c == '$') {
      zero_width = true;
      ++i_;
    } else if (c == '.') {
      atom.strings = {""};
      atom.complete = false;
      ++i_;
    } else if (IsMeta(c)) {
      return false;  // a quantifier with nothing before it, or an unbalanced bracket
    } else {
      const unsigned char u = static_cast<unsigned char>(c);
      if (u >= 0x80 || !Printable(c)) {
        atom.strings = {""};
        atom.complete = false;
      } else {
        atom.strings = {std::string(1, Lower(c))};
      }
      ++i_;
    }
    if (zero_width) {
      out->strings = {""};
      out->complete = true;
      if (i_ < p_.size() && (p_[i_] == '*' || p_[i_] == '+' || p_[i_] == '?' || p_[i_] == '{')) {
        return false;
      }
      return true;
    }
    return Quantifier(atom, out);
  }

  bool Quantifier(const Lead& atom, Lead* out) {
    *out = atom;
    if (i_ >= p_.size()) return true;
    const char q = p_[i_];
    size_t min = 1, max = 1;
    if (q == '?') {
      min = 0;
      ++i_;
    } else if (q == '*') {
      min = 0, max = SIZE_MAX;
      ++i_;
    } else if (q == '+') {
      max = SIZE_MAX;
      ++i_;
    } else if (q == '{') {
      size_t j = i_ + 1;
      auto number = [&](size_t* v) {
        size_t start = j;
        *v = 0;
        while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9' && j - start < 5)
          *v = *v * 10 + (p_[j++] - '0');
        return j > start;
      };
      if (!number(&min)) {  // RE2 reads a '{' that does not start a repeat as a literal
        return false;
      }
      max = min;
      if (j < p_.size() && p_[j] == ',') {
        ++j;
        if (!number(&max)) max = SIZE_MAX;
      }
      if (j >= p_.size() || p_[j] != '}') return false;
      i_ = j + 1;
    } else {
      return true;
    }
    if (i_ < p_.size() && (p_[i_] == '?' || p_[i_] == '+')) ++i_;  // lazy (or possessive)
    if (min == 0) {
      if (max == 1 && atom.complete) {  // x? : x or nothing
        out->strings = atom.strings;
        out->strings.insert("");
        out->complete = true;
      } else {
        out->strings = {""};
        out->complete = false;
      }
      return true;
    }
    // atom^min; when max > min, what follows is unknown.
    std::set<std::string> acc = {""};
    for (size_t k = 0; k < min; ++k) {
      std::set<std::string> next;
      if (!Product(acc, atom.strings, &next)) {  // the copies so far are a prefix
        out->strings = std::move(acc);
        out->complete = false;
        return true;
      }
      acc = std::move(next);
      if (!atom.complete) break;  // later copies start after an unknown point
    }
    out->strings = std::move(acc);
    out->complete = atom.complete && max == min;
    return true;
  }

  // Every a + b into *out; false (and *out unspecified) when that makes more than max_ strings
  // or one longer than kMaxLength.
  bool Product(const std::set<std::string>& as, const std::set<std::string>& bs,
               std::set<std::string>* out) const {
    for (const auto& a : as) {
      for (const auto& b : bs) {
        if (a.size() + b.size() > kMaxLength) return false;
        out->insert(a + b);
        if (out->size() > max_) return false;
      }
    }
    return true;
  }

  bool Group(Lead* out, bool* zero_width) {
    // Each level is a few stack frames; RE2 itself takes deeper nesting from a rules file.
    if (++depth_ > kMaxDepth) return false;
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    ++i_;  // '('
    if (i_ < p_.size() && p_[i_] == '?') {
      size_t j = i_ + 1;
      if (j < p_.size() && (p_[j] == 'P' || p_[j] == '<')) {  // named capture
        size_t q = p_.find('>', j);
        if (q == std::string_view::npos) return false;
        i_ = q + 1;
      } else {
        while (j < p_.size() &&
               ((p_[j] >= 'a' && p_[j] <= 'z') || (p_[j] >= 'A' && p_[j] <= 'Z') || p_[j] == '-'))
          ++j;
        if (j >= p_.size()) return false;
        if (p_[j] == ')') {  // (?i): flags change no byte a match can start with, ignoring case
          i_ = j + 1;
          *zero_width = true;
          return true;
        }
        if (p_[j] != ':') return false;
        i_ = j + 1;
      }
    }
    if (!Alternation(out)) return false;
    if (i_ >= p_.size() || p_[i_] != ')') return false;
    ++i_;
    return true;
  }

  // A class of a few literal ASCII bytes (ranges allowed): each byte is a string. Anything in
  // it that needs more than a byte-by-byte reading ('[' of [:alpha:] or a literal '[', escapes
  // of letters or digits such as \w, \x7e, \p{L}) gives up the whole analysis: a misread would
  // put the class's end in the wrong place.
  bool Class(Lead* out) {
    size_t j = i_ + 1;
    bool many = false;  // the class may match more bytes than listed: no strings from it
    if (j < p_.size() && p_[j] == '^') {  // negated: most bytes
      many = true;
      ++j;
    }
    // One class member at j (a byte or an escaped punctuation byte) into *c, or '\0' for a
    // two-character escape that stands for many or unlisted bytes (\w \d \s \t ...); false
    // for anything else.
    auto member = [&](char* c) {
      if (j >= p_.size() || p_[j] == '[') return false;
      if (p_[j] != '\\') {
        *c = p_[j++];
        return true;
      }
      if (j + 1 >= p_.size()) return false;
      const char e = p_[j + 1];
      if (const size_t n = HexOrPropertyEscape(j)) {
        *c = '\0';  // \x60, \p{L}: not read, so not listed
        j += n;
        return true;
      }
      if (std::string_view("dDwWsSafnrtv").find(e) != std::string_view::npos) {
        *c = '\0';
      } else if (Printable(e) && !(e >= 'a' && e <= 'z') && !(e >= 'A' && e <= 'Z') &&
                 !(e >= '0' && e <= '9')) {
        *c = e;
      } else {
        return false;  // \123 and other escapes of letters or digits
      }
      j += 2;
      return true;
    };
    std::set<std::string> bytes;
    bool first = true;
    while (j < p_.size() && (p_[j] != ']' || first)) {
      first = false;
      char c = 0;
      if (!member(&c)) return false;
      char d = c;
      if (j + 1 < p_.size() && p_[j] == '-' && p_[j + 1] != ']') {  // a range c-d
        ++j;
        if (c == '\0' || !member(&d) || d == '\0' || d < c) return false;
      }
      if (!Printable(c) || !Printable(d) || d - c > 16) {
        many = true;  // a space, a non-ASCII byte or a wide range: still skipped correctly
        continue;
      }
      for (char x = c; x <= d; ++x) bytes.insert(std::string(1, Lower(x)));
    }
    if (j >= p_.size()) return false;
    i_ = j + 1;
    if (many || bytes.empty() || bytes.size() > 16) {
      out->strings = {""};
      out->complete = false;
    } else {
      out->strings = std::move(bytes);
    }
    return true;
  }

  // Length of the escape \xHH, \x{...}, \pL or \p{...} (also \P) at j, its backslash; 0 if
  // it is not one of them or is cut off.
  size_t HexOrPropertyEscape(size_t j) const {
    if (j + 2 >= p_.size() || (p_[j + 1] != 'x' && p_[j + 1] != 'p' && p_[j + 1] != 'P')) {
      return 0;
    }
    if (p_[j + 2] == '{') {
      size_t q = p_.find('}', j + 3);
      return q == std::string_view::npos ? 0 : q + 1 - j;
    }
    const size_t n = p_[j + 1] == 'x' ? 4 : 3;  // \xHH, \pL
    return j + n <= p_.size() ? n : 0;
  }

  static constexpr int kMaxDepth = 64;
  std::string_view p_;
  size_t max_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

bool LeadingLiterals(std::string_view pattern, size_t max_strings, size_t min_length,
                     std::vector<std::string>* out) {
  LeadParser parser(pattern, max_strings);
  Lead lead;
  if (!parser.Alternation(&lead) || parser.pos() != pattern.size()) return false;
  if (lead.strings.empty() || lead.strings.size() > max_strings) return false;
  out->clear();
  for (const auto& s : lead.strings) {
    if (s.size() < min_length) return false;
    out->push_back(s);
  }
  return true;
}

}  // namespace contextd::scrub::internal
