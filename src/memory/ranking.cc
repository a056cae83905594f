#include "memory/ranking.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

namespace contextd::memory {
namespace {

// Adds `weight` to tf[i] for each stem of `field` that is query term i; returns the field's length.
double CountField(std::string_view field, const std::unordered_map<std::string_view, size_t>& index,
                  double weight, std::vector<double>& tf) {
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

// One side's BM25: sum over the terms it holds of idf x saturated, length-normalised tf; adds to
// `most` the most any item could score (idf x (k1 + 1) of each `known` term: a term the store
// knows and this collection does not weighs its highest idf).
template <typename DfOf>
double Bm25(const std::vector<std::string>& terms, const std::vector<bool>& known,
            const std::vector<double>& tf, double length, double total_length,
            const CorpusStats& stats, const RankWeights& w, DfOf df_of, double& most) {
  if (stats.items <= 0) return 0;
  const double average = total_length > 0 ? total_length / static_cast<double>(stats.items) : 1.0;
  const double norm = w.k1 * (1.0 - w.b + w.b * length / average);
  double score = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    auto it = stats.terms.find(terms[i]);
    const int64_t df = it == stats.terms.end() ? 0 : df_of(it->second);
    if (known[i]) most += Idf(stats.items, df) * (w.k1 + 1.0);
    if (tf[i] <= 0) continue;
    score += Idf(stats.items, std::max<int64_t>(1, df)) * tf[i] * (w.k1 + 1.0) / (tf[i] + norm);
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

double MatchScorer::Score(const Match& m, const CorpusStats& stats) const {
  const RankWeights& w = weights_;
  std::vector<double> tf(terms_.size(), 0.0);
  double length = CountField(m.stems.title, index_, w.title, tf);
  length += CountField(m.stems.body, index_, w.body, tf);
  length += CountField(m.stems.tags, index_, w.tags, tf);
  double most = 0;
  double score = Bm25(
      terms_, known_, tf, length, static_cast<double>(stats.content_length), stats, w,
      [](const TermFrequency& f) { return f.content; }, most);
  if (w.task_weight > 0) {
    std::fill(tf.begin(), tf.end(), 0.0);
    length = CountField(m.stems.task, index_, w.task, tf);
    length += CountField(m.stems.prompt, index_, w.prompt, tf);
    double task_most = 0;
    score +=
        w.task_weight * Bm25(
                            terms_, known_, tf, length, static_cast<double>(stats.task_length),
                            stats, w, [](const TermFrequency& f) { return f.task; }, task_most);
    most += w.task_weight * task_most;
  }
  return most > 0 ? score / most : 0;
}

}  // namespace contextd::memory
