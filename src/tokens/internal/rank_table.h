// RankTable: the byte-string -> rank map of a tiktoken vocabulary, built from a `.tiktoken` rank
// file ("<base64 bytes> <rank>" per line). Open addressing over one arena of token bytes: a probe
// compares a packed 8-byte head and the length, and touches the arena only for tokens longer than
// 8 bytes. Immutable after Parse; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace contextd::tokens::internal {

class RankTable {
 public:
  // Returned by Find when the bytes are not a token.
  static constexpr uint32_t kNoRank = 0xFFFFFFFFu;

  // Parses a rank file. InvalidArgument when a line is malformed, a rank or a token repeats, or
  // the file is empty.
  static absl::StatusOr<RankTable> Parse(std::string_view file);

  RankTable(RankTable&&) = default;
  RankTable& operator=(RankTable&&) = default;

  // Rank of the token whose bytes are p[0, len), or kNoRank. len >= 1.
  uint32_t Find(const uint8_t* p, size_t len) const {
    if (len <= 2) return len == 1 ? single_[p[0]] : pairs_[(p[0] << 8) | p[1]];
    uint64_t head;
    uint64_t h = Hash(p, len, &head);
    size_t i = h >> shift_;
    const uint8_t tag = Tag(h);
    // Probe the one-byte tags first: they are 1/16 the size of the slots and mostly stay in
    // cache, so a miss (the common case inside BPE merges) rarely touches a slot.
    for (;;) {
      uint8_t t = tags_[i];
      if (t == 0) return kNoRank;
      if (t == tag) {
        const Slot& slot = slots_[i];
        if (slot.head == head && slot.len == len &&
            (len <= 8 ||
             std::memcmp(arena_.data() + offsets_[slot.rank] + 8, p + 8, len - 8) == 0)) {
          return slot.rank;
        }
      }
      i = (i + 1) & mask_;
    }
  }
  uint32_t Find(std::string_view s) const {
    return Find(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }

  // Bytes of the token with rank `rank`; empty when there is none.
  std::string_view Bytes(uint32_t rank) const {
    if (rank + 1 >= offsets_.size()) return {};
    return std::string_view(arena_.data() + offsets_[rank], offsets_[rank + 1] - offsets_[rank]);
  }

  // Number of tokens.
  size_t size() const { return count_; }
  // One past the largest rank.
  uint32_t rank_end() const { return static_cast<uint32_t>(offsets_.size() - 1); }
  // Bytes of memory the table owns (arena, offsets, slots).
  size_t MemoryUsage() const {
    return arena_.capacity() + (offsets_.capacity() + pairs_.capacity()) * sizeof(uint32_t) +
           slots_.capacity() * sizeof(Slot) + tags_.capacity();
  }

 private:
  struct Slot {
    uint64_t head;  // first up-to-8 bytes, little-endian, zero-padded
    uint32_t rank;
    uint32_t len;  // 0: empty slot
  };

  RankTable() = default;

  static uint64_t Load64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  static uint64_t Load32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  // The first min(len, 8) bytes of p as a little-endian integer, without reading past p + len.
  static uint64_t Head(const uint8_t* p, size_t len) {
    if (len >= 8) return Load64(p);
    if (len >= 4) return Load32(p) | (Load32(p + len - 4) << (8 * (len - 4)));
    return uint64_t{p[0]} | (uint64_t{p[len / 2]} << (8 * (len / 2))) |
           (uint64_t{p[len - 1]} << (8 * (len - 1)));
  }
  // Non-zero tag of a hash (its low byte; the slot index uses the high bits).
  static uint8_t Tag(uint64_t h) { return (h & 0xFF) ? static_cast<uint8_t>(h) : 1; }
  static uint64_t Mix(uint64_t x) {
    x ^= x >> 32;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 32;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 32;
    return x;
  }
  static uint64_t Hash(const uint8_t* p, size_t len, uint64_t* head) {
    *head = Head(p, len);
    uint64_t h = *head ^ (uint64_t{len} * 0x9E3779B97F4A7C15ull);
    if (len > 8) {
      for (size_t i = 8; i + 8 < len; i += 8) h = (h ^ Load64(p + i)) * 0x9FB21C651E98DF25ull;
      h = (h ^ Load64(p + len - 8)) * 0x9FB21C651E98DF25ull;
    }
    return Mix(h);
  }

  std::string arena_;              // token bytes, in rank order
  std::vector<uint32_t> offsets_;  // rank -> offset in arena_; rank_end() + 1 entries
  std::vector<Slot> slots_;
  std::vector<uint8_t> tags_;  // per slot: 0 if empty, else Tag(hash)
  size_t mask_ = 0;
  int shift_ = 64;
  size_t count_ = 0;
  uint32_t single_[256];
  std::vector<uint32_t> pairs_;  // rank of every two-byte token (kNoRank if none), 65536 entries
};

}  // namespace contextd::tokens::internal
