// Fuzz target: internal::MeasurePattern against RE2 itself. The input is a pattern and a text
// (the first byte says where the pattern ends); when RE2 compiles the pattern and
// MeasurePattern answers, every match RE2 finds at any start (leftmost-first and longest) must
// stay within its bounds: bytes, newlines, and newlines followed by another byte of the match.
#include <re2/re2.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "scrub/internal/regex_split.h"

namespace {

void Check(const contextd::scrub::internal::PatternExtent& e, std::string_view m) {
  const size_t newlines = std::count(m.begin(), m.end(), '\n');
  const size_t inner = newlines - (!m.empty() && m.back() == '\n' ? 1 : 0);
  if (m.size() > e.max_bytes || newlines > e.max_newlines || inner > e.max_inner_newlines) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 1024) return 0;
  const size_t split = 1 + data[0] % (size - 1);
  const std::string pattern(reinterpret_cast<const char*>(data) + 1, split - 1);
  const std::string text(reinterpret_cast<const char*>(data) + split,
                         std::min<size_t>(size - split, 256));
  contextd::scrub::internal::PatternExtent extent;
  if (!contextd::scrub::internal::MeasurePattern(pattern, &extent)) return 0;
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(1 << 20);
  RE2 first(pattern, options);
  if (!first.ok()) return 0;
  options.set_longest_match(true);
  RE2 longest(pattern, options);
  const re2::StringPiece sp(text.data(), text.size());
  for (size_t p = 0; p <= text.size(); ++p) {
    re2::StringPiece m;
    if (first.Match(sp, p, text.size(), RE2::ANCHOR_START, &m, 1)) Check(extent, m);
    if (longest.ok() && longest.Match(sp, p, text.size(), RE2::ANCHOR_START, &m, 1)) {
      Check(extent, m);
    }
  }
  return 0;
}
