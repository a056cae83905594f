#include "model/raw_json.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/foreign_text.h"
#include "base/json_keys.h"

namespace contextd::model {
namespace {

class Parser {
 public:
  Parser(std::string_view doc, int record_depth, int max_depth, const RecordPolicy* policy,
         ArrayReuse* reuse)
      : doc_(doc),
        p_(doc.data()),
        end_(doc.data() + doc.size()),
        record_depth_(record_depth),
        max_depth_(max_depth),
        policy_(policy),
        reuse_(reuse) {}

  absl::StatusOr<RawNode> Run() {
    if (doc_.size() >= kMaxRawJsonBytes)
      return absl::InvalidArgumentError("JSON document too large");
    SkipSpace();
    RawNode root;
    if (!Value(root, 0, record_depth_)) return Error();
    SkipSpace();
    if (p_ != end_ && error_.empty()) Fail("unexpected data after the JSON value");
    if (!error_.empty()) return Error();
    return root;
  }

 private:
  absl::Status Error() {
    if (duplicate_) {
      // The path was collected innermost first, as the walk unwound.
      std::reverse(duplicate_->path.begin(), duplicate_->path.end());
      return absl::InvalidArgumentError(duplicate_->Describe());
    }
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON at byte ", error_at_, ": ", error_));
  }
  bool Fail(const char* what) {
    if (error_.empty()) {
      error_ = what;
      error_at_ = static_cast<size_t>(p_ - doc_.data());
    }
    return false;
  }
  uint32_t Offset() const { return static_cast<uint32_t>(p_ - doc_.data()); }
  void SkipSpace() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  // `limit`: the children of values nested less deep than this are recorded.
  bool Value(RawNode& node, int depth, int limit) {
    if (p_ == end_) return Fail("unexpected end of input");
    node.begin = Offset();
    switch (*p_) {
      case '{':
        node.type = JsonType::kObject;
        if (!Object(node, depth, limit)) return false;
        break;
      case '[':
        node.type = JsonType::kArray;
        if (!Array(node, depth, limit)) return false;
        break;
      case '"':
        node.type = JsonType::kString;
        if (!String()) return false;
        break;
      case 't':
        node.type = JsonType::kBool;
        if (!Literal("true")) return false;
        break;
      case 'f':
        node.type = JsonType::kBool;
        if (!Literal("false")) return false;
        break;
      case 'n':
        node.type = JsonType::kNull;
        if (!Literal("null")) return false;
        break;
      default:
        node.type = JsonType::kNumber;
        if (!Number()) return false;
        break;
    }
    node.end = Offset();
    return true;
  }

  bool Literal(const char* word) {
    size_t n = std::strlen(word);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) {
      return Fail("invalid literal");
    }
    p_ += n;
    return true;
  }

  bool Digits() {
    if (p_ == end_ || *p_ < '0' || *p_ > '9') return Fail("digit expected");
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return true;
  }

  bool Number() {
    if (p_ != end_ && *p_ == '-') ++p_;
    if (p_ == end_) return Fail("digit expected");
    if (*p_ == '0') {
      ++p_;
    } else if (!Digits()) {
      return false;
    }
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (!Digits()) return false;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!Digits()) return false;
    }
    return true;
  }

  static bool IsHex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  }

  bool String() {
    ++p_;  // opening quote
    while (true) {
      // Fast path: plain bytes, 16 at a time where SSE2 is there (every x86-64).
#if defined(__SSE2__)
      while (end_ - p_ >= 16) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p_));
        const __m128i quote = _mm_cmpeq_epi8(x, _mm_set1_epi8('"'));
        const __m128i slash = _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'));
        // Bytes below 0x20: max(x, 0x1F) == 0x1F exactly for them (unsigned).
        const __m128i control =
            _mm_cmpeq_epi8(_mm_max_epu8(x, _mm_set1_epi8(0x1F)), _mm_set1_epi8(0x1F));
        const int mask = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, slash), control));
        if (mask != 0) {
          p_ += __builtin_ctz(static_cast<unsigned>(mask));
          break;
        }
        p_ += 16;
      }
#endif
      while (p_ != end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20) {
        ++p_;
      }
      if (p_ == end_) return Fail("unterminated string");
      char c = *p_;
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c != '\\') return Fail("control character in string");
      ++p_;
      if (p_ == end_) return Fail("unterminated string");
      switch (*p_) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
          ++p_;
          break;
        case 'u':
          ++p_;
          for (int i = 0; i < 4; ++i, ++p_) {
            if (p_ == end_ || !IsHex(*p_)) return Fail("invalid \\u escape");
          }
          break;
        default:
          return Fail("invalid escape");
      }
    }
  }

  // A member name as a path shows it (decoded; the raw token if it cannot be).
  static std::string KeyName(std::string_view token) {
    auto name = base::UnescapeJsonKey(token);
    return name ? *std::move(name) : std::string(token.substr(1, token.size() - 2));
  }

  bool Enter(int depth) {
    if (depth + 1 > max_depth_) return Fail("nested too deeply");
    return true;
  }

  bool Array(RawNode& node, int depth, int limit) {
    if (!Enter(depth)) return false;
    ++p_;
    SkipSpace();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      return true;
    }
    const bool record = depth < limit;
    size_t index = 0;  // of the element being read, for a duplicate key's path
    if (record && reuse_ != nullptr && reuse_->count > 0 && node.begin == reuse_->begin &&
        reuse_->count <= reuse_->donor->size()) {
      // The first elements are those of an earlier parse, byte for byte: take them as they are.
      node.children.reserve(reuse_->donor->size() + 16);
      for (size_t i = 0; i < reuse_->count; ++i) {
        node.children.push_back(std::move((*reuse_->donor)[i]));
      }
      p_ = doc_.data() + node.children.back().end;
      reuse_->donor = nullptr;  // spent: tells the caller they were taken
      reuse_ = nullptr;
      SkipSpace();
      if (p_ == end_) return Fail("unterminated array");
      if (*p_ == ']') {
        ++p_;
        return true;
      }
      if (*p_ != ',') return Fail("',' or ']' expected");
      ++p_;
      index = node.children.size();
    }
    while (true) {
      SkipSpace();
      RawNode scratch;
      RawNode& child = record ? node.children.emplace_back() : scratch;
      if (!Value(child, depth + 1, limit)) {
        if (duplicate_) duplicate_->path.push_back(std::to_string(index));
        return false;
      }
      SkipSpace();
      if (p_ == end_) return Fail("unterminated array");
      if (*p_ == ',') {
        ++p_;
        ++index;
        continue;
      }
      if (*p_ == ']') {
        ++p_;
        return true;
      }
      return Fail("',' or ']' expected");
    }
  }

  bool Object(RawNode& node, int depth, int limit) {
    if (!Enter(depth)) return false;
    ++p_;
    SkipSpace();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    const bool record = depth < limit;
    keys_.Open();
    while (true) {
      SkipSpace();
      if (p_ == end_ || *p_ != '"') return Fail("member name expected");
      uint32_t key_begin = Offset();
      if (!String()) return false;
      uint32_t key_end = Offset();
      // One reading of the document: a second member of the same name is refused, whatever the
      // depth (readers differ on which of the two they keep).
      const std::string_view key_token = doc_.substr(key_begin, key_end - key_begin);
      if (base::JsonKeyVerdict verdict = keys_.Add(key_token);
          verdict != base::JsonKeyVerdict::kNew) {
        duplicate_.emplace();
        duplicate_->key = KeyName(key_token);
        duplicate_->valid_name = verdict == base::JsonKeyVerdict::kDuplicate;
        p_ = doc_.data() + key_begin;
        return Fail("duplicate key");
      }
      SkipSpace();
      if (p_ == end_ || *p_ != ':') return Fail("':' expected");
      ++p_;
      SkipSpace();
      RawNode scratch;
      RawNode& child = record ? node.children.emplace_back() : scratch;
      child.key_begin = key_begin;
      child.key_end = key_end;
      int child_limit = limit;
      if (record && policy_ != nullptr) {
        child_limit = (*policy_)(depth, doc_.substr(key_begin, key_end - key_begin), limit);
      }
      if (!Value(child, depth + 1, child_limit)) {
        if (duplicate_) duplicate_->path.push_back(KeyName(key_token));
        return false;
      }
      SkipSpace();
      if (p_ == end_) return Fail("unterminated object");
      if (*p_ == ',') {
        ++p_;
        continue;
      }
      if (*p_ == '}') {
        ++p_;
        keys_.Close();
        return true;
      }
      return Fail("',' or '}' expected");
    }
  }

  std::string_view doc_;
  const char* p_;
  const char* end_;
  int record_depth_;
  int max_depth_;
  const RecordPolicy* policy_;
  ArrayReuse* reuse_;
  std::string error_;
  size_t error_at_ = 0;
  base::JsonKeyTracker keys_;
  std::optional<base::DuplicateJsonKey> duplicate_;  // set when the walk stopped at one
};

uint32_t Hex4(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    char c = p[i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= static_cast<uint32_t>(c - 'A' + 10);
  }
  return v;
}

}  // namespace

absl::StatusOr<RawNode> ParseRawJson(std::string_view doc, int record_depth, int max_depth,
                                     const RecordPolicy* policy, ArrayReuse* reuse) {
  return Parser(doc, record_depth, max_depth, policy, reuse).Run();
}

std::string DecodeJsonString(std::string_view token, size_t max_bytes) {
  std::string out;
  if (token.size() < 2) return out;
  std::string_view s = token.substr(1, token.size() - 2);
  out.reserve(std::min(s.size(), max_bytes));
  size_t i = 0;
  while (i < s.size() && out.size() < max_bytes) {
    // Runs of plain bytes in one append.
    size_t escape = s.find('\\', i);
    size_t run_end = escape == std::string_view::npos ? s.size() : escape;
    size_t take = std::min(run_end - i, max_bytes - out.size());
    out.append(s.substr(i, take));
    i += take;
    if (i != run_end || escape == std::string_view::npos || escape + 1 >= s.size()) break;
    char e = s[escape + 1];
    i = escape + 2;
    switch (e) {
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        if (escape + 5 >= s.size()) {
          out.append("\xEF\xBF\xBD");
          i = s.size();
          break;
        }
        uint32_t cp = Hex4(s.data() + escape + 2);
        i = escape + 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (i + 5 < s.size() && s[i] == '\\' && s[i + 1] == 'u') {
            uint32_t lo = Hex4(s.data() + i + 2);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              i += 6;
              base::AppendUtf8(cp, out);
              break;
            }
          }
          cp = 0xFFFD;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          cp = 0xFFFD;
        }
        base::AppendUtf8(cp, out);
        break;
      }
      default:
        out.push_back(e);
        break;  // " \ /
    }
  }
  return out;
}

bool KeyIs(std::string_view doc, const RawNode& member, std::string_view key) {
  std::string_view token = member.KeyToken(doc);
  if (token.size() == key.size() + 2 && token.substr(1, key.size()) == key) return true;
  if (token.find('\\') == std::string_view::npos) return false;
  return DecodeJsonString(token) == key;
}

const RawNode* FindMember(std::string_view doc, const RawNode& object, std::string_view key) {
  for (const RawNode& member : object.children) {
    if (KeyIs(doc, member, key)) return &member;
  }
  return nullptr;
}

std::optional<std::string> StringMember(std::string_view doc, const RawNode& object,
                                        std::string_view key) {
  const RawNode* member = FindMember(doc, object, key);
  if (member == nullptr || member->type != JsonType::kString) return std::nullopt;
  return DecodeJsonString(member->Text(doc));
}

std::string QuoteJsonString(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      default:
        if (u < 0x20) {
          out.append("\\u00");
          out.push_back(kHex[u >> 4]);
          out.push_back(kHex[u & 0xF]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

std::string Splice(std::string_view doc, uint32_t begin, uint32_t end,
                   std::vector<SpanEdit> edits) {
  std::sort(edits.begin(), edits.end(),
            [](const SpanEdit& a, const SpanEdit& b) { return a.begin < b.begin; });
  std::string out;
  out.reserve(end - begin);
  uint32_t at = begin;
  for (const SpanEdit& edit : edits) {
    if (edit.begin < at) continue;  // overlapping edits cannot happen; be safe
    out.append(doc.substr(at, edit.begin - at));
    out.append(edit.text);
    at = edit.end;
  }
  out.append(doc.substr(at, end - at));
  return out;
}

}  // namespace contextd::model
