// SqliteRetentionStore: the retention sweep (store/retention.h) over contextd's SQLite file, on a
// connection of its own with foreign keys off (the sweep deletes a whole session's scopes and
// events itself; checked deletes of blobs and scopes would scan trail_events and trail_scopes per
// row, for want of indexes that would cost every append a page write). Each batch is one
// BEGIN IMMEDIATE transaction of at most batch_rows rows; after a sweep, pages freed are given
// back with `PRAGMA incremental_vacuum`. Thread-safe: calls are serialized on the connection.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "store/retention.h"
#include "store/sqlite/database.h"

namespace contextd::store {

class SqliteRetentionStore final : public RetentionStore {
 public:
  // Opens its own connection to the database at `path` (migrated at open, as every store).
  // Its commits never checkpoint the WAL (a checkpoint inside a batch's commit would make the
  // batch wait for the copy and sync); instead the sweep copies its own frames after every few
  // batches with a PASSIVE checkpoint, outside any transaction, so that the WAL a large sweep
  // writes never piles up for the engine's writer, which waits for the checkpointer once the
  // WAL is past twice its restart size (Database::RestartWalIfDue). Unavailable/Internal if
  // SQLite fails.
  static absl::StatusOr<std::unique_ptr<SqliteRetentionStore>> Open(const std::string& path,
                                                                    int busy_timeout_ms = 5000);

  absl::StatusOr<RetentionReport> Sweep(const RetentionPolicy& policy, int64_t now_ms) override;
  absl::StatusOr<RetentionKept> Kept() override;

  // Switches a file made before incremental vacuum (auto_vacuum=NONE) to it with one VACUUM,
  // which rewrites the whole file holding the write lock throughout: for `contextd trail prune
  // --vacuum`, not for a running server. OK and a no-op when already incremental.
  absl::Status SwitchToIncrementalVacuum();

 private:
  explicit SqliteRetentionStore(std::unique_ptr<Database> db) : db_(std::move(db)) {}
  class Sweeper;
  std::unique_ptr<Database> db_;
};

}  // namespace contextd::store
