// Character classes the tiktoken split patterns need (\p{L}, \p{N}, \p{M}, the upper/lower letter
// sets of o200k_base, and Unicode White_Space), for every code point, from libutf8proc's
// general categories. Built once per process; immutable afterwards and safe to read from any
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace contextd::tokens::internal {

// Bits of a code point's class byte.
enum ClassBits : uint8_t {
  kLetter = 1 << 0,    // \p{L}: Lu Ll Lt Lm Lo
  kUpperSet = 1 << 1,  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
  kLowerSet = 1 << 2,  // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
  kNumber = 1 << 3,    // \p{N}: Nd Nl No
  kSpace = 1 << 4,     // \s as Rust's regex defines it: the Unicode White_Space property
  kMark = 1 << 5,      // \p{M}: Mn Mc Me
};

// A two-stage lookup table from code point to class byte.
class UnicodeClasses {
 public:
  // The process-wide table, built on first use (thread-safe; about 5 ms the first time).
  static const UnicodeClasses& Get();

  // Class byte of `cp` (0 <= cp <= 0x10FFFF); 0 for anything else.
  uint8_t Of(uint32_t cp) const {
    if (cp < 0x80) return ascii_[cp];
    if (cp > 0x10FFFF) return 0;
    return blocks_[(static_cast<size_t>(stage1_[cp >> 8]) << 8) | (cp & 0xFF)];
  }

  // Class bytes of the 128 ASCII code points (for inlined fast paths).
  const uint8_t* ascii() const { return ascii_; }

  // Computes the class byte of `cp` directly from utf8proc (slow; used to build the table and to
  // check it in tests).
  static uint8_t Compute(uint32_t cp);

 private:
  UnicodeClasses();
  uint8_t ascii_[128];
  std::vector<uint16_t> stage1_;  // 0x1100 entries: block index per 256 code points
  std::vector<uint8_t> blocks_;   // deduplicated 256-entry blocks
};

}  // namespace contextd::tokens::internal
