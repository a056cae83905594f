#include "store/sqlite/database.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "store/sqlite/migrations.h"
#include "store/test_util.h"

namespace contextd::store {
namespace {

int64_t QueryInt(Database& db, const char* sql) {
  auto st = db.Prepare(sql);
  EXPECT_TRUE(st.ok()) << st.status();
  auto row = st->Step();
  EXPECT_TRUE(row.ok() && *row) << sql;
  return st->Int(0);
}

std::string QueryText(Database& db, const char* sql) {
  auto st = db.Prepare(sql);
  EXPECT_TRUE(st.ok()) << st.status();
  auto row = st->Step();
  EXPECT_TRUE(row.ok() && *row) << sql;
  return st->Text(0);
}

TEST(DatabaseTest, OpenCreatesDirectorySetsPragmasAndMigrates) {
  TempDir tmp;
  std::string path = tmp.File("nested/dir/contextd.db");
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_TRUE(std::filesystem::exists(path));
  std::lock_guard<std::mutex> lock((*db)->mutex());
  EXPECT_EQ(QueryText(**db, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(QueryInt(**db, "PRAGMA synchronous"), 1);  // NORMAL
  EXPECT_EQ(QueryInt(**db, "PRAGMA foreign_keys"), 1);
  EXPECT_EQ(QueryInt(**db, "PRAGMA busy_timeout"), 5000);
  auto v = (*db)->SchemaVersion();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, Migrations().back().version);
  EXPECT_EQ(QueryText(**db, "SELECT name FROM schema_version WHERE version = 1"), "0001_init.sql");
  EXPECT_GT(QueryInt(**db, "SELECT applied_at_ms FROM schema_version WHERE version = 1"),
            1'600'000'000'000);
}

TEST(DatabaseTest, NewFilesGetThePageSizeOfTheOptionsAndOldFilesKeepTheirs) {
  TempDir tmp;
  {
    auto db = Database::Open(tmp.File("new.db"));
    ASSERT_TRUE(db.ok()) << db.status();
    std::lock_guard<std::mutex> lock((*db)->mutex());
    EXPECT_EQ(QueryInt(**db, "PRAGMA page_size"), 1024);
  }
  // A file created with SQLite's default page size, as contextd before this option made it.
  std::string old_path = tmp.File("old.db");
  {
    DatabaseOptions options;
    options.page_size = 4096;
    auto db = Database::Open(old_path, options);
    ASSERT_TRUE(db.ok()) << db.status();
    std::lock_guard<std::mutex> lock((*db)->mutex());
    ASSERT_TRUE((*db)->Exec("CREATE TABLE kept (v TEXT); INSERT INTO kept VALUES ('x')").ok());
  }
  auto db = Database::Open(old_path);
  ASSERT_TRUE(db.ok()) << db.status();
  std::lock_guard<std::mutex> lock((*db)->mutex());
  EXPECT_EQ(QueryInt(**db, "PRAGMA page_size"), 4096);
  EXPECT_EQ(QueryText(**db, "SELECT v FROM kept"), "x");
}

TEST(DatabaseTest, RefusesAPageSizeSqliteWouldIgnore) {
  TempDir tmp;
  for (int size : {0, 256, 1000, 131072}) {
    DatabaseOptions options;
    options.page_size = size;
    auto db = Database::Open(tmp.File("bad.db"), options);
    ASSERT_FALSE(db.ok()) << size;
    EXPECT_EQ(db.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(db.status().message().find("power of two"), std::string::npos) << db.status();
  }
  EXPECT_FALSE(std::filesystem::exists(tmp.File("bad.db")));
}

// The test starts from a shut-down SQLite with statistics on, as a fresh process has it (other
// tests in this process may have used SQLite). That Database::Open calls ConfigureSqlite once,
// before its first sqlite3_open, is not checked here: a process does that only once.
TEST(DatabaseTest, ConfigureSqliteTurnsOffMemoryStatisticsBeforeInitialization) {
  TempDir tmp;
  ASSERT_EQ(sqlite3_shutdown(), SQLITE_OK);
  ASSERT_EQ(sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 1), SQLITE_OK);
  RawExec(tmp.File("stats_on.db"), "CREATE TABLE t (x); INSERT INTO t VALUES (1);");
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(tmp.File("stats_on.db").c_str(), &raw), SQLITE_OK);
  EXPECT_GT(sqlite3_memory_used(), 0);  // the statistics this turns off
  sqlite3_close(raw);

  ASSERT_EQ(sqlite3_shutdown(), SQLITE_OK);
  ASSERT_TRUE(ConfigureSqlite().ok());
  auto db = Database::Open(tmp.File("contextd.db"));
  ASSERT_TRUE(db.ok()) << db.status();
  {
    std::lock_guard<std::mutex> lock((*db)->mutex());
    EXPECT_EQ(QueryInt(**db, "SELECT count(*) FROM branches"), 0);
  }
  EXPECT_EQ(sqlite3_memory_used(), 0);
  // Once SQLite runs, its settings cannot change: the call says so instead of doing nothing.
  absl::Status late = ConfigureSqlite();
  EXPECT_EQ(late.code(), absl::StatusCode::kFailedPrecondition) << late;
}

TEST(DatabaseTest, BackgroundCheckpointerReplacesAutomaticCheckpoints) {
  TempDir tmp;
  auto db = Database::Open(tmp.File("c.db"));
  ASSERT_TRUE(db.ok());
  {
    std::lock_guard<std::mutex> lock((*db)->mutex());
    EXPECT_EQ(QueryInt(**db, "PRAGMA wal_autocheckpoint"), 0);
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(
          (*db)
              ->Exec("INSERT INTO schema_version VALUES (" + std::to_string(100 + i) + ", 'x', 0)")
              .ok());
    }
  }
  auto left = (*db)->CheckpointNow();
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_EQ(*left, 0);
  // The rows reached the database file itself (a checkpoint connection that never read the
  // file is not in WAL mode and copies nothing).
  EXPECT_GT(std::filesystem::file_size(tmp.File("c.db")), 4096u);
  auto plain = Database::Open(tmp.File("d.db"), DatabaseOptions{.background_checkpoint_ms = 0});
  ASSERT_TRUE(plain.ok());
  std::lock_guard<std::mutex> lock((*plain)->mutex());
  EXPECT_EQ(QueryInt(**plain, "PRAGMA wal_autocheckpoint"), 1000);
}

// The scheduling policy of this process's thread named `name` (/proc/self/task/*/stat field
// 41), or -1 if there is none.
int ThreadPolicy(const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string line;
    if (!std::getline(comm, line) || line != name) continue;
    std::ifstream stat(task.path() / "stat");
    std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    std::istringstream fields(all.substr(all.rfind(')') + 2));  // From field 3 on.
    std::string field;
    for (int i = 3; i <= 41 && fields >> field; ++i) {
      if (i == 41) return std::stoi(field);
    }
  }
  return -1;
}

TEST(DatabaseTest, TheCheckpointerRunsAtIdlePriority) {
  int allowed = -1;
  std::thread probe([&] {
    sched_param idle{};
    allowed = pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
  });
  probe.join();
  if (allowed != 0) GTEST_SKIP() << "this environment does not let a thread set SCHED_IDLE";
  TempDir tmp;
  auto db = Database::Open(tmp.File("p.db"));
  ASSERT_TRUE(db.ok()) << db.status();
  // The thread names itself and sets its policy as it starts.
  int policy = -1;
  for (int i = 0; i < 200 && policy != SCHED_IDLE; ++i) {
    policy = ThreadPolicy("contextd-ckpt");
    if (policy != SCHED_IDLE) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(policy, SCHED_IDLE);
}

TEST(DatabaseTest, TheWalOfAWriterThatIsNeverIdleStaysBounded) {
  TempDir tmp;
  constexpr int64_t kLimit = 256 << 10;
  auto db = Database::Open(tmp.File("w.db"), DatabaseOptions{.background_checkpoint_ms = 20,
                                                             .wal_restart_bytes = kLimit});
  ASSERT_TRUE(db.ok()) << db.status();
  (*db)->EnableGroupCommit([] {});
  std::string pad(3000, 'x');
  uintmax_t largest = 0;
  // Each group dirties a page or more: 3,000 groups would make a WAL of over 12 MB.
  for (int i = 0; i < 3000; ++i) {
    {
      std::lock_guard<std::mutex> lock((*db)->mutex());
      ASSERT_TRUE((*db)->BeginWrite().ok());
      ASSERT_TRUE((*db)
                      ->EndWrite((*db)->Exec("INSERT INTO schema_version VALUES (" +
                                             std::to_string(100 + i) + ", '" + pad + "', 0)"))
                      .ok());
    }
    ASSERT_TRUE((*db)->CommitGroup().ok());
    (*db)->RestartWalIfDue();
    largest = std::max(largest, std::filesystem::file_size(tmp.File("w.db-wal")));
  }
  // A restart can miss (the checkpointer was running at that moment) and is tried again.
  EXPECT_LT(largest, 8u * kLimit);
  std::lock_guard<std::mutex> lock((*db)->mutex());
  EXPECT_EQ(QueryInt(**db, "SELECT COUNT(*) FROM schema_version WHERE version >= 100"), 3000);
}

TEST(DatabaseTest, MigrationsAreNumberedWithoutGaps) {
  int expected = 1;
  for (const Migration& m : Migrations()) {
    EXPECT_EQ(m.version, expected);
    char prefix[8];
    snprintf(prefix, sizeof prefix, "%04d_", expected);
    EXPECT_EQ(std::string(m.name).rfind(prefix, 0), 0u) << m.name;
    ++expected;
  }
}

TEST(DatabaseTest, ReopenAppliesNothingTwiceAndKeepsData) {
  TempDir tmp;
  std::string path = tmp.File("c.db");
  {
    auto db = Database::Open(path);
    ASSERT_TRUE(db.ok());
    std::lock_guard<std::mutex> lock((*db)->mutex());
    ASSERT_TRUE((*db)
                    ->Exec("INSERT INTO branches (id, tenant, project, session_id, depth, "
                           "description, prompt, status, budget_allocated, deadline_ms, "
                           "created_at_ms) VALUES ('br_a','t','p','s',1,'d','p','active',10,1,1)")
                    .ok());
  }
  auto db = Database::Open(path, DatabaseOptions{.synchronous_full = true});
  ASSERT_TRUE(db.ok()) << db.status();
  std::lock_guard<std::mutex> lock((*db)->mutex());
  EXPECT_EQ(QueryInt(**db, "SELECT COUNT(*) FROM schema_version"),
            static_cast<int64_t>(Migrations().size()));
  EXPECT_EQ(QueryInt(**db, "SELECT COUNT(*) FROM branches"), 1);
  EXPECT_EQ(QueryInt(**db, "PRAGMA synchronous"), 2);  // FULL
}

// A file as a contextd with migrations 1 to 5 left it, with a row in every table that
// migration 0006 rebuilds or that refers to one. `extra` runs after, foreign keys not enforced.
void WriteVersion5File(const std::string& path, const std::string& extra) {
  std::string sql = "PRAGMA foreign_keys=ON;" + SchemaUpTo(5) + R"sql(
    INSERT INTO branches (rowid, id, tenant, project, session_id, parent_id, depth, description,
                          prompt, status, budget_allocated, deadline_ms, created_at_ms)
      VALUES (41, 'br_a', 't', 'p', 's', NULL, 1, 'outer', 'p', 'active', 100, 9, 1),
             (42, 'br_b', 't', 'p', 's', 'br_a', 2, 'inner', 'p', 'completed', 10, 9, 2);
    INSERT INTO branch_injections VALUES ('br_b', 0, 'memory', 'm1', 'use the cache', 3);
    INSERT INTO branch_charges VALUES (5, 'br_a', 3, 'tool_result', 'fs__read', 'x', 7);
    INSERT INTO trail_blobs VALUES ('h1', 5, 'hello');
    INSERT INTO trail_scopes (pos, id, tenant, project, session_id, kind, parent_id, root_id,
                              description, status, created_at_ms)
      VALUES (3, 'ses', 't', 'p', 's', 'session', NULL, 'ses', 'session s', 'open', 1),
             (4, 'br_a', 't', 'p', 's', 'branch', 'ses', 'ses', 'outer', 'open', 1);
    INSERT INTO trail_events (seq, scope_id, kind, label, blob_hash, tokens, at_ms)
      VALUES (7, 'br_a', 'tool_call', 'fs__read', 'h1', 4, 3);
    PRAGMA foreign_keys=OFF;
  )sql";
  RawExec(path, sql + extra);
}

// True if SQLite's program for `sql` builds a temporary b-tree (OpenEphemeral).
bool UsesEphemeralTable(Database& db, const std::string& sql) {
  auto st = db.Prepare("EXPLAIN " + sql);
  EXPECT_TRUE(st.ok()) << st.status();
  while (true) {
    auto row = st->Step();
    if (!row.ok() || !*row) return false;
    if (st->Text(1) == "OpenEphemeral") return true;
  }
}

TEST(DatabaseTest, Migration6KeepsEveryRowAndChecksWithoutTemporaryTables) {
  TempDir tmp;
  std::string path = tmp.File("v5.db");
  WriteVersion5File(path, "");
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok()) << db.status();
  std::lock_guard<std::mutex> lock((*db)->mutex());
  Database& d = **db;
  EXPECT_EQ(QueryInt(d, "SELECT MAX(version) FROM schema_version"), Migrations().back().version);
  EXPECT_EQ(QueryInt(d, "SELECT rowid FROM branches WHERE id = 'br_b'"), 42);
  EXPECT_EQ(QueryText(d, "SELECT parent_id FROM branches WHERE rowid = 42"), "br_a");
  EXPECT_EQ(QueryInt(d, "SELECT pos FROM trail_scopes WHERE id = 'br_a'"), 4);
  EXPECT_EQ(QueryText(d, "SELECT scope_id FROM trail_events WHERE seq = 7"), "br_a");
  EXPECT_EQ(QueryInt(d, "SELECT COUNT(*) FROM branch_injections"), 1);
  EXPECT_EQ(QueryInt(d, "SELECT COUNT(*) FROM branch_charges"), 1);
  EXPECT_EQ(QueryText(d, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(QueryInt(d, "SELECT COUNT(*) FROM pragma_foreign_key_check"), 0);
  EXPECT_EQ(QueryInt(d,
                     "SELECT COUNT(*) FROM sqlite_schema WHERE name IN ('branches_live', "
                     "'branches_by_session', 'trail_scopes_by_root', 'trail_scopes_open', "
                     "'trail_session_roots', 'trail_events_by_scope')"),
            6);
  // The write path's statements compare in place.
  EXPECT_FALSE(UsesEphemeralTable(
      d,
      "INSERT INTO branches (id, tenant, project, session_id, depth, description, prompt, "
      "status, budget_allocated, deadline_ms, created_at_ms) "
      "VALUES ('c','t','p','s',1,'d','p','active',1,1,1)"));
  EXPECT_FALSE(UsesEphemeralTable(d, "UPDATE branches SET status = 'completed' WHERE id = 'c'"));
  EXPECT_FALSE(UsesEphemeralTable(
      d,
      "INSERT INTO trail_scopes (id, tenant, project, session_id, kind, root_id, "
      "description, status, created_at_ms) VALUES ('x','t','p','s','auto','ses','d','open',1)"));
  EXPECT_FALSE(UsesEphemeralTable(
      d,
      "INSERT INTO trail_events (scope_id, kind, label, blob_hash, tokens, at_ms) "
      "VALUES ('ses','warning','l','h1',1,1)"));
  // The constraints still hold, foreign keys included.
  EXPECT_FALSE(d.Exec("UPDATE branches SET status = 'paused' WHERE id = 'br_a'").ok());
  EXPECT_FALSE(d.Exec("UPDATE trail_scopes SET kind = 'other' WHERE pos = 4").ok());
  EXPECT_FALSE(d.Exec("INSERT INTO trail_events (scope_id, kind, label, blob_hash, tokens, at_ms) "
                      "VALUES ('ses','note','l','h1',1,1)")
                   .ok());
  EXPECT_FALSE(d.Exec("INSERT INTO trail_events (scope_id, kind, label, blob_hash, tokens, at_ms) "
                      "VALUES ('nowhere','warning','l','h1',1,1)")
                   .ok());
  EXPECT_FALSE(d.Exec("DELETE FROM branches WHERE id = 'br_b'").ok());  // branch_injections
}

TEST(DatabaseTest, Migration8CountsBranchDepthsFromZeroAndKeepsTheRest) {
  TempDir tmp;
  std::string path = tmp.File("v5.db");
  WriteVersion5File(path, "");  // br_a at stored depth 1 (under the root), br_b under it at 2
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok()) << db.status();
  std::lock_guard<std::mutex> lock((*db)->mutex());
  Database& d = **db;
  EXPECT_EQ(QueryInt(d, "SELECT depth FROM branches WHERE id = 'br_a'"), 0);
  EXPECT_EQ(QueryInt(d, "SELECT depth FROM branches WHERE id = 'br_b'"), 1);
  EXPECT_EQ(QueryInt(d, "SELECT rowid FROM branches WHERE id = 'br_b'"), 42);
  EXPECT_EQ(QueryText(d, "SELECT parent_id FROM branches WHERE id = 'br_b'"), "br_a");
  EXPECT_EQ(QueryText(d, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(QueryInt(d, "SELECT COUNT(*) FROM pragma_foreign_key_check"), 0);
  EXPECT_EQ(QueryInt(d,
                     "SELECT COUNT(*) FROM sqlite_schema WHERE name IN ('branches_live', "
                     "'branches_by_session')"),
            2);
  // Depth 0 is accepted now, a negative one still is not, and the references still hold.
  EXPECT_TRUE(d.Exec("INSERT INTO branches (id, tenant, project, session_id, depth, description, "
                     "prompt, status, budget_allocated, deadline_ms, created_at_ms) "
                     "VALUES ('c','t','p','s',0,'d','p','active',1,1,1)")
                  .ok());
  EXPECT_FALSE(d.Exec("UPDATE branches SET depth = -1 WHERE id = 'c'").ok());
  EXPECT_FALSE(d.Exec("DELETE FROM branches WHERE id = 'br_a'").ok());  // br_b, branch_charges
}

TEST(DatabaseTest, Migration9AddsTheModelTablesAndKeepsTheRest) {
  TempDir tmp;
  std::string path = tmp.File("v8.db");
  RawExec(path, SchemaUpTo(8) + R"sql(
    INSERT INTO branches (id, tenant, project, session_id, depth, description, prompt, status,
                          budget_allocated, deadline_ms, created_at_ms)
      VALUES ('br_a', 't', 'p', 's', 0, 'd', 'p', 'active', 10, 1, 1);
  )sql");
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok()) << db.status();
  std::lock_guard<std::mutex> lock((*db)->mutex());
  Database& d = **db;
  EXPECT_EQ(QueryInt(d, "SELECT MAX(version) FROM schema_version"), Migrations().back().version);
  EXPECT_EQ(QueryText(d, "SELECT name FROM schema_version WHERE version = 9"),
            "0009_model_conversations.sql");
  EXPECT_EQ(QueryInt(d, "SELECT COUNT(*) FROM branches"), 1);
  EXPECT_EQ(QueryInt(d,
                     "SELECT COUNT(*) FROM sqlite_schema WHERE name IN ('model_threads', "
                     "'model_rewrites', 'model_usage', 'model_usage_by_branch')"),
            4);
  EXPECT_EQ(QueryText(d, "PRAGMA integrity_check"), "ok");
  // The kind CHECK compares in place and holds; a (kind, key) is unique per thread.
  const std::string insert =
      "INSERT INTO model_rewrites (tenant, conversation, thread, kind, key, value) VALUES ";
  EXPECT_FALSE(UsesEphemeralTable(d, insert + "('t','c','th',1,X'00',X'01')"));
  EXPECT_TRUE(d.Exec(insert + "('t','c','th',3,X'00',X'01')").ok());
  EXPECT_FALSE(d.Exec(insert + "('t','c','th',3,X'00',X'02')").ok());
  EXPECT_TRUE(d.Exec(insert + "('t','c','th2',3,X'00',X'02')").ok());
  EXPECT_FALSE(d.Exec(insert + "('t','c','th',0,X'01',X'01')").ok());
  EXPECT_TRUE(d.Exec(insert + "('t','c','th',4,X'01',X'01')").ok());  // from migration 11
  EXPECT_TRUE(d.Exec(insert + "('t','c','th',5,X'01',X'01')").ok());  // from migration 18
  EXPECT_TRUE(d.Exec(insert + "('t','c','th',6,X'01',X'01')").ok());  // from migration 19
  EXPECT_TRUE(d.Exec(insert + "('t','c','th',7,X'01',X'01')").ok());  // from migration 20
  EXPECT_FALSE(d.Exec(insert + "('t','c','th',8,X'01',X'01')").ok());
  EXPECT_FALSE(d.Exec("INSERT INTO model_threads VALUES ('t','c','th',X'',-1,1,1)").ok());
}

TEST(DatabaseTest, Migration11TakesAutoFoldRewritesAndKeepsEveryRewriteInOrder) {
  TempDir tmp;
  std::string path = tmp.File("v10.db");
  RawExec(path, SchemaUpTo(10) + R"sql(
    INSERT INTO model_rewrites (seq, tenant, conversation, thread, kind, key, value)
      VALUES (7, 't', 'c', 'th', 3, X'0a', X'01'), (3, 't', 'c', 'th', 1, X'0b', X'02');
  )sql");
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok()) << db.status();
  std::lock_guard<std::mutex> lock((*db)->mutex());
  Database& d = **db;
  EXPECT_EQ(QueryText(d, "SELECT name FROM schema_version WHERE version = 11"),
            "0011_auto_fold_rewrites.sql");
  EXPECT_EQ(QueryText(d,
                      "SELECT group_concat(seq || ':' || kind, ',') FROM (SELECT * FROM "
                      "model_rewrites ORDER BY seq)"),
            "3:1,7:3");
  const std::string insert =
      "INSERT INTO model_rewrites (tenant, conversation, thread, kind, key, value) VALUES ";
  EXPECT_TRUE(d.Exec(insert + "('t','c','th',4,X'0a',X'01')").ok());
  EXPECT_FALSE(d.Exec(insert + "('t','c','th',3,X'0a',X'09')").ok());  // still unique
  EXPECT_EQ(QueryText(d, "PRAGMA integrity_check"), "ok");
}

TEST(DatabaseTest, MigrationsThatWouldLeaveABrokenForeignKeyChangeNothing) {
  TempDir tmp;
  std::string path = tmp.File("v5.db");
  // An event whose scope is gone (written with foreign keys off, by hand or by a bug).
  WriteVersion5File(path,
                    "DELETE FROM trail_events; INSERT INTO trail_events (seq, scope_id, "
                    "kind, label, blob_hash, tokens, at_ms) VALUES "
                    "(8, 'gone', 'warning', 'l', 'h1', 1, 1);");
  auto db = Database::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(db.status().message().find("trail_events"), absl::string_view::npos) << db.status();
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT MAX(version) FROM schema_version", -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 5);
  sqlite3_finalize(st);
  sqlite3_close(raw);
}

TEST(DatabaseTest, RefusesASchemaNewerThanTheBinary) {
  TempDir tmp;
  std::string path = tmp.File("c.db");
  {
    auto db = Database::Open(path);
    ASSERT_TRUE(db.ok());
    std::lock_guard<std::mutex> lock((*db)->mutex());
    ASSERT_TRUE((*db)->Exec("INSERT INTO schema_version VALUES (999, '0999_future.sql', 0)").ok());
  }
  auto db = Database::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(db.status().message().find("schema version 999"), absl::string_view::npos);
}

TEST(DatabaseTest, ForeignKeysAreEnforced) {
  TempDir tmp;
  auto db = Database::Open(tmp.File("c.db"));
  ASSERT_TRUE(db.ok());
  std::lock_guard<std::mutex> lock((*db)->mutex());
  absl::Status st = (*db)->Exec(
      "INSERT INTO branch_charges (branch_id, at_ms, kind, label, excerpt, tokens) VALUES "
      "('br_nope', 1, 'k', 'l', 'e', 1)");
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
}

TEST(DatabaseTest, OpenFailureNamesThePath) {
  TempDir tmp;
  std::string file = tmp.File("plainfile");
  ASSERT_TRUE(Database::Open(file).ok());
  auto db = Database::Open(file + "/sub/c.db");  // a directory below a file
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.status().message().find("plainfile"), absl::string_view::npos);
}

TEST(DatabaseTest, DefaultPathFollowsXdg) {
  const char* old_xdg = getenv("XDG_DATA_HOME");
  std::string saved = old_xdg ? old_xdg : "";
  setenv("XDG_DATA_HOME", "/var/lib/x", 1);
  auto p = DefaultDatabasePath();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, "/var/lib/x/contextd/contextd.db");
  unsetenv("XDG_DATA_HOME");
  const char* home = getenv("HOME");
  if (home != nullptr && home[0] != '\0') {
    auto q = DefaultDatabasePath();
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(*q, std::string(home) + "/.local/share/contextd/contextd.db");
  }
  if (old_xdg != nullptr) setenv("XDG_DATA_HOME", saved.c_str(), 1);
}

}  // namespace
}  // namespace contextd::store

namespace contextd::store {
namespace {

// Inserts one schema_version row as one write (BeginWrite/EndWrite); the body fails if `fail`.
absl::Status WriteRow(Database& db, int version, bool fail = false) {
  std::lock_guard<std::mutex> lock(db.mutex());
  absl::Status begun = db.BeginWrite();
  if (!begun.ok()) return begun;
  absl::Status body =
      db.Exec("INSERT INTO schema_version VALUES (" + std::to_string(version) + ", 'w', 0)");
  if (body.ok() && fail) body = absl::AbortedError("the write's own failure");
  return db.EndWrite(body);
}

int64_t CountRows(Database& db, int version) {
  std::lock_guard<std::mutex> lock(db.mutex());
  return QueryInt(
      db,
      ("SELECT COUNT(*) FROM schema_version WHERE version = " + std::to_string(version)).c_str());
}

TEST(DatabaseGroupCommitTest, PlainWritesAreVisibleToAnotherConnectionAtOnce) {
  TempDir tmp;
  auto db = Database::Open(tmp.File("g.db"));
  auto other = Database::Open(tmp.File("g.db"));
  ASSERT_TRUE(db.ok() && other.ok());
  ASSERT_TRUE(WriteRow(**db, 500).ok());
  EXPECT_EQ(CountRows(**other, 500), 1);
  EXPECT_FALSE((*db)->group_open());
  // A failed write leaves nothing.
  EXPECT_EQ(WriteRow(**db, 501, /*fail=*/true).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(CountRows(**db, 501), 0);
}

TEST(DatabaseGroupCommitTest, WritesOfOneGroupBecomeVisibleTogetherAtCommit) {
  TempDir tmp;
  auto db = Database::Open(tmp.File("g.db"));
  auto other = Database::Open(tmp.File("g.db"));
  ASSERT_TRUE(db.ok() && other.ok());
  int opened = 0;
  (*db)->EnableGroupCommit([&] { ++opened; });
  ASSERT_TRUE(WriteRow(**db, 600).ok());
  ASSERT_TRUE(WriteRow(**db, 601).ok());
  EXPECT_EQ(opened, 1);  // one group for both
  EXPECT_TRUE((*db)->group_open());
  EXPECT_EQ(CountRows(**db, 601), 1);     // the writer sees its own group
  EXPECT_EQ(CountRows(**other, 600), 0);  // nobody else does yet
  ASSERT_TRUE((*db)->CommitGroup().ok());
  EXPECT_FALSE((*db)->group_open());
  EXPECT_EQ(CountRows(**other, 600), 1);
  EXPECT_EQ(CountRows(**other, 601), 1);
  EXPECT_TRUE((*db)->CommitGroup().ok());  // nothing open: a no-op
  ASSERT_TRUE(WriteRow(**db, 602).ok());
  EXPECT_EQ(opened, 2);  // the next write opens the next group
  ASSERT_TRUE((*db)->CommitGroup().ok());
}

TEST(DatabaseGroupCommitTest, AFailedWriteUndoesOnlyItselfInsideTheGroup) {
  TempDir tmp;
  auto db = Database::Open(tmp.File("g.db"));
  // Opened first: the test's rows in schema_version would read as a newer schema at open.
  auto other = Database::Open(tmp.File("g.db"));
  ASSERT_TRUE(db.ok() && other.ok());
  (*db)->EnableGroupCommit([] {});
  ASSERT_TRUE(WriteRow(**db, 700).ok());
  EXPECT_EQ(WriteRow(**db, 701, /*fail=*/true).code(), absl::StatusCode::kAborted);
  // A constraint failure inside the group (duplicate key) likewise.
  EXPECT_EQ(WriteRow(**db, 700).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(WriteRow(**db, 702).ok());
  ASSERT_TRUE((*db)->CommitGroup().ok());
  EXPECT_EQ(CountRows(**other, 700), 1);
  EXPECT_EQ(CountRows(**other, 701), 0);
  EXPECT_EQ(CountRows(**other, 702), 1);
}

TEST(DatabaseGroupCommitTest, AGroupThatSqliteRolledBackIsReportedLostNotCommittedInPieces) {
  TempDir tmp;
  auto db = Database::Open(tmp.File("g.db"));
  auto other = Database::Open(tmp.File("g.db"));
  ASSERT_TRUE(db.ok() && other.ok());
  (*db)->EnableGroupCommit([] {});
  ASSERT_TRUE(WriteRow(**db, 900).ok());
  {
    // As SQLite does on a full disk or an I/O error: the whole transaction is rolled back,
    // and the body (like a failed FTS batch) swallows the error.
    std::lock_guard<std::mutex> lock((*db)->mutex());
    ASSERT_TRUE((*db)->BeginWrite().ok());
    ASSERT_TRUE((*db)->Exec("ROLLBACK").ok());
    EXPECT_FALSE((*db)->EndWrite(absl::OkStatus()).ok());  // its savepoint went with it
  }
  // A write after it goes into a new group, which is lost with the failed one: everyone waiting
  // on this commit hears the same answer.
  ASSERT_TRUE(WriteRow(**db, 901).ok());
  EXPECT_FALSE((*db)->CommitGroup().ok());
  EXPECT_EQ(CountRows(**other, 900), 0);
  EXPECT_EQ(CountRows(**other, 901), 0);
  // The next group works again.
  ASSERT_TRUE(WriteRow(**db, 902).ok());
  ASSERT_TRUE((*db)->CommitGroup().ok());
  EXPECT_EQ(CountRows(**other, 902), 1);
}

TEST(DatabaseGroupCommitTest, AnUncommittedGroupIsLostWithTheConnection) {
  TempDir tmp;
  {
    auto db = Database::Open(tmp.File("g.db"));
    ASSERT_TRUE(db.ok());
    (*db)->EnableGroupCommit([] {});
    ASSERT_TRUE(WriteRow(**db, 800).ok());
    // Closed without CommitGroup, as a crash would: nothing of the group may survive.
  }
  auto db = Database::Open(tmp.File("g.db"));
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(CountRows(**db, 800), 0);
}

TEST(DatabaseReadTest, AReadSeesOneSnapshotAndNestsInsideAGroup) {
  TempDir tmp;
  auto db = Database::Open(tmp.File("r.db"));
  auto other = Database::Open(tmp.File("r.db"));
  ASSERT_TRUE(db.ok() && other.ok());
  {
    std::lock_guard<std::mutex> lock((*db)->mutex());
    auto began = (*db)->BeginRead();
    ASSERT_TRUE(began.ok()) << began.status();
    EXPECT_TRUE(*began);
    const int64_t before =
        QueryInt(**db, "SELECT COUNT(*) FROM schema_version WHERE version = 700");
    ASSERT_TRUE(WriteRow(**other, 700).ok());  // committed by another connection meanwhile
    EXPECT_EQ(QueryInt(**db, "SELECT COUNT(*) FROM schema_version WHERE version = 700"), before);
    (*db)->EndRead(*began);
  }
  EXPECT_EQ(CountRows(**db, 700), 1);  // the next read sees it
  // Inside an open group the read is the group's: nothing begun, nothing ended.
  (*db)->EnableGroupCommit([] {});
  ASSERT_TRUE(WriteRow(**db, 701).ok());
  {
    std::lock_guard<std::mutex> lock((*db)->mutex());
    auto began = (*db)->BeginRead();
    ASSERT_TRUE(began.ok()) << began.status();
    EXPECT_FALSE(*began);
    EXPECT_EQ(QueryInt(**db, "SELECT COUNT(*) FROM schema_version WHERE version = 701"), 1);
    (*db)->EndRead(*began);
  }
  EXPECT_TRUE((*db)->group_open());
  ASSERT_TRUE((*db)->CommitGroup().ok());
  EXPECT_EQ(CountRows(**other, 701), 1);
}

}  // namespace
}  // namespace contextd::store
