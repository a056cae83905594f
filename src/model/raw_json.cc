#include "model/raw_json.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace contextd::model {
namespace {

class Parser {
 public:
  Parser(std::string_view doc, int record_depth, int max_depth)
      : doc_(doc), p_(doc.data()), end_(doc.data() + doc.size()),
        record_depth_(record_depth), max_depth_(max_depth) {}

  absl::StatusOr<RawNode> Run() {
    if (doc_.size() >= kMaxRawJsonBytes) return absl::InvalidArgumentError("JSON document too large");
    SkipSpace();
    RawNode root;
    if (!Value(root, 0)) return Error();
    SkipSpace();
    if (p_ != end_ && error_.empty()) Fail("unexpected data after the JSON value");
    if (!error_.empty()) return Error();
    return root;
  }

 private:
  absl::Status Error() const {
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

  bool Value(RawNode& node, int depth) {
    if (p_ == end_) return Fail("unexpected end of input");
    node.begin = Offset();
    switch (*p_) {
      case '{': node.type = JsonType::kObject; if (!Object(node, depth)) return false; break;
      case '[': node.type = JsonType::kArray; if (!Array(node, depth)) return false; break;
      case '"': node.type = JsonType::kString; if (!String()) return false; break;
      case 't': node.type = JsonType::kBool; if (!Literal("true")) return false; break;
      case 'f': node.type = JsonType::kBool; if (!Literal("false")) return false; break;
      case 'n': node.type = JsonType::kNull; if (!Literal("null")) return false; break;
      default: node.type = JsonType::kNumber; if (!Number()) return false; break;
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
      // Fast path: plain bytes.
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
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
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

  bool Enter(int depth) {
    if (depth + 1 > max_depth_) return Fail("nested too deeply");
    return true;
  }

  bool Array(RawNode& node, int depth) {
    if (!Enter(depth)) return false;
    ++p_;
    SkipSpace();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      return true;
    }
    const bool record = depth < record_depth_;
    while (true) {
      SkipSpace();
      RawNode scratch;
      RawNode& child = record ? node.children.emplace_back() : scratch;
      if (!Value(child, depth + 1)) return false;
      SkipSpace();
      if (p_ == end_) return Fail("unterminated array");
      if (*p_ == ',') {
        ++p_;
        continue;
      }
      if (*p_ == ']') {
        ++p_;
        return true;
      }
      return Fail("',' or ']' expected");
    }
  }

  bool Object(RawNode& node, int depth) {
    if (!Enter(depth)) return false;
    ++p_;
    SkipSpace();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    const bool record = depth < record_depth_;
    while (true) {
      SkipSpace();
      if (p_ == end_ || *p_ != '"') return Fail("member name expected");
      uint32_t key_begin = Offset();
      if (!String()) return false;
      uint32_t key_end = Offset();
      SkipSpace();
      if (p_ == end_ || *p_ != ':') return Fail("':' expected");
      ++p_;
      SkipSpace();
      RawNode scratch;
      RawNode& child = record ? node.children.emplace_back() : scratch;
      child.key_begin = key_begin;
      child.key_end = key_end;
      if (!Value(child, depth + 1)) return false;
      SkipSpace();
      if (p_ == end_) return Fail("unterminated object");
      if (*p_ == ',') {
        ++p_;
        continue;
      }
      if (*p_ == '}') {
        ++p_;
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
  std::string error_;
  size_t error_at_ = 0;
};

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t Hex4(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    char c = p[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
  }
  return v;
}

}  // namespace

absl::StatusOr<RawNode> ParseRawJson(std::string_view doc, int record_depth, int max_depth) {
  return Parser(doc, record_depth, max_depth).Run();
}

std::string DecodeJsonString(std::string_view token) {
  std::string out;
  if (token.size() < 2) return out;
  std::string_view s = token.substr(1, token.size() - 2);
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '\\' || i + 1 >= s.size()) {
      out.push_back(c);
      continue;
    }
    char e = s[++i];
    switch (e) {
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'u': {
        if (i + 4 >= s.size()) {
          out.append("\xEF\xBF\xBD");
          i = s.size();
          break;
        }
        uint32_t cp = Hex4(s.data() + i + 1);
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (i + 6 < s.size() && s[i + 1] == '\\' && s[i + 2] == 'u') {
            uint32_t lo = Hex4(s.data() + i + 3);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              i += 6;
              AppendUtf8(cp, out);
              break;
            }
          }
          cp = 0xFFFD;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          cp = 0xFFFD;
        }
        AppendUtf8(cp, out);
        break;
      }
      default: out.push_back(e); break;  // " \ /
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
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      case '\b': out.append("\\b"); break;
      case '\f': out.append("\\f"); break;
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

}  // namespace contextd::model
