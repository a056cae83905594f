#include "tokens/internal/byte_pair.h"

#include <algorithm>
#include <functional>
#include <queue>

namespace contextd::tokens::internal {
namespace {

constexpr uint32_t kNone = RankTable::kNoRank;

// tiktoken's byte_pair_merge over stack arrays: parts are linked by next[] (part i covers
// [i, next[i]), the last part's next is n) and rank[i] is the rank of the pair starting at part i.
// Each round scans the parts for the lowest rank, leftmost first, and merges that pair. Returns
// the number of parts; next[] describes them.
size_t MergeShort(const RankTable& table, const uint8_t* p, size_t n, uint32_t* next,
                  uint32_t* rank) {
  const uint32_t un = static_cast<uint32_t>(n);
  for (uint32_t i = 0; i < un; ++i) next[i] = i + 1;
  for (uint32_t i = 0; i + 1 < un; ++i) rank[i] = table.Find(p + i, 2);
  rank[n - 1] = kNone;
  size_t parts = n;
  for (;;) {
    uint32_t best = kNone, at = 0, before = 0, prev = 0;
    for (uint32_t i = 0; i != un; prev = i, i = next[i]) {
      if (rank[i] < best) {
        best = rank[i];
        at = i;
        before = prev;
      }
    }
    if (best == kNone) break;
    uint32_t k = next[next[at]];
    next[at] = k;
    --parts;
    rank[at] = k != un ? table.Find(p + at, next[k] - at) : kNone;
    if (at > 0) rank[before] = table.Find(p + before, k - before);
  }
  return parts;
}

}  // namespace

size_t BytePairEncodeShort(const RankTable& table, const uint8_t* p, size_t n, uint32_t* out) {
  uint32_t next[kShortPieceMax], rank[kShortPieceMax];
  MergeShort(table, p, n, next, rank);
  size_t k = 0;
  for (uint32_t i = 0; i != n; i = next[i]) out[k++] = table.Find(p + i, next[i] - i);
  return k;
}

namespace {

// A 4-ary min-heap of parts keyed by (rank of the pair starting at the part) << 32 | part start,
// with each part's position tracked so that a key can change or leave in place (no stale
// entries). Ties on rank pop the leftmost part.
class PairHeap {
 public:
  static constexpr uint32_t kAbsent = 0xFFFFFFFFu;

  PairHeap(const std::vector<uint32_t>& rank, size_t n) : rank_(rank), pos_(n, kAbsent) {
    heap_.reserve(n);
  }

  bool empty() const { return heap_.empty(); }
  uint32_t top() const { return static_cast<uint32_t>(heap_[0]); }

  // Builds the heap from every part whose pair has a rank.
  void Build() {
    for (uint32_t i = 0; i < pos_.size(); ++i) {
      if (rank_[i] != kNone) {
        pos_[i] = static_cast<uint32_t>(heap_.size());
        heap_.push_back(Key(i));
      }
    }
    for (size_t i = heap_.size(); i-- > 0;) SiftDown(i);
  }

  // Re-positions part `i` after rank_[i] changed (inserting or removing it as needed).
  void Update(uint32_t i) {
    uint32_t p = pos_[i];
    if (rank_[i] == kNone) {
      if (p != kAbsent) RemoveAt(p);
      return;
    }
    if (p == kAbsent) {
      p = static_cast<uint32_t>(heap_.size());
      heap_.push_back(Key(i));
      pos_[i] = p;
      SiftUp(p);
      return;
    }
    heap_[p] = Key(i);
    SiftUp(p);
    SiftDown(pos_[i]);
  }

  // Removes part `i` if present.
  void Remove(uint32_t i) {
    if (pos_[i] != kAbsent) RemoveAt(pos_[i]);
  }

 private:
  uint64_t Key(uint32_t i) const { return (uint64_t{rank_[i]} << 32) | i; }

  void Place(size_t at, uint64_t key) {
    heap_[at] = key;
    pos_[static_cast<uint32_t>(key)] = static_cast<uint32_t>(at);
  }

  void RemoveAt(uint32_t p) {
    pos_[static_cast<uint32_t>(heap_[p])] = kAbsent;
    uint64_t last = heap_.back();
    heap_.pop_back();
    if (p < heap_.size()) {
      Place(p, last);
      SiftUp(p);
      SiftDown(pos_[static_cast<uint32_t>(last)]);
    }
  }

  void SiftUp(size_t at) {
    uint64_t key = heap_[at];
    while (at > 0) {
      size_t parent = (at - 1) / 4;
      if (heap_[parent] <= key) break;
      Place(at, heap_[parent]);
      at = parent;
    }
    Place(at, key);
  }

  void SiftDown(size_t at) {
    size_t m = heap_.size();
    uint64_t key = heap_[at];
    for (;;) {
      size_t c = 4 * at + 1;
      if (c >= m) break;
      size_t best = c;
      size_t end = std::min(c + 4, m);
      for (size_t k = c + 1; k < end; ++k) {
        if (heap_[k] < heap_[best]) best = k;
      }
      if (heap_[best] >= key) break;
      Place(at, heap_[best]);
      at = best;
    }
    Place(at, key);
  }

  const std::vector<uint32_t>& rank_;
  std::vector<uint32_t> pos_;
  std::vector<uint64_t> heap_;
};

}  // namespace

void BytePairEncodeLong(const RankTable& table, const uint8_t* p, size_t n,
                        std::vector<uint32_t>* out) {
  // Part i (alive iff it starts a token) covers [i, next[i]); prev links back; rank[i] is the
  // rank of the pair that starts at part i (kNone when there is none or the part is dead). The
  // heap pops the lowest rank, leftmost on ties, as tiktoken's scan picks it.
  const uint32_t un = static_cast<uint32_t>(n);
  std::vector<uint32_t> next(n), prev(n), rank(n, kNone);
  for (uint32_t i = 0; i < un; ++i) {
    next[i] = i + 1;
    prev[i] = i - 1;  // prev[0] is unused
  }
  for (uint32_t i = 0; i + 1 < un; ++i) rank[i] = table.Find(p + i, 2);
  PairHeap heap(rank, n);
  heap.Build();
  auto pair_rank = [&](uint32_t i) -> uint32_t {
    uint32_t j = next[i];
    return j < un ? table.Find(p + i, next[j] - i) : kNone;
  };
  while (!heap.empty()) {
    uint32_t i = heap.top();
    // Merge part j = next[i] into part i.
    uint32_t j = next[i];
    uint32_t k = next[j];
    rank[j] = kNone;
    heap.Remove(j);
    next[i] = k;
    if (k < un) prev[k] = i;
    rank[i] = pair_rank(i);
    heap.Update(i);
    if (i > 0) {
      uint32_t h = prev[i];
      rank[h] = pair_rank(h);
      heap.Update(h);
    }
  }
  for (uint32_t i = 0; i < un; i = next[i]) out->push_back(table.Find(p + i, next[i] - i));
}

namespace {

// Per-thread scratch of BytePairEncodeHuge. Between calls every bucket is empty and every bitmap
// bit clear (the merge loop only ends when no bucket holds an entry), so nothing is reset.
struct HugeScratch {
  static constexpr uint32_t kNil = 0xFFFFFFFFu;
  // A bucket is a list of chunks (newest first) so that taking it touches one cache line per 14
  // positions rather than one per position.
  struct alignas(64) Chunk {
    uint32_t link;  // older chunk of the same bucket, or kNil
    uint32_t count;
    uint32_t pos[14];
  };
  std::vector<uint32_t> heads;    // rank -> newest chunk in pool, or kNil
  std::vector<uint64_t> words;    // bit r: bucket r is non-empty
  std::vector<uint64_t> summary;  // bit w: words[w] != 0
  std::vector<Chunk> pool;
  std::vector<uint32_t> run;

  void Reserve(uint32_t rank_end) {
    if (heads.size() >= rank_end) return;
    heads.resize(rank_end, kNil);
    words.resize((rank_end + 63) / 64, 0);
    summary.resize((words.size() + 63) / 64, 0);
  }

  void Push(uint32_t rank, uint32_t pos) {
    uint32_t h = heads[rank];
    if (h == kNil || pool[h].count == 14) {
      pool.push_back(Chunk{h, 0, {}});
      h = heads[rank] = static_cast<uint32_t>(pool.size() - 1);
    }
    pool[h].pos[pool[h].count++] = pos;
    words[rank >> 6] |= uint64_t{1} << (rank & 63);
    summary[rank >> 12] |= uint64_t{1} << ((rank >> 6) & 63);
  }

  // Lowest non-empty rank >= from, or kNil.
  uint32_t FindFrom(uint32_t from) const {
    size_t w = from >> 6;
    if (w >= words.size()) return kNil;
    uint64_t bits = words[w] & (~uint64_t{0} << (from & 63));
    if (bits) return static_cast<uint32_t>((w << 6) | __builtin_ctzll(bits));
    size_t sw = (w + 1) >> 6;
    if (sw >= summary.size()) return kNil;
    uint64_t sbits = ((w + 1) & 63) ? summary[sw] & (~uint64_t{0} << ((w + 1) & 63)) : summary[sw];
    for (;;) {
      if (sbits) {
        size_t word = (sw << 6) | __builtin_ctzll(sbits);
        return static_cast<uint32_t>((word << 6) | __builtin_ctzll(words[word]));
      }
      if (++sw >= summary.size()) return kNil;
      sbits = summary[sw];
    }
  }

  // Moves bucket `rank`'s positions into `run`, sorted, and empties the bucket.
  void Take(uint32_t rank) {
    run.clear();
    for (uint32_t c = heads[rank]; c != kNil; c = pool[c].link) {
      run.insert(run.end(), pool[c].pos, pool[c].pos + pool[c].count);
    }
    heads[rank] = kNil;
    words[rank >> 6] &= ~(uint64_t{1} << (rank & 63));
    if (words[rank >> 6] == 0) summary[rank >> 12] &= ~(uint64_t{1} << ((rank >> 6) & 63));
    std::sort(run.begin(), run.end());
  }
};

}  // namespace

void BytePairEncodeHuge(const RankTable& table, const uint8_t* p, size_t n,
                        std::vector<uint32_t>* out) {
  // As BytePairEncodeLong: part i covers [i, next[i]); rank[i] is the rank of the pair starting
  // at part i (kNone if none or dead). An entry (rank r, pos i) is current iff rank[i] == r.
  // Invariant: every current entry with rank <= cur is in `run` (rank cur, sorted, from index k)
  // or in `pending`; entries with rank > cur wait in their buckets. Each step takes the smallest
  // (rank, pos) of run and pending: the same order as tiktoken's scan.
  thread_local HugeScratch scratch;
  HugeScratch& s = scratch;
  s.Reserve(table.rank_end());
  s.pool.clear();
  const uint32_t un = static_cast<uint32_t>(n);
  std::vector<uint32_t> next(n), prev(n), rank(n, kNone);
  for (uint32_t i = 0; i < un; ++i) {
    next[i] = i + 1;
    prev[i] = i - 1;  // prev[0] is unused
  }
  for (uint32_t i = 0; i + 1 < un; ++i) {
    rank[i] = table.Find(p + i, 2);
    if (rank[i] != kNone) s.Push(rank[i], i);
  }
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<uint64_t>> pending;
  uint32_t cur = 0;
  bool started = false;
  size_t k = 0;
  s.run.clear();
  auto add = [&](uint32_t i, uint32_t r) {
    if (r == kNone) return;
    if (started && r <= cur) {
      pending.push((uint64_t{r} << 32) | i);
    } else {
      s.Push(r, i);
    }
  };
  for (;;) {
    uint64_t key;
    bool from_run = k < s.run.size();
    uint64_t run_key = from_run ? ((uint64_t{cur} << 32) | s.run[k]) : ~uint64_t{0};
    if (!pending.empty() && pending.top() < run_key) {
      key = pending.top();
      pending.pop();
    } else if (from_run) {
      key = run_key;
      ++k;
    } else {
      uint32_t r = s.FindFrom(started ? cur + 1 : 0);
      if (r == HugeScratch::kNil) break;
      cur = r;
      started = true;
      s.Take(r);
      k = 0;
      continue;
    }
    uint32_t i = static_cast<uint32_t>(key);
    if (rank[i] != static_cast<uint32_t>(key >> 32)) continue;  // stale
    uint32_t j = next[i];
    uint32_t after = next[j];
    rank[j] = kNone;
    next[i] = after;
    if (after < un) prev[after] = i;
    rank[i] = after < un ? table.Find(p + i, next[after] - i) : kNone;
    add(i, rank[i]);
    if (i > 0) {
      uint32_t h = prev[i];
      rank[h] = table.Find(p + h, after - h);
      add(h, rank[h]);
    }
  }
  for (uint32_t i = 0; i < un; i = next[i]) out->push_back(table.Find(p + i, next[i] - i));
  // Keep at most a few MiB of scratch per thread after an exceptionally long piece.
  if (s.pool.capacity() * sizeof(HugeScratch::Chunk) > (size_t{8} << 20)) {
    std::vector<HugeScratch::Chunk>().swap(s.pool);
  }
  if (s.run.capacity() * sizeof(uint32_t) > (size_t{8} << 20)) std::vector<uint32_t>().swap(s.run);
}

void BytePairEncodeAny(const RankTable& table, const uint8_t* p, size_t n,
                       std::vector<uint32_t>* out) {
  if (n <= kShortPieceMax) {
    uint32_t ids[kShortPieceMax];
    size_t k = BytePairEncodeShort(table, p, n, ids);
    out->insert(out->end(), ids, ids + k);
  } else if (n < kHugePieceMin) {
    BytePairEncodeLong(table, p, n, out);
  } else {
    BytePairEncodeHuge(table, p, n, out);
  }
}

}  // namespace contextd::tokens::internal
