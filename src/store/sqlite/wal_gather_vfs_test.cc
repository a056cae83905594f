#include "store/sqlite/wal_gather_vfs.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>

#include "store/test_util.h"

namespace contextd::store {
namespace {

sqlite3* OpenWith(const std::string& path, const char* vfs) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs);
  EXPECT_EQ(rc, SQLITE_OK) << (db != nullptr ? sqlite3_errmsg(db) : "");
  return db;
}

void Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (err != nullptr ? err : "");
  sqlite3_free(err);
}

std::string QueryText(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
  std::string out;
  if (sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(st, 0);
    out = text != nullptr ? reinterpret_cast<const char*>(text) : "";
  }
  sqlite3_finalize(st);
  return out;
}

// A writer through the VFS in WAL mode, with a table whose rows dirty several pages each.
sqlite3* OpenWriter(const std::string& path) {
  const char* vfs = WalGatherVfsName();
  EXPECT_NE(vfs, nullptr);
  sqlite3* db = OpenWith(path, vfs);
  Exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0");
  Exec(db,
       "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, a TEXT, b TEXT);"
       "CREATE INDEX IF NOT EXISTS t_a ON t (a); CREATE INDEX IF NOT EXISTS t_b ON t (b)");
  return db;
}

std::string Insert(int n, int first, int blob_bytes) {
  std::string sql;
  for (int i = first; i < first + n; ++i) {
    sql += "INSERT INTO t (a, b) VALUES (hex(randomblob(8)) || '" + std::to_string(i) +
           "', hex(randomblob(" + std::to_string(blob_bytes / 2) + ")));";
  }
  return sql;
}

// Reads the file with the default VFS, as it is on disk: t has `rows` rows and the file is
// intact.
void ExpectRows(const std::string& path, int64_t rows) {
  sqlite3* reader = OpenWith(path, nullptr);
  EXPECT_EQ(QueryText(reader, "SELECT COUNT(*) FROM t"), std::to_string(rows));
  EXPECT_EQ(QueryText(reader, "PRAGMA integrity_check"), "ok");
  sqlite3_close(reader);
}

TEST(WalGatherVfsTest, ACommitIsOneWriteAndOtherConnectionsSeeItAtOnce) {
  TempDir tmp;
  std::string path = tmp.File("g.db");
  sqlite3* writer = OpenWriter(path);
  sqlite3* reader = OpenWith(path, nullptr);  // The default VFS: reads the file as it is.
  int rows = 0;
  for (int commit = 0; commit < 20; ++commit) {
    WalGatherStats before = GetWalGatherStats();
    Exec(writer, "BEGIN; " + Insert(3, rows, 600) + " COMMIT");
    rows += 3;
    WalGatherStats after = GetWalGatherStats();
    // Three rows dirty the table and both indexes: several frames, stored with one write.
    EXPECT_GE(after.appends - before.appends, 3) << commit;
    EXPECT_EQ(after.writes - before.writes, 1) << commit;
    EXPECT_EQ(QueryText(reader, "SELECT COUNT(*) FROM t"), std::to_string(rows)) << commit;
  }
  EXPECT_EQ(QueryText(reader, "PRAGMA integrity_check"), "ok");
  sqlite3_close(reader);
  sqlite3_close(writer);
}

TEST(WalGatherVfsTest, LargeAndSpilledTransactionsCommitAndRollBackCleanly) {
  TempDir tmp;
  std::string path = tmp.File("g.db");
  sqlite3* writer = OpenWriter(path);
  // A 10-page cache spills dirty pages into the WAL in the middle of a transaction, and the
  // transaction's frames (about 2 MB) are far more than one gathered write holds.
  Exec(writer, "PRAGMA cache_size=10");
  WalGatherStats before = GetWalGatherStats();
  Exec(writer, "BEGIN; " + Insert(1000, 0, 2000) + " ROLLBACK");
  EXPECT_GT(GetWalGatherStats().writes - before.writes, 20);  // It spilled, in pieces.
  Exec(writer, "BEGIN; " + Insert(10, 0, 100) + " COMMIT");
  Exec(writer, "BEGIN; " + Insert(1000, 10, 2000) + " COMMIT");
  ExpectRows(path, 1010);
  // Copied back into the database file, then read from the file alone.
  EXPECT_EQ(QueryText(writer, "PRAGMA wal_checkpoint(TRUNCATE)"), "0");
  sqlite3_close(writer);
  ExpectRows(path, 1010);
}

TEST(WalGatherVfsTest, AWalStartedAgainAfterACheckpointKeepsEveryCommit) {
  TempDir tmp;
  std::string path = tmp.File("g.db");
  sqlite3* writer = OpenWriter(path);
  sqlite3* reader = OpenWith(path, nullptr);
  int rows = 0;
  uintmax_t largest_wal = 0;
  WalGatherStats before = GetWalGatherStats();
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 10; ++i) {
      Exec(writer, "BEGIN; " + Insert(2, rows, 300) + " COMMIT");
      rows += 2;
    }
    // Everything copied: the writer's next commit writes the WAL from its start again (a write
    // that is not contiguous with the last one).
    EXPECT_EQ(QueryText(reader, "PRAGMA wal_checkpoint(PASSIVE)"), "0") << round;
    EXPECT_EQ(QueryText(reader, "SELECT COUNT(*) FROM t"), std::to_string(rows));
    largest_wal = std::max(largest_wal, std::filesystem::file_size(path + "-wal"));
  }
  // Each round wrote the WAL from its start again: the file is one round long, not five.
  int64_t frames = GetWalGatherStats().appends - before.appends;
  EXPECT_LT(largest_wal, static_cast<uintmax_t>(frames) * 4096 / 2);
  EXPECT_EQ(QueryText(reader, "PRAGMA integrity_check"), "ok");
  sqlite3_close(reader);
  sqlite3_close(writer);
}

// A child commits through the VFS and acknowledges each commit through a pipe, then is killed
// with SIGKILL: every acknowledged commit is in the file.
TEST(WalGatherVfsTest, EveryAcknowledgedCommitSurvivesKill9) {
  TempDir tmp;
  std::string path = tmp.File("g.db");
  sqlite3_close(OpenWriter(path));
  ChildRun child = RunInChild([&](int ack_fd) {
    sqlite3* writer = OpenWriter(path);
    for (int i = 0; i < 200; ++i) {
      std::string sql = "BEGIN; " + Insert(1, i, 200) + " COMMIT";
      if (sqlite3_exec(writer, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) _exit(3);
      if (write(ack_fd, "1", 1) != 1) _exit(4);
    }
    raise(SIGKILL);
  });
  ASSERT_TRUE(KilledBySigkill(child));
  EXPECT_EQ(child.acks.size(), 200u);
  ExpectRows(path, static_cast<int64_t>(child.acks.size()));
}

// A transaction that spilled pages into the WAL and then changed them again makes SQLite
// overwrite those frames in place and, after the commit frame, rewrite the checksums of every
// frame from the first one it overwrote (walRewriteChecksums). Those rewrites must be in the file
// when COMMIT returns: a stale checksum ends the WAL there when it is read back after a crash.
// So must the next transaction, which starts somewhere else than where the last write ended.
TEST(WalGatherVfsTest, ACommitWhoseChecksumsWereRewrittenSurvivesKill9) {
  TempDir tmp;
  std::string path = tmp.File("g.db");
  sqlite3* setup = OpenWriter(path);
  Exec(setup, "CREATE TABLE u (x INTEGER); INSERT INTO u VALUES (1)");
  sqlite3_close(setup);
  ChildRun child = RunInChild([&](int ack_fd) {
    sqlite3* writer = OpenWriter(path);
    std::string sql = "PRAGMA cache_size=10; BEGIN; " + Insert(300, 0, 1000) +
                      " UPDATE t SET b = b || 'x' WHERE id <= 100; " + Insert(50, 300, 1000) +
                      " UPDATE t SET a = a || 'y'; COMMIT";
    if (sqlite3_exec(writer, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) _exit(3);
    if (write(ack_fd, "1", 1) != 1) _exit(4);
    // Then a transaction of one frame (a one-page table), written right after those rewrites.
    if (sqlite3_exec(writer, "UPDATE u SET x = 2", nullptr, nullptr, nullptr) != SQLITE_OK) {
      _exit(6);
    }
    if (write(ack_fd, "2", 1) != 1) _exit(4);
    raise(SIGKILL);
  });
  ASSERT_TRUE(KilledBySigkill(child));
  EXPECT_EQ(child.acks, "12");
  sqlite3* reader = OpenWith(path, nullptr);
  EXPECT_EQ(QueryText(reader, "SELECT COUNT(*) FROM t"), "350");
  EXPECT_EQ(QueryText(reader, "SELECT COUNT(*) FROM t WHERE a LIKE '%y'"), "350");
  EXPECT_EQ(QueryText(reader, "SELECT x FROM u"), "2");
  EXPECT_EQ(QueryText(reader, "PRAGMA integrity_check"), "ok");
  sqlite3_close(reader);
}

// A child whose files may not grow past 512 KiB (RLIMIT_FSIZE: a real failed write, EFBIG)
// commits until commits fail: each failure is reported, and every commit reported OK is there.
TEST(WalGatherVfsTest, AWriteThatFailsFailsItsCommitAndLosesNoEarlierOne) {
  TempDir tmp;
  std::string path = tmp.File("g.db");
  sqlite3_close(OpenWriter(path));
  ChildRun child = RunInChild([&](int ack_fd) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit limit{512 * 1024, 512 * 1024};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(3);
    sqlite3* writer = OpenWriter(path);
    int failures = 0;
    for (int i = 0; i < 1000 && failures < 5; ++i) {
      std::string sql = "BEGIN; " + Insert(2, 2 * i, 2000) + " COMMIT";
      bool ok = sqlite3_exec(writer, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
      if (!ok) {
        ++failures;
        sqlite3_exec(writer, "ROLLBACK", nullptr, nullptr, nullptr);
      }
      if (write(ack_fd, ok ? "1" : "0", 1) != 1) _exit(4);
    }
  });
  ASSERT_TRUE(child.ran);
  ASSERT_TRUE(WIFEXITED(child.wstatus));
  EXPECT_EQ(WEXITSTATUS(child.wstatus), 0);
  int committed = static_cast<int>(std::count(child.acks.begin(), child.acks.end(), '1'));
  EXPECT_GT(committed, 10);
  EXPECT_EQ(std::count(child.acks.begin(), child.acks.end(), '0'), 5);
  ExpectRows(path, 2 * committed);
}

}  // namespace
}  // namespace contextd::store
