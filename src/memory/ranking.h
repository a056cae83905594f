// The bank's relevance score: BM25 over stems (memory/terms.h) with per-field weights, computed
// from the statistics of the item's own collection (its tenant and project) and normalised to
// [0, 1), so that both stores rank alike, one project's ranking does not move with another
// project's items, and one floor serves every project. Pure
// functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
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
  // Query term -> its position; looked up for every stem of every matched item (an open-addressing
  // table: std::unordered_map's node per entry and byte hash were a tenth of a search's time).
  using QueryIndex = absl::flat_hash_map<std::string_view, size_t>;
  // What scoring in one collection needs of its statistics, per query term, computed once for
  // all of a search's matches from that collection (they come from a handful of projects).
  struct Side {
    std::vector<double> idf;  // per query term, df taken as at least 1; all 0 in an empty one
    double most = 0;          // the most an item could score on this side
    double norm_base = 0, norm_per_length = 0;  // k1 x (1 - b + b x length / average length)
  };
  struct Collection {
    Side content, task;
  };

  MatchScorer(std::vector<std::string> terms, const CorpusStats& global, RankWeights weights);
  Collection Prepare(const CorpusStats& stats) const;
  double Score(const Match& m, const Collection& collection) const;
  // One item alone (ScoreMatches prepares each collection once for many).
  double Score(const Match& m, const CorpusStats& stats) const { return Score(m, Prepare(stats)); }

 private:
  std::vector<std::string> terms_;
  QueryIndex index_;         // views into terms_
  std::vector<bool> known_;  // per term: known to the store
  RankWeights weights_;
};

// The score of each of found.items in order, for the query `terms`: MatchScorer::Score against
// the item's own project's statistics (found.global if found.projects lacks it), each project's
// prepared once.
std::vector<double> ScoreMatches(const std::vector<std::string>& terms, const Matches& found,
                                 const RankWeights& weights);

}  // namespace contextd::memory
