// The contract of RetentionStore (store/retention.h), run against SQLite and PostgreSQL: a fake
// clock moves loaded stores past their windows; old rows and blobs go, what is still referenced
// or recent stays, and usage totals do not change.
#include "store/retention_store_contract.h"

#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "memory/memory_item.h"
#include "trail/trail.h"

namespace contextd::store::testing {
namespace {

using std::chrono::hours;

trail::Scope Root(const std::string& id, int64_t at_ms) {
  trail::Scope s;
  s.id = id;
  s.session = trail::SessionRef{"local", "default", "mcp-" + id};
  s.kind = trail::ScopeKind::kSession;
  s.description = "session " + id;
  s.created_at_ms = at_ms;
  return s;
}

trail::Scope Child(const std::string& id, const std::string& parent, const std::string& root,
                   int64_t at_ms) {
  trail::Scope s = Root(root, at_ms);
  s.id = id;
  s.kind = trail::ScopeKind::kBranch;
  s.parent_id = parent;
  s.description = "branch " + id + " zanzibar";
  return s;
}

trail::NewEvent Event(const std::string& scope, const std::string& payload, int64_t at_ms) {
  trail::NewEvent e;
  e.scope_id = scope;
  e.kind = trail::EventKind::kToolResult;
  e.label = "fs__read";
  e.payload = payload;
  e.tokens = 3;
  e.at_ms = at_ms;
  return e;
}

model::UsageRecord Usage(int64_t at_ms, int64_t n) {
  model::UsageRecord r;
  r.key = model::ConversationKey{"local", "conv", "th"};
  r.request_id = absl::StrCat("mreq_", n);
  r.at_ms = at_ms;
  r.api = "anthropic";
  r.model = "claude-x";
  r.status = 200;
  r.input_tokens = n;
  r.cache_read_input_tokens = 2 * n;
  r.cache_creation_input_tokens = 3 * n;
  r.output_tokens = 4 * n;
  r.folds_new = static_cast<int>(n % 2);
  if (n % 3 != 0) r.folds_skipped = {{"not_at_tail", static_cast<int>(n)}, {"overlap", 1}};
  return r;
}

}  // namespace

void RetentionStoreContractTest::SetUp() {
  backend_ = GetParam().make();
  if (std::string skip = backend_->SkipReason(); !skip.empty()) GTEST_SKIP() << skip;
  auto t = backend_->OpenTrailStore();
  ASSERT_TRUE(t.ok()) << t.status();
  trail_ = std::move(*t);
  auto c = backend_->OpenConversationStore();
  ASSERT_TRUE(c.ok()) << c.status();
  conversations_ = std::move(*c);
  auto r = backend_->OpenRetentionStore();
  ASSERT_TRUE(r.ok()) << r.status();
  retention_ = std::move(*r);
}

TEST_P(RetentionStoreContractTest, IdleSessionsGoWithTheirBlobsSharedBlobsStay) {
  const int64_t day0 = clock_.WallMillis();
  ASSERT_TRUE(trail_->OpenScope(Root("ses_old", day0)).ok());
  ASSERT_TRUE(trail_->OpenScope(Child("br_old", "ses_old", "ses_old", day0)).ok());
  ASSERT_TRUE(trail_
                  ->AppendEvents({Event("br_old", "only in the old session", day0),
                                  Event("br_old", "shared payload", day0),
                                  Event("ses_old", "another old one", day0)})
                  .ok());
  clock_.Advance(hours(24 * 31));
  const int64_t day31 = clock_.WallMillis();
  ASSERT_TRUE(trail_->OpenScope(Root("ses_new", day31)).ok());
  auto kept = trail_->AppendEvents({Event("ses_new", "shared payload", day31)});
  ASSERT_TRUE(kept.ok()) << kept.status();
  // An old session that is still active: created long ago, an event yesterday.
  ASSERT_TRUE(trail_->OpenScope(Root("ses_live", day0)).ok());
  ASSERT_TRUE(trail_->AppendEvents({Event("ses_live", "live", day31 - 3'600'000)}).ok());

  auto before = retention_->Kept();
  ASSERT_TRUE(before.ok()) << before.status();
  RetentionPolicy policy;
  policy.pause_us = 0;
  policy.batch_rows = 2;  // several batches per session
  auto report = retention_->Sweep(policy, clock_.WallMillis());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->skipped);
  EXPECT_EQ(report->sessions.rows, 1);
  EXPECT_EQ(report->scopes.rows, 2);
  EXPECT_EQ(report->events.rows, 3);
  EXPECT_EQ(report->blobs.rows, 2);  // "shared payload" is still referenced
  EXPECT_EQ(report->blobs.bytes, int64_t{23 + 15});
  EXPECT_GT(report->batches, 2);

  auto old_scope = trail_->GetScope("br_old");
  ASSERT_TRUE(old_scope.ok());
  EXPECT_FALSE(old_scope->has_value());
  auto old_root = trail_->GetScope("ses_old");
  ASSERT_TRUE(old_root.ok());
  EXPECT_FALSE(old_root->has_value());
  auto shared = trail_->GetEvent((*kept)[0]);
  ASSERT_TRUE(shared.ok() && shared->has_value());
  EXPECT_EQ((*shared)->payload, "shared payload");
  auto live = trail_->ListEvents("ses_live", 0, 10);
  ASSERT_TRUE(live.ok());
  EXPECT_EQ(live->events.size(), 1u);
  auto after = retention_->Kept();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->events, before->events - 3);
  EXPECT_EQ(after->blobs, before->blobs - 2);
  EXPECT_EQ(after->scopes, before->scopes - 2);
  // The search index forgot the swept branch.
  auto hits = trail_->Search("local", "default", "zanzibar", 10);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_TRUE(hits->empty());
  // Live sessions keep working: events append to the kept one.
  EXPECT_TRUE(trail_->AppendEvents({Event("ses_live", "more", clock_.WallMillis())}).ok());
  // A second sweep finds nothing.
  auto again = retention_->Sweep(policy, clock_.WallMillis());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->sessions.rows, 0);
  EXPECT_EQ(again->blobs.rows, 0);
}

// A Trail that still caches the root of a session the sweep deleted (a long-lived model
// conversation) forgets it when told (the server tells it after each sweep that deleted
// sessions): the session's next call opens a new root instead of failing on the deleted one.
TEST_P(RetentionStoreContractTest, ATrailForgetsTheRootsOfSweptSessions) {
  trail::Trail t(*trail_, clock_);
  const trail::SessionRef old_session{"local", "default", "model:old"};
  const trail::SessionRef live_session{"local", "default", "model:live"};
  auto old_root = t.RootScope(old_session);
  ASSERT_TRUE(old_root.ok()) << old_root.status();
  ASSERT_TRUE(t.RecordToolCall(old_session, "", "fs__read", "{}", "old", 1, 1, false).ok());
  clock_.Advance(hours(24 * 31));
  auto live_root = t.RootScope(live_session);
  ASSERT_TRUE(live_root.ok());
  ASSERT_TRUE(t.RecordToolCall(live_session, "", "fs__read", "{}", "live", 1, 1, false).ok());
  RetentionPolicy policy;
  policy.pause_us = 0;
  auto report = retention_->Sweep(policy, clock_.WallMillis());
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->sessions.rows, 1);
  auto forgotten = t.ForgetSweptSessions();
  ASSERT_TRUE(forgotten.ok()) << forgotten.status();
  EXPECT_EQ(*forgotten, 1);
  auto again = t.RootScope(old_session);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NE(*again, *old_root);
  EXPECT_TRUE(t.RecordToolCall(old_session, "", "fs__read", "{}", "new", 1, 1, false).ok());
  EXPECT_EQ(*t.RootScope(live_session), *live_root);
  auto view = t.View(old_session, 0);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->root_scope_id, *again);
}

TEST_P(RetentionStoreContractTest, DryRunCountsAndDeletesNothing) {
  const int64_t day0 = clock_.WallMillis();
  ASSERT_TRUE(trail_->OpenScope(Root("ses_old", day0)).ok());
  ASSERT_TRUE(
      trail_->AppendEvents({Event("ses_old", "x", day0), Event("ses_old", "y", day0)}).ok());
  ASSERT_TRUE(conversations_->RecordUsage(Usage(day0, 1)).ok());
  clock_.Advance(hours(24 * 100));
  auto before = retention_->Kept();
  ASSERT_TRUE(before.ok());
  RetentionPolicy policy;
  policy.dry_run = true;
  auto report = retention_->Sweep(policy, clock_.WallMillis());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->sessions.rows, 1);
  EXPECT_EQ(report->events.rows, 2);
  EXPECT_EQ(report->usage_rows.rows, 1);
  auto after = retention_->Kept();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->events, before->events);
  EXPECT_EQ(after->usage_rows, before->usage_rows);
  EXPECT_EQ(after->scopes, before->scopes);
}

TEST_P(RetentionStoreContractTest, UsageDetailRollsUpAndTotalsStay) {
  const int64_t day0 = clock_.WallMillis() / kDayMs * kDayMs;  // midnight UTC
  int n = 0;
  for (int day : {0, 0, 1, 5, 39}) {
    ASSERT_TRUE(conversations_->RecordUsage(Usage(day0 + day * kDayMs + 3'600'000, ++n)).ok());
  }
  clock_.Advance(std::chrono::milliseconds(day0 + 40 * kDayMs - clock_.WallMillis()));
  auto all_before = backend_->UsageByProject("", 0);
  ASSERT_TRUE(all_before.ok()) << all_before.status();
  auto since_before = backend_->UsageByProject("", day0 + kDayMs);
  ASSERT_TRUE(since_before.ok());
  RetentionPolicy policy;
  policy.pause_us = 0;
  policy.batch_rows = 2;
  auto report = retention_->Sweep(policy, clock_.WallMillis());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->usage_rows.rows, 4);
  auto kept = retention_->Kept();
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->usage_rows, 1);
  EXPECT_EQ(kept->usage_days, 3);
  auto all_after = backend_->UsageByProject("", 0);
  ASSERT_TRUE(all_after.ok()) << all_after.status();
  ASSERT_EQ(all_after->size(), 1u);
  ASSERT_EQ(all_before->size(), 1u);
  const auto& a = (*all_after)[0].totals;
  const auto& b = (*all_before)[0].totals;
  EXPECT_EQ(a.requests, 5);
  EXPECT_EQ(a.requests, b.requests);
  EXPECT_EQ(a.input_tokens, b.input_tokens);
  EXPECT_EQ(a.cache_read_input_tokens, b.cache_read_input_tokens);
  EXPECT_EQ(a.cache_creation_input_tokens, b.cache_creation_input_tokens);
  EXPECT_EQ(a.output_tokens, b.output_tokens);
  EXPECT_EQ(a.last_at_ms, b.last_at_ms);
  // Folds made and skips counted (n = 1..5: odd n folded once; n not a multiple of 3 skipped
  // n + 1 times) survive the rollup, without their reasons.
  EXPECT_EQ((*all_before)[0].folds_new, 3);
  EXPECT_EQ((*all_before)[0].folds_skipped, 2 + 3 + 5 + 6);
  EXPECT_EQ((*all_after)[0].folds_new, 3);
  EXPECT_EQ((*all_after)[0].folds_skipped, 2 + 3 + 5 + 6);
  // --since at a day boundary counts the same whole days.
  auto since_after = backend_->UsageByProject("", day0 + kDayMs);
  ASSERT_TRUE(since_after.ok());
  ASSERT_EQ(since_after->size(), 1u);
  EXPECT_EQ((*since_after)[0].totals.requests, 3);
  EXPECT_EQ((*since_after)[0].totals.input_tokens, (*since_before)[0].totals.input_tokens);
}

TEST_P(RetentionStoreContractTest, ConversationsSeenWithinTheWindowKeepEveryDecision) {
  const model::ConversationKey resumed{"local", "resumed", "th"}, gone{"local", "gone", "th"};
  model::ConversationUpdate first;
  first.frontier = {"m1"};
  first.new_rewrites = {{model::RewriteKind::kBlock, "k1", "redacted under old rules"},
                        {model::RewriteKind::kFold, "toolu_1", "{\"summary\":\"s\"}"}};
  first.at_ms = clock_.WallMillis();
  ASSERT_TRUE(conversations_->Save(resumed, first).ok());
  ASSERT_TRUE(conversations_->Save(gone, first).ok());
  clock_.Advance(hours(24 * 80));
  model::ConversationUpdate later;
  later.frontier = {"m1", "m2"};
  later.at_ms = clock_.WallMillis();
  ASSERT_TRUE(conversations_->Save(resumed, later).ok());  // seen on day 80
  auto state_before = conversations_->Load(resumed);
  ASSERT_TRUE(state_before.ok() && state_before->has_value());
  clock_.Advance(hours(24 * 20));  // day 100: "gone" unseen for 100 days, "resumed" for 20
  RetentionPolicy policy;
  policy.pause_us = 0;
  auto report = retention_->Sweep(policy, clock_.WallMillis());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->threads.rows, 1);
  EXPECT_EQ(report->rewrites.rows, 2);
  auto state_after = conversations_->Load(resumed);
  ASSERT_TRUE(state_after.ok() && state_after->has_value());
  EXPECT_EQ((*state_after)->rewrites, (*state_before)->rewrites);
  EXPECT_EQ((*state_after)->frontier, (*state_before)->frontier);
  auto gone_after = conversations_->Load(gone);
  ASSERT_TRUE(gone_after.ok());
  EXPECT_FALSE(gone_after->has_value());
}

TEST_P(RetentionStoreContractTest, OldMemoryHistoryGoesEachMemoryKeepsItsNewest) {
  auto memories = backend_->OpenMemoryStore();
  ASSERT_TRUE(memories.ok()) << memories.status();
  const int64_t day0 = clock_.WallMillis();
  auto item = [&](const std::string& id) {
    memory::MemoryItem m;
    m.id = id;
    m.tenant = "local";
    m.project = "default";
    m.title = "t " + id;
    m.description = "d";
    m.content = "c";
    m.origin = "recorded";
    m.created_at_ms = m.updated_at_ms = day0;
    return m;
  };
  auto entry = [](const std::string& id, const std::string& action, int64_t at) {
    memory::HistoryEntry e;
    e.memory_id = id;
    e.action = action;
    e.actor = "cli";
    e.detail = action;
    e.at_ms = at;
    return e;
  };
  ASSERT_TRUE((*memories)->Insert(item("mem_a"), entry("mem_a", "recorded", day0)).ok());
  ASSERT_TRUE(
      (*memories)->Update(item("mem_a"), {entry("mem_a", "confirmed", day0 + kDayMs)}).ok());
  ASSERT_TRUE(
      (*memories)->Update(item("mem_a"), {entry("mem_a", "feedback", day0 + 190 * kDayMs)}).ok());
  ASSERT_TRUE((*memories)->Insert(item("mem_b"), entry("mem_b", "recorded", day0)).ok());
  clock_.Advance(hours(24 * 200));
  RetentionPolicy policy;
  policy.pause_us = 0;
  auto report = retention_->Sweep(policy, clock_.WallMillis());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->memory_history.rows, 2);
  auto a = (*memories)->History("mem_a");
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 1u);
  EXPECT_EQ((*a)[0].action, "feedback");
  auto b = (*memories)->History("mem_b");
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->size(), 1u);  // its only entry is its newest
  auto item_a = (*memories)->Get("mem_a");
  ASSERT_TRUE(item_a.ok() && item_a->has_value());  // memories themselves stay
}

}  // namespace contextd::store::testing
