// Fuzz target: WithholdPrivate on arbitrary bytes never crashes, is idempotent, matches a
// straightforward byte-mask model of the tag rules, leaves tag-free text alone, and never lets
// out a sentinel placed inside a span (or before a closing tag) anywhere in the input.
// Input: byte 0 picks where the sentinel goes in the rest.
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "scrub/private_spans.h"

namespace {

using contextd::scrub::ContainsPrivate;
using contextd::scrub::kWithheldPrivate;
using contextd::scrub::WithholdPrivate;

constexpr std::string_view kSentinel = "\x01SENTINEL-PRIVATE-7f3a\x02";

bool StartsCi(std::string_view t, size_t p, std::string_view word) {
  if (p + word.size() > t.size()) return false;
  for (size_t k = 0; k < word.size(); ++k) {
    if (std::tolower(static_cast<unsigned char>(t[p + k])) != word[k]) return false;
  }
  return true;
}

bool Space(char c) {
  return c != '\0' && std::string_view(" \t\n\r\f\v").find(c) != std::string_view::npos;
}

// The model: which bytes are withheld, then each maximal run of them becomes one marker.
std::string Model(std::string_view t) {
  const size_t n = t.size();
  std::vector<bool> mark(n, false);
  auto set = [&](size_t a, size_t b) {
    for (size_t k = a; k < b; ++k) mark[k] = true;
  };
  size_t depth = 0, start = 0, i = 0;
  bool to_end = false;
  while (i < n && !to_end) {
    if (t[i] != '<') {
      ++i;
      continue;
    }
    if (StartsCi(t, i, "</private")) {
      size_t p = i + 9;
      while (p < n && Space(t[p])) ++p;
      if (p < n && t[p] == '>') {
        if (depth == 0) {
          set(0, p + 1);
        } else if (--depth == 0) {
          set(start, p + 1);
        }
        i = p + 1;
        continue;
      }
    } else if (StartsCi(t, i, "<private") && i + 8 < n && (t[i + 8] == '>' || Space(t[i + 8]))) {
      if (depth++ == 0) start = i;
      size_t gt = t.find('>', i + 8);
      if (gt == std::string_view::npos) {
        to_end = true;
        break;
      }
      i = gt + 1;
      continue;
    }
    ++i;
  }
  if (depth > 0) set(start, n);
  std::string out;
  for (size_t k = 0; k < n; ++k) {
    if (!mark[k]) {
      out.push_back(t[k]);
    } else if (k == 0 || !mark[k - 1]) {
      out.append(kWithheldPrivate);
    }
  }
  return out;
}

void CheckSentinelWithheld(const std::string& text) {
  if (WithholdPrivate(text).find(kSentinel) != std::string::npos) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t at_byte = data[0];
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string once = WithholdPrivate(in);
  if (WithholdPrivate(once) != once) std::abort();
  if (once != Model(in)) std::abort();
  if (ContainsPrivate(in) != ContainsPrivate(once)) std::abort();
  if (!ContainsPrivate(in) && once != in) std::abort();
  if (in.find(kSentinel) == std::string_view::npos) {
    size_t at = at_byte * in.size() / 256;
    std::string head(in.substr(0, at));
    std::string_view tail = in.substr(at);
    CheckSentinelWithheld(head + "<private>" + std::string(kSentinel) + "</private>" +
                          std::string(tail));
    CheckSentinelWithheld(head + std::string(kSentinel) + "</private>" + std::string(tail));
    CheckSentinelWithheld(head + "<PRIVATE reason=x>" + std::string(kSentinel));
  }
  return 0;
}
