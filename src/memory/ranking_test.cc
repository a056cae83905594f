#include "memory/ranking.h"

#include "gtest/gtest.h"

namespace contextd::memory {
namespace {

Match Item(const std::string& title, const std::string& body, const std::string& task = "") {
  Match m;
  m.id = title;
  m.stems.title = StemText(title);
  m.stems.body = StemText(body);
  m.stems.task = StemText(task);
  return m;
}

CorpusStats Stats(int64_t items, std::map<std::string, TermFrequency, std::less<>> terms) {
  CorpusStats s;
  s.items = items;
  s.content_length = items * 10;
  s.task_length = items * 5;
  s.terms = std::move(terms);
  return s;
}

TEST(RankingTest, RareTermsWeighMoreThanCommonOnes) {
  const CorpusStats stats = Stats(100, {{"walrus", {1, 0}}, {"migrat", {60, 0}}});
  const MatchScorer scorer(QueryTerms("walrus migration"), stats, RankWeights{});
  const double rare = scorer.Score(Item("walrus", "a b c d e f g h i"), stats);
  const double common = scorer.Score(Item("migration", "a b c d e f g h i"), stats);
  EXPECT_GT(rare, common);
  EXPECT_GT(common, 0);
  EXPECT_EQ(scorer.Score(Item("nothing here", "a b c"), stats), 0);
}

TEST(RankingTest, TheProjectsOwnStatisticsDecide) {
  // The same item, holding one of two query terms, is more relevant where that term is the rare
  // one.
  const MatchScorer scorer(QueryTerms("cache walrus"),
                           Stats(200, {{"cach", {92, 0}}, {"walrus", {52, 0}}}), RankWeights{});
  const Match m = Item("cache", "a b c d e f g h i");
  const double rare_there = scorer.Score(m, Stats(100, {{"cach", {2, 0}}, {"walrus", {50, 0}}}));
  const double common_there = scorer.Score(m, Stats(100, {{"cach", {90, 0}}, {"walrus", {2, 0}}}));
  EXPECT_GT(rare_there, common_there);
  EXPECT_LT(rare_there, 1.0);
}

TEST(RankingTest, RelevanceIsTheShareOfTheQuerysWeight) {
  const CorpusStats project = Stats(10, {{"cach", {1, 0}}});
  const CorpusStats store = Stats(50, {{"cach", {1, 0}}, {"deploy", {3, 0}}});
  const Match m = Item("cache", "a b c d e f g h i");
  const double alone = MatchScorer(QueryTerms("cache"), store, {}).Score(m, project);
  // Words no item holds weigh nothing: a query padded with them scores the same.
  EXPECT_DOUBLE_EQ(alone, MatchScorer(QueryTerms("cache zebra yak"), store, {}).Score(m, project));
  // A word other projects know and this one does not weighs its highest idf.
  EXPECT_LT(MatchScorer(QueryTerms("cache deploy"), store, {}).Score(m, project), alone / 2);
}

TEST(RankingTest, TaskWeightZeroIgnoresTheSourceTask) {
  RankWeights w;
  const CorpusStats stats = Stats(10, {{"deploy", {0, 2}}});
  const Match m = Item("x", "y", "deploy the service");
  EXPECT_GT(MatchScorer(QueryTerms("deploy"), stats, w).Score(m, stats), 0);
  w.task_weight = 0;
  EXPECT_EQ(MatchScorer(QueryTerms("deploy"), stats, w).Score(m, stats), 0);
}

}  // namespace
}  // namespace contextd::memory
