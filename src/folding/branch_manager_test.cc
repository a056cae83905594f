#include "folding/branch_manager.h"

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
#include "folding/testing/branch_manager_fixture.h"
#include "folding/testing/fakes.h"
#include "folding/text.h"
#include "scrub/private_spans.h"

namespace contextd::folding {
namespace {

using testing::BranchManagerTest;
using ::testing::HasSubstr;
using testing::Rec;
using testing::Req;
using ::testing::StartsWith;
using testing::Words;

TEST_F(BranchManagerTest, CreateValidatesEveryField) {
  auto expect_bad = [&](CreateRequest r, std::string_view field) {
    auto res = Create(r);
    ASSERT_FALSE(res.ok()) << field;
    EXPECT_EQ(res.status().code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_THAT(std::string(res.status().message()), StartsWith(std::string(field)));
  };
  CreateRequest r = Req();
  r.description = "";
  expect_bad(r, "description");
  r.description = std::string(501, 'd');
  expect_bad(r, "description");
  r = Req("");
  expect_bad(r, "prompt");
  r = Req(std::string(10001, 'p'));
  expect_bad(r, "prompt");
  expect_bad(Req("x", 0), "budget");
  expect_bad(Req("x", 32769), "budget");
  r = Req();
  r.timeout_seconds = 0;
  expect_bad(r, "timeout_seconds");
  r.timeout_seconds = 601;
  expect_bad(r, "timeout_seconds");
  expect_bad(Req(Words(11), 10), "the prompt is 11 tokens");
  EXPECT_EQ(store_.commits, 0);
  // The limits are inclusive, in characters (not bytes).
  r = Req(std::string(10000, 'p'), 32768);
  r.description = "";
  for (int i = 0; i < 500; ++i) r.description += "\xC3\xA9";
  r.timeout_seconds = 600;
  EXPECT_TRUE(Create(r).ok());
}

TEST_F(BranchManagerTest, CreateAtSessionRoot) {
  auto res = Create(Req("read the five config files"));
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_THAT(res->branch_id, StartsWith("br_"));
  EXPECT_EQ(res->branch_id.size(), 3u + 32u);
  EXPECT_EQ(res->depth, 0);
  EXPECT_EQ(res->max_depth, 3);
  EXPECT_EQ(res->parent_branch_id, "");
  EXPECT_EQ(res->budget_allocated, 8192);
  EXPECT_FALSE(res->parent_budget_remaining.has_value());
  EXPECT_EQ(res->prompt_tokens, 5);
  EXPECT_EQ(res->timeout_seconds, 300);
  EXPECT_EQ(res->deadline_wall_ms, clock_.WallMillis() + 300'000);
  EXPECT_TRUE(res->injected_context.empty());
  Branch b = Stored(res->branch_id);
  EXPECT_EQ(b.status, BranchStatus::kActive);
  EXPECT_EQ(b.tokens_used, 5);
  EXPECT_EQ(b.session, s1_);
  EXPECT_EQ(Run([&] { return mgr_->ActiveBranch(s1_); }), res->branch_id);
  EXPECT_EQ(mgr_->active_branches(), 1);
  ASSERT_EQ(EventTypes(), std::vector<BranchEventType>{BranchEventType::kCreated});
  std::string text = CreateText(*res);
  EXPECT_THAT(text, HasSubstr(res->branch_id));
  EXPECT_THAT(text, HasSubstr("parent_budget_remaining: unlimited"));
  EXPECT_THAT(text, HasSubstr("at depth 0 under the session root (deepest allowed: 2)"));
  EXPECT_THAT(text, HasSubstr("injected_context: none\n"));
  EXPECT_THAT(text, HasSubstr(std::string(kCreateInstructions)));
}

TEST_F(BranchManagerTest, ScrubsDescriptionAndPromptBeforeStoring) {
  CreateRequest r = Req("use key SECRET123 now");
  r.description = "with SECRET123";
  auto res = Create(r);
  ASSERT_TRUE(res.ok());
  Branch b = Stored(res->branch_id);
  EXPECT_THAT(b.prompt, Not(HasSubstr("SECRET123")));
  EXPECT_THAT(b.prompt, HasSubstr(testing::FakeScrubber::kMarker));
  EXPECT_THAT(b.description, HasSubstr(testing::FakeScrubber::kMarker));
}

TEST_F(BranchManagerTest, ChildBudgetIsReservedFromParent) {
  auto parent = Create(Req(Words(10), 1000));
  ASSERT_TRUE(parent.ok());
  auto child = Create(Req(Words(5), 500));  // default parent: innermost active
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_EQ(child->parent_branch_id, parent->branch_id);
  EXPECT_EQ(child->depth, 1);
  ASSERT_TRUE(child->parent_budget_remaining.has_value());
  EXPECT_EQ(*child->parent_budget_remaining, 1000 - 10 - 500);
  EXPECT_EQ(Stored(parent->branch_id).reserved_for_children, 500);

  auto too_big = Create(Req("x", 491, parent->branch_id));
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(too_big.status().message()), HasSubstr("has only 490 tokens left"));
  // Without a budget the child gets what the parent has left.
  auto fits = Create(Req("x", std::nullopt, parent->branch_id));
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(fits->budget_allocated, 490);
  EXPECT_EQ(*fits->parent_budget_remaining, 0);
  auto none_left = Create(Req("x", std::nullopt, parent->branch_id));
  ASSERT_FALSE(none_left.ok());
  EXPECT_THAT(std::string(none_left.status().message()), HasSubstr("has only 0 tokens left"));
}

TEST_F(BranchManagerTest, ReturnChargesMessageRefundsParentAndReportsFolded) {
  auto parent = Create(Req(Words(10), 1000));
  auto child = Create(Req(Words(5), 500));
  ASSERT_TRUE(parent.ok() && child.ok());
  ASSERT_TRUE(Charge("", Rec(20)).ok());
  events_.clear();
  auto ret = Return(std::nullopt, "found it in a.cc");
  ASSERT_TRUE(ret.ok()) << ret.status();
  EXPECT_EQ(ret->branch_id, child->branch_id);
  EXPECT_EQ(ret->summary, "found it in a.cc");
  EXPECT_EQ(ret->summary_tokens, 4);
  EXPECT_EQ(ret->tokens_used, 5 + 20 + 4);
  EXPECT_EQ(ret->tokens_folded, 5 + 20);
  EXPECT_EQ(ret->parent_branch_id, parent->branch_id);
  EXPECT_EQ(ret->active_branch_after, parent->branch_id);
  EXPECT_FALSE(ret->memory_queued);
  Branch c = Stored(child->branch_id);
  EXPECT_EQ(c.status, BranchStatus::kCompleted);
  EXPECT_EQ(c.summary, "found it in a.cc");
  EXPECT_EQ(c.finish_reason, "returned");
  EXPECT_GT(c.finished_at_ms, 0);
  Branch p = Stored(parent->branch_id);
  EXPECT_EQ(p.reserved_for_children, 0);
  EXPECT_EQ(p.tokens_used, 10 + 29);  // the unused 471 went back
  EXPECT_EQ(p.Remaining(), 1000 - 39);
  ASSERT_EQ(EventTypes(), std::vector<BranchEventType>{BranchEventType::kFolded});
  EXPECT_EQ(events_.back().tokens, 25);
  std::string text = ReturnText(*ret);
  EXPECT_THAT(text, HasSubstr("summary: found it in a.cc"));
  EXPECT_THAT(text, HasSubstr("tokens_used: 29/500"));
  EXPECT_THAT(text, HasSubstr("tokens_folded: 25"));
  EXPECT_THAT(text, HasSubstr("active branch now: " + parent->branch_id));
  EXPECT_THAT(text, HasSubstr("memory_queued: false"));

  auto root_ret = Return(std::nullopt, "done");
  ASSERT_TRUE(root_ret.ok());
  EXPECT_EQ(root_ret->parent_branch_id, "");
  EXPECT_EQ(root_ret->active_branch_after, "");
  EXPECT_THAT(ReturnText(*root_ret), HasSubstr("active branch now: the session root"));
}

TEST_F(BranchManagerTest, ReturnScrubsTheMessageBeforeStoringAndEchoing) {
  ASSERT_TRUE(Create(Req()).ok());
  auto ret = Return(std::nullopt, "token is SECRET123");
  ASSERT_TRUE(ret.ok());
  EXPECT_THAT(ret->summary, Not(HasSubstr("SECRET123")));
  EXPECT_THAT(Stored(ret->branch_id).summary, HasSubstr(testing::FakeScrubber::kMarker));
  EXPECT_THAT(ReturnText(*ret), Not(HasSubstr("SECRET123")));
}

// <private> spans reach no stored text (description, prompt, charge excerpts, summary, partial
// summary), while charges count the texts as the model read them.
TEST_F(BranchManagerTest, PrivateSpansAreNeverStoredButStillCharged) {
  const std::string w(scrub::kWithheldPrivate);
  CreateRequest r = Req("use <private>P1 P2 P3</private> now", 1000);
  r.description = "look <private>D1 SECRET123</private>";
  auto res = Create(r);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->prompt_tokens, 5);  // as written: use, <private>P1, P2, P3</private>, now
  Branch b = Stored(res->branch_id);
  EXPECT_EQ(b.prompt, "use " + w + " now");
  EXPECT_EQ(b.description, "look " + w);

  ChargeRecord whole = Rec(0);
  whole.text = "x <private>" + Words(200, "C1") + "</private> y";
  auto charged = Charge("", whole);
  ASSERT_TRUE(charged.ok()) << charged.status();
  EXPECT_EQ(charged->tokens, 202);
  // The excerpt is cut at 160 characters inside a marker: the cut closes it again.
  ChargeRecord cut = Rec(0);
  cut.text = Words(74) + " <private>C2</private> tail";
  ASSERT_TRUE(Charge("", cut).ok());
  auto rows = store_.GetRecentCharges(res->branch_id, 10);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->rows.size(), 2u);
  EXPECT_EQ(rows->rows[0].excerpt, "x " + w + " y");
  EXPECT_EQ(rows->rows[1].excerpt, Words(74) + " " + w + "...");

  // The summary is stored and returned withheld; it is charged as written.
  auto ret = Return(std::nullopt, "found <private>R1 R2 R3</private> it");
  ASSERT_TRUE(ret.ok()) << ret.status();
  EXPECT_EQ(ret->summary, "found " + w + " it");
  EXPECT_EQ(ret->summary_tokens, 5);
  EXPECT_EQ(Stored(ret->branch_id).summary, "found " + w + " it");
  EXPECT_THAT(ReturnText(*ret), Not(HasSubstr("R1")));

  // A partial summary is built from the stored description and excerpts.
  CreateRequest small = Req("go", 10);
  small.description = "<private>D2</private> task";
  auto over = Create(small);
  ASSERT_TRUE(over.ok());
  ChargeRecord big = Rec(0);
  big.text = "<private>" + Words(20, "C3") + "</private>";
  auto exhausted = Charge("", big);
  ASSERT_TRUE(exhausted.ok());
  ASSERT_TRUE(exhausted->exhausted);
  std::string partial = Stored(over->branch_id).summary;
  EXPECT_EQ(partial, exhausted->partial_summary);
  EXPECT_THAT(partial, HasSubstr("(\"" + w + " task\")"));
  EXPECT_THAT(partial, HasSubstr("- tool_result fs__read_file: " + w));
  for (std::string_view text :
       {std::string_view("P1"), std::string_view("D1"), std::string_view("C1"),
        std::string_view("C2"), std::string_view("C3"), std::string_view("D2"),
        std::string_view("R1"), std::string_view("SECRET123")}) {
    for (const std::string& id : {res->branch_id, over->branch_id}) {
      Branch stored = Stored(id);
      EXPECT_THAT(stored.prompt + stored.description + stored.summary + stored.finish_reason,
                  Not(HasSubstr(std::string(text))));
    }
  }
}

// Counts the texts it scrubs (thread-safe, as a Scrubber must be).
class CountingScrubber final : public scrub::Scrubber {
 public:
  std::string Scrub(std::string_view text) const override {
    calls.fetch_add(1);
    return inner.Scrub(text);
  }
  mutable std::atomic<int> calls{0};
  testing::FakeScrubber inner;
};

// Texts prepared before the executor runs the request are not scrubbed or counted again there;
// a prepared text made from another text than the request's is not used.
TEST_F(BranchManagerTest, PreparedTextsAreUsedOnlyForTheTextTheyWereMadeFrom) {
  CountingScrubber scrubber;
  mgr_.reset();
  mgr_ = std::make_unique<BranchManager>(FoldingConfig{}, exec_, store_, counter_, scrubber, &bus_);
  CreateRequest plain = Req();
  plain.prompt = "look at SECRET123 and the rest";
  int before = scrubber.calls.load();
  auto first = Create(plain);
  ASSERT_TRUE(first.ok()) << first.status();
  const int unprepared_calls = scrubber.calls.load() - before;
  ASSERT_TRUE(Return(std::nullopt, "done").ok());

  CreateRequest prepared = plain;
  const PreparedText description = mgr_->PrepareText(prepared.description);
  const PreparedText prompt = mgr_->PrepareText(prepared.prompt);
  prepared.prepared_description = &description;
  prepared.prepared_prompt = &prompt;
  before = scrubber.calls.load();
  auto second = Create(prepared);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(scrubber.calls.load() - before, unprepared_calls - 2);
  EXPECT_EQ(second->prompt_tokens, first->prompt_tokens);
  EXPECT_EQ(Stored(second->branch_id).prompt, Stored(first->branch_id).prompt);
  EXPECT_THAT(Stored(second->branch_id).prompt, HasSubstr(testing::FakeScrubber::kMarker));

  ReturnRequest mismatched;
  mismatched.message = "token is SECRET123";
  const PreparedText other = mgr_->PrepareText("another text entirely");
  mismatched.prepared_message = &other;
  auto ret = Run([&] { return mgr_->Return(s1_, mismatched); });
  ASSERT_TRUE(ret.ok()) << ret.status();
  EXPECT_EQ(ret->summary, "token is " + std::string(testing::FakeScrubber::kMarker));
  EXPECT_EQ(ret->summary_tokens, 3);
  mgr_.reset();  // before `scrubber` goes
}

TEST_F(BranchManagerTest, ReturnErrors) {
  auto none = Return(std::nullopt, "x");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  auto b = Create(Req());
  ASSERT_TRUE(b.ok());
  auto too_long = Return(b->branch_id, std::string(50001, 'm'));
  EXPECT_EQ(too_long.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_long.status().message()), HasSubstr("50000"));
  ASSERT_TRUE(Return(b->branch_id, std::string(50000, 'm')).ok());
  auto again = Return(b->branch_id, "x");
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      again.status().message(),
      "branch " + b->branch_id + " cannot go from completed to completed (completed is final)");
}

TEST_F(BranchManagerTest, DepthLimitNamesMaxDepth) {
  auto a = Create(Req());
  auto b = Create(Req("x", 1000));
  auto c = Create(Req("x", 100));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  // max_depth 3 allows three levels: depths 0, 1 and 2.
  EXPECT_EQ(a->depth, 0);
  EXPECT_EQ(b->depth, 1);
  EXPECT_EQ(c->depth, 2);
  auto d = Create(Req());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("max_depth (3) reached: parent " + c->branch_id +
                        " is at depth 2, the deepest allowed (depths 0 to 2)"));
  // A sibling under a shallower parent is fine.
  auto sib = Create(Req("x", 100, a->branch_id));
  ASSERT_TRUE(sib.ok()) << sib.status();
  EXPECT_EQ(sib->depth, 1);
}

TEST_F(BranchManagerTest, ReturnOfParentForceReturnsActiveChildrenDeepestFirst) {
  auto a = Create(Req(Words(2), 3000));
  auto b = Create(Req(Words(2), 1000));
  auto c = Create(Req(Words(2), 300));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  ASSERT_TRUE(Charge(c->branch_id, Rec(7, "grep")).ok());
  events_.clear();
  auto ret = Return(a->branch_id, "summary of a");
  ASSERT_TRUE(ret.ok()) << ret.status();
  EXPECT_EQ(ret->force_returned_children, (std::vector<std::string>{c->branch_id, b->branch_id}));
  ASSERT_EQ(EventTypes(), (std::vector<BranchEventType>{BranchEventType::kForceReturned,
                                                        BranchEventType::kForceReturned,
                                                        BranchEventType::kFolded}));
  EXPECT_EQ(events_[0].branch_id, c->branch_id);
  Branch sc = Stored(c->branch_id);
  Branch sb = Stored(b->branch_id);
  EXPECT_EQ(sc.status, BranchStatus::kFailed);
  // Every descendant names the branch whose return ended it.
  EXPECT_EQ(sc.finish_reason, "parent " + a->branch_id + " returned");
  EXPECT_EQ(sb.status, BranchStatus::kFailed);
  EXPECT_EQ(sb.finish_reason, "parent " + a->branch_id + " returned");
  EXPECT_THAT(sc.summary, HasSubstr("grep"));
  EXPECT_THAT(sb.summary, HasSubstr(c->branch_id));  // b recorded c's return
  // Consumption rolls up: a = 2 + (b: 2 + (c: 2 + 7)) + 3 (message).
  EXPECT_EQ(ret->tokens_used, 2 + 2 + 2 + 7 + 3);
  EXPECT_EQ(Stored(a->branch_id).reserved_for_children, 0);
  EXPECT_EQ(mgr_->active_branches(), 0);
  EXPECT_THAT(ReturnText(*ret), HasSubstr("force-returned children first: " + c->branch_id));
}

TEST_F(BranchManagerTest, WarningAtEightyPercentOnlyOnce) {
  auto b = Create(Req("go", 100));
  ASSERT_TRUE(b.ok());
  auto o1 = Charge("", Rec(78));
  ASSERT_TRUE(o1.ok());
  EXPECT_EQ(o1->used, 79);
  EXPECT_FALSE(o1->warning_crossed);
  auto o2 = Charge("", Rec(1));
  ASSERT_TRUE(o2.ok());
  EXPECT_EQ(o2->used, 80);
  EXPECT_TRUE(o2->warning_crossed);
  EXPECT_EQ(WarningText(o2->branch_id, o2->used, o2->allocated),
            "budget 80% used: 80/100 tokens in " + b->branch_id +
                " (20 left); finish the task and call branch_return with a summary");
  auto o3 = Charge("", Rec(5));
  ASSERT_TRUE(o3.ok());
  EXPECT_FALSE(o3->warning_crossed);
  int warnings = 0;
  for (auto& e : events_) warnings += e.type == BranchEventType::kWarning;
  EXPECT_EQ(warnings, 1);
}

TEST_F(BranchManagerTest, ChargeWithoutActiveBranchGoesToRoot) {
  auto o = Charge("", Rec(12));
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->branch_id, "");
  EXPECT_EQ(o->tokens, 12);
  EXPECT_FALSE(o->exhausted);
  EXPECT_EQ(store_.commits, 0);
  ChargeRecord pre = Rec(1);
  pre.tokens = 77;  // counted by the caller
  auto b = Create(Req("go", 100));
  ASSERT_TRUE(b.ok());
  auto o2 = Charge("", pre);
  ASSERT_TRUE(o2.ok());
  EXPECT_EQ(o2->tokens, 77);
  EXPECT_EQ(o2->used, 78);
}

TEST_F(BranchManagerTest, EndSessionForceReturnsAllAndKeepsThemVisible) {
  auto a = Create(Req());
  auto b = Create(Req("x", 100));
  auto c = Create(Req("x", 100, ""));  // "" = explicitly under the session root
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(c->depth, 0);
  auto other = Create(Req(), &s2_);
  ASSERT_TRUE(other.ok());
  auto end = Run([&] { return mgr_->EndSession(s1_, "client closed"); });
  ASSERT_TRUE(end.ok()) << end.status();
  ASSERT_EQ(end->force_returned.size(), 3u);
  EXPECT_EQ(end->force_returned[0], b->branch_id);  // deepest first
  for (const auto& id : {a->branch_id, b->branch_id, c->branch_id}) {
    Branch s = Stored(id);
    EXPECT_EQ(s.status, BranchStatus::kFailed);
    EXPECT_EQ(s.finish_reason, "session ended: client closed");
  }
  EXPECT_EQ(mgr_->active_branches(), 1);
  EXPECT_EQ(mgr_->sessions_in_memory(), 1u);
  EXPECT_EQ(Stored(other->branch_id).status, BranchStatus::kActive);
  EXPECT_TRUE(Run([&] { return mgr_->EndSession(s1_, "again"); }).ok());  // idempotent
  // The tree is reloaded from the store on the next use of the session.
  auto st = Run([&] { return mgr_->Status(s1_, ""); });
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(st->branches.size(), 2u);
  EXPECT_EQ(st->branches[0].branch_id, a->branch_id);
  ASSERT_EQ(st->branches[0].children.size(), 1u);
  EXPECT_EQ(st->branches[0].children[0].status, BranchStatus::kFailed);
  EXPECT_EQ(st->active_branch_id, "");
}

TEST_F(BranchManagerTest, AnotherSessionsBranchIsNotFoundLikeANonexistentOne) {
  auto a = Create(Req());
  ASSERT_TRUE(a.ok());
  const std::string foreign = a->branch_id;
  const std::string missing = "br_00000000000000000000000000000000";
  auto expect_same = [&](auto make) {
    absl::Status f = make(foreign);
    absl::Status m = make(missing);
    EXPECT_EQ(f.code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(m.code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(f.message(), "branch " + foreign + " not found");
    EXPECT_EQ(m.message(), "branch " + missing + " not found");
  };
  expect_same([&](const std::string& id) { return Return(id, "x", &s2_).status(); });
  expect_same([&](const std::string& id) { return Charge(id, Rec(1), &s2_).status(); });
  expect_same([&](const std::string& id) { return Create(Req("x", 10, id), &s2_).status(); });
  expect_same(
      [&](const std::string& id) { return Run([&] { return mgr_->Status(s2_, id); }).status(); });
  // Other tenant or project with the same session id is another session too.
  SessionKey t2{"tenant2", "default", "s1"};
  EXPECT_EQ(Return(foreign, "x", &t2).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Stored(foreign).status, BranchStatus::kActive);
  auto st2 = Run([&] { return mgr_->Status(s2_, ""); });
  ASSERT_TRUE(st2.ok());
  EXPECT_TRUE(st2->branches.empty());
}

TEST_F(BranchManagerTest, ActiveLimitsPerSessionAndInstance) {
  FoldingConfig c;
  c.branch_creation_rate_limit = "1000/second";
  c.max_concurrent_branches_per_session = 3;
  c.max_concurrent_branches_per_instance = 5;
  MakeManager(c);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Create(Req("x", 10, "")).ok());
  auto over = Create(Req("x", 10, ""));
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(over.status().message()),
              HasSubstr("max_concurrent_branches_per_session (3) reached"));
  ASSERT_TRUE(Create(Req("x", 10, ""), &s2_).ok());
  ASSERT_TRUE(Create(Req("x", 10, ""), &s2_).ok());
  SessionKey s3{"local", "default", "s3"};
  auto inst = Create(Req("x", 10, ""), &s3);
  EXPECT_EQ(inst.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(inst.status().message()),
              HasSubstr("max_concurrent_branches_per_instance (5) reached"));
  ASSERT_TRUE(Return(std::nullopt, "done").ok());
  EXPECT_TRUE(Create(Req("x", 10, ""), &s3).ok());
}

TEST_F(BranchManagerTest, RateLimitSaysWhenToRetry) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(Create(Req("x", 10, "")).ok());
    exec_.AdvanceAndRun(std::chrono::seconds(1));
  }
  auto limited = Create(Req("x", 10, ""));
  EXPECT_EQ(limited.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(limited.status().message(),
            "branch_creation_rate_limit (5/minute) reached for this session; retry in 55 s");
  EXPECT_TRUE(Create(Req("x", 10, ""), &s2_).ok());  // per session
  exec_.AdvanceAndRun(std::chrono::seconds(54));
  EXPECT_THAT(std::string(Create(Req("x", 10, "")).status().message()), HasSubstr("retry in 1 s"));
  exec_.AdvanceAndRun(std::chrono::seconds(1));
  EXPECT_TRUE(Create(Req("x", 10, "")).ok());
}

TEST_F(BranchManagerTest, FailedCommitChangesNothing) {
  store_.fail_commits = 1;
  auto a = Create(Req());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(mgr_->active_branches(), 0);
  auto b = Create(Req("x", 100));
  ASSERT_TRUE(b.ok());
  store_.fail_commits = 1;
  EXPECT_FALSE(Charge("", Rec(50)).ok());
  store_.fail_commits = 1;
  EXPECT_FALSE(Return(std::nullopt, "x").ok());
  auto st = Run([&] { return mgr_->Status(s1_, b->branch_id); });
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->branches[0].status, BranchStatus::kActive);
  EXPECT_EQ(st->branches[0].tokens_used, 1);
  EXPECT_EQ(Stored(b->branch_id).tokens_used, 1);
  EXPECT_TRUE(Return(std::nullopt, "x").ok());
}

TEST_F(BranchManagerTest, StatusTreeAndText) {
  auto a = Create(Req(Words(3), 2000));
  auto b = Create(Req(Words(2), 500));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(Return(std::nullopt, "b done").ok());
  auto c = Create(Req("x", 100));
  ASSERT_TRUE(c.ok());
  exec_.AdvanceAndRun(std::chrono::seconds(100));
  auto st = Run([&] { return mgr_->Status(s1_, ""); });
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(st->branches.size(), 1u);
  const BranchView& va = st->branches[0];
  EXPECT_EQ(va.branch_id, a->branch_id);
  EXPECT_EQ(va.tokens_used, 3 + 4);
  EXPECT_EQ(va.reserved_for_children, 100);
  EXPECT_EQ(va.time_left_ms, 200'000);
  ASSERT_EQ(va.children.size(), 2u);
  EXPECT_EQ(va.children[0].status, BranchStatus::kCompleted);
  EXPECT_FALSE(va.children[0].time_left_ms.has_value());
  EXPECT_EQ(st->active_branch_id, c->branch_id);
  EXPECT_EQ(st->active_count, 2);
  std::string text = StatusText(*st);
  EXPECT_THAT(text, HasSubstr("active branch: " + c->branch_id + " (2 active)"));
  EXPECT_THAT(text, HasSubstr("- " + a->branch_id + " [active] depth 0 \"explore\" 7/2000 tokens"));
  EXPECT_THAT(text, HasSubstr("  - " + b->branch_id + " [completed] depth 1"));
  EXPECT_THAT(text, HasSubstr("200 s left"));
  auto one = Run([&] { return mgr_->Status(s1_, b->branch_id); });
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->branches.size(), 1u);
  EXPECT_EQ(one->branches[0].summary, "b done");
}

TEST(BranchManagerRaceTest, ConcurrentChargesAreAllCountedAndWarnOnce) {
  testing::InMemoryBranchStore store;
  testing::WordTokenCounter counter;
  testing::FakeScrubber scrubber;
  EventBus bus;
  std::atomic<int> warnings{0};
  bus.Subscribe([&](const BranchEvent& e) { warnings += e.type == BranchEventType::kWarning; });
  base::ThreadExecutor exec;
  std::unique_ptr<BranchManager> mgr;
  exec.RunSync([&] {
    mgr = std::make_unique<BranchManager>(FoldingConfig{}, exec, store, counter, scrubber, &bus);
  });
  SessionKey s{"local", "default", "race"};
  std::string id;
  exec.RunSync([&] {
    auto c = mgr->Create(s, Req("go", 10000));
    ASSERT_TRUE(c.ok());
    id = c->branch_id;
  });
  constexpr int kThreads = 8;
  constexpr int kPerThread = 200;
  std::atomic<int> done{0};
  std::atomic<int> exhausted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        exec.Post([&] {
          auto o = mgr->Charge(s, "", Rec(5));
          if (o.ok() && o->exhausted) ++exhausted;
          ++done;
        });
      }
    });
  }
  for (auto& th : threads) th.join();
  exec.RunSync([] {});
  EXPECT_EQ(done.load(), kThreads * kPerThread);
  // 1 (prompt) + 1600 * 5 = 8001 <= 10000: no exhaustion, one warning at >= 8000.
  EXPECT_EQ(exhausted.load(), 0);
  EXPECT_EQ(warnings.load(), 1);
  auto b = store.Get(id);
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((*b)->tokens_used, 1 + kThreads * kPerThread * 5);
  exec.RunSync([&] { mgr.reset(); });
}

}  // namespace
}  // namespace contextd::folding
