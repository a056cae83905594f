// The TrailStore contract, continued: one root scope per session (decision 0028). Roots are found
// by tenant, project and session id; two store instances (two processes' connections) opening
// the same session's root at once agree on one; Trails over two instances of one store, or one
// after another (a restart), continue the same tree. Instantiated with the rest of the suite.
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "store/trail_store_contract.h"

namespace contextd::store::testing {
namespace {

Scope Root(const std::string& id, const SessionRef& session) {
  return MakeScope(id, "", "session " + session.session_id, session);
}

TEST_P(TrailStoreContractTest, SessionRootIsFoundByTenantProjectAndSession) {
  SessionRef s = Session("conv-1", "acme");
  auto first = store_->OpenSessionRoot(Root("ses_a", s));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, "ses_a");
  // Found again: the candidate is not inserted.
  auto again = store_->OpenSessionRoot(Root("ses_b", s));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, "ses_a");
  EXPECT_FALSE(store_->GetScope("ses_b")->has_value());
  // Same session id in another tenant, or in another project: a root of its own.
  SessionRef other_tenant = Session("conv-1", "globex");
  EXPECT_EQ(*store_->OpenSessionRoot(Root("ses_c", other_tenant)), "ses_c");
  SessionRef other_project = s;
  other_project.project = "p2";
  EXPECT_EQ(*store_->OpenSessionRoot(Root("ses_d", other_project)), "ses_d");
  EXPECT_EQ(*store_->OpenSessionRoot(Root("ses_e", other_tenant)), "ses_c");
  // Another instance of the store (another process) finds the same roots.
  auto second = backend_->OpenTrailStore();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*(*second)->OpenSessionRoot(Root("ses_f", s)), "ses_a");
  EXPECT_EQ(*(*second)->OpenSessionRoot(Root("ses_g", other_tenant)), "ses_c");

  // Only a session scope without a parent can be a root; an id in use is refused.
  Scope branch = MakeScope("br_1", "ses_a", "d", Session("conv-2", "acme"));
  EXPECT_EQ(store_->OpenSessionRoot(branch).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->OpenSessionRoot(Root("ses_a", Session("conv-3", "acme"))).status().code(),
            absl::StatusCode::kAlreadyExists);
  // OpenScope of a session scope is a root of its own (a process's): the session's stays.
  ASSERT_TRUE(store_->OpenScope(Root("ses_own", s)).ok());
  EXPECT_EQ(*store_->OpenSessionRoot(Root("ses_h", s)), "ses_a");
  auto sessions = store_->ListSessions("acme", 10);
  ASSERT_TRUE(sessions.ok());
  EXPECT_EQ(sessions->size(), 3u);  // ses_a, ses_d, ses_own
}

TEST_P(TrailStoreContractTest, ConcurrentOpensOfOneSessionReturnOneRoot) {
  auto second = backend_->OpenTrailStore();
  ASSERT_TRUE(second.ok()) << second.status();
  constexpr int kSessions = 40;
  std::vector<std::string> got[2];
  std::atomic<int> ready{0};
  auto run = [&](trail::TrailStore& store, int who) {
    ready.fetch_add(1);
    while (ready.load() < 2) {
    }
    for (int i = 0; i < kSessions; ++i) {
      SessionRef s = Session("conv-" + std::to_string(i));
      auto id =
          store.OpenSessionRoot(Root("ses_" + std::to_string(who) + "_" + std::to_string(i), s));
      got[who].push_back(id.ok() ? *id : "error: " + std::string(id.status().message()));
    }
  };
  std::thread a(run, std::ref(*store_), 0);
  std::thread b(run, std::ref(**second), 1);
  a.join();
  b.join();
  ASSERT_EQ(got[0].size(), static_cast<size_t>(kSessions));
  ASSERT_EQ(got[1].size(), static_cast<size_t>(kSessions));
  for (int i = 0; i < kSessions; ++i) {
    EXPECT_EQ(got[0][i], got[1][i]) << "session " << i;
    EXPECT_EQ(got[0][i].rfind("ses_", 0), 0u) << got[0][i];
  }
  auto sessions = store_->ListSessions("", 1000);
  ASSERT_TRUE(sessions.ok());
  EXPECT_EQ(sessions->size(), static_cast<size_t>(kSessions));  // no second root anywhere
}

TEST_P(TrailStoreContractTest, PreviousEventSkipsOtherScopesEvents) {
  SessionRef s = Session("a");
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_1", "", "session", s)).ok());
  ASSERT_TRUE(store_->OpenScope(MakeScope("br_1", "ses_1", "one", s)).ok());
  ASSERT_TRUE(store_->OpenScope(MakeScope("br_2", "ses_1", "two", s)).ok());
  auto call =
      store_->AppendEvents({NewEvent{"br_1", EventKind::kToolCall, "t", "{}", 1, false, 1}});
  // Another writer's event lands between a call and its result.
  ASSERT_TRUE(
      store_->AppendEvents({NewEvent{"br_2", EventKind::kToolCall, "t", "x", 1, false, 2}}).ok());
  auto result =
      store_->AppendEvents({NewEvent{"br_1", EventKind::kToolResult, "t", "ok", 1, false, 3}});
  ASSERT_TRUE(call.ok() && result.ok());
  auto previous = store_->PreviousEvent("br_1", (*result)[0]);
  ASSERT_TRUE(previous.ok() && previous->has_value());
  EXPECT_EQ((*previous)->seq, (*call)[0]);
  EXPECT_FALSE(store_->PreviousEvent("br_1", (*call)[0])->has_value());
  // trail_unfold of the result shows its call.
  trail::Trail t(*store_, clock_);
  auto unfolded = t.UnfoldEvent(s, "br_1", (*result)[0]);
  ASSERT_TRUE(unfolded.ok()) << unfolded.status();
  ASSERT_EQ(unfolded->size(), 2u);
  EXPECT_EQ((*unfolded)[0].seq, (*call)[0]);
}

TEST_P(TrailStoreContractTest, ARestartedTrailContinuesTheSessionsTree) {
  SessionRef s = Session("model:conv-1");
  std::string root;
  {
    trail::Trail before(*store_, clock_);
    auto r = before.RootScope(s);
    ASSERT_TRUE(r.ok()) << r.status();
    root = *r;
    ASSERT_TRUE(before.OnBranchCreated(s, "br_1", "", "read the lexer", "go", 2).ok());
    ASSERT_TRUE(before.RecordToolCall(s, "br_1", "fs__read", "{}", "lexer text", 1, 4, false).ok());
    ASSERT_TRUE(before.EndSession(s).ok());
  }
  store_.reset();
  auto reopened = backend_->OpenTrailStore();
  ASSERT_TRUE(reopened.ok());
  store_ = std::move(*reopened);
  trail::Trail after(*store_, clock_);
  auto r = after.RootScope(s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, root);  // the conversation resumed: the same tree
  ASSERT_TRUE(after.OnBranchFolded("br_1", "the lexer is fine", 4, false, "").ok());
  ASSERT_TRUE(after.RecordToolCall(s, "", "fs__list", "{}", "a b", 1, 2, false).ok());
  auto view = after.View(s, -1);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->root_scope_id, root);
  EXPECT_EQ(view->scopes_folded, 1);
  // The root: branch_created and a call (2); br_1: its call (2) and branch_returned.
  EXPECT_EQ(view->events, 6);
  EXPECT_NE(view->text.find("= branch br_1"), std::string::npos) << view->text;
  auto sessions = store_->ListSessions("", 10);
  ASSERT_TRUE(sessions.ok());
  EXPECT_EQ(sessions->size(), 1u);
}

TEST_P(TrailStoreContractTest, AfterACrashRecoveryFoldsTheAutoScopeAndTheSessionGoesOn) {
  SessionRef s = Session("model:conv-2");
  std::string root, left_open;
  {
    trail::Trail crashed(*store_, clock_, AutoOn());
    auto r = crashed.RecordUpstreamCall(s, "fs", "fs__read", "{}", "text", 1, 1, false);
    ASSERT_TRUE(r.ok());
    left_open = r->scope_id;
    root = *crashed.RootScope(s);
  }  // the process dies: nothing folds the auto-scope
  trail::Trail restarted(*store_, clock_, AutoOn());
  auto recovered = restarted.RecoverAutoScopes();
  ASSERT_TRUE(recovered.ok());
  EXPECT_EQ(*recovered, 1);
  auto next = restarted.RecordUpstreamCall(s, "fs", "fs__read", "{}", "more", 1, 1, false);
  ASSERT_TRUE(next.ok());
  EXPECT_NE(next->scope_id, left_open);
  auto view = restarted.View(s, -1);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->root_scope_id, root);  // one tree: the recovered scope and the new one in it
  EXPECT_EQ(view->auto_scopes_folded, 1);
  EXPECT_EQ(view->auto_scopes_open, 1);
}

TEST_P(TrailStoreContractTest, AProcessSessionGetsARootPerTrail) {
  trail::TrailOptions options;
  options.process_sessions = {"stdio"};
  SessionRef stdio = Session("stdio");
  trail::Trail first(*store_, clock_, options);
  trail::Trail second(*store_, clock_, options);
  auto a = first.RootScope(stdio);
  auto b = second.RootScope(stdio);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);  // each stdio run has its own trail
  EXPECT_EQ(*first.RootScope(stdio), *a);
  // Without the option the same id is one session.
  trail::Trail plain(*store_, clock_);
  trail::Trail plain_again(*store_, clock_);
  EXPECT_EQ(*plain.RootScope(stdio), *plain_again.RootScope(stdio));
}

TEST_P(TrailStoreContractTest, TwoTrailsOnOneStoreBuildOneTree) {
  auto other = backend_->OpenTrailStore();
  ASSERT_TRUE(other.ok());
  trail::Trail a(*store_, clock_);
  trail::Trail b(**other, clock_);
  SessionRef s = Session("mcp-1");
  // A opens the branch and records a call in it; B returns it, and opens a child of it.
  ASSERT_TRUE(a.OnBranchCreated(s, "br_1", "", "explore the lexer", "find it", 3).ok());
  auto call = a.RecordToolCall(s, "br_1", "fs__read", "{\"p\":1}", "lexer", 2, 5, false);
  ASSERT_TRUE(call.ok()) << call.status();
  ASSERT_TRUE(b.OnBranchCreated(s, "br_2", "br_1", "deeper", "look", 1).ok());
  ASSERT_TRUE(b.OnBranchFolded("br_2", "nothing deeper", 2, false, "").ok());
  ASSERT_TRUE(b.OnBranchFolded("br_1", "overflow in lex", 3, false, "").ok());
  // A's cache still has br_1 open: its fold finds it folded and leaves it so.
  ASSERT_TRUE(a.OnBranchFolded("br_1", "again", 1, true, "timeout").ok());
  for (trail::Trail* t : {&a, &b}) {
    auto view = t->View(s, -1);
    ASSERT_TRUE(view.ok()) << view.status();
    EXPECT_EQ(view->scopes_folded, 2);
    EXPECT_EQ(view->scopes_open, 0);
    EXPECT_EQ(view->events, 6) << view->text;  // 1 in the root, 4 in br_1, 1 in br_2
    EXPECT_NE(view->text.find("= branch br_1 [folded: "), std::string::npos) << view->text;
    EXPECT_NE(view->text.find(":: overflow in lex"), std::string::npos) << view->text;
    auto page = t->Unfold(s, "br_1", 0, 20);
    ASSERT_TRUE(page.ok());
    EXPECT_EQ(page->total, 4);  // call, result, br_2 created, returned
    auto unfolded = t->UnfoldEvent(s, "br_1", call->result_seq);
    ASSERT_TRUE(unfolded.ok());
    EXPECT_EQ(unfolded->size(), 2u);
  }
  auto sessions = store_->ListSessions("", 10);
  ASSERT_TRUE(sessions.ok());
  EXPECT_EQ(sessions->size(), 1u);
}

// A shared store only (PostgreSQL): SQLite has one writer process, whose cache is the truth.
TEST_P(TrailStoreContractTest, AutoScopesFollowTheStoreAcrossTrails) {
  if (!store_->shared()) GTEST_SKIP() << "the store is not shared between processes";
  auto other = backend_->OpenTrailStore();
  ASSERT_TRUE(other.ok());
  trail::Trail a(*store_, clock_, AutoOn());
  trail::Trail b(**other, clock_, AutoOn());
  SessionRef s = Session("mcp-1");
  auto first = a.RecordUpstreamCall(s, "fs", "fs__read", "{}", "one", 1, 1, false);
  ASSERT_TRUE(first.ok());
  // B continues the auto-scope A opened, then A folds it with every call in its summary.
  auto second = b.RecordUpstreamCall(s, "fs", "fs__read", "{}", "two", 1, 1, false);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->scope_id, first->scope_id);
  ASSERT_TRUE(a.FoldAutoScope(s).ok());
  auto folded = store_->GetScope(first->scope_id);
  ASSERT_TRUE(folded.ok() && folded->has_value());
  EXPECT_EQ((*folded)->status, ScopeStatus::kFolded);
  EXPECT_EQ((*folded)->summary, "fs: 2 calls (2 ok, 0 errors), 4 tokens; read x2");
  // B's cached auto-scope is folded: its next call opens a new one.
  auto third = b.RecordUpstreamCall(s, "fs", "fs__read", "{}", "three", 1, 1, false);
  ASSERT_TRUE(third.ok());
  EXPECT_NE(third->scope_id, first->scope_id);
  EXPECT_EQ(a.OpenAutoScope(s), "");
  // Two open at once (two instances opened one each): the older folds, the newer goes on.
  auto root = a.RootScope(s);
  ASSERT_TRUE(root.ok());
  Scope raced = MakeScope("auto_raced", *root, "upstream fs", s);
  raced.kind = ScopeKind::kAuto;
  ASSERT_TRUE(store_->OpenScope(raced).ok());
  auto fourth = a.RecordUpstreamCall(s, "fs", "fs__read", "{}", "four", 1, 1, false);
  ASSERT_TRUE(fourth.ok());
  EXPECT_EQ(fourth->scope_id, "auto_raced");
  auto older = store_->GetScope(third->scope_id);
  ASSERT_TRUE(older.ok() && older->has_value());
  EXPECT_EQ((*older)->status, ScopeStatus::kFolded);
  EXPECT_EQ((*older)->summary, "fs: 1 call (1 ok, 0 errors), 2 tokens; read x1");
  // Ending the session on B folds what A opened.
  ASSERT_TRUE(b.EndSession(s).ok());
  auto ended = store_->ListOpenScopesOf(*root, ScopeKind::kAuto);
  ASSERT_TRUE(ended.ok());
  EXPECT_TRUE(ended->empty());
}

}  // namespace
}  // namespace contextd::store::testing
