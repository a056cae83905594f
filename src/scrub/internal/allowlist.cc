// Allowlists and entropy: whether a candidate finding is dropped (see engine.h).

#include <cmath>
#include <string>
#include <unordered_map>

#include "scrub/internal/engine.h"

namespace contextd::scrub::internal {

bool ContainsMatch(const RE2& re, std::string_view s) {
  return re.Match(re2::StringPiece(s.data(), s.size()), 0, s.size(), RE2::UNANCHORED, nullptr, 0);
}

bool Engine::NeedsSecret(const CompiledAllowlist& a) {
  return !a.stopwords.empty() || (!a.regexes.empty() && a.target == RegexTarget::kSecret);
}

bool Engine::AllowlistMatches(const CompiledAllowlist& a, std::string_view secret,
                              std::string_view match, std::string_view line,
                              std::string_view path) const {
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

bool Engine::Allowed(const CompiledRule& r, Phase phase, std::string_view text, size_t ms,
                     size_t me, std::string_view secret, std::string_view path) const {
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

bool Engine::SurelyAllowed(const CompiledRule& r, std::string_view inner) const {
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

}  // namespace contextd::scrub::internal

namespace contextd::scrub {

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

}  // namespace contextd::scrub
