#include "memory/terms.h"

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace contextd::memory {
namespace {

using ::testing::ElementsAre;

TEST(TermsTest, QueryTermsAreStemsWithoutStopWordsOnce) {
  EXPECT_THAT(QueryTerms("The Parser_fails on the UTF-8 input; the parsers!"),
              ElementsAre("parser", "fail", "utf", "input"));
}

TEST(TermsTest, CachingCachedAndCacheAreOneTerm) {
  EXPECT_THAT(QueryTerms("caching cached cache caches"), ElementsAre("cach"));
  EXPECT_EQ(Stem("caching"), Stem("cache"));
}

TEST(TermsTest, StopWordsAreJudgedBeforeStemming) {
  // "was" is a stop word; its stem "wa" would not be one. "using" is not a stop word ("use" is).
  EXPECT_THAT(QueryTerms("it was using"), ElementsAre("use"));
  EXPECT_THAT(IndexTerms("The the parsers"), ElementsAre("the", "parser"));
}

TEST(TermsTest, StemTextKeepsEveryWordInOrder) {
  EXPECT_EQ(StemText("Fixing the fixes, fixed!"), "fix the fix fix");
  EXPECT_EQ(StemText(""), "");
  EXPECT_THAT(SplitStems("fix the  fix"), ElementsAre("fix", "the", "fix"));
}

TEST(TermsTest, ItemStemsOneTextPerField) {
  MemoryItem item;
  item.title = "Caching tokens";
  item.description = "Why";
  item.content = "Cached";
  item.tags = {"perf", "caches"};
  item.source.description = "Speed it up";
  item.source.prompt = "Running tests";
  ItemStems s = StemsOf(item);
  EXPECT_EQ(s.title, "cach token");
  EXPECT_EQ(s.body, "whi cach");
  EXPECT_EQ(s.tags, "perf cach");
  EXPECT_EQ(s.task, "speed it up");
  EXPECT_EQ(s.prompt, "run test");
}

TEST(TermsTest, EachThreadHasItsOwnStemmer) {
  std::vector<std::thread> threads;
  std::vector<std::string> got(4);
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&got, i] {
      for (int n = 0; n < 2000; ++n) got[i] = StemText("running connections cached");
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& g : got) EXPECT_EQ(g, "run connect cach");
}

TEST(TermsTest, WordOverlapOnStems) {
  EXPECT_DOUBLE_EQ(WordOverlap("alpha beta", "beta alpha"), 1.0);
  EXPECT_DOUBLE_EQ(WordOverlap("fixing parsers", "fixed parser"), 1.0);
  EXPECT_DOUBLE_EQ(WordOverlap("", ""), 0.0);
}

}  // namespace
}  // namespace contextd::memory
