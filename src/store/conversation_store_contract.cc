// The contract of model::ConversationStore, run against every implementation (SQLite,
// PostgreSQL, the in-memory fake). Instantiated by each backend's test binary.
#include "store/conversation_store_contract.h"

#include <map>
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
      {RewriteKind::kAutoFold, Hash(3), "handle"},
      {RewriteKind::kView, "toolu_02", "{}"},
      {RewriteKind::kDropThinking, Hash(4), ""},
      {RewriteKind::kLessons, Hash(5), R"({"block":"{}","ids":["mem_1"],"tokens":3})"},
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

TEST_P(ConversationStoreContractTest, ViewUsagePerBranchCountsEachViewOfItsTenant) {
  auto none = store_->ViewUsage("local", "br_a");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->isolated_requests, 0);
  auto record = [&](std::string tenant, std::string branch, std::string view, int64_t spared) {
    UsageRecord r = Usage(std::move(tenant), std::move(branch), 100, 1);
    r.branch_view = std::move(view);
    r.view_tokens_spared = spared;
    ASSERT_TRUE(store_->RecordUsage(r).ok());
  };
  record("local", "br_a", "isolated", 300);
  record("local", "br_a", "isolated", 200);
  record("local", "br_a", "inherited", 0);
  record("local", "br_a", "summary", 0);
  record("local", "br_b", "isolated", 40);
  record("acme", "br_a", "isolated", 9);
  auto a = store_->ViewUsage("local", "br_a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->isolated_requests, 2);
  EXPECT_EQ(a->inherited_requests, 1);
  EXPECT_EQ(a->view_tokens_spared, 500);
  auto acme = store_->ViewUsage("acme", "br_a");
  ASSERT_TRUE(acme.ok());
  EXPECT_EQ(acme->view_tokens_spared, 9);
}

TEST_P(ConversationStoreContractTest, RecentConversationsSumFoldsAndSkipsPerConversation) {
  auto none = store_->RecentConversations("local", 10);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());

  auto record = [&](std::string tenant, std::string conversation, std::string thread, int64_t at_ms,
                    int folds_new, std::map<std::string, int> skipped,
                    std::string project = "default") {
    UsageRecord r = Usage(std::move(tenant), "", at_ms, at_ms);
    r.key.conversation = std::move(conversation);
    r.key.thread = std::move(thread);
    r.project = std::move(project);
    r.folds_new = folds_new;
    r.folds_skipped = std::move(skipped);
    // One request of sess-a in an isolated branch view, one in an inherited one.
    if (r.key.conversation == "sess-a" && at_ms != 100) {
      r.branch_view = at_ms == 200 ? "isolated" : "inherited";
      r.view_tokens_spared = at_ms == 200 ? 77 : 0;
    }
    absl::Status st = store_->RecordUsage(r);
    ASSERT_TRUE(st.ok()) << st;
  };
  // Two threads of one conversation count as one; reasons are open strings, summed by name.
  record("local", "sess-a", "t1", 100, 1, {}, "web");
  record("local", "sess-a", "t2", 300, 0, {{"not_at_tail", 2}, {"a reason \"quoted\"", 1}}, "api");
  record("local", "sess-a", "t1", 200, 2, {{"not_at_tail", 1}, {"zero", 0}});
  record("local", "sess-b", "t1", 400, 0, {{"unknown_block", 3}});
  record("local", "sess-c", "t1", 50, 0, {});
  record("acme", "sess-z", "t1", 900, 5, {{"overlap", 1}});

  auto all = store_->RecentConversations("local", 10);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  // Most recent first.
  const model::ConversationSummary& b = (*all)[0];
  EXPECT_EQ(b.conversation, "sess-b");
  EXPECT_EQ(b.requests, 1);
  EXPECT_EQ(b.folds_new, 0);
  EXPECT_EQ(b.folds_skipped, (std::map<std::string, int64_t>{{"unknown_block", 3}}));
  const model::ConversationSummary& a = (*all)[1];
  EXPECT_EQ(a.conversation, "sess-a");
  EXPECT_EQ(a.project, "api");  // of its latest request
  EXPECT_EQ(a.requests, 3);
  EXPECT_EQ(a.folds_new, 3);
  EXPECT_EQ(a.folds_skipped,
            (std::map<std::string, int64_t>{{"a reason \"quoted\"", 1}, {"not_at_tail", 3}}));
  EXPECT_EQ(a.tokens_before, (100 + 4) + (300 + 4) + (200 + 4));
  EXPECT_EQ(a.tokens_after, (100 + 5) + (300 + 5) + (200 + 5));
  EXPECT_EQ(a.first_at_ms, 100);
  EXPECT_EQ(a.last_at_ms, 300);
  EXPECT_EQ(a.isolated_requests, 1);
  EXPECT_EQ(a.view_tokens_spared, 77);
  EXPECT_EQ(b.isolated_requests, 0);
  EXPECT_EQ(b.view_tokens_spared, 0);
  const model::ConversationSummary& c = (*all)[2];
  EXPECT_EQ(c.conversation, "sess-c");
  EXPECT_TRUE(c.folds_skipped.empty());

  auto two = store_->RecentConversations("local", 2);
  ASSERT_TRUE(two.ok()) << two.status();
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0], b);
  EXPECT_EQ((*two)[1], a);

  auto acme = store_->RecentConversations("acme", 10);
  ASSERT_TRUE(acme.ok()) << acme.status();
  ASSERT_EQ(acme->size(), 1u);
  EXPECT_EQ((*acme)[0].folds_new, 5);
  EXPECT_EQ((*acme)[0].folds_skipped, (std::map<std::string, int64_t>{{"overlap", 1}}));
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
