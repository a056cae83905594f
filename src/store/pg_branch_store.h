// PgBranchStore: the folding engine's BranchStore in PostgreSQL (tables branches,
// branch_injections, branch_charges of pg_migrations.h). Each Commit is one transaction,
// committed before it returns (durable before the reply, as with SQLite). Also the deadline sweep
// that several instances may run at once: ClaimDue hands each due branch to exactly one caller.
// Thread-safe: each call takes a pooled connection.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "folding/branch_store.h"
#include "store/pg_database.h"

namespace contextd::store {

class PgBranchStore final : public folding::BranchStore {
 public:
  // Connects (and migrates) with its own pool.
  static absl::StatusOr<std::unique_ptr<PgBranchStore>> Open(const PgOptions& options);
  // Uses an open database (shared with other stores).
  static std::unique_ptr<PgBranchStore> Create(std::shared_ptr<PgDatabase> db);

  absl::Status Commit(const folding::BranchWrite& write) override;
  absl::StatusOr<std::optional<folding::Branch>> Get(std::string_view id) override;
  absl::StatusOr<std::vector<folding::Branch>> ListSession(
      const folding::SessionKey& session) override;
  absl::StatusOr<std::vector<folding::Branch>> ListLive() override;
  absl::StatusOr<RecentCharges> GetRecentCharges(std::string_view branch_id, int limit) override;

  // The deadline sweep across instances: in one transaction, locks up to `limit` live branches
  // whose deadline_ms <= now_ms (FOR UPDATE SKIP LOCKED: rows another instance holds are
  // skipped, not waited for), marks them `timeout` (finish_reason "deadline", finished_at_ms
  // now_ms) and returns them as they were before. A branch is returned to exactly one caller,
  // however many instances sweep at once. Unavailable/Internal on database errors (nothing is
  // claimed then).
  absl::StatusOr<std::vector<folding::Branch>> ClaimDue(int64_t now_ms, int limit);

  PgDatabase& database() { return *db_; }

 private:
  explicit PgBranchStore(std::shared_ptr<PgDatabase> db) : db_(std::move(db)) {}
  static absl::Status CommitIn(PgConn& c, const folding::BranchWrite& write);
  // Reads the rows of `r` (kBranchColumns) and, on `c`, their injected context.
  static absl::StatusOr<std::vector<folding::Branch>> ReadBranches(PgConn& c, const PgResult& r);

  std::shared_ptr<PgDatabase> db_;
};

}  // namespace contextd::store
