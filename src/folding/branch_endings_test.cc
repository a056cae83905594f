// BranchManager: branches that end other than by branch_return (budget exhaustion, deadlines,
// a parent's end) with their partial summaries, and what a restart does with live branches.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/executor.h"
#include "folding/branch_manager.h"
#include "folding/testing/branch_manager_fixture.h"
#include "folding/testing/fakes.h"
#include "folding/text.h"

namespace contextd::folding {
namespace {

using testing::BranchManagerTest;
using ::testing::HasSubstr;
using testing::Rec;
using testing::Req;
using ::testing::StartsWith;
using testing::Words;

TEST_F(BranchManagerTest, ExhaustionForceReturnsWithPartialSummary) {
  auto parent = Create(Req("p", 1000));
  auto b = Create(Req("go", 100));
  ASSERT_TRUE(parent.ok() && b.ok());
  ChargeRecord call;
  call.kind = "tool_call";
  call.label = "fs__read_file";
  call.text = "{\"path\": \"/etc/app.conf\"}";
  ASSERT_TRUE(Charge("", call).ok());
  auto full = Charge("", Rec(97));  // 1 + 2 + 97 = 100: exactly the budget still fits
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->used, 100);
  EXPECT_FALSE(full->exhausted);
  auto over = Charge("", Rec(1, "fs__list"));
  ASSERT_TRUE(over.ok()) << over.status();
  EXPECT_TRUE(over->exhausted);
  EXPECT_EQ(over->used, 100);
  EXPECT_EQ(over->allocated, 100);
  EXPECT_EQ(over->branch_id, b->branch_id);
  EXPECT_EQ(over->active_branch_after, parent->branch_id);
  Branch s = Stored(b->branch_id);
  EXPECT_EQ(s.status, BranchStatus::kBudgetExhausted);
  EXPECT_THAT(s.finish_reason, StartsWith("budget exhausted: 100/100 tokens"));
  EXPECT_EQ(s.summary, over->partial_summary);
  EXPECT_THAT(s.summary, HasSubstr("tool_call fs__read_file: {\"path\": \"/etc/app.conf\"}"));
  EXPECT_THAT(s.summary, HasSubstr("fs__list"));
  EXPECT_LE(counter_.Count(s.summary), 500u);
  EXPECT_THAT(
      ExhaustedText(*over),
      StartsWith("budget exhausted: 100/100 tokens; branch " + b->branch_id +
                 " was returned with partial results; active branch is now " + parent->branch_id));
  EXPECT_EQ(Stored(parent->branch_id).tokens_used, 1 + 100);
  EXPECT_EQ(events_.back().type, BranchEventType::kCharged);
  bool force_event = false;
  for (auto& e : events_) force_event |= e.type == BranchEventType::kForceReturned;
  EXPECT_TRUE(force_event);
  // The branch is over; explicit charges to it are refused, default ones go to the parent.
  auto late = Charge(b->branch_id, Rec(1));
  EXPECT_EQ(late.status().code(), absl::StatusCode::kFailedPrecondition);
  auto next = Charge("", Rec(1));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->branch_id, parent->branch_id);
}

TEST_F(BranchManagerTest, ExhaustionOfParentForceReturnsItsChildren) {
  auto p = Create(Req("p", 100));
  auto c = Create(Req("c", 50));
  ASSERT_TRUE(p.ok() && c.ok());
  ASSERT_TRUE(Charge("", Rec(9)).ok());       // child used 10
  auto over = Charge(p->branch_id, Rec(60));  // parent has 100 - 1 - 50 = 49 left
  ASSERT_TRUE(over.ok());
  EXPECT_TRUE(over->exhausted);
  EXPECT_EQ(Stored(c->branch_id).status, BranchStatus::kFailed);
  EXPECT_EQ(Stored(c->branch_id).finish_reason, "parent " + p->branch_id + " ran out of budget");
  // parent: 1 + 49 (what was left) + 10 (child's consumption) = 60 <= 100.
  EXPECT_EQ(over->used, 60);
  EXPECT_EQ(over->active_branch_after, "");
  EXPECT_THAT(ExhaustedText(*over), HasSubstr("active branch is now the session root"));
}

TEST_F(BranchManagerTest, PartialSummaryStaysWithin500TokensAndIsScrubbed) {
  auto b = Create(Req("go", 32768));
  ASSERT_TRUE(b.ok());
  for (int i = 0; i < 40; ++i) {
    ChargeRecord r = Rec(200, "tool" + std::to_string(i));
    r.text = "SECRET123 " + r.text;
    ASSERT_TRUE(Charge("", r).ok());
  }
  ASSERT_TRUE(Run([&] { return mgr_->EndSession(s1_, "test"); }).ok());
  Branch s = Stored(b->branch_id);
  EXPECT_LE(counter_.Count(s.summary), 500u);
  EXPECT_THAT(s.summary, HasSubstr("tool39"));
  EXPECT_THAT(s.summary, HasSubstr("of 40 records"));
  EXPECT_THAT(s.summary, Not(HasSubstr("SECRET123")));
  EXPECT_THAT(s.summary, HasSubstr("[REDACTED:test-secret"));
}

TEST_F(BranchManagerTest, DeadlineTimerForceReturnsWithTimeout) {
  CreateRequest r = Req("go", 1000);
  r.timeout_seconds = 10;
  auto a = Create(r);
  r.timeout_seconds = 600;
  r.budget = 100;
  auto child = Create(r);
  ASSERT_TRUE(a.ok() && child.ok());
  ASSERT_TRUE(Charge("", Rec(3, "search")).ok());
  exec_.AdvanceAndRun(std::chrono::milliseconds(9999));
  EXPECT_EQ(Stored(a->branch_id).status, BranchStatus::kActive);
  auto st = Run([&] { return mgr_->Status(s1_, a->branch_id); });
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->branches[0].time_left_ms, 1);
  exec_.AdvanceAndRun(std::chrono::milliseconds(1));
  Branch s = Stored(a->branch_id);
  EXPECT_EQ(s.status, BranchStatus::kTimeout);
  EXPECT_EQ(s.finish_reason, "deadline passed (timeout 10 s)");
  EXPECT_THAT(s.summary, HasSubstr("ended with status timeout"));
  EXPECT_THAT(s.summary, HasSubstr(child->branch_id));
  Branch c = Stored(child->branch_id);
  EXPECT_EQ(c.status, BranchStatus::kFailed);
  EXPECT_EQ(c.finish_reason, "parent " + a->branch_id + " timed out");
  EXPECT_THAT(c.summary, HasSubstr("search"));
  EXPECT_EQ(mgr_->active_branches(), 0);
  EXPECT_EQ(Run([&] { return mgr_->ActiveBranch(s1_); }), "");
}

TEST_F(BranchManagerTest, ReturnCancelsTheDeadline) {
  CreateRequest r = Req();
  r.timeout_seconds = 5;
  auto a = Create(r);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(Return(std::nullopt, "ok").ok());
  exec_.AdvanceAndRun(std::chrono::seconds(10));
  EXPECT_EQ(Stored(a->branch_id).status, BranchStatus::kCompleted);
  int forced = 0;
  for (auto& e : events_) forced += e.type == BranchEventType::kForceReturned;
  EXPECT_EQ(forced, 0);
}

TEST_F(BranchManagerTest, ADueTimerQueuedBehindTheDestructorDoesNothing) {
  CreateRequest r = Req();
  r.timeout_seconds = 5;
  auto a = Create(r);
  ASSERT_TRUE(a.ok());
  clock_.Advance(std::chrono::seconds(5));
  // The destruction is queued first; the due timer is moved to the queue behind it.
  exec_.Post([&] { mgr_.reset(); });
  exec_.RunUntilIdle();
  EXPECT_EQ(Stored(a->branch_id).status, BranchStatus::kActive);  // left for Recover()
}

TEST_F(BranchManagerTest, TimeoutRetriedWhenTheStoreFails) {
  CreateRequest r = Req();
  r.timeout_seconds = 5;
  auto a = Create(r);
  ASSERT_TRUE(a.ok());
  store_.fail_commits = 1;
  exec_.AdvanceAndRun(std::chrono::seconds(5));
  EXPECT_EQ(Stored(a->branch_id).status, BranchStatus::kActive);
  exec_.AdvanceAndRun(std::chrono::seconds(1));
  EXPECT_EQ(Stored(a->branch_id).status, BranchStatus::kTimeout);
}

TEST_F(BranchManagerTest, RecoverForceReturnsWhatAPreviousRunLeftLive) {
  auto a = Create(Req(Words(2), 1000));
  auto b = Create(Req(Words(2), 200));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(Charge("", Rec(4, "web__fetch")).ok());
  mgr_.reset();  // "crash": nothing returned
  events_.clear();
  MakeManager();
  auto rec = Run([&] { return mgr_->Recover(); });
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(rec->force_returned, (std::vector<std::string>{b->branch_id, a->branch_id}));
  Branch sb = Stored(b->branch_id);
  Branch sa = Stored(a->branch_id);
  EXPECT_EQ(sb.status, BranchStatus::kFailed);
  EXPECT_EQ(sb.finish_reason, "server restarted");
  EXPECT_THAT(sb.summary, HasSubstr("web__fetch"));
  EXPECT_EQ(sa.finish_reason, "server restarted");
  EXPECT_EQ(sa.tokens_used, 2 + 2 + 4);
  EXPECT_EQ(sa.reserved_for_children, 0);
  EXPECT_THAT(sa.summary, HasSubstr(b->branch_id));
  EXPECT_EQ(mgr_->active_branches(), 0);
  EXPECT_EQ(EventTypes(), (std::vector<BranchEventType>{BranchEventType::kForceReturned,
                                                        BranchEventType::kForceReturned}));
  auto st = Run([&] { return mgr_->Status(s1_, ""); });
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(st->branches.size(), 1u);
  EXPECT_EQ(st->branches[0].children[0].finish_reason, "server restarted");
  // Nothing live is left for another recovery.
  auto again = Run([&] { return mgr_->Recover(); });
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->force_returned.empty());
}

TEST_F(BranchManagerTest, LiveBranchesLoadedWithoutRecoverKeepTheirDeadline) {
  CreateRequest r = Req();
  r.timeout_seconds = 30;
  auto a = Create(r);
  ASSERT_TRUE(a.ok());
  mgr_.reset();
  MakeManager();
  auto st = Run([&] { return mgr_->Status(s1_, ""); });
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->active_branch_id, a->branch_id);
  EXPECT_EQ(mgr_->active_branches(), 1);
  exec_.AdvanceAndRun(std::chrono::seconds(30));
  EXPECT_EQ(Stored(a->branch_id).status, BranchStatus::kTimeout);
}

// The one test with real time: a 1-second deadline on a ThreadExecutor fires without requests.

TEST(BranchManagerRealClockTest, OneSecondTimeoutFiresOnThreadExecutor) {
  testing::InMemoryBranchStore store;
  testing::WordTokenCounter counter;
  testing::FakeScrubber scrubber;
  EventBus bus;
  std::mutex mu;
  std::condition_variable cv;
  std::optional<BranchEvent> forced;
  bus.Subscribe([&](const BranchEvent& e) {
    if (e.type != BranchEventType::kForceReturned) return;
    std::lock_guard<std::mutex> lock(mu);
    forced = e;
    cv.notify_all();
  });
  base::ThreadExecutor exec;
  std::unique_ptr<BranchManager> mgr;
  exec.RunSync([&] {
    mgr = std::make_unique<BranchManager>(FoldingConfig{}, exec, store, counter, scrubber, &bus);
  });
  SessionKey s{"local", "default", "real"};
  absl::StatusOr<CreateResult> created = absl::UnknownError("not run");
  auto start = std::chrono::steady_clock::now();
  exec.RunSync([&] {
    CreateRequest r = Req();
    r.timeout_seconds = 1;
    created = mgr->Create(s, r);
  });
  ASSERT_TRUE(created.ok());
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return forced.has_value(); }));
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, std::chrono::milliseconds(990));
  EXPECT_EQ(forced->branch_id, created->branch_id);
  EXPECT_EQ(forced->status, BranchStatus::kTimeout);
  auto b = store.Get(created->branch_id);
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((*b)->status, BranchStatus::kTimeout);
  exec.RunSync([&] { mgr.reset(); });
}

// Races on budgets: many threads post charges; the executor serialises them (run under tsan).

}  // namespace
}  // namespace contextd::folding
