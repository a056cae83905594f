#include "tokens/internal/unicode_classes.h"

#include <utf8proc.h>

#include <cstring>
#include <map>
#include <string>

namespace contextd::tokens::internal {
namespace {

// Unicode White_Space (PropList.txt; unchanged since Unicode 6.3, when U+180E left it). This is
// what Rust's regex crate (and so tiktoken) means by \s. It differs from JavaScript's \s, which
// adds U+FEFF and (in some engines) misses U+0085, and from Python's str.isspace (U+001C..U+001F).
bool IsWhiteSpace(uint32_t cp) {
  if (cp >= 0x09 && cp <= 0x0D) return true;
  switch (cp) {
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

}  // namespace

uint8_t UnicodeClasses::Compute(uint32_t cp) {
  if (cp > 0x10FFFF) return 0;
  uint8_t bits = IsWhiteSpace(cp) ? kSpace : 0;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LT:
      bits |= kLetter | kUpperSet;
      break;
    case UTF8PROC_CATEGORY_LL:
      bits |= kLetter | kLowerSet;
      break;
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      bits |= kLetter | kUpperSet | kLowerSet;
      break;
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
      bits |= kMark | kUpperSet | kLowerSet;
      break;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      bits |= kNumber;
      break;
    default:
      break;
  }
  return bits;
}

UnicodeClasses::UnicodeClasses() : stage1_(0x1100) {
  for (uint32_t cp = 0; cp < 0x80; ++cp) ascii_[cp] = Compute(cp);
  std::map<std::string, uint16_t> seen;
  std::string block(256, '\0');
  for (uint32_t hi = 0; hi < 0x1100; ++hi) {
    for (uint32_t lo = 0; lo < 256; ++lo) block[lo] = static_cast<char>(Compute((hi << 8) | lo));
    auto [it, inserted] = seen.emplace(block, static_cast<uint16_t>(seen.size()));
    if (inserted) blocks_.insert(blocks_.end(), block.begin(), block.end());
    stage1_[hi] = it->second;
  }
}

const UnicodeClasses& UnicodeClasses::Get() {
  static const UnicodeClasses* const table = new UnicodeClasses();
  return *table;
}

}  // namespace contextd::tokens::internal
