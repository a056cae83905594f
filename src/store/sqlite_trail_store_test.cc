#include "store/sqlite_trail_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "base/clock.h"
#include "store/migrations.h"
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

TEST_F(SqliteTrailStoreTest, CombinedWritesApplyBothPartsOrNeither) {
  SessionRef s = Session("a");
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_1", "", "session", s)).ok());
  NewEvent to_root{"ses_1", EventKind::kBranchCreated, "br_1", "open it", 3, false, 1};
  NewEvent to_nowhere{"nope", EventKind::kWarning, "", "lost", 0, false, 2};
  // An event for an unknown scope: the scope is not opened either.
  EXPECT_EQ(store_->OpenScopeWithEvents(MakeScope("br_1", "ses_1", "d", s), {to_root, to_nowhere})
                .code(),
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

int64_t CountRows(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), SQLITE_OK) << sql;
  int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

// The index file's row count (FTS5 is part of Debian's SQLite).
int64_t IndexRows(const std::string& db_path) {
  return CountRows(SearchIndexPath(db_path), "SELECT COUNT(*) FROM trail_fts");
}

std::unique_ptr<SqliteTrailStore> OpenStore(const std::string& path, int interval_ms,
                                            int64_t wake_after = 256) {
  SearchIndexOptions options;
  options.interval_ms = interval_ms;
  options.wake_after = wake_after;
  auto store = SqliteTrailStore::Open(path, {}, options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

// Replaces the fixture's store by one with these index options, with session "a"'s root scope
// ses_1 open.
std::unique_ptr<SqliteTrailStore> OwnStoreWithSession(std::unique_ptr<SqliteTrailStore>& fixture,
                                                      const std::string& path, int interval_ms,
                                                      int64_t wake_after = 256) {
  fixture.reset();
  auto store = OpenStore(path, interval_ms, wake_after);
  EXPECT_TRUE(store->OpenScope(MakeScope("ses_1", "", "session", Session("a"))).ok());
  return store;
}

TEST_F(SqliteTrailStoreTest, SearchesSeeEveryCommittedWriteAndAFoldReplacesItsRow) {
  const std::string path = dir_.File("contextd.db");
  auto store = OwnStoreWithSession(store_, path, 0);  // no thread: only searches index
  SessionRef s = Session("a");
  ASSERT_TRUE(store->OpenScope(MakeScope("br_1", "ses_1", "explore the lexer", s)).ok());
  EXPECT_EQ(CountRows(path, "SELECT COUNT(*) FROM trail_fts_log"), 2);
  EXPECT_EQ(IndexRows(path), 0);
  auto hits = store->Search("local", "default", "lexer", 5);
  ASSERT_TRUE(hits.ok()) << hits.status();
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].scope.id, "br_1");
  EXPECT_EQ(IndexRows(path), 2);
  ASSERT_TRUE(store->FoldScope("br_1", "the lexer lives in src/lex.c", 8, 2000).ok());
  hits = store->Search("local", "default", "lex", 5);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_NE((*hits)[0].snippet.find("[lex]"), std::string::npos) << (*hits)[0].snippet;
  EXPECT_EQ(IndexRows(path), 2);
}

TEST_F(SqliteTrailStoreTest, TheIndexThreadFollowsTheLogWithoutASearch) {
  const std::string path = dir_.File("contextd.db");
  auto store = OwnStoreWithSession(store_, path, 20, 1);
  SessionRef s = Session("a");
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(store->OpenScope(MakeScope("br_" + std::to_string(i), "ses_1", "scope", s)).ok());
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (IndexRows(path) < 51 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(IndexRows(path), 51);
  EXPECT_EQ(store->search_index().indexed_seq(), 51);
}

TEST_F(SqliteTrailStoreTest, TheLogIsTrimmedToWhatTheIndexDoesNotHoldYet) {
  const std::string path = dir_.File("contextd.db");
  const int64_t every = kFtsLogTrimEvery;
  auto store = OwnStoreWithSession(store_, path, 0);  // ses_1 is log entry 1
  SessionRef s = Session("a");
  for (int64_t i = 1; i < 2 * every; ++i) {
    ASSERT_TRUE(store->OpenScope(MakeScope("br_" + std::to_string(i), "ses_1", "early", s)).ok());
  }
  // The trims at entries `every` and 2 * `every` found nothing indexed, and deleted nothing.
  EXPECT_EQ(CountRows(path, "SELECT MIN(seq) FROM trail_fts_log"), 1);
  ASSERT_TRUE(store->search_index().CatchUp().ok());
  EXPECT_EQ(store->search_index().indexed_seq(), 2 * every);
  for (int64_t i = 2 * every; i < 3 * every; ++i) {
    ASSERT_TRUE(store->OpenScope(MakeScope("br_" + std::to_string(i), "ses_1", "late", s)).ok());
  }
  // The write that logged entry 3 * `every` deleted those below 2 * `every`.
  EXPECT_EQ(CountRows(path, "SELECT MIN(seq) FROM trail_fts_log"), 2 * every);
  EXPECT_EQ(CountRows(path, "SELECT MAX(seq) FROM trail_fts_log"), 3 * every);
  auto early = store->Search("local", "default", "early", 4 * every);
  auto late = store->Search("local", "default", "late", 4 * every);
  ASSERT_TRUE(early.ok() && late.ok());
  EXPECT_EQ(static_cast<int64_t>(early->size()), 2 * every - 1);
  EXPECT_EQ(static_cast<int64_t>(late->size()), every);
  // Everything indexed: the next trim would leave only the last entry, so the log goes on
  // numbering from there even if a new index file has to start over.
  EXPECT_EQ(store->search_index().indexed_seq(), 3 * every);
}

TEST_F(SqliteTrailStoreTest, ScopesLoggedButNotIndexedBeforeACrashAreIndexedAfterReopen) {
  const std::string path = dir_.File("contextd.db");
  auto store = OwnStoreWithSession(store_, path, 0);
  SessionRef s = Session("a");
  ASSERT_TRUE(store->OpenScope(MakeScope("br_1", "ses_1", "profile the allocator", s)).ok());
  store.reset();  // gone without a search, as a crash would leave it
  EXPECT_EQ(IndexRows(path), 0);
  auto reopened = OpenStore(path, 0);
  auto hits = reopened->Search("local", "default", "allocator", 5);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].scope.id, "br_1");
}

TEST_F(SqliteTrailStoreTest, ASearchSeesWhatAnotherProcessWrote) {
  auto other = OpenStore(dir_.File("contextd.db"), 0);
  SessionRef s = Session("a");
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_1", "", "session", s)).ok());
  ASSERT_TRUE(store_->OpenScope(MakeScope("br_1", "ses_1", "tune the compactor", s)).ok());
  auto hits = other->Search("local", "default", "compactor", 5);
  ASSERT_TRUE(hits.ok()) << hits.status();
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].scope.id, "br_1");
}

// The index file holds nothing the database does not: lost, damaged or another database's, it
// is built again from trail_scopes.
TEST_F(SqliteTrailStoreTest, AnIndexFileThatIsLostDamagedOrForeignIsRebuilt) {
  const std::string path = dir_.File("contextd.db");
  const std::string index = SearchIndexPath(path);
  store_.reset();
  SessionRef s = Session("a");
  {
    auto store = OpenStore(path, 0);
    ASSERT_TRUE(store->OpenScope(MakeScope("ses_1", "", "session", s)).ok());
    ASSERT_TRUE(store->OpenScope(MakeScope("br_1", "ses_1", "mend the parser", s)).ok());
    ASSERT_TRUE(store->Search("local", "default", "parser", 5).ok());
  }
  // Another database with its own index file, about something else.
  const std::string other_path = dir_.File("other.db");
  {
    auto other = OpenStore(other_path, 0);
    ASSERT_TRUE(other->OpenScope(MakeScope("ses_9", "", "session", s)).ok());
    ASSERT_TRUE(other->OpenScope(MakeScope("br_9", "ses_9", "paint the shed", s)).ok());
    ASSERT_TRUE(other->Search("local", "default", "shed", 5).ok());
  }
  auto expect_only_own_scopes = [&] {
    auto store = OpenStore(path, 0);
    auto parser = store->Search("local", "default", "parser", 5);
    ASSERT_TRUE(parser.ok()) << parser.status();
    ASSERT_EQ(parser->size(), 1u);
    EXPECT_EQ((*parser)[0].scope.id, "br_1");
    auto shed = store->Search("local", "default", "shed", 5);
    ASSERT_TRUE(shed.ok());
    EXPECT_TRUE(shed->empty());
  };
  std::filesystem::remove(index);
  expect_only_own_scopes();
  std::filesystem::copy_file(SearchIndexPath(other_path), index,
                             std::filesystem::copy_options::overwrite_existing);
  expect_only_own_scopes();
  std::filesystem::remove(index + "-wal");
  std::filesystem::remove(index + "-shm");
  {
    std::ofstream garbage(index, std::ios::trunc);
    garbage << std::string(8192, 'x');
  }
  expect_only_own_scopes();
}

// A rebuild goes in chunks of kRebuildChunk scopes, one transaction each. Without the thread a
// search finishes it; with one, a search past its budget answers from the chunks done so far.
TEST_F(SqliteTrailStoreTest, ARebuildGoesInChunksThatASearchDoesNotWaitOutWhenTheThreadHasIt) {
  const std::string path = dir_.File("contextd.db");
  const int64_t scopes = 2 * kRebuildChunk + kRebuildChunk / 2;
  {
    auto store = OwnStoreWithSession(store_, path, 0);
    SessionRef s = Session("a");
    for (int64_t i = 0; i < scopes; ++i) {
      ASSERT_TRUE(
          store->OpenScope(MakeScope("br_" + std::to_string(i), "ses_1", "needle", s)).ok());
    }
  }
  std::filesystem::remove(SearchIndexPath(path));
  {
    SearchIndexOptions options;
    options.interval_ms = 3'600'000;  // a thread that will not run during the test
    options.wake_after = int64_t{1} << 40;
    options.search_rebuild_budget_ms = 0;
    auto store = SqliteTrailStore::Open(path, {}, options);
    ASSERT_TRUE(store.ok()) << store.status();
    // ses_1 is pos 1, so the first chunk holds kRebuildChunk - 1 needles.
    for (int64_t expected : {kRebuildChunk - 1, 2 * kRebuildChunk - 1, scopes}) {
      auto hits = (*store)->Search("local", "default", "needle", 3 * kRebuildChunk);
      ASSERT_TRUE(hits.ok()) << hits.status();
      EXPECT_EQ(static_cast<int64_t>(hits->size()), expected);
      // A scope the rebuild has passed changes meanwhile: logged past the rebuild's end, and
      // indexed by the step that finishes it.
      if (expected == kRebuildChunk - 1) {
        ASSERT_TRUE((*store)->FoldScope("br_0", "found the haystack", 3, 2000).ok());
      }
    }
    EXPECT_EQ((*store)->search_index().indexed_seq(), scopes + 2);
    auto haystack = (*store)->Search("local", "default", "haystack", 5);
    ASSERT_TRUE(haystack.ok());
    ASSERT_EQ(haystack->size(), 1u);
    EXPECT_EQ((*haystack)[0].scope.id, "br_0");
  }
  std::filesystem::remove(SearchIndexPath(path));
  auto store = OpenStore(path, 0);
  auto hits = store->Search("local", "default", "needle", 3 * kRebuildChunk);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(static_cast<int64_t>(hits->size()), scopes);
}

// A command-line tool opens the store without the thread and may never search: it leaves no
// index file behind until a search needs one.
TEST_F(SqliteTrailStoreTest, WithoutTheThreadTheIndexFileIsMadeOnlyWhenASearchNeedsIt) {
  const std::string path = dir_.File("tool.db");
  auto store = OpenStore(path, 0);
  SessionRef s = Session("a");
  ASSERT_TRUE(store->OpenScope(MakeScope("ses_1", "", "session", s)).ok());
  ASSERT_TRUE(store->OpenScope(MakeScope("br_1", "ses_1", "read the manual", s)).ok());
  EXPECT_FALSE(std::filesystem::exists(SearchIndexPath(path)));
  auto hits = store->Search("local", "default", "manual", 5);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(SearchIndexPath(path)));
}

// Opens a store on `path` with `options`, indexes "first words", then holds the index file's
// write lock from another connection while "second words" is written and searched for, and
// releases it. The write must go through, the locked search answer from the index as it was, and
// the next search see both. Returns how long the locked search took.
std::chrono::steady_clock::duration SearchAroundALockedIndexFile(
    const std::string& path, const SearchIndexOptions& options) {
  auto opened = SqliteTrailStore::Open(path, {}, options);
  EXPECT_TRUE(opened.ok()) << opened.status();
  if (!opened.ok()) return {};
  auto& store = *opened;
  SessionRef s = Session("a");
  EXPECT_TRUE(store->OpenScope(MakeScope("ses_1", "", "session", s)).ok());
  EXPECT_TRUE(store->OpenScope(MakeScope("br_1", "ses_1", "first words", s)).ok());
  EXPECT_TRUE(store->Search("local", "default", "first", 5).ok());
  sqlite3* holder = nullptr;
  EXPECT_EQ(sqlite3_open(SearchIndexPath(path).c_str(), &holder), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_TRUE(store->OpenScope(MakeScope("br_2", "ses_1", "second words", s)).ok());
  const auto start = std::chrono::steady_clock::now();
  auto hits = store->Search("local", "default", "words", 5);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(hits.ok()) << hits.status();
  if (hits.ok()) {
    EXPECT_EQ(hits->size(), 1u);  // from the index as it was
  }
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  hits = store->Search("local", "default", "words", 5);
  EXPECT_TRUE(hits.ok()) << hits.status();
  if (hits.ok()) {
    EXPECT_EQ(hits->size(), 2u);
  }
  return waited;
}

// A pass holds no lock of the database: with the index file locked by someone else, the
// engine's writes go on, and a search answers from the index as it is.
TEST_F(SqliteTrailStoreTest, WritesDoNotWaitForTheIndex) {
  store_.reset();
  SearchIndexOptions options;
  options.interval_ms = 0;
  options.busy_timeout_ms = 50;
  SearchAroundALockedIndexFile(dir_.File("contextd.db"), options);
}

// With the thread, a search runs on the engine's executor: its wait for an index file that
// another process holds locked is bounded by search_rebuild_budget_ms, not the busy timeout.
TEST_F(SqliteTrailStoreTest, ASearchWaitsForALockedIndexFileOnlyWithinItsBudget) {
  store_.reset();
  SearchIndexOptions options;
  options.interval_ms = 3'600'000;  // a thread that will not run during the test
  options.wake_after = int64_t{1} << 40;
  options.busy_timeout_ms = 20'000;
  options.search_rebuild_budget_ms = 50;
  EXPECT_LT(SearchAroundALockedIndexFile(dir_.File("contextd.db"), options),
            std::chrono::seconds(10))
      << "waited for the busy timeout";
}

TEST(SqliteTrailStoreOpenTest, RefusesAnInMemoryDatabase) {
  auto store = SqliteTrailStore::Open(":memory:");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(store.status().message().find("database file"), std::string::npos) << store.status();
  EXPECT_FALSE(std::filesystem::exists(SearchIndexPath(":memory:")));
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

// ---- Migration 0003_auto_scopes.sql

TEST(TrailMigrationTest, AVersion2FileUpgradesKeepingScopesEventsAndSearch) {
  TempDir dir;
  std::string path = dir.File("contextd.db");
  // A file as a contextd with migrations 1 and 2 left it: a session, a folded branch, events.
  RawExec(path, "PRAGMA foreign_keys=ON;" + SchemaUpTo(2));
  RawExec(path, R"sql(
    INSERT INTO trail_scopes (id, tenant, project, session_id, kind, parent_id, root_id,
      description, status, summary, summary_tokens, created_at_ms, folded_at_ms)
      VALUES ('ses_old', 'local', 'default', 's', 'session', NULL, 'ses_old', 'session s',
              'open', '', 0, 1, NULL),
             ('br_old', 'local', 'default', 's', 'branch', 'ses_old', 'ses_old',
              'explore the tokenizer', 'folded', 'merges are ranked', 3, 2, 5);
    INSERT INTO trail_fts (rowid, description, summary)
      SELECT rowid, description, summary FROM trail_scopes;
    INSERT INTO trail_blobs VALUES ('h1', 5, 'hello'), ('h2', 3, 'bye');
    INSERT INTO trail_events (seq, scope_id, kind, label, blob_hash, tokens, is_error, at_ms)
      VALUES (7, 'ses_old', 'branch_created', 'br_old', 'h2', 2, 0, 2),
             (8, 'br_old', 'tool_call', 'fs__read', 'h1', 4, 0, 3),
             (9, 'br_old', 'branch_returned', '', 'h2', 3, 0, 5);
  )sql");

  auto store = SqliteTrailStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  {
    std::lock_guard<std::mutex> lock((*store)->database().mutex());
    auto version = (*store)->database().SchemaVersion();
    ASSERT_TRUE(version.ok());
    EXPECT_EQ(*version, Migrations().back().version);
  }
  auto scope = (*store)->GetScope("br_old");
  ASSERT_TRUE(scope.ok() && scope->has_value());
  EXPECT_EQ((*scope)->kind, ScopeKind::kBranch);
  EXPECT_EQ((*scope)->parent_id, "ses_old");
  EXPECT_EQ((*scope)->status, ScopeStatus::kFolded);
  EXPECT_EQ((*scope)->summary, "merges are ranked");
  EXPECT_EQ((*scope)->event_count, 2);
  auto page = (*store)->ListEvents("br_old", 0, 10);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->events.size(), 2u);
  EXPECT_EQ(page->events[0].seq, 8);
  EXPECT_EQ(page->events[0].payload, "hello");
  // The full-text index still points at the right scopes (rowids kept), by description and
  // summary, also after VACUUM (the rowid is now a named column).
  for (int pass = 0; pass < 2; ++pass) {
    for (const char* q : {"tokenizer", "ranked"}) {
      auto hits = (*store)->Search("local", "default", q, 5);
      ASSERT_TRUE(hits.ok()) << hits.status();
      ASSERT_EQ(hits->size(), 1u) << q;
      EXPECT_EQ((*hits)[0].scope.id, "br_old");
    }
    std::lock_guard<std::mutex> lock((*store)->database().mutex());
    ASSERT_TRUE((*store)->database().Exec("VACUUM").ok());
  }
  // The new kinds are accepted; the foreign keys still hold.
  Scope autoscope = MakeScope("auto_1", "ses_old", "upstream fs", Session("s"));
  autoscope.kind = ScopeKind::kAuto;
  ASSERT_TRUE((*store)->OpenScope(autoscope).ok());
  ASSERT_TRUE((*store)
                  ->AppendEvents({NewEvent{"ses_old", EventKind::kAutoScopeOpened, "auto_1",
                                           "upstream fs", 0, false, 6}})
                  .ok());
  auto next = (*store)->AppendEvents(
      {NewEvent{"auto_1", EventKind::kToolCall, "fs__read", "{}", 1, false, 7}});
  ASSERT_TRUE(next.ok());
  EXPECT_GT((*next)[0], 9);
  std::lock_guard<std::mutex> lock((*store)->database().mutex());
  EXPECT_FALSE((*store)
                   ->database()
                   .Exec("INSERT INTO trail_events (scope_id, kind, label, blob_hash, tokens, "
                         "at_ms) VALUES ('nope', 'warning', '', 'h1', 0, 0)")
                   .ok());
  EXPECT_FALSE((*store)
                   ->database()
                   .Exec("INSERT INTO trail_scopes (id, tenant, project, session_id, kind, "
                         "root_id, description, status, created_at_ms) VALUES ('x', 'local', "
                         "'default', 's', 'other', 'x', '', 'open', 0)")
                   .ok());
}

TEST_F(SqliteTrailStoreTest, ListOpenScopesByKind) {
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

// ---- Auto-scopes (trail.auto_scope_upstreams) over the real store.

int64_t Words(std::string_view text) {
  int64_t n = 0;
  bool in = false;
  for (char c : text) {
    bool space = c == ' ' || c == '\n';
    if (!space && !in) ++n;
    in = !space;
  }
  return n;
}

trail::TrailOptions AutoOn() {
  trail::TrailOptions o;
  o.auto_scope_upstreams = true;
  o.count_tokens = Words;
  return o;
}

TEST_F(TrailTest, AutoScopesGroupCallsPerUpstreamAndFoldWhenTheAgentTurnsAway) {
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

TEST_F(TrailTest, AutoScopesSitBetweenBranchesInOrderAndLeaveBranchCallsAlone) {
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

TEST_F(TrailTest, WithoutAutoScopesRootCallsStayInTheRoot) {
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

TEST_F(TrailTest, RecoveryFoldsAutoScopesACrashLeftOpen) {
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

// Every text the trail writes passes through TrailOptions::withhold (the server's is
// scrub::WithholdPrivate; the store room does not include scrub, so a stand-in here): after
// every kind of write, no file of the data directory holds the text, and token counts are kept
// as charged.
TEST_F(TrailTest, EveryStoredTextPassesThroughWithhold) {
  const std::string mark = "PRIVATE-MARK-5e1d";
  trail::TrailOptions options = AutoOn();
  int calls = 0;
  options.withhold = [&](std::string_view text) {
    ++calls;
    std::string out(text);
    for (size_t at = out.find(mark); at != std::string::npos; at = out.find(mark, at)) {
      out.replace(at, mark.size(), "[w]");
    }
    return out;
  };
  SessionRef s = Session("sess");
  {
    trail::Trail t(*store_, clock_, options);
    ASSERT_TRUE(t.RecordToolCall(s, "", "tool " + mark, "{\"a\":\"" + mark + "\"}",
                                 "result " + mark, 4, 9, false)
                    .ok());
    // Auto-scope: its description, the marker event, the calls and the digest's summary (an
    // argument sample and an error excerpt).
    auto up = t.RecordUpstreamCall(s, "fs", "fs__read", "{\"path\":\"/" + mark + "\"}",
                                   "Error: " + mark, 3, 5, true);
    ASSERT_TRUE(up.ok()) << up.status();
    ASSERT_TRUE(t.FoldAutoScope(s).ok());
    auto auto_scope = t.GetScope(s, up->scope_id);
    ASSERT_TRUE(auto_scope.ok());
    EXPECT_EQ(auto_scope->summary,
              "fs: 1 call (0 ok, 1 error), 8 tokens; read x1 (path=/[w]); errors: read: Error: [w]");
    ASSERT_TRUE(t.OnBranchCreated(s, "br_a", "", "desc " + mark, "prompt " + mark, 17).ok());
    ASSERT_TRUE(t.RecordToolCall(s, "br_a", "t", mark, mark, 2, 2, false).ok());
    ASSERT_TRUE(t.OnBranchWarning("br_a", "warn " + mark).ok());
    ASSERT_TRUE(t.OnBranchFolded("br_a", "summary " + mark, 6, true, "reason " + mark).ok());
    ASSERT_TRUE(t.OnBranchCreated(s, "br_b", "", "open " + mark, "go", 1).ok());
    ASSERT_TRUE(t.OnBranchFolded("br_b", "returned " + mark, 2, false, "").ok());

    auto view = t.View(s, -1);
    ASSERT_TRUE(view.ok()) << view.status();
    EXPECT_EQ(view->text.find(mark), std::string::npos) << view->text;
    EXPECT_NE(view->text.find("summary [w]"), std::string::npos) << view->text;
    EXPECT_EQ(view->tokens_unfolded, 4 + 9 + 3 + 5 + 17 + 2 + 2 + 6 + 1 + 2);  // as charged
    auto hits = t.Search(s, "summary", 5);
    ASSERT_TRUE(hits.ok()) << hits.status();
    ASSERT_EQ(hits->size(), 1u);
    EXPECT_EQ((*hits)[0].scope.summary, "summary [w]");
  }
  EXPECT_GT(calls, 0);
  store_.reset();  // closes the database and the search index
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_.path())) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(bytes.find(mark), std::string::npos) << entry.path();
  }
}

}  // namespace
}  // namespace contextd::store
