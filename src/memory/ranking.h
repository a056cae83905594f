// The bank's relevance score: BM25 over stems (memory/terms.h) with per-field weights, computed
// from the statistics of the item's own collection (its tenant and project) and normalised to
// [0, 1), so that both stores rank alike, one project's ranking does not move with another
// project's items, and one floor serves every project. Pure
// functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "memory/memory_store.h"

namespace contextd::memory {

struct RankWeights {
  double k1 = 1.2;  // term-frequency saturation
  double b = 0.75;  // length normalisation
  // Field weights on term frequency: a title names the strategy, tags are coarse; the source
  // task's description is its intent, the prompt its detail.
  double title = 2.0;
  double body = 1.0;
  double tags = 0.5;
  double task = 2.0;
  double prompt = 1.0;
  // The source task's score counts this much beside the item's own texts (0: not read).
  double task_weight = 1.0;
};

// Scores matches for one query `terms` (QueryTerms): BM25 against `stats`, the collection the
// match belongs to, of its content fields plus task_weight times that of its source task,
// divided by the most an item could score there (each query term the store knows, `global`, at
// its idf in that collection x (k1 + 1)): the share of the query's weight that the item holds.
// In [0, 1); 0 when nothing matches. A word no item anywhere holds weighs nothing (typos, fresh
// identifiers); one that other projects know and this one does not weighs its highest idf, so a
// project that knows one generic word of the query does not look relevant. Comparable across
// projects, which a floor needs; long queries score lower (more weight to hold).
class MatchScorer {
 public:
  MatchScorer(std::vector<std::string> terms, const CorpusStats& global, RankWeights weights);
  double Score(const Match& m, const CorpusStats& stats) const;

 private:
  std::vector<std::string> terms_;
  std::unordered_map<std::string_view, size_t> index_;  // views into terms_
  std::vector<bool> known_;                             // per term: known to the store
  RankWeights weights_;
};

}  // namespace contextd::memory
