// RawJson: a strict RFC 8259 validator that keeps byte spans instead of building values. The
// model gateway rewrites a few content blocks of requests that are hundreds of kilobytes long and
// must send everything else byte for byte as the client sent it (thinking blocks are bound to the
// exact prefix, prompt caches to its bytes), so it navigates the request by offsets and copies
// untouched spans. One pass validates the whole document and records the structure of its first
// `record_depth` levels; deeper values are validated and spanned but not listed.
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <functional>
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

// Narrows what is recorded below one member: called with the depth of the object, the member's
// key token (quotes included) and the limit in force; returns the limit for the member's value
// (the children of values nested less deep than the limit are recorded). Lets a caller skip
// the parts it never navigates (a tool's JSON Schema) without skipping their validation.
using RecordPolicy = std::function<int(int depth, std::string_view key_token, int limit)>;

// Elements known from an earlier parse of a document with the same bytes up to their end: the
// array starting at byte `begin` takes `count` elements from `donor` (moved, so the donor is
// spent) instead of scanning them again. For a conversation resent with a new tail.
struct ArrayReuse {
  uint32_t begin = 0;
  std::vector<RawNode>* donor = nullptr;
  size_t count = 0;
};

// Validates `doc` as exactly one JSON value (whitespace around it allowed) nested at most
// `max_depth` deep, and returns its root with children listed for the first `record_depth`
// levels (1: the root's children), as `policy` (may be null) narrows them. InvalidArgument
// "invalid JSON at byte N: <what>" otherwise. With `reuse`, the elements it names are taken as
// valid: the caller vouches that their bytes are those of the donor's document.
absl::StatusOr<RawNode> ParseRawJson(std::string_view doc, int record_depth, int max_depth = 256,
                                     const RecordPolicy* policy = nullptr,
                                     ArrayReuse* reuse = nullptr);

// The decoded text of a string token (quotes included, as validated by ParseRawJson); lone
// surrogate escapes become U+FFFD. With `max_bytes`, decoding stops once that much is decoded
// (the result may end in the middle of a UTF-8 sequence, and may exceed it by one character).
std::string DecodeJsonString(std::string_view token, size_t max_bytes = std::string::npos);

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

// One replacement of the bytes [begin, end) of a document by `text`.
struct SpanEdit {
  uint32_t begin = 0;
  uint32_t end = 0;
  std::string_view text;
};

// The bytes [begin, end) of `doc` with `edits` applied (each within that range; in any order).
// An edit that starts before the end of an earlier one is dropped.
std::string Splice(std::string_view doc, uint32_t begin, uint32_t end, std::vector<SpanEdit> edits);

}  // namespace contextd::model
