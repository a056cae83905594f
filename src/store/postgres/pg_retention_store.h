// PgRetentionStore: the retention sweep (store/retention.h) over PostgreSQL. Several instances may
// run it at once: each batch is a transaction that first takes a transaction-level advisory lock
// (pg_try_advisory_xact_lock); an instance that cannot get it stops its sweep (skipped), since
// another one is sweeping. Space is left to autovacuum (deleted rows' space is reused).
// Thread-safe (PgDatabase is).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "store/postgres/pg_database.h"
#include "store/retention.h"

namespace contextd::store {

// The advisory lock key of the sweep (one per database).
inline constexpr int64_t kRetentionLockKey = 0x636f6e7478640001;  // "contxd" 1

class PgRetentionStore final : public RetentionStore {
 public:
  // Connects (no migration: the server or `contextd migrate` did that). Unavailable if the
  // server cannot be reached; FailedPrecondition for an older schema.
  static absl::StatusOr<std::unique_ptr<PgRetentionStore>> Open(const PgOptions& options);
  // Shares `db`'s pool (the server's).
  static std::unique_ptr<PgRetentionStore> Create(std::shared_ptr<PgDatabase> db);

  absl::StatusOr<RetentionReport> Sweep(const RetentionPolicy& policy, int64_t now_ms) override;
  absl::StatusOr<RetentionKept> Kept() override;

 private:
  explicit PgRetentionStore(std::shared_ptr<PgDatabase> db) : db_(std::move(db)) {}
  class Sweeper;
  std::shared_ptr<PgDatabase> db_;
};

}  // namespace contextd::store
