// Byte-pair merging of one piece, exactly as tiktoken's byte_pair_merge: repeatedly merge the
// adjacent pair whose concatenation has the lowest rank (leftmost on ties) until no adjacent pair
// is a token. Short pieces use tiktoken's array scan (fast for a few dozen bytes); longer pieces a
// heap over a linked list, and very long ones per-rank buckets, both O(n log n), so an unbroken
// megabyte costs a fraction of a second, not minutes. Thread-safe (the bucketed merge keeps its
// scratch space per thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tokens/internal/rank_table.h"

namespace contextd::tokens::internal {

// Pieces up to this many bytes use the array scan; longer ones the heap.
inline constexpr size_t kShortPieceMax = 96;

// Writes the ranks of p[0, n) (2 <= n <= kShortPieceMax) to out[0, k) and returns k (<= n).
size_t BytePairEncodeShort(const RankTable& table, const uint8_t* p, size_t n, uint32_t* out);

// Appends the ranks of p[0, n) (n >= 2, any length) to *out: an indexed 4-ary heap of pairs.
void BytePairEncodeLong(const RankTable& table, const uint8_t* p, size_t n,
                        std::vector<uint32_t>* out);

// Same result as BytePairEncodeLong, for very long pieces: pairs wait in per-rank buckets (a
// bitmap finds the lowest non-empty rank) and each rank's positions are sorted once, so the merge
// loop walks memory in order instead of sifting a heap. Uses per-thread scratch space.
void BytePairEncodeHuge(const RankTable& table, const uint8_t* p, size_t n,
                        std::vector<uint32_t>* out);

// Pieces longer than this use BytePairEncodeHuge.
inline constexpr size_t kHugePieceMin = 2048;

// Dispatches on length to the short, long or huge merge (all give the same ids).
void BytePairEncodeAny(const RankTable& table, const uint8_t* p, size_t n,
                       std::vector<uint32_t>* out);

}  // namespace contextd::tokens::internal
