#include "store/sqlite/sqlite_trail_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "base/clock.h"
#include "store/sqlite/migrations.h"
#include "store/test_util.h"
#include "store/testing/sqlite_backend.h"
#include "store/trail_store_contract.h"
#include "trail/trail.h"

namespace contextd::store {
namespace {

using testing::AutoOn;
using testing::MakeScope;
using testing::Session;
using testing::TrailStoreContractTest;

using trail::EventKind;
using trail::NewEvent;
using trail::Scope;
using trail::ScopeKind;
using trail::ScopeStatus;
using trail::SessionRef;

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

TEST_F(SqliteTrailStoreTest, IdenticalPayloadsShareOneBlob) {
  SessionRef s = Session("a");
  ASSERT_TRUE(store_->OpenScope(MakeScope("ses_1", "", "session", s)).ok());
  std::string big(100000, 'x');
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        store_->AppendEvents({NewEvent{"ses_1", EventKind::kToolResult, "t", big, 1, false, i}})
            .ok());
  }
  ASSERT_TRUE(
      store_->AppendEvents({NewEvent{"ses_1", EventKind::kToolResult, "t", "other", 1, false, 9}})
          .ok());
  auto blobs = store_->BlobCount();
  ASSERT_TRUE(blobs.ok());
  EXPECT_EQ(*blobs, 2);
  auto page = store_->ListEvents("ses_1", 0, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->total, 6);
  EXPECT_EQ(page->events[3].payload, big);
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

INSTANTIATE_TEST_SUITE_P(Sqlite, TrailStoreContractTest,
                         ::testing::Values(testing::SqliteFactory()), testing::BackendName);

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

// ---- Auto-scopes (trail.auto_scope_upstreams) over the real store.

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
    EXPECT_EQ(
        auto_scope->summary,
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

// A store from before migration 15 holds a root per session per run: the migration does not
// fail on them, and the oldest becomes the session's root (decision 0028); the others stay.
TEST(SqliteTrailMigrationTest, TheOldestOfASessionsRootsBecomesItsRoot) {
  TempDir dir;
  const std::string path = dir.File("v14.db");
  RawExec(path, SchemaUpTo(14) + R"sql(
    INSERT INTO trail_scopes (pos, id, tenant, project, session_id, kind, parent_id, root_id,
                              description, status, created_at_ms) VALUES
      (5, 'ses_new', 'local', 'default', 'model:c', 'session', NULL, 'ses_new', 's', 'open', 2),
      (3, 'ses_old', 'local', 'default', 'model:c', 'session', NULL, 'ses_old', 's', 'open', 1),
      (4, 'ses_other', 'acme', 'default', 'model:c', 'session', NULL, 'ses_other', 's', 'open', 1),
      (6, 'br_1', 'local', 'default', 'model:c', 'branch', 'ses_new', 'ses_new', 'b', 'open', 3);
  )sql");
  auto store = SqliteTrailStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  Scope candidate = MakeScope("ses_x", "", "s", Session("model:c"));
  EXPECT_EQ(*(*store)->OpenSessionRoot(candidate), "ses_old");
  candidate.session.tenant = "acme";
  EXPECT_EQ(*(*store)->OpenSessionRoot(candidate), "ses_other");
  // The newer root keeps its tree, readable as before.
  auto scopes = (*store)->ListScopes("ses_new");
  ASSERT_TRUE(scopes.ok());
  EXPECT_EQ(scopes->size(), 2u);
  auto sessions = (*store)->ListSessions("", 10);
  ASSERT_TRUE(sessions.ok());
  EXPECT_EQ(sessions->size(), 3u);
}

}  // namespace
}  // namespace contextd::store
