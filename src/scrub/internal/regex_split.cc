#include "scrub/internal/regex_split.h"

#include <cstddef>
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

}  // namespace contextd::scrub::internal
