#include "scrub/private_spans.h"

#include <cstddef>
#include <cstring>

namespace contextd::scrub {
namespace {

constexpr std::string_view kName = "private";  // lower case
constexpr size_t kNever = std::string_view::npos;

enum class TagKind { kNone, kOpen, kClose };

struct Tag {
  TagKind kind = TagKind::kNone;
  size_t start = 0;
  size_t end = 0;  // one past the '>'; kNever for an opening tag whose '>' never comes
};

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// True when text[pos..] starts with "private", ASCII case-insensitively. (b | 0x20) equals a
// lower-case ASCII letter only for that letter and its upper-case form.
bool NameAt(std::string_view text, size_t pos) {
  if (pos > text.size() || text.size() - pos < kName.size()) return false;
  for (size_t i = 0; i < kName.size(); ++i) {
    if ((static_cast<unsigned char>(text[pos + i]) | 0x20) !=
        static_cast<unsigned char>(kName[i])) {
      return false;
    }
  }
  return true;
}

// The tag that starts at text[lt] == '<', or kNone.
Tag TagAt(std::string_view text, size_t lt) {
  size_t p = lt + 1;
  if (p < text.size() && text[p] == '/') {
    if (!NameAt(text, p + 1)) return {};
    p += 1 + kName.size();
    while (p < text.size() && IsSpace(text[p])) ++p;
    if (p < text.size() && text[p] == '>') return {TagKind::kClose, lt, p + 1};
    return {};
  }
  if (!NameAt(text, p)) return {};
  p += kName.size();
  if (p >= text.size()) return {};
  if (text[p] == '>') return {TagKind::kOpen, lt, p + 1};
  if (!IsSpace(text[p])) return {};  // <privateKey>, <private/>, ...
  size_t gt = text.find('>', p);
  return {TagKind::kOpen, lt, gt == kNever ? kNever : gt + 1};
}

// The first tag that starts at or after `pos`. Each '<' costs O(1), the rest is memchr.
Tag NextTag(std::string_view text, size_t pos) {
  while (pos < text.size()) {
    const void* hit = std::memchr(text.data() + pos, '<', text.size() - pos);
    if (hit == nullptr) break;
    size_t lt = static_cast<size_t>(static_cast<const char*>(hit) - text.data());
    Tag tag = TagAt(text, lt);
    if (tag.kind != TagKind::kNone) return tag;
    pos = lt + 1;
  }
  return {};
}

}  // namespace

bool ContainsPrivate(std::string_view text) { return NextTag(text, 0).kind != TagKind::kNone; }

std::string WithholdPrivate(std::string_view text) {
  Tag tag = NextTag(text, 0);
  if (tag.kind == TagKind::kNone) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t copied = 0;         // text[0, copied) is accounted for in `out`
  size_t last_end = kNever;  // where the last withheld span ended in `text`
  // Withholds text[start, end): keeps what lies before it, then one marker, unless the span
  // continues the previous one (adjacent spans share a marker).
  auto withhold = [&](size_t start, size_t end) {
    if (start != last_end) {
      out.append(text.substr(copied, start - copied));
      out.append(kWithheldPrivate);
    }
    copied = end;
    last_end = end;
  };
  size_t depth = 0;
  size_t span_start = 0;
  while (tag.kind != TagKind::kNone) {
    if (tag.kind == TagKind::kOpen) {
      if (depth++ == 0) span_start = tag.start;
      if (tag.end == kNever) break;  // the rest of the text is inside the tag
    } else if (depth > 0) {
      if (--depth == 0) withhold(span_start, tag.end);
    } else {
      // A closing tag with no open span: its opening tag was cut off or lost, so everything
      // before it may be private. Linear: each byte was appended to `out` at most once.
      out.assign(kWithheldPrivate);
      copied = tag.end;
      last_end = tag.end;
    }
    tag = NextTag(text, tag.end);
  }
  if (depth > 0) {
    withhold(span_start, text.size());  // never closed: fail closed
  } else {
    out.append(text.substr(copied));
  }
  return out;
}

}  // namespace contextd::scrub
