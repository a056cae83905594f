// Foreign text: bytes that came from a client, an upstream, a file or the database, made safe
// to put in JSON, a log line or an error message. Such bytes need not be UTF-8, and nlohmann's
// dump() throws (type_error 316) on a string that is not: DumpJson is the one way contextd
// serialises JSON that may hold foreign strings. Header functions are pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace contextd::base {

// `bytes` with every byte that is not part of a well-formed UTF-8 sequence (stray continuation
// bytes, truncated sequences, overlong forms, surrogates, code points past U+10FFFF) replaced by
// U+FFFD. Valid UTF-8 comes back unchanged.
std::string ToValidUtf8(std::string_view bytes);

// The length of the well-formed UTF-8 sequence that starts at `s[i]` (1 for ASCII), or 0 when
// none does (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF). i < s.size().
size_t Utf8SequenceLength(std::string_view s, size_t i);

// True when `bytes` is well-formed UTF-8.
bool IsValidUtf8(std::string_view bytes);

// Appends code point `cp` (at most U+10FFFF; the caller has checked it) to `out` as UTF-8.
void AppendUtf8(uint32_t cp, std::string& out);

// The JSON text of `value` (an nlohmann::json or ordered_json), compact by default or indented
// by `indent` spaces; invalid UTF-8 in its strings is replaced by U+FFFD instead of throwing.
template <typename BasicJson>
std::string DumpJson(const BasicJson& value, int indent = -1) {
  return value.dump(indent, ' ', false, BasicJson::error_handler_t::replace);
}

}  // namespace contextd::base
