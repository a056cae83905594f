// SqliteMemoryStore runs the MemoryStore contract (memory_store_contract.cc), plus the word
// splitting both stores' term counts rely on.
#include "memory/memory_bank.h"
#include "store/memory_store_contract.h"
#include "store/testing/sqlite_backend.h"

namespace contextd::store::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Sqlite, MemoryBankTest, ::testing::Values(SqliteFactory()), BackendName);

TEST(QueryTermsTest, LowercaseWordsWithoutStopWordsOnce) {
  EXPECT_EQ(memory::QueryTerms("The Parser_fails on the UTF-8 input; the parser!"),
            (std::vector<std::string>{"parser", "fails", "utf", "input"}));
  EXPECT_DOUBLE_EQ(memory::WordOverlap("alpha beta", "beta alpha"), 1.0);
  EXPECT_DOUBLE_EQ(memory::WordOverlap("", ""), 0.0);
  EXPECT_EQ(memory::IndexTerms("The the parser"), (std::vector<std::string>{"the", "parser"}));
}

}  // namespace
}  // namespace contextd::store::testing
