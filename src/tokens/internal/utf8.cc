#include "tokens/internal/utf8.h"

#include <cstring>

namespace contextd::tokens::internal {
namespace {

// Returns the number of bytes that form a maximal subpart of a well-formed sequence starting at
// `p` (at least 1) and sets *ok when the whole sequence is well-formed.
size_t Scan(const uint8_t* p, size_t n, bool* ok) {
  *ok = false;
  uint8_t b = p[0];
  if (b < 0x80) {
    *ok = true;
    return 1;
  }
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (Table 3-7)
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 2;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 3;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 1;  // C0, C1, F5..FF, or a stray continuation byte
  }
  size_t i = 1;
  for (; i <= need; ++i) {
    if (i >= n) return i;
    uint8_t c = p[i];
    uint8_t l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
    if (c < l || c > h) return i;
  }
  *ok = true;
  return i;
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    // Skip ASCII eight bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    bool ok;
    size_t len = Scan(p + i, n - i, &ok);
    if (!ok) return false;
    i += len;
  }
  return true;
}

std::string ReplaceInvalidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t n = s.size(), i = 0;
  std::string out;
  out.reserve(n + n / 2);
  while (i < n) {
    bool ok;
    size_t len = Scan(p + i, n - i, &ok);
    if (ok) {
      out.append(s.data() + i, len);
    } else {
      out.append("\xEF\xBF\xBD");
    }
    i += len;
  }
  return out;
}

}  // namespace contextd::tokens::internal
