// SqliteRetentionStore: the contract on SQLite, and what only SQLite does: the file gives the
// swept space back (incremental vacuum), and a file made before that can be switched to it.
#include "store/sqlite/sqlite_retention_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/clock.h"
#include "store/retention_store_contract.h"
#include "store/sqlite/sqlite_trail_store.h"
#include "store/testing/sqlite_backend.h"

namespace contextd::store::testing {

INSTANTIATE_TEST_SUITE_P(Sqlite, RetentionStoreContractTest, ::testing::Values(SqliteFactory()),
                         BackendName);

namespace {

// Fills an old session with `n` distinct 4 KiB payloads.
void FillOldSession(SqliteTrailStore& trail, int64_t at_ms, int n) {
  trail::Scope root;
  root.id = "ses_big";
  root.session = trail::SessionRef{"local", "default", "big"};
  root.kind = trail::ScopeKind::kSession;
  root.description = "big";
  root.created_at_ms = at_ms;
  ASSERT_TRUE(trail.OpenScope(root).ok());
  for (int i = 0; i < n; ++i) {
    trail::NewEvent e;
    e.scope_id = "ses_big";
    e.label = "fs__read";
    e.payload = absl::StrCat(i, std::string(4096, 'a' + i % 26));
    e.at_ms = at_ms;
    ASSERT_TRUE(trail.AppendEvents({e}).ok());
  }
}

int64_t FileSize(const std::string& path) {
  std::error_code ec;
  return static_cast<int64_t>(std::filesystem::file_size(path, ec));
}

TEST(SqliteRetentionTest, TheFileShrinksAfterTheSweep) {
  TempDir tmp;
  const std::string path = tmp.File("contextd.db");
  base::FakeClock clock;
  {
    auto trail = SqliteTrailStore::Open(path);
    ASSERT_TRUE(trail.ok()) << trail.status();
    FillOldSession(**trail, clock.WallMillis(), 400);
  }
  const int64_t full = FileSize(path);  // the last connection checkpointed the WAL
  EXPECT_GT(full, 400 * 4096);
  clock.Advance(std::chrono::hours(24 * 31));
  {
    auto retention = SqliteRetentionStore::Open(path);
    ASSERT_TRUE(retention.ok()) << retention.status();
    RetentionPolicy policy;
    policy.pause_us = 0;
    auto report = (*retention)->Sweep(policy, clock.WallMillis());
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->events.rows, 400);
    EXPECT_EQ(report->blobs.rows, 400);
    EXPECT_GT(report->vacuumed_pages, 400 * 4);
    EXPECT_TRUE(report->vacuum_note.empty()) << report->vacuum_note;
  }
  EXPECT_LT(FileSize(path), full / 4);
}

TEST(SqliteRetentionTest, AFileWithoutIncrementalVacuumIsSwitchedByOneVacuum) {
  TempDir tmp;
  const std::string path = tmp.File("contextd.db");
  {  // A file as an older contextd made it: auto_vacuum NONE.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA page_size=1024; CREATE TABLE t (x); DROP TABLE t;", nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  base::FakeClock clock;
  {
    auto trail = SqliteTrailStore::Open(path);
    ASSERT_TRUE(trail.ok()) << trail.status();
    FillOldSession(**trail, clock.WallMillis(), 100);
  }
  clock.Advance(std::chrono::hours(24 * 31));
  auto retention = SqliteRetentionStore::Open(path);
  ASSERT_TRUE(retention.ok()) << retention.status();
  RetentionPolicy policy;
  policy.pause_us = 0;
  auto report = (*retention)->Sweep(policy, clock.WallMillis());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->blobs.rows, 100);
  EXPECT_EQ(report->vacuumed_pages, 0);
  EXPECT_NE(report->vacuum_note.find("trail prune --vacuum"), std::string::npos);
  const int64_t before = FileSize(path);
  ASSERT_TRUE((*retention)->SwitchToIncrementalVacuum().ok());
  retention->reset();
  EXPECT_LT(FileSize(path), before / 2);
}

}  // namespace
}  // namespace contextd::store::testing
