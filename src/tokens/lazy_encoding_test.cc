#include "tokens/lazy_encoding.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace contextd::tokens {
namespace {

TEST(LazyEncodingTest, UnknownNameIsRejectedWithoutLoading) {
  auto lazy = LazyEncoding::Create("p50k_base");
  EXPECT_EQ(lazy.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LazyEncodingTest, CountsLikeTheLoadedTokenizer) {
  auto lazy = LazyEncoding::Create("cl100k_base");
  ASSERT_TRUE(lazy.ok());
  EXPECT_EQ((*lazy)->name(), "cl100k_base");
  auto loaded = GetEncoding("cl100k_base");
  ASSERT_TRUE(loaded.ok());
  const std::string text = "Hello, world! Budgets mean nothing unless tokens are counted.";
  EXPECT_EQ((*lazy)->Count(text), (*loaded)->Count(text));
  EXPECT_EQ(&(*lazy)->Get(), *loaded);
}

TEST(LazyEncodingTest, ConcurrentFirstCountsAgree) {
  auto lazy = LazyEncoding::Create("o200k_base");
  ASSERT_TRUE(lazy.ok());
  std::vector<size_t> counts(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < counts.size(); ++i) {
    threads.emplace_back([&, i] { counts[i] = (*lazy)->Count("one two three four"); });
  }
  for (auto& t : threads) t.join();
  for (size_t c : counts) EXPECT_EQ(c, counts[0]);
  EXPECT_EQ(counts[0], 4u);
}

}  // namespace
}  // namespace contextd::tokens
