// RawJson: a strict RFC 8259 validator that keeps byte spans instead of building values. The
// model gateway rewrites a few content blocks of requests that are hundreds of kilobytes long and
// must send everything else byte for byte as the client sent it (thinking blocks are bound to the
// exact prefix, prompt caches to its bytes), so it navigates the request by offsets and copies
// untouched spans. One pass validates the whole document and records the structure of its first
// `record_depth` levels; deeper values are validated and spanned but not listed.
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace contextd::model {

enum class JsonType : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

// One value of the document: [begin, end) in bytes. Members of an object carry the span of their
// key token (quotes included) and `member_begin`, where the member starts (its key's quote).
struct RawNode {
  JsonType type = JsonType::kNull;
  uint32_t begin = 0;
  uint32_t end = 0;
  uint32_t key_begin = 0;
  uint32_t key_end = 0;
  std::vector<RawNode> children;  // elements or members, when within record_depth

  std::string_view Text(std::string_view doc) const { return doc.substr(begin, end - begin); }
  std::string_view KeyToken(std::string_view doc) const {
    return doc.substr(key_begin, key_end - key_begin);
  }
};

// Largest document accepted (offsets are 32-bit).
inline constexpr size_t kMaxRawJsonBytes = size_t{1} << 31;

// Validates `doc` as exactly one JSON value (whitespace around it allowed) nested at most
// `max_depth` deep, and returns its root with children listed for the first `record_depth`
// levels (1: the root's children). InvalidArgument "invalid JSON at byte N: <what>" otherwise.
absl::StatusOr<RawNode> ParseRawJson(std::string_view doc, int record_depth, int max_depth = 256);

// The decoded text of a string token (quotes included, as validated by ParseRawJson); lone
// surrogate escapes become U+FFFD.
std::string DecodeJsonString(std::string_view token);

// True if the member's key decodes to `key`.
bool KeyIs(std::string_view doc, const RawNode& member, std::string_view key);

// The member named `key` of an object node with recorded children, or nullptr.
const RawNode* FindMember(std::string_view doc, const RawNode& object, std::string_view key);

// The decoded string value of member `key`, or nullopt when absent or not a string.
std::optional<std::string> StringMember(std::string_view doc, const RawNode& object,
                                        std::string_view key);

// `text` as a JSON string token (quotes included), escaping what RFC 8259 requires and nothing
// else (non-ASCII stays UTF-8).
std::string QuoteJsonString(std::string_view text);

}  // namespace contextd::model
