// The contract of trail::TrailStore, run against every backend (SQLite with its FTS5 index
// file, PostgreSQL with tsvector): the same scopes, events, folds, searches and Trail behaviour.
// Instantiated by each backend's test binary.
#include "store/trail_store_contract.h"

#include <vector>

namespace contextd::store::testing {
namespace {

TEST_P(TrailStoreContractTest, ScopesEventsRoundTripAndSurviveReopen) {
  SessionRef s = Session("a");
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_1", "", "session a", s)).ok());
  ASSERT_TRUE(store_->OpenScope(MakeScope("br_1", "ses_1", "explore files", s)).ok());
  EXPECT_EQ(store_->OpenScope(MakeScope("br_1", "ses_1", "again", s)).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(store_->OpenScope(MakeScope("br_2", "nope", "x", s)).code(),
            absl::StatusCode::kNotFound);
  auto seqs = store_->AppendEvents(
      {NewEvent{"br_1", EventKind::kToolCall, "fs__read", "{\"p\":1}", 5, false, 1},
       NewEvent{"br_1", EventKind::kToolResult, "fs__read", "hello", 7, true, 2}});
  ASSERT_TRUE(seqs.ok()) << seqs.status();
  ASSERT_EQ(seqs->size(), 2u);
  EXPECT_LT((*seqs)[0], (*seqs)[1]);
  EXPECT_EQ(store_->AppendEvents({NewEvent{"zz", EventKind::kWarning, "", "w", 0, false, 3}})
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(store_->FoldScope("br_1", "found the bug in parser.cc", 6, 9).ok());
  EXPECT_EQ(store_->FoldScope("br_1", "again", 1, 10).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->FoldScope("zz", "x", 1, 10).code(), absl::StatusCode::kNotFound);

  store_.reset();
  auto reopened = backend_->OpenTrailStore();
  ASSERT_TRUE(reopened.ok());
  auto scope = (*reopened)->GetScope("br_1");
  ASSERT_TRUE(scope.ok() && scope->has_value());
  EXPECT_EQ((*scope)->status, ScopeStatus::kFolded);
  EXPECT_EQ((*scope)->summary, "found the bug in parser.cc");
  EXPECT_EQ((*scope)->summary_tokens, 6);
  EXPECT_EQ((*scope)->parent_id, "ses_1");
  EXPECT_EQ((*scope)->event_count, 2);
  EXPECT_EQ((*scope)->event_tokens, 12);
  auto page = (*reopened)->ListEvents("br_1", 0, 10);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->events.size(), 2u);
  EXPECT_EQ(page->events[1].payload, "hello");
  EXPECT_TRUE(page->events[1].is_error);
  EXPECT_EQ(page->events[1].payload_hash,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
  auto sessions = (*reopened)->ListSessions("", 10);
  ASSERT_TRUE(sessions.ok());
  ASSERT_EQ(sessions->size(), 1u);
  EXPECT_EQ((*sessions)[0].scope_count, 2);
  EXPECT_EQ((*sessions)[0].event_tokens, 12);
  auto scopes = (*reopened)->ListScopes("ses_1");
  ASSERT_TRUE(scopes.ok());
  ASSERT_EQ(scopes->size(), 2u);
  EXPECT_EQ((*scopes)[0].id, "ses_1");
}

TEST_P(TrailStoreContractTest, CombinedWritesApplyBothPartsOrNeither) {
  SessionRef s = Session("a");
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_1", "", "session", s)).ok());
  NewEvent to_root{"ses_1", EventKind::kBranchCreated, "br_1", "open it", 3, false, 1};
  NewEvent to_nowhere{"nope", EventKind::kWarning, "", "lost", 0, false, 2};
  // An event for an unknown scope: the scope is not opened either.
  EXPECT_EQ(
      store_->OpenScopeWithEvents(MakeScope("br_1", "ses_1", "d", s), {to_root, to_nowhere}).code(),
      absl::StatusCode::kNotFound);
  EXPECT_FALSE(store_->GetScope("br_1")->has_value());
  EXPECT_EQ(store_->ListEvents("ses_1", 0, 10)->total, 0);
  ASSERT_TRUE(store_->OpenScopeWithEvents(MakeScope("br_1", "ses_1", "d", s), {to_root}).ok());
  EXPECT_EQ(store_->ListEvents("ses_1", 0, 10)->total, 1);
  // A fold that fails (unknown scope, then already folded) appends nothing.
  NewEvent end{"br_1", EventKind::kBranchReturned, "", "done", 1, false, 3};
  EXPECT_EQ(store_->FoldScopeAfterEvents({end}, "nope", "s", 1, 3).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->ListEvents("br_1", 0, 10)->total, 0);
  ASSERT_TRUE(store_->FoldScopeAfterEvents({end}, "br_1", "summary", 1, 3).ok());
  EXPECT_EQ(store_->FoldScopeAfterEvents({end}, "br_1", "again", 1, 4).code(),
            absl::StatusCode::kFailedPrecondition);
  auto events = store_->ListEvents("br_1", 0, 10);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->total, 1);
  auto folded = store_->GetScope("br_1");
  ASSERT_TRUE(folded.ok() && folded->has_value());
  EXPECT_EQ((*folded)->status, ScopeStatus::kFolded);
  EXPECT_EQ((*folded)->summary, "summary");
}

TEST_P(TrailStoreContractTest, ListEventsPaginates) {
  SessionRef s = Session("a");
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_1", "", "session", s)).ok());
  for (int i = 0; i < 25; ++i) {
    ASSERT_TRUE(store_
                    ->AppendEvents({NewEvent{"ses_1", EventKind::kToolCall, "t",
                                             "call " + std::to_string(i), 1, false, i}})
                    .ok());
  }
  auto page = store_->ListEvents("ses_1", 20, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->total, 25);
  ASSERT_EQ(page->events.size(), 5u);
  EXPECT_EQ(page->events[0].payload, "call 20");
  auto past = store_->ListEvents("ses_1", 100, 10);
  ASSERT_TRUE(past.ok());
  EXPECT_TRUE(past->events.empty());
}

TEST_P(TrailStoreContractTest, SearchFindsDescriptionsAndSummariesOfOneTenantAndProject) {
  SessionRef a = Session("a");
  SessionRef other = Session("b", "acme");
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_1", "", "session", a)).ok());
  ASSERT_TRUE(store_->OpenScope(MakeScope("br_1", "ses_1", "explore the tokenizer", a)).ok());
  ASSERT_TRUE(store_->OpenScope(MakeScope("br_2", "ses_1", "debug flaky test", a)).ok());
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_2", "", "session", other)).ok());
  ASSERT_TRUE(
      store_->OpenScope(MakeScope("br_3", "ses_2", "explore the tokenizer too", other)).ok());
  ASSERT_TRUE(store_->FoldScope("br_2", "race in executor shutdown", 5, 1).ok());

  auto hits = store_->Search("local", "default", "tokenizer", 10);
  ASSERT_TRUE(hits.ok()) << hits.status();
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].scope.id, "br_1");
  EXPECT_NE((*hits)[0].snippet.find("[tokenizer]"), std::string::npos);

  hits = store_->Search("local", "default", "execut*", 10);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].scope.id, "br_2");

  // FTS syntax is never interpreted: quotes, operators and parentheses are just text.
  for (const char* q : {"\"unbalanced", "AND OR NOT", "tokenizer)(", "col:tokenizer", "NEAR(a b"}) {
    auto r = store_->Search("local", "default", q, 10);
    EXPECT_TRUE(r.ok()) << q << ": " << r.status();
  }
  EXPECT_EQ(store_->Search("local", "default", "  ", 10).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Search("local", "default", "()", 10).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(TrailStoreContractTest, ListOpenScopesByKind) {
  SessionRef s = Session("a");
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_1", "", "session", s)).ok());
  for (const char* id : {"auto_1", "auto_2", "auto_3"}) {
    Scope a = MakeScope(id, "ses_1", "upstream fs", s);
    a.kind = ScopeKind::kAuto;
    ASSERT_TRUE(store_->OpenScope(a).ok());
  }
  ASSERT_TRUE(store_->OpenScope(MakeScope("br_1", "ses_1", "a branch", s)).ok());
  ASSERT_TRUE(store_->FoldScope("auto_2", "fs: 1 call", 4, 5).ok());
  auto open = store_->ListOpenScopes(ScopeKind::kAuto, 10);
  ASSERT_TRUE(open.ok()) << open.status();
  ASSERT_EQ(open->size(), 2u);
  EXPECT_EQ((*open)[0].id, "auto_1");
  EXPECT_EQ((*open)[0].kind, ScopeKind::kAuto);
  EXPECT_EQ((*open)[1].id, "auto_3");
  auto limited = store_->ListOpenScopes(ScopeKind::kAuto, 1);
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(limited->size(), 1u);
  auto branches = store_->ListOpenScopes(ScopeKind::kBranch, 10);
  ASSERT_TRUE(branches.ok());
  ASSERT_EQ(branches->size(), 1u);
  EXPECT_EQ((*branches)[0].id, "br_1");
}

TEST_P(TrailStoreContractTest, FoldedViewShowsOpenScopesInFullAndFoldedOnesAsSummaries) {
  trail::Trail t(*store_, clock_);
  SessionRef s = Session("sess");
  ASSERT_TRUE(t.RecordToolCall(s, "", "fs__list", "{}", "a.txt b.txt", 2, 4, false).ok());
  ASSERT_TRUE(t.OnBranchCreated(s, "br_a", "", "explore repo", "look at every file", 10).ok());
  ASSERT_TRUE(t.RecordToolCall(s, "br_a", "fs__read", "{\"path\":\"a.txt\"}", std::string(500, 'a'),
                               6, 400, false)
                  .ok());
  ASSERT_TRUE(t.OnBranchCreated(s, "br_b", "br_a", "nested look", "dig", 3).ok());
  ASSERT_TRUE(t.RecordToolCall(s, "br_b", "fs__read", "{}", "deep text", 1, 300, false).ok());
  ASSERT_TRUE(t.OnBranchWarning("br_b", "80% used").ok());
  ASSERT_TRUE(t.OnBranchFolded("br_b", "deep: nothing", 4, true, "timeout").ok());
  ASSERT_TRUE(t.OnBranchFolded("br_a", "a.txt holds the config", 7, false, "").ok());
  ASSERT_TRUE(t.OnBranchFolded("br_a", "again", 7, false, "").ok());  // already folded: no-op
  ASSERT_TRUE(t.OnBranchCreated(s, "br_c", "", "still open", "work", 5).ok());
  ASSERT_TRUE(t.RecordToolCall(s, "br_c", "grep", "{\"q\":\"x\"}", "match line", 3, 8, true).ok());

  auto view = t.View(s, -1);
  ASSERT_TRUE(view.ok()) << view.status();
  // Unfolded: 2+4 + 10 + 6+400 + 3 + 1+300 + 0 + 4 (force_return) + 7 (returned) + 5 + 3+8.
  EXPECT_EQ(view->tokens_unfolded, 2 + 4 + 10 + 6 + 400 + 3 + 1 + 300 + 0 + 4 + 7 + 5 + 3 + 8);
  // Folded: root's call (6) + br_a as its summary (7) + br_c created (5) and its events (11).
  EXPECT_EQ(view->tokens_folded, 6 + 7 + 5 + 11);
  EXPECT_EQ(view->scopes_open, 1);
  EXPECT_EQ(view->scopes_folded, 2);
  EXPECT_NE(view->text.find("= branch br_a [folded: 731 tokens -> 7] explore repo :: a.txt holds "
                            "the config"),
            std::string::npos)
      << view->text;
  EXPECT_EQ(view->text.find(std::string(500, 'a')), std::string::npos) << view->text;
  EXPECT_EQ(view->text.find("br_b"), std::string::npos) << view->text;
  EXPECT_NE(view->text.find("+ branch br_c [open] still open"), std::string::npos);
  EXPECT_NE(view->text.find("match line"), std::string::npos);
  EXPECT_NE(view->text.find("- tool_result grep [error] (8 tokens)"), std::string::npos);

  auto shallow = t.View(s, 0);
  ASSERT_TRUE(shallow.ok());
  EXPECT_EQ(shallow->tokens_folded, view->tokens_folded);
  EXPECT_EQ(shallow->text.find("match line"), std::string::npos) << shallow->text;
  EXPECT_NE(shallow->text.find("trail_unfold to see"), std::string::npos);

  // Unfold a folded scope: its full events, paginated.
  auto page = t.Unfold(s, "br_a", 0, 2);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->total, 4);  // call, result, branch_created (br_b), branch_returned
  ASSERT_EQ(page->events.size(), 2u);
  EXPECT_EQ(page->events[1].payload, std::string(500, 'a'));
  auto rest = t.Unfold(s, "br_b", 0, 10);
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->events.size(), 4u);
  EXPECT_EQ(rest->events[2].kind, EventKind::kWarning);
  EXPECT_EQ(rest->events[3].kind, EventKind::kForceReturn);
  EXPECT_EQ(rest->events[3].payload, "timeout\ndeep: nothing");
  EXPECT_EQ(t.Unfold(s, "br_a", -1, 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.Unfold(s, "br_a", 0, 0).status().code(), absl::StatusCode::kInvalidArgument);

  // Another session of the same tenant and project may unfold it; another tenant may not.
  EXPECT_TRUE(t.Unfold(Session("later"), "br_a", 0, 5).ok());
  EXPECT_EQ(t.Unfold(Session("x", "acme"), "br_a", 0, 5).status().code(),
            absl::StatusCode::kNotFound);
  // Recording into another session's scope is refused.
  EXPECT_EQ(t.RecordToolCall(Session("later"), "br_c", "t", "", "", 0, 0, false).status().code(),
            absl::StatusCode::kNotFound);

  auto hits = t.Search(Session("later"), "config", 5);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].scope.id, "br_a");
}

TEST_P(TrailStoreContractTest, AutoScopesGroupCallsPerUpstreamAndFoldWhenTheAgentTurnsAway) {
  trail::Trail t(*store_, clock_, AutoOn());
  SessionRef s = Session("sess");
  auto r1 = t.RecordUpstreamCall(s, "fs", "fs__read_text_file", R"({"path":"/w/a.txt"})",
                                 std::string(300, 'a'), 5, 300, false);
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ(r1->scope_id.rfind("auto_", 0), 0u) << r1->scope_id;
  auto r2 =
      t.RecordUpstreamCall(s, "fs", "fs__list_directory", R"({"path":"/w"})", "a.txt", 4, 2, false);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->scope_id, r1->scope_id);  // same upstream: same auto-scope
  EXPECT_EQ(t.OpenAutoScope(s), r1->scope_id);
  // Another session has its own.
  auto other =
      t.RecordUpstreamCall(Session("other"), "fs", "fs__list_directory", "{}", "x", 1, 1, false);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->scope_id, r1->scope_id);

  // Turning to another upstream folds the first auto-scope.
  auto r3 = t.RecordUpstreamCall(s, "git", "git__log", R"({"n":3})", "Error: not a repository", 3,
                                 4, true);
  ASSERT_TRUE(r3.ok());
  EXPECT_NE(r3->scope_id, r1->scope_id);
  auto fs_scope = t.GetScope(s, r1->scope_id);
  ASSERT_TRUE(fs_scope.ok());
  EXPECT_EQ(fs_scope->kind, ScopeKind::kAuto);
  EXPECT_EQ(fs_scope->status, ScopeStatus::kFolded);
  EXPECT_EQ(fs_scope->description, "upstream fs");
  const std::string fs_summary =
      "fs: 2 calls (2 ok, 0 errors), 311 tokens; read_text_file x1 (path=/w/a.txt), "
      "list_directory x1 (path=/w)";
  EXPECT_EQ(fs_scope->summary, fs_summary);
  EXPECT_EQ(fs_scope->summary_tokens, Words(fs_summary));

  // A contextd tool call (the server calls FoldAutoScope) folds the current one; nothing stays.
  ASSERT_TRUE(t.FoldAutoScope(s).ok());
  EXPECT_EQ(t.OpenAutoScope(s), "");
  ASSERT_TRUE(t.FoldAutoScope(s).ok());  // none open: nothing to do
  auto git_scope = t.GetScope(s, r3->scope_id);
  ASSERT_TRUE(git_scope.ok());
  EXPECT_EQ(git_scope->summary,
            "git: 1 call (0 ok, 1 error), 7 tokens; log x1 (n=3); errors: log: Error: not a "
            "repository");

  auto view = t.View(s, -1);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->tokens_unfolded, 5 + 300 + 4 + 2 + 3 + 4);
  EXPECT_EQ(view->tokens_folded, fs_scope->summary_tokens + git_scope->summary_tokens);
  EXPECT_EQ(view->auto_scopes_folded, 2);
  EXPECT_EQ(view->auto_scopes_open, 0);
  EXPECT_EQ(view->scopes_folded, 0);  // branch scopes only
  size_t fs_line =
      view->text.find("= auto " + r1->scope_id + " [folded: 311 tokens -> " +
                      std::to_string(fs_scope->summary_tokens) + "] upstream fs :: " + fs_summary);
  size_t git_line = view->text.find("= auto " + r3->scope_id + " [folded: 7 tokens -> ");
  EXPECT_NE(fs_line, std::string::npos) << view->text;
  EXPECT_NE(git_line, std::string::npos) << view->text;
  EXPECT_LT(fs_line, git_line);
  EXPECT_EQ(view->text.find(std::string(300, 'a')), std::string::npos) << view->text;
  std::string header = trail::FoldedViewText(*view);
  EXPECT_NE(header.find("2 auto-scope(s) folded, 0 open"), std::string::npos) << header;

  // Unfold shows the calls; search finds the summary.
  auto page = t.Unfold(s, r1->scope_id, 0, 10);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->total, 4);
  EXPECT_EQ(page->events[1].payload, std::string(300, 'a'));
  auto hits = t.Search(s, "list_directory", 5);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].scope.id, r1->scope_id);
  // The root holds only the two markers, at zero tokens.
  ASSERT_TRUE(!view->root_scope_id.empty());
  auto root_page = t.Unfold(s, view->root_scope_id, 0, 10);
  ASSERT_TRUE(root_page.ok());
  ASSERT_EQ(root_page->total, 2);
  EXPECT_EQ(root_page->events[0].kind, EventKind::kAutoScopeOpened);
  EXPECT_EQ(root_page->events[0].label, r1->scope_id);
  EXPECT_EQ(root_page->events[0].tokens, 0);
}

TEST_P(TrailStoreContractTest, AutoScopesSitBetweenBranchesInOrderAndLeaveBranchCallsAlone) {
  trail::Trail t(*store_, clock_, AutoOn());
  SessionRef s = Session("sess");
  auto before = t.RecordUpstreamCall(s, "fs", "fs__read", "{}", "first", 1, 1, false);
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(t.FoldAutoScope(s).ok());  // branch_create is a contextd tool
  ASSERT_TRUE(t.OnBranchCreated(s, "br_a", "", "look around", "go", 1).ok());
  // Inside a branch the gateway records in the branch (RecordToolCall), as without auto-scopes.
  auto inside = t.RecordToolCall(s, "br_a", "fs__read", "{}", "inside", 1, 1, false);
  ASSERT_TRUE(inside.ok());
  EXPECT_EQ(inside->scope_id, "br_a");
  EXPECT_EQ(t.OpenAutoScope(s), "");
  ASSERT_TRUE(t.OnBranchFolded("br_a", "all fine", 2, false, "").ok());
  auto after = t.RecordUpstreamCall(s, "fs", "fs__read", "{}", "later", 1, 1, false);
  ASSERT_TRUE(after.ok());
  EXPECT_NE(after->scope_id, before->scope_id);

  auto view = t.View(s, -1);
  ASSERT_TRUE(view.ok());
  size_t a = view->text.find("= auto " + before->scope_id);
  size_t b = view->text.find("= branch br_a");
  size_t c = view->text.find("+ auto " + after->scope_id + " [open] upstream fs");
  ASSERT_NE(a, std::string::npos) << view->text;
  ASSERT_NE(b, std::string::npos) << view->text;
  ASSERT_NE(c, std::string::npos) << view->text;
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_NE(view->text.find("later"), std::string::npos) << "an open auto-scope shows its calls";
  EXPECT_EQ(view->auto_scopes_open, 1);

  // The session ends: its auto-scope folds.
  ASSERT_TRUE(t.EndSession(s).ok());
  auto ended = t.GetScope(s, after->scope_id);
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ(ended->status, ScopeStatus::kFolded);
  EXPECT_EQ(ended->summary, "fs: 1 call (1 ok, 0 errors), 2 tokens; read x1");
}

TEST_P(TrailStoreContractTest, WithoutAutoScopesRootCallsStayInTheRoot) {
  trail::Trail t(*store_, clock_);
  SessionRef s = Session("sess");
  auto root = t.RootScope(s);
  ASSERT_TRUE(root.ok());
  auto r = t.RecordUpstreamCall(s, "fs", "fs__read", "{}", "text", 1, 1, false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->scope_id, *root);
  EXPECT_EQ(t.OpenAutoScope(s), "");
  ASSERT_TRUE(t.EndSession(s).ok());
  auto open = store_->ListOpenScopes(ScopeKind::kAuto, 10);
  ASSERT_TRUE(open.ok());
  EXPECT_TRUE(open->empty());
}

TEST_P(TrailStoreContractTest, RecoveryFoldsAutoScopesACrashLeftOpen) {
  SessionRef s = Session("sess");
  std::string id;
  {
    trail::Trail crashed(*store_, clock_, AutoOn());
    // Enough calls for the rebuild to read several pages of events.
    for (int i = 0; i < 150; ++i) {
      auto r = crashed.RecordUpstreamCall(s, "fs", "fs__read_text_file",
                                          "{\"path\":\"/w/" + std::to_string(i % 4) + "\"}",
                                          i == 7 ? "Error: EACCES" : "text", 2, 3, i == 7);
      ASSERT_TRUE(r.ok());
      id = r->scope_id;
    }
    // The process dies here: nothing folds the auto-scope.
  }
  auto open = store_->ListOpenScopes(ScopeKind::kAuto, 10);
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->size(), 1u);

  // The next start recovers it, with the option off as well.
  trail::Trail restarted(*store_, clock_);
  auto folded = restarted.RecoverAutoScopes();
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ(*folded, 1);
  auto scope = store_->GetScope(id);
  ASSERT_TRUE(scope.ok() && scope->has_value());
  EXPECT_EQ((*scope)->status, ScopeStatus::kFolded);
  EXPECT_EQ((*scope)->summary,
            "fs: 150 calls (149 ok, 1 error), 750 tokens; read_text_file x150 (path=/w/0; "
            "path=/w/1; path=/w/2; +37 more); errors: read_text_file: Error: EACCES");
  auto again = restarted.RecoverAutoScopes();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);
}

TEST_P(TrailStoreContractTest, SearchSeesEveryCommittedWriteAndRanksMoreMatchingWordsFirst) {
  SessionRef s = Session("a");
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_1", "", "session", s)).ok());
  ASSERT_TRUE(store_->OpenScope(MakeScope("br_1", "ses_1", "explore the lexer", s)).ok());
  ASSERT_TRUE(store_->OpenScope(MakeScope("br_2", "ses_1", "parser and lexer errors", s)).ok());
  ASSERT_TRUE(store_->OpenScope(MakeScope("br_3", "ses_1", "unrelated work", s)).ok());
  auto hits = store_->Search("local", "default", "lexer", 5);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->size(), 2u);
  // Both words beat one word.
  hits = store_->Search("local", "default", "parser lexer", 5);
  ASSERT_TRUE(hits.ok()) << hits.status();
  ASSERT_EQ(hits->size(), 2u);
  EXPECT_EQ((*hits)[0].scope.id, "br_2");
  EXPECT_EQ((*hits)[1].scope.id, "br_1");
  // A fold's summary is searchable at once, and the scope appears once.
  ASSERT_TRUE(store_->FoldScope("br_3", "the lexer lives in src/lex.c", 8, 2000).ok());
  hits = store_->Search("local", "default", "lex", 5);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].scope.id, "br_3");
  EXPECT_EQ((*hits)[0].scope.status, ScopeStatus::kFolded);
  EXPECT_NE((*hits)[0].snippet.find("[lex]"), std::string::npos) << (*hits)[0].snippet;
  // A limit is a limit; a word nobody wrote finds nothing.
  hits = store_->Search("local", "default", "lexer", 1);
  ASSERT_TRUE(hits.ok());
  EXPECT_EQ(hits->size(), 1u);
  hits = store_->Search("local", "default", "zebra", 5);
  ASSERT_TRUE(hits.ok());
  EXPECT_TRUE(hits->empty());
}

}  // namespace
}  // namespace contextd::store::testing
