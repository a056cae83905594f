#include "memory/ranking.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace contextd::memory {
namespace {

// Adds `weight` to tf[i] for each stem of `field` that is query term i; returns the field's length.
double CountField(std::string_view field, const MatchScorer::QueryIndex& index, double weight,
                  std::vector<double>& tf) {
  double length = 0;
  size_t start = 0;
  while (start < field.size()) {  // SplitStems without the vector: this runs per matched item
    size_t end = field.find(' ', start);
    if (end == std::string_view::npos) end = field.size();
    if (end > start) {
      ++length;
      auto it = index.find(field.substr(start, end - start));
      if (it != index.end()) tf[it->second] += weight;
    }
    start = end + 1;
  }
  return length;
}

double Idf(int64_t items, int64_t df) {
  const double n = static_cast<double>(items), d = static_cast<double>(df);
  return std::log(1.0 + (n - d + 0.5) / (d + 0.5));
}

// One side's statistics for the query `terms`: each term's idf (a term the collection does not
// hold scores at its highest idf), and `most`, what an item holding every `known` term would
// score (idf x (k1 + 1) each).
template <typename DfOf>
MatchScorer::Side PrepareSide(const std::vector<std::string>& terms, const std::vector<bool>& known,
                              const CorpusStats& stats, double total_length, const RankWeights& w,
                              DfOf df_of) {
  MatchScorer::Side side;
  side.idf.assign(terms.size(), 0.0);
  if (stats.items <= 0) return side;
  for (size_t i = 0; i < terms.size(); ++i) {
    auto it = stats.terms.find(terms[i]);
    const int64_t df = it == stats.terms.end() ? 0 : df_of(it->second);
    if (known[i]) side.most += Idf(stats.items, df) * (w.k1 + 1.0);
    side.idf[i] = Idf(stats.items, std::max<int64_t>(1, df));
  }
  const double average = total_length > 0 ? total_length / static_cast<double>(stats.items) : 1.0;
  side.norm_base = w.k1 * (1.0 - w.b);
  side.norm_per_length = w.k1 * w.b / average;
  return side;
}

// One side's BM25: sum over the terms the item holds of idf x saturated, length-normalised tf.
double Bm25(const MatchScorer::Side& side, const std::vector<double>& tf, double length,
            const RankWeights& w) {
  const double norm = side.norm_base + side.norm_per_length * length;
  double score = 0;
  for (size_t i = 0; i < tf.size(); ++i) {
    if (tf[i] > 0) score += side.idf[i] * tf[i] * (w.k1 + 1.0) / (tf[i] + norm);
  }
  return score;
}

}  // namespace

MatchScorer::MatchScorer(std::vector<std::string> terms, const CorpusStats& global,
                         RankWeights weights)
    : terms_(std::move(terms)), weights_(weights) {
  for (size_t i = 0; i < terms_.size(); ++i) {
    index_.emplace(terms_[i], i);
    auto it = global.terms.find(terms_[i]);
    known_.push_back(it != global.terms.end() && it->second.content + it->second.task > 0);
  }
}

MatchScorer::Collection MatchScorer::Prepare(const CorpusStats& stats) const {
  Collection c;
  c.content = PrepareSide(terms_, known_, stats, static_cast<double>(stats.content_length),
                          weights_, [](const TermFrequency& f) { return f.content; });
  if (weights_.task_weight > 0) {
    c.task = PrepareSide(terms_, known_, stats, static_cast<double>(stats.task_length), weights_,
                         [](const TermFrequency& f) { return f.task; });
  }
  return c;
}

double MatchScorer::Score(const Match& m, const Collection& c) const {
  const RankWeights& w = weights_;
  std::vector<double> tf(terms_.size(), 0.0);
  double length = CountField(m.stems.title, index_, w.title, tf);
  length += CountField(m.stems.body, index_, w.body, tf);
  length += CountField(m.stems.tags, index_, w.tags, tf);
  double score = Bm25(c.content, tf, length, w);
  double most = c.content.most;
  if (w.task_weight > 0) {
    std::fill(tf.begin(), tf.end(), 0.0);
    length = CountField(m.stems.task, index_, w.task, tf);
    length += CountField(m.stems.prompt, index_, w.prompt, tf);
    score += w.task_weight * Bm25(c.task, tf, length, w);
    most += w.task_weight * c.task.most;
  }
  return most > 0 ? score / most : 0;
}

std::vector<double> ScoreMatches(const std::vector<std::string>& terms, const Matches& found,
                                 const RankWeights& weights) {
  const MatchScorer scorer(terms, found.global, weights);
  std::map<std::pair<std::string, std::string>, MatchScorer::Collection> prepared;
  std::vector<double> out;
  out.reserve(found.items.size());
  for (const Match& m : found.items) {
    auto [c, fresh] = prepared.try_emplace({m.tenant, m.project});
    if (fresh) {
      auto stats = found.projects.find(c->first);
      c->second = scorer.Prepare(stats == found.projects.end() ? found.global : stats->second);
    }
    out.push_back(scorer.Score(m, c->second));
  }
  return out;
}

}  // namespace contextd::memory
