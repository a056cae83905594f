// Fuzz target: Scrub with decoding on text whose pieces are encoded, so that the fuzzer reaches
// decoded secrets, nested encodings and markers next to encoded runs, which random bytes seldom
// form. Checks what scrub_fuzzer checks: Scrub is idempotent, the output grows only by markers,
// findings lie in the input with the secret inside the match, and text without findings is
// returned unchanged.
// Input: pieces separated by '\x01'; the first byte of a piece says how the rest is written:
// as is, base64, URL-safe base64 without padding, hex, percent-escaped (all bytes or only
// non-alphanumeric ones), or base64 of the percent-escaped piece.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "scrub/rule_scrubber.h"

namespace {

const contextd::scrub::RuleScrubber& Scrubber() {
  static const auto s = [] {
    auto b = contextd::scrub::BuildScrubber(contextd::scrub::ScrubConfig{});
    if (!b.ok()) std::abort();
    return *b;
  }();
  return *s;
}

std::string Base64(std::string_view in, bool url) {
  const char* abc = url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                        : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<uint8_t>(in[i])} << 16) |
                       (uint32_t{static_cast<uint8_t>(in[i + 1])} << 8) |
                       static_cast<uint8_t>(in[i + 2]);
    for (int k = 3; k >= 0; --k) out.push_back(abc[(v >> (6 * k)) & 63]);
  }
  const size_t rest = in.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{static_cast<uint8_t>(in[i])} << 16;
    if (rest == 2) v |= uint32_t{static_cast<uint8_t>(in[i + 1])} << 8;
    out.push_back(abc[(v >> 18) & 63]);
    out.push_back(abc[(v >> 12) & 63]);
    if (rest == 2) out.push_back(abc[(v >> 6) & 63]);
    if (!url) out.append(3 - rest, '=');
  }
  return out;
}

std::string Hex(std::string_view in) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (char c : in) {
    out.push_back(d[static_cast<uint8_t>(c) >> 4]);
    out.push_back(d[static_cast<uint8_t>(c) & 15]);
  }
  return out;
}

std::string Percent(std::string_view in, bool all) {
  static const char* d = "0123456789ABCDEF";
  std::string out;
  for (char c : in) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!all && alnum) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(d[static_cast<uint8_t>(c) >> 4]);
      out.push_back(d[static_cast<uint8_t>(c) & 15]);
    }
  }
  return out;
}

size_t MarkerBytes(std::string_view text) {
  size_t total = 0;
  for (size_t pos = text.find("[REDACTED:"); pos != std::string_view::npos;
       pos = text.find("[REDACTED:", pos + 1)) {
    size_t len = 0;
    if (contextd::scrub::ParseMarker(text, pos, &len)) total += len;
  }
  return total;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string text;
  size_t start = 0;
  while (start <= input.size()) {
    size_t end = input.find('\x01', start);
    if (end == std::string_view::npos) end = input.size();
    const std::string_view piece = input.substr(start, end - start);
    if (!piece.empty()) {
      const std::string_view body = piece.substr(1);
      switch (static_cast<uint8_t>(piece[0]) % 7) {
        case 1:
          text += Base64(body, false);
          break;
        case 2:
          text += Base64(body, true);
          break;
        case 3:
          text += Hex(body);
          break;
        case 4:
          text += Percent(body, true);
          break;
        case 5:
          text += Percent(body, false);
          break;
        case 6:
          text += Base64(Percent(body, false), false);
          break;
        default:
          text += body;
      }
    }
    start = end + 1;
  }
  const auto& s = Scrubber();
  const std::string once = s.Scrub(text);
  if (s.Scrub(once) != once) std::abort();
  if (once.size() > text.size() + MarkerBytes(once)) std::abort();
  const auto found = s.Scan(text);
  for (const auto& f : found) {
    if (f.start >= f.end || f.end > text.size() || f.match_start > f.start || f.match_end < f.end) {
      std::abort();
    }
  }
  if (found.empty() && once != text) std::abort();
  return 0;
}
