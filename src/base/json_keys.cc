#include "base/json_keys.h"

#include <algorithm>
#include <cstring>

#include "base/foreign_text.h"

namespace contextd::base {
namespace {

// Members compared one by one below this count; a hash set past it.
constexpr size_t kLinearKeys = 16;
// Longest name a description quotes.
constexpr size_t kMaxDescribedKey = 100;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The code unit of `\uXXXX` at s[i] (s[i] == '\\'), or -1.
int32_t Escape4(std::string_view s, size_t i) {
  if (i + 6 > s.size() || s[i] != '\\' || s[i + 1] != 'u') return -1;
  int32_t v = 0;
  for (size_t k = i + 2; k < i + 6; ++k) {
    int h = HexValue(s[k]);
    if (h < 0) return -1;
    v = (v << 4) | h;
  }
  return v;
}

// True if the name inside `token` needs no decoding (plain ASCII, no escape).
bool Plain(std::string_view inner) {
  for (char c : inner) {
    if (c == '\\' || static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

// The name of a key token for a path, as best it can be read.
std::string PathName(std::string_view token) {
  auto name = UnescapeJsonKey(token);
  if (name) return *std::move(name);
  return std::string(token.size() >= 2 ? token.substr(1, token.size() - 2) : token);
}

}  // namespace

std::string DuplicateJsonKey::Describe() const {
  std::string out;
  for (const std::string& part : path) {
    if (!out.empty()) out.push_back('.');
    out += part;
  }
  if (out.empty()) out = "top level";
  std::string name = key.size() > kMaxDescribedKey ? key.substr(0, kMaxDescribedKey) + "..." : key;
  out += valid_name ? ": duplicate key \"" : ": member name is not valid Unicode: \"";
  out += name;
  out += '"';
  return out;
}

std::optional<std::string> UnescapeJsonKey(std::string_view token) {
  std::string_view s = token.size() >= 2 ? token.substr(1, token.size() - 2) : std::string_view();
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t n = Utf8SequenceLength(s, i);
      if (n == 0) return std::nullopt;
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    if (c != '\\') {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    if (i + 1 >= s.size()) return std::nullopt;
    const char e = s[i + 1];
    if (e != 'u') {
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
        case '"':
        case '\\':
        case '/':
          out.push_back(e);
          break;
        default:
          return std::nullopt;
      }
      i += 2;
      continue;
    }
    int32_t unit = Escape4(s, i);
    if (unit < 0) return std::nullopt;
    i += 6;
    uint32_t cp = static_cast<uint32_t>(unit);
    if (cp >= 0xDC00 && cp <= 0xDFFF) return std::nullopt;  // lone low surrogate
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      int32_t low = Escape4(s, i);
      if (low < 0xDC00 || low > 0xDFFF) return std::nullopt;  // lone high surrogate
      cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(low) - 0xDC00);
      i += 6;
    }
    AppendUtf8(cp, out);
  }
  return out;
}

JsonKeyTracker::JsonKeyTracker() = default;
JsonKeyTracker::~JsonKeyTracker() = default;

void JsonKeyTracker::Open() {
  Frame& frame = frames_.emplace_back();
  frame.first_key = static_cast<uint32_t>(keys_.size());
  frame.first_decoded = static_cast<uint32_t>(decoded_.size());
}

JsonKeyVerdict JsonKeyTracker::Add(std::string_view token) {
  std::string_view name = token.size() >= 2 ? token.substr(1, token.size() - 2) : token;
  if (!Plain(name)) {
    auto decoded = UnescapeJsonKey(token);
    if (!decoded) return JsonKeyVerdict::kInvalidName;
    name = decoded_.emplace_back(*std::move(decoded));
  }
  Frame& frame = frames_.back();
  const size_t count = keys_.size() - frame.first_key;
  if (frame.set != nullptr) {
    if (!frame.set->insert(name).second) return JsonKeyVerdict::kDuplicate;
  } else {
    for (size_t k = frame.first_key; k < keys_.size(); ++k) {
      if (keys_[k].size() == name.size() &&
          std::memcmp(keys_[k].data(), name.data(), name.size()) == 0) {
        return JsonKeyVerdict::kDuplicate;
      }
    }
    if (count + 1 > kLinearKeys) {
      frame.set = std::make_unique<std::unordered_set<std::string_view>>(
          keys_.begin() + frame.first_key, keys_.end());
      frame.set->insert(name);
    }
  }
  keys_.push_back(name);
  return JsonKeyVerdict::kNew;
}

void JsonKeyTracker::Close() {
  if (frames_.empty()) return;
  Frame& frame = frames_.back();
  keys_.resize(frame.first_key);
  decoded_.resize(frame.first_decoded);
  frames_.pop_back();
}

std::optional<DuplicateJsonKey> FindDuplicateJsonKey(std::string_view json) {
  struct Container {
    bool object = false;
    bool expect_key = false;
    size_t index = 0;      // arrays: the current element
    std::string_view key;  // objects: the current member's name token
  };
  std::vector<Container> stack;
  JsonKeyTracker keys;
  const char* p = json.data();
  const char* const end = p + json.size();
  while (p < end) {
    const char c = *p;
    if (c == '"') {
      // The closing quote: the first one not escaped by an odd run of backslashes.
      const char* q = p + 1;
      while (true) {
        q = static_cast<const char*>(std::memchr(q, '"', static_cast<size_t>(end - q)));
        if (q == nullptr) return std::nullopt;  // unterminated: not valid JSON
        const char* b = q;
        while (b > p + 1 && b[-1] == '\\') --b;
        if (((q - b) & 1) == 0) break;
        ++q;
      }
      std::string_view token(p, static_cast<size_t>(q + 1 - p));
      p = q + 1;
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        stack.back().expect_key = false;
        stack.back().key = token;
        JsonKeyVerdict verdict = keys.Add(token);
        if (verdict != JsonKeyVerdict::kNew) {
          DuplicateJsonKey dup;
          for (size_t i = 0; i + 1 < stack.size(); ++i) {
            dup.path.push_back(stack[i].object ? PathName(stack[i].key)
                                               : std::to_string(stack[i].index));
          }
          dup.valid_name = verdict == JsonKeyVerdict::kDuplicate;
          dup.key = PathName(token);
          return dup;
        }
      }
      continue;
    }
    switch (c) {
      case '{':
        stack.push_back(Container{true, true, 0, {}});
        keys.Open();
        break;
      case '[':
        stack.push_back(Container{false, false, 0, {}});
        break;
      case ',':
        if (!stack.empty()) {
          if (stack.back().object) {
            stack.back().expect_key = true;
          } else {
            ++stack.back().index;
          }
        }
        break;
      case '}':
      case ']':
        if (!stack.empty()) {
          if (stack.back().object) keys.Close();
          stack.pop_back();
        }
        break;
      default:
        break;
    }
    ++p;
  }
  return std::nullopt;
}

}  // namespace contextd::base
