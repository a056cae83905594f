// Fuzz target: internal::LeadingLiterals against RE2 itself. The input is a pattern and an ASCII
// text (the first byte says where the pattern ends); when RE2 compiles the pattern and
// LeadingLiterals answers, every place in the text where an anchored match starts must begin
// with one of its strings, ignoring ASCII case (the scanner tries anchored matches only there).
#include <re2/re2.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "scrub/internal/regex_split.h"

namespace {

bool StartsWithFolded(std::string_view text, std::string_view prefix) {
  if (prefix.size() > text.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    if (c != prefix[i]) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 1024) return 0;
  const size_t split = 1 + data[0] % (size - 1);
  std::string pattern(reinterpret_cast<const char*>(data) + 1, split - 1);
  std::string text;
  for (size_t i = split; i < size && text.size() < 256; ++i) text.push_back(data[i] & 0x7f);
  std::vector<std::string> leads;
  if (!contextd::scrub::internal::LeadingLiterals(pattern, 64, 1, &leads)) return 0;
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(1 << 20);
  RE2 re(pattern, options);
  if (!re.ok()) return 0;
  const re2::StringPiece sp(text.data(), text.size());
  for (size_t p = 0; p <= text.size(); ++p) {
    if (!re.Match(sp, p, text.size(), RE2::ANCHOR_START, nullptr, 0)) continue;
    bool covered = false;
    for (const std::string& lead : leads) covered |= StartsWithFolded(sp.substr(p), lead);
    if (!covered) std::abort();
  }
  return 0;
}
