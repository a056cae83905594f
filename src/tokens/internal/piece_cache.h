// PieceCache: a small direct-mapped memo of BPE results for short pieces that are not single
// tokens (identifiers, CJK words, ...), which recur constantly in real text. One per thread
// (ThreadPieceCache), so it needs no locking; entries are tagged with the owning tokenizer's id.
// It changes speed only: a hit returns exactly the ids BPE computed for the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace contextd::tokens::internal {

class PieceCache {
 public:
  static constexpr size_t kMaxLen = 56;  // bytes of a cacheable piece
  static constexpr size_t kMaxIds = 16;  // ids of a cacheable result

  // The ids cached for (owner, p[0, len)) and their number in *count, or nullptr.
  const uint32_t* Find(uint32_t owner, const uint8_t* p, size_t len, size_t* count) const {
    const Entry& e = entries_[Slot(owner, p, len)];
    if (e.owner != owner || e.len != len || std::memcmp(e.bytes, p, len) != 0) return nullptr;
    *count = e.count;
    return e.ids;
  }

  // Remembers ids[0, count) for (owner, p[0, len)); ignores results too large to cache.
  void Put(uint32_t owner, const uint8_t* p, size_t len, const uint32_t* ids, size_t count) {
    if (len > kMaxLen || count > kMaxIds) return;
    Entry& e = entries_[Slot(owner, p, len)];
    e.owner = owner;
    e.len = static_cast<uint8_t>(len);
    e.count = static_cast<uint8_t>(count);
    std::memcpy(e.bytes, p, len);
    std::memcpy(e.ids, ids, count * sizeof(uint32_t));
  }

 private:
  static constexpr int kBits = 13;
  static constexpr size_t kEntries = size_t{1} << kBits;

  struct alignas(64) Entry {
    uint32_t owner = 0;  // 0: empty (tokenizer ids start at 1)
    uint8_t len = 0;
    uint8_t count = 0;
    uint8_t bytes[kMaxLen];
    uint32_t ids[kMaxIds];
  };

  static size_t Slot(uint32_t owner, const uint8_t* p, size_t len) {
    uint64_t h = owner * 0x9E3779B97F4A7C15ull ^ len;
    for (size_t i = 0; i < len; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
    h ^= h >> 29;
    return static_cast<size_t>(h * 0xBF58476D1CE4E5B9ull >> (64 - kBits));
  }

  Entry entries_[kEntries];
};

// This thread's cache (allocated on first use, 1 MiB, freed at thread exit).
inline PieceCache& ThreadPieceCache() {
  thread_local std::unique_ptr<PieceCache> cache = std::make_unique<PieceCache>();
  return *cache;
}

}  // namespace contextd::tokens::internal
