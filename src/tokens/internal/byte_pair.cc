#include "tokens/internal/byte_pair.h"

#include <algorithm>

namespace contextd::tokens::internal {
namespace {

constexpr uint32_t kNone = RankTable::kNoRank;

// tiktoken's byte_pair_merge on a stack array: parts[i] = (start, rank of the pair starting at
// part i). Returns the number of parts + 1 (boundaries) left in `start`.
size_t MergeShort(const RankTable& table, const uint8_t* p, size_t n, uint32_t* start,
                  uint32_t* rank) {
  size_t m = n + 1;  // boundaries 0..n
  for (size_t i = 0; i < n; ++i) start[i] = static_cast<uint32_t>(i);
  start[n] = static_cast<uint32_t>(n);
  for (size_t i = 0; i + 1 < n; ++i) rank[i] = table.Find(p + i, 2);
  rank[n - 1] = kNone;
  rank[n] = kNone;
  auto pair_rank = [&](size_t i) -> uint32_t {
    if (i + 3 < m) return table.Find(p + start[i], start[i + 3] - start[i]);
    return kNone;
  };
  for (;;) {
    uint32_t best = kNone;
    size_t at = 0;
    for (size_t i = 0; i + 1 < m; ++i) {
      if (rank[i] < best) {
        best = rank[i];
        at = i;
      }
    }
    if (best == kNone) break;
    if (at > 0) rank[at - 1] = pair_rank(at - 1);
    rank[at] = pair_rank(at);
    // Remove boundary at + 1.
    std::copy(start + at + 2, start + m, start + at + 1);
    std::copy(rank + at + 2, rank + m, rank + at + 1);
    --m;
  }
  return m;
}

}  // namespace

void BytePairEncodeShort(const RankTable& table, const uint8_t* p, size_t n,
                         std::vector<uint32_t>* out) {
  uint32_t start[kShortPieceMax + 1], rank[kShortPieceMax + 1];
  size_t m = MergeShort(table, p, n, start, rank);
  for (size_t i = 0; i + 1 < m; ++i) out->push_back(table.Find(p + start[i], start[i + 1] - start[i]));
}

size_t BytePairCountShort(const RankTable& table, const uint8_t* p, size_t n) {
  uint32_t start[kShortPieceMax + 1], rank[kShortPieceMax + 1];
  return MergeShort(table, p, n, start, rank) - 1;
}

void BytePairEncodeLong(const RankTable& table, const uint8_t* p, size_t n,
                        std::vector<uint32_t>* out) {
  // Part i (alive iff it starts a token) covers [i, next[i]); prev links back. A heap entry names
  // the pair starting at part `start` and ending at `end`; it is stale unless that part is still
  // alive and its pair still ends at `end` (parts only grow, so equal ends mean equal bytes).
  struct Entry {
    uint32_t rank;
    uint32_t start;
    uint32_t end;
  };
  auto later = [](const Entry& a, const Entry& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.start > b.start;
  };
  std::vector<uint32_t> next(n), prev(n);
  std::vector<uint8_t> alive(n, 1);
  std::vector<Entry> heap;
  heap.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    next[i] = static_cast<uint32_t>(i + 1);
    prev[i] = static_cast<uint32_t>(i - 1);  // prev[0] is unused
  }
  for (size_t i = 0; i + 1 < n; ++i) {
    uint32_t r = table.Find(p + i, 2);
    if (r != kNone) heap.push_back(Entry{r, static_cast<uint32_t>(i), static_cast<uint32_t>(i + 2)});
  }
  std::make_heap(heap.begin(), heap.end(), later);
  const uint32_t un = static_cast<uint32_t>(n);
  auto push_pair = [&](uint32_t i) {
    uint32_t j = next[i];
    if (j >= un) return;
    uint32_t e = next[j];
    uint32_t r = table.Find(p + i, e - i);
    if (r == kNone) return;
    heap.push_back(Entry{r, i, e});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Entry top = heap.back();
    heap.pop_back();
    uint32_t i = top.start;
    if (!alive[i]) continue;
    uint32_t j = next[i];
    if (j >= un || next[j] != top.end) continue;
    // Merge part j into part i.
    alive[j] = 0;
    next[i] = top.end;
    if (top.end < un) prev[top.end] = i;
    push_pair(i);
    if (i > 0) push_pair(prev[i]);
  }
  for (uint32_t i = 0; i < un; i = next[i]) out->push_back(table.Find(p + i, next[i] - i));
}

}  // namespace contextd::tokens::internal
