// The contract of model::ConversationStore, run against every implementation (SQLite,
// PostgreSQL, the in-memory fake). Instantiated by each backend's test binary.
#include "store/conversation_store_contract.h"

#include <thread>

namespace contextd::store {
namespace {

TEST_P(ConversationStoreContractTest, UnknownThreadLoadsAsNothing) {
  auto s = store_->Load(k1_);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->has_value());
}

TEST_P(ConversationStoreContractTest, SaveThenLoadRoundTrips) {
  std::vector<Rewrite> rewrites = {
      {RewriteKind::kBlock, Hash(1), "[folded: br_x returned]"},
      {RewriteKind::kAppend, Hash(2), R"({"type":"text","text":"notice"})"},
      {RewriteKind::kFold, "toolu_01", std::string("bin\0ary\xfe", 8)},
      {RewriteKind::kBlock, "", ""},  // empty key and value are kept, not NULL
  };
  MustSave(k1_, Update({Hash(1), Hash(2), "", std::string(300, 'x')}, rewrites, 1000));
  ConversationState s = MustLoad(k1_);
  EXPECT_EQ(s.frontier, (std::vector<std::string>{Hash(1), Hash(2), "", std::string(300, 'x')}));
  EXPECT_EQ(s.rewrites, rewrites);
  EXPECT_EQ(s.requests, 1);
  EXPECT_EQ(s.created_ms, 1000);
  EXPECT_EQ(s.last_ms, 1000);
}

TEST_P(ConversationStoreContractTest, FrontierIsReplacedAndRequestsCounted) {
  MustSave(k1_, Update({Hash(1), Hash(2), Hash(3)}, {}, 1000));
  MustSave(k1_, Update({Hash(1)}, {}, 2000));
  MustSave(k1_, Update({Hash(1), Hash(4)}, {}, 3000));
  ConversationState s = MustLoad(k1_);
  EXPECT_EQ(s.frontier, (std::vector<std::string>{Hash(1), Hash(4)}));
  EXPECT_EQ(s.requests, 3);
  EXPECT_EQ(s.created_ms, 1000);
  EXPECT_EQ(s.last_ms, 3000);
  MustSave(k1_, Update({}, {}, 4000));
  EXPECT_TRUE(MustLoad(k1_).frontier.empty());
}

TEST_P(ConversationStoreContractTest, FirstRewriteValueWins) {
  MustSave(k1_, Update({}, {{RewriteKind::kBlock, Hash(1), "first"}}, 1));
  MustSave(k1_, Update({}, {{RewriteKind::kBlock, Hash(1), "second"}}, 2));
  // Twice in one update: the first of the two wins as well.
  MustSave(k1_, Update({}, {{RewriteKind::kFold, "t", "a"}, {RewriteKind::kFold, "t", "b"}}, 3));
  ConversationState s = MustLoad(k1_);
  EXPECT_EQ(s.rewrites, (std::vector<Rewrite>{{RewriteKind::kBlock, Hash(1), "first"},
                                              {RewriteKind::kFold, "t", "a"}}));
}

TEST_P(ConversationStoreContractTest, RewritesKeepTheOrderFirstSaved) {
  // Keys in descending byte order and kinds out of order: neither may decide the order.
  std::vector<Rewrite> want;
  for (int i = 0; i < 20; ++i) {
    RewriteKind kind = (i % 3 == 0) ? RewriteKind::kFold
                                    : (i % 3 == 1 ? RewriteKind::kBlock : RewriteKind::kAppend);
    want.push_back({kind, std::string(1, static_cast<char>('z' - i)), absl::StrCat("v", i)});
  }
  for (size_t i = 0; i < want.size(); i += 4) {
    std::vector<Rewrite> batch(want.begin() + static_cast<std::ptrdiff_t>(i),
                               want.begin() + static_cast<std::ptrdiff_t>(i + 4));
    // Repeats of earlier keys neither move nor change them.
    batch.push_back({want[0].kind, want[0].key, "late"});
    MustSave(k1_, Update({}, batch, static_cast<int64_t>(i)));
  }
  EXPECT_EQ(MustLoad(k1_).rewrites, want);
}

TEST_P(ConversationStoreContractTest, KindsAreSeparateKeySpaces) {
  MustSave(k1_, Update({},
                       {{RewriteKind::kBlock, "k", "block"},
                        {RewriteKind::kAppend, "k", "append"},
                        {RewriteKind::kFold, "k", "fold"}},
                       1));
  EXPECT_EQ(MustLoad(k1_).rewrites, (std::vector<Rewrite>{{RewriteKind::kBlock, "k", "block"},
                                                          {RewriteKind::kAppend, "k", "append"},
                                                          {RewriteKind::kFold, "k", "fold"}}));
}

TEST_P(ConversationStoreContractTest, ThreadsConversationsAndTenantsAreIsolated) {
  ConversationKey other_thread{"local", "sess-1", "bbbb"};
  ConversationKey other_conversation{"local", "sess-2", "aaaa"};
  ConversationKey other_tenant{"acme", "sess-1", "aaaa"};
  MustSave(k1_, Update({Hash(1)}, {{RewriteKind::kBlock, "k", "mine"}}, 10));
  MustSave(other_thread, Update({Hash(2)}, {{RewriteKind::kBlock, "k", "thread"}}, 20));
  MustSave(other_tenant, Update({Hash(3)}, {{RewriteKind::kBlock, "k", "tenant"}}, 30));
  ConversationState mine = MustLoad(k1_);
  EXPECT_EQ(mine.frontier, std::vector<std::string>{Hash(1)});
  EXPECT_EQ(mine.rewrites, (std::vector<Rewrite>{{RewriteKind::kBlock, "k", "mine"}}));
  EXPECT_EQ(mine.requests, 1);
  EXPECT_EQ(MustLoad(other_thread).rewrites,
            (std::vector<Rewrite>{{RewriteKind::kBlock, "k", "thread"}}));
  EXPECT_EQ(MustLoad(other_tenant).frontier, std::vector<std::string>{Hash(3)});
  auto none = store_->Load(other_conversation);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST_P(ConversationStoreContractTest, AnUnknownRewriteKindFailsTheWholeSave) {
  MustSave(k1_, Update({Hash(1)}, {}, 1));
  absl::Status st = store_->Save(
      k1_, Update({Hash(2)},
                  {{RewriteKind::kBlock, "k", "v"}, {static_cast<RewriteKind>(9), "k", "v"}}, 2));
  EXPECT_FALSE(st.ok());
  ConversationState s = MustLoad(k1_);  // nothing of it applied
  EXPECT_EQ(s.frontier, std::vector<std::string>{Hash(1)});
  EXPECT_TRUE(s.rewrites.empty());
  EXPECT_EQ(s.requests, 1);
}

TEST_P(ConversationStoreContractTest, UsageTotalsPerTenantAndPerBranch) {
  auto empty = store_->Totals("local", "");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->requests, 0);
  EXPECT_EQ(empty->input_tokens, 0);
  EXPECT_EQ(empty->last_at_ms, 0);

  ASSERT_TRUE(store_->RecordUsage(Usage("local", "", 500, 10)).ok());
  ASSERT_TRUE(store_->RecordUsage(Usage("local", "br_a", 700, 100)).ok());
  ASSERT_TRUE(store_->RecordUsage(Usage("local", "br_a", 600, 1000)).ok());
  ASSERT_TRUE(store_->RecordUsage(Usage("acme", "br_a", 900, 5)).ok());

  auto all = store_->Totals("local", "");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->requests, 3);
  EXPECT_EQ(all->input_tokens, 1110);
  EXPECT_EQ(all->cache_read_input_tokens, 1113);
  EXPECT_EQ(all->cache_creation_input_tokens, 1116);
  EXPECT_EQ(all->output_tokens, 1119);
  EXPECT_EQ(all->tokens_before, 1122);
  EXPECT_EQ(all->tokens_after, 1125);
  EXPECT_EQ(all->last_at_ms, 700);  // the latest, not the last recorded

  auto branch = store_->Totals("local", "br_a");
  ASSERT_TRUE(branch.ok()) << branch.status();
  EXPECT_EQ(branch->requests, 2);
  EXPECT_EQ(branch->input_tokens, 1100);
  EXPECT_EQ(branch->output_tokens, 1106);
  EXPECT_EQ(branch->last_at_ms, 700);

  auto acme = store_->Totals("acme", "br_a");
  ASSERT_TRUE(acme.ok());
  EXPECT_EQ(acme->requests, 1);
  EXPECT_EQ(acme->input_tokens, 5);
  auto nobody = store_->Totals("local", "br_none");
  ASSERT_TRUE(nobody.ok());
  EXPECT_EQ(nobody->requests, 0);
}

TEST_P(ConversationStoreContractTest, ConcurrentSavesToOneThreadAllCount) {
  constexpr int kThreads = 4;
  constexpr int kSaves = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kSaves; ++i) {
        Rewrite shared{RewriteKind::kBlock, "shared", absl::StrCat(t)};
        Rewrite own{RewriteKind::kFold, absl::StrCat(t, "/", i), "v"};
        EXPECT_TRUE(store_->Save(k1_, Update({Hash(t)}, {shared, own}, i)).ok());
        EXPECT_TRUE(store_->RecordUsage(Usage("local", "", i, 1)).ok());
      }
    });
  }
  for (std::thread& th : threads) th.join();
  ConversationState s = MustLoad(k1_);
  EXPECT_EQ(s.requests, kThreads * kSaves);
  EXPECT_EQ(s.rewrites.size(), 1u + kThreads * kSaves);
  EXPECT_EQ(s.rewrites.front().key, "shared");
  auto totals = store_->Totals("local", "");
  ASSERT_TRUE(totals.ok());
  EXPECT_EQ(totals->requests, kThreads * kSaves);
}

}  // namespace
}  // namespace contextd::store
