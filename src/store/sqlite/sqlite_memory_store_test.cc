// SqliteMemoryStore runs the MemoryStore contract (memory_store_contract.cc), plus what migration
// 20 leaves for rows stored before it: items without stems or term counts, stemmed at open.
#include "store/sqlite/sqlite_memory_store.h"

#include "memory/memory_bank.h"
#include "store/memory_store_contract.h"
#include "store/sqlite/database.h"
#include "store/test_util.h"
#include "store/testing/sqlite_backend.h"

namespace contextd::store::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Sqlite, MemoryBankTest, ::testing::Values(SqliteFactory()), BackendName);

memory::MemoryItem Item(std::string id, std::string title) {
  memory::MemoryItem item;
  item.id = std::move(id);
  item.tenant = "acme";
  item.project = "web";
  item.title = std::move(title);
  item.description = "d";
  item.content = "Cached vocabularies load once.";
  item.source.description = "speed up the tokenizer";
  return item;
}

int64_t ContentDf(SqliteMemoryStore& store, const std::string& stem) {
  auto found = store.FindMatches({"acme", "web", std::nullopt, false}, {stem}, 10);
  EXPECT_TRUE(found.ok()) << found.status();
  if (!found.ok()) return -1;
  EXPECT_EQ(found->items.size(), static_cast<size_t>(found->global.terms[stem].content));
  return found->global.terms[stem].content;
}

TEST(SqliteMemoryStoreTest, RowsWithoutStemsAreStemmedAtOpenOnce) {
  TempDir tmp;
  const std::string path = tmp.File("memory.db");
  {
    auto store = SqliteMemoryStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->Insert(Item("mem_1", "Caching the tokenizer"), {}).ok());
    ASSERT_TRUE((*store)->Insert(Item("mem_2", "Cache warm-up"), {}).ok());
  }
  {
    // What migration 21 leaves for items stored before it: no stems, no counts.
    auto db = Database::Open(path);
    ASSERT_TRUE(db.ok()) << db.status();
    std::lock_guard<std::mutex> lock((*db)->mutex());
    ASSERT_TRUE((*db)
                    ->Exec("DELETE FROM memory_stems; INSERT INTO memory_stem_fts "
                           "(memory_stem_fts) VALUES ('delete-all'); DELETE FROM memory_terms; "
                           "DELETE FROM memory_project_terms; DELETE FROM memory_corpus;")
                    .ok());
  }
  for (int open = 0; open < 2; ++open) {  // the second open finds nothing to do
    auto store = SqliteMemoryStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ(ContentDf(**store, memory::Stem("caching")), 2) << "open " << open;
    EXPECT_EQ(ContentDf(**store, memory::Stem("vocabularies")), 2) << "open " << open;
    auto found = (*store)->FindMatches({"acme", "web", std::nullopt, false},
                                       {memory::Stem("tokenizer")}, 10);
    ASSERT_TRUE(found.ok());
    EXPECT_EQ((found->projects[{"acme", "web"}].items), 2);
  }
}

}  // namespace
}  // namespace contextd::store::testing
