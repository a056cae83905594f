// UTF-8 validation and repair: invalid byte sequences become U+FFFD exactly as Python's
// bytes.decode('utf-8', 'replace') (and the WHATWG decoder) do, one U+FFFD per maximal subpart of
// an ill-formed sequence (Unicode 15, section 3.9). Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace contextd::tokens::internal {

// Whether `s` is entirely well-formed UTF-8.
bool IsValidUtf8(std::string_view s);

// Returns `s` with every maximal subpart of an ill-formed sequence replaced by U+FFFD (EF BF BD).
std::string ReplaceInvalidUtf8(std::string_view s);

// Decodes the code point at `p` of well-formed UTF-8; stores its byte length in `*len`.
inline uint32_t DecodeValid(const uint8_t* p, size_t* len) {
  uint8_t b = p[0];
  if (b < 0x80) {
    *len = 1;
    return b;
  }
  if (b < 0xE0) {
    *len = 2;
    return ((b & 0x1Fu) << 6) | (p[1] & 0x3Fu);
  }
  if (b < 0xF0) {
    *len = 3;
    return ((b & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
  }
  *len = 4;
  return ((b & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
}

}  // namespace contextd::tokens::internal
