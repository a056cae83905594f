#include "store/sqlite_trail_store.h"

#include <gtest/gtest.h>

#include "base/clock.h"
#include "store/test_util.h"
#include "trail/trail.h"

namespace contextd::store {
namespace {

using trail::EventKind;
using trail::NewEvent;
using trail::Scope;
using trail::ScopeKind;
using trail::ScopeStatus;
using trail::SessionRef;

SessionRef Session(const std::string& id, const std::string& tenant = "local") {
  SessionRef s;
  s.tenant = tenant;
  s.session_id = id;
  return s;
}

Scope MakeScope(const std::string& id, const std::string& parent, const std::string& desc,
                const SessionRef& session) {
  Scope s;
  s.id = id;
  s.parent_id = parent;
  s.kind = parent.empty() ? ScopeKind::kSession : ScopeKind::kBranch;
  s.description = desc;
  s.session = session;
  s.created_at_ms = 1000;
  return s;
}

class SqliteTrailStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SqliteTrailStore::Open(dir_.File("contextd.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }
  TempDir dir_;
  std::unique_ptr<SqliteTrailStore> store_;
};

TEST_F(SqliteTrailStoreTest, ScopesEventsRoundTripAndSurviveReopen) {
  SessionRef s = Session("a");
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_1", "", "session a", s)).ok());
  ASSERT_TRUE(store_->OpenScope(MakeScope("br_1", "ses_1", "explore files", s)).ok());
  EXPECT_EQ(store_->OpenScope(MakeScope("br_1", "ses_1", "again", s)).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(store_->OpenScope(MakeScope("br_2", "nope", "x", s)).code(),
            absl::StatusCode::kNotFound);
  auto seqs = store_->AppendEvents({NewEvent{"br_1", EventKind::kToolCall, "fs__read", "{\"p\":1}", 5, false, 1},
                                    NewEvent{"br_1", EventKind::kToolResult, "fs__read", "hello", 7, true, 2}});
  ASSERT_TRUE(seqs.ok()) << seqs.status();
  ASSERT_EQ(seqs->size(), 2u);
  EXPECT_LT((*seqs)[0], (*seqs)[1]);
  EXPECT_EQ(store_->AppendEvents({NewEvent{"zz", EventKind::kWarning, "", "w", 0, false, 3}}).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(store_->FoldScope("br_1", "found the bug in parser.cc", 6, 9).ok());
  EXPECT_EQ(store_->FoldScope("br_1", "again", 1, 10).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->FoldScope("zz", "x", 1, 10).code(), absl::StatusCode::kNotFound);

  store_.reset();
  auto reopened = SqliteTrailStore::Open(dir_.File("contextd.db"));
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

TEST_F(SqliteTrailStoreTest, IdenticalPayloadsShareOneBlob) {
  SessionRef s = Session("a");
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_1", "", "session", s)).ok());
  std::string big(100000, 'x');
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(store_->AppendEvents({NewEvent{"ses_1", EventKind::kToolResult, "t", big, 1, false, i}}).ok());
  }
  ASSERT_TRUE(store_->AppendEvents({NewEvent{"ses_1", EventKind::kToolResult, "t", "other", 1, false, 9}}).ok());
  auto blobs = store_->BlobCount();
  ASSERT_TRUE(blobs.ok());
  EXPECT_EQ(*blobs, 2);
  auto page = store_->ListEvents("ses_1", 0, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->total, 6);
  EXPECT_EQ(page->events[3].payload, big);
}

TEST_F(SqliteTrailStoreTest, ListEventsPaginates) {
  SessionRef s = Session("a");
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_1", "", "session", s)).ok());
  for (int i = 0; i < 25; ++i) {
    ASSERT_TRUE(store_->AppendEvents({NewEvent{"ses_1", EventKind::kToolCall, "t",
                                              "call " + std::to_string(i), 1, false, i}}).ok());
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

TEST_F(SqliteTrailStoreTest, SearchFindsDescriptionsAndSummariesOfOneTenantAndProject) {
  SessionRef a = Session("a");
  SessionRef other = Session("b", "acme");
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_1", "", "session", a)).ok());
  ASSERT_TRUE(store_->OpenScope(MakeScope("br_1", "ses_1", "explore the tokenizer", a)).ok());
  ASSERT_TRUE(store_->OpenScope(MakeScope("br_2", "ses_1", "debug flaky test", a)).ok());
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_2", "", "session", other)).ok());
  ASSERT_TRUE(store_->OpenScope(MakeScope("br_3", "ses_2", "explore the tokenizer too", other)).ok());
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

TEST(FtsQueryTest, QuotesEveryWord) {
  auto q = FtsQuery("foo \"bar\" baz*");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, "\"foo\" OR \"\"\"bar\"\"\" OR \"baz\"*");
}

// The Trail service over the real store.
class TrailTest : public SqliteTrailStoreTest {
 protected:
  base::FakeClock clock_;
};

TEST_F(TrailTest, FoldedViewShowsOpenScopesInFullAndFoldedOnesAsSummaries) {
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

}  // namespace
}  // namespace contextd::store
