#include "store/sqlite/sqlite_conversation_store.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/testing/in_memory_conversation_store.h"
#include "store/conversation_store_contract.h"
#include "store/sqlite/sqlite_branch_store.h"
#include "store/test_util.h"

namespace contextd::store {
namespace {

using model::ConversationKey;
using model::ConversationState;
using model::ConversationStore;
using model::ConversationUpdate;
using model::Rewrite;
using model::RewriteKind;
using model::UsageRecord;

INSTANTIATE_TEST_SUITE_P(
    Impls, ConversationStoreContractTest,
    ::testing::Values(Impl{"Sqlite",
                           [](const TempDir& tmp) -> std::unique_ptr<ConversationStore> {
                             auto s = SqliteConversationStore::Open(tmp.File("contextd.db"));
                             EXPECT_TRUE(s.ok()) << s.status();
                             return s.ok() ? std::move(*s) : nullptr;
                           }},
                      Impl{"InMemoryFake",
                           [](const TempDir&) -> std::unique_ptr<ConversationStore> {
                             return std::make_unique<model::testing::InMemoryConversationStore>();
                           }}),
    [](const ::testing::TestParamInfo<Impl>& param) { return param.param.name; });

// What only the SQLite store promises: durability, sharing, and defence against its own file.
class SqliteConversationStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<SqliteConversationStore> MustOpen() {
    auto s = SqliteConversationStore::Open(path_);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  // Runs `sql` on the store's own connection (as a corrupting hand or bug would).
  void Exec(SqliteConversationStore& store, const std::string& sql) {
    std::lock_guard<std::mutex> lock(store.database().mutex());
    ASSERT_TRUE(store.database().Exec(sql).ok()) << sql;
  }

  TempDir tmp_;
  std::string path_ = tmp_.File("contextd.db");
  ConversationKey k1_{"local", "sess-1", "aaaa"};
};

TEST_F(SqliteConversationStoreTest, StateSurvivesReopeningTheFile) {
  std::vector<Rewrite> rewrites = {{RewriteKind::kFold, "toolu_1", "{\"branch\":\"br_a\"}"},
                                   {RewriteKind::kBlock, Hash(7), "[redacted]"}};
  {
    auto store = MustOpen();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Save(k1_, Update({Hash(1), Hash(2)}, rewrites, 100)).ok());
    ASSERT_TRUE(store->Save(k1_, Update({Hash(1), Hash(2), Hash(3)}, {}, 200)).ok());
    ASSERT_TRUE(store->RecordUsage(Usage("local", "br_a", 150, 10)).ok());
  }
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  auto s = store->Load(k1_);
  ASSERT_TRUE(s.ok() && s->has_value()) << s.status();
  EXPECT_EQ((*s)->frontier, (std::vector<std::string>{Hash(1), Hash(2), Hash(3)}));
  EXPECT_EQ((*s)->rewrites, rewrites);
  EXPECT_EQ((*s)->requests, 2);
  EXPECT_EQ((*s)->created_ms, 100);
  EXPECT_EQ((*s)->last_ms, 200);
  auto t = store->Totals("local", "br_a");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->requests, 1);
  EXPECT_EQ(t->input_tokens, 10);
  EXPECT_EQ(t->last_at_ms, 150);
}

TEST_F(SqliteConversationStoreTest, StoresSharingADatabaseSeeEachOthersWrites) {
  auto db = Database::Open(path_);
  ASSERT_TRUE(db.ok()) << db.status();
  std::shared_ptr<Database> shared(std::move(*db));
  auto a = SqliteConversationStore::Create(shared);
  auto b = SqliteConversationStore::Create(shared);
  auto branches = SqliteBranchStore::Create(shared);  // the same file holds both rooms' tables
  ASSERT_TRUE(a.ok() && b.ok() && branches.ok());
  ASSERT_TRUE((*a)->Save(k1_, Update({Hash(1)}, {{RewriteKind::kBlock, "k", "v"}}, 5)).ok());
  auto s = (*b)->Load(k1_);
  ASSERT_TRUE(s.ok() && s->has_value());
  EXPECT_EQ((*s)->rewrites.size(), 1u);
}

TEST_F(SqliteConversationStoreTest, SaveIsPartOfTheGroupCommitWhenTheDatabaseGroups) {
  auto db = Database::Open(path_);
  ASSERT_TRUE(db.ok()) << db.status();
  std::shared_ptr<Database> shared(std::move(*db));
  int groups_opened = 0;
  shared->EnableGroupCommit([&] { ++groups_opened; });
  auto store = SqliteConversationStore::Create(shared);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Save(k1_, Update({Hash(1)}, {{RewriteKind::kBlock, "k", "v"}}, 5)).ok());
  ASSERT_TRUE((*store)->RecordUsage(Usage("local", "", 5, 1)).ok());
  EXPECT_EQ(groups_opened, 1);
  EXPECT_TRUE(shared->group_open());
  // Read back inside the open group (no BEGIN is nested in it).
  auto s = (*store)->Load(k1_);
  ASSERT_TRUE(s.ok() && s->has_value()) << s.status();
  // A failed save undoes only itself, not the group.
  EXPECT_FALSE(
      (*store)->Save(k1_, Update({Hash(9)}, {{static_cast<RewriteKind>(0), "x", "y"}}, 6)).ok());
  ASSERT_TRUE(shared->CommitGroup().ok());
  EXPECT_FALSE(shared->group_open());
  auto reopened = MustOpen();
  ASSERT_NE(reopened, nullptr);
  auto after = reopened->Load(k1_);
  ASSERT_TRUE(after.ok() && after->has_value()) << after.status();
  EXPECT_EQ((*after)->frontier, std::vector<std::string>{Hash(1)});
  EXPECT_EQ((*after)->requests, 1);
  auto t = reopened->Totals("local", "");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->requests, 1);
}

TEST_F(SqliteConversationStoreTest, CorruptFrontierIsAnErrorNamingTheThread) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Save(k1_, Update({Hash(1)}, {}, 1)).ok());
  for (const char* blob : {
           "X'05AABB'",                                // length 5, two bytes left
           "X'80'",                                    // a varint that never ends
           "X'1000000000000000000000000000000000FF'",  // a good entry, then a cut varint
           "X'FFFFFFFFFFFFFFFFFF7F'",                  // a length past 64 bits
           "X'8080808080808080808080800100'",          // a varint of more than ten bytes
       }) {
    Exec(*store, absl::StrCat("UPDATE model_threads SET frontier = ", blob));
    auto s = store->Load(k1_);
    ASSERT_FALSE(s.ok()) << blob;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInternal) << blob;
    EXPECT_NE(s.status().message().find("local/sess-1/aaaa"), std::string::npos) << s.status();
    EXPECT_NE(s.status().message().find("frontier"), std::string::npos) << s.status();
  }
  // The thread can still be saved over (the frontier is replaced whole) and then loads again.
  ASSERT_TRUE(store->Save(k1_, Update({Hash(2)}, {}, 2)).ok());
  auto s = store->Load(k1_);
  ASSERT_TRUE(s.ok() && s->has_value()) << s.status();
  EXPECT_EQ((*s)->frontier, std::vector<std::string>{Hash(2)});
}

TEST_F(SqliteConversationStoreTest, ARewriteOfAnUnknownKindInTheFileIsAnError) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Save(k1_, Update({}, {{RewriteKind::kBlock, "k", "v"}}, 1)).ok());
  // What a newer binary's kind would look like, were the CHECK constraint not there.
  Exec(*store,
       "PRAGMA ignore_check_constraints = ON; UPDATE model_rewrites SET kind = 8; "
       "PRAGMA ignore_check_constraints = OFF;");
  auto s = store->Load(k1_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.status().message().find("local/sess-1/aaaa"), std::string::npos) << s.status();
}

TEST_F(SqliteConversationStoreTest, TheTotalsQueriesUseTheUsageIndex) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  Database& db = store->database();
  std::lock_guard<std::mutex> lock(db.mutex());
  for (const char* where : {"tenant = 'x'", "tenant = 'x' AND branch_id = 'b'"}) {
    auto st = db.Prepare(absl::StrCat(
        "EXPLAIN QUERY PLAN SELECT COUNT(*), SUM(input_tokens) FROM model_usage WHERE ", where));
    ASSERT_TRUE(st.ok()) << st.status();
    std::string plan;
    for (;;) {
      auto row = st->Step();
      ASSERT_TRUE(row.ok());
      if (!*row) break;
      plan += st->Text(3) + "\n";
    }
    EXPECT_NE(plan.find("model_usage_by_branch"), std::string::npos) << where << ": " << plan;
  }
}

}  // namespace
}  // namespace contextd::store

namespace contextd::store {
namespace {

// Usage per tenant and project (`contextd usage`, migration 0012).
TEST(SqliteUsageByProjectTest, SumsPerTenantAndProjectSinceAndForOneTenant) {
  TempDir tmp;
  auto store = SqliteConversationStore::Open(tmp.File("contextd.db"));
  ASSERT_TRUE(store.ok()) << store.status();
  auto in = [](std::string tenant, std::string project, int64_t at_ms, int64_t base) {
    UsageRecord r = Usage(std::move(tenant), "", at_ms, base);
    r.project = std::move(project);
    return r;
  };
  ASSERT_TRUE((*store)->RecordUsage(in("acme", "p_00000000000000aa", 100, 10)).ok());
  ASSERT_TRUE((*store)->RecordUsage(in("acme", "p_00000000000000aa", 200, 20)).ok());
  ASSERT_TRUE((*store)->RecordUsage(in("acme", "default", 300, 1)).ok());
  ASSERT_TRUE((*store)->RecordUsage(in("globex", "p_00000000000000aa", 400, 5)).ok());
  UsageRecord unset = Usage("local", "", 500, 7);  // project left at its default
  ASSERT_TRUE((*store)->RecordUsage(unset).ok());

  auto all = (*store)->UsageByProject("", 0);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[0].tenant, "acme");
  EXPECT_EQ((*all)[0].project, "default");
  EXPECT_EQ((*all)[1].project, "p_00000000000000aa");
  EXPECT_EQ((*all)[1].totals.requests, 2);
  EXPECT_EQ((*all)[1].totals.input_tokens, 30);
  EXPECT_EQ((*all)[1].totals.cache_read_input_tokens, 32);
  EXPECT_EQ((*all)[1].totals.cache_creation_input_tokens, 34);
  EXPECT_EQ((*all)[1].totals.output_tokens, 36);
  EXPECT_EQ((*all)[1].totals.last_at_ms, 200);
  EXPECT_EQ((*all)[2].tenant, "globex");
  EXPECT_EQ((*all)[3].tenant, "local");
  EXPECT_EQ((*all)[3].project, "default");

  auto acme_since = (*store)->UsageByProject("acme", 200);
  ASSERT_TRUE(acme_since.ok());
  ASSERT_EQ(acme_since->size(), 2u);
  EXPECT_EQ((*acme_since)[1].totals.requests, 1);
  EXPECT_EQ((*acme_since)[1].totals.input_tokens, 20);
  auto nobody = (*store)->UsageByProject("initech", 0);
  ASSERT_TRUE(nobody.ok());
  EXPECT_TRUE(nobody->empty());
}

}  // namespace
}  // namespace contextd::store
