// PgBranchStore: the folding engine's BranchStore in PostgreSQL (tables branches,
// branch_injections, branch_charges of pg_migrations.h). Each Commit is one transaction,
// committed before it returns (durable before the reply, as with SQLite). Several instances may
// share the database: ClaimDeadline gives each deadline to exactly one of them.
// Thread-safe: each call takes a pooled connection.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "folding/branch_store.h"
#include "store/postgres/pg_database.h"

namespace contextd::store {

class PgBranchStore final : public folding::BranchStore {
 public:
  // Connects (and migrates) with its own pool.
  static absl::StatusOr<std::unique_ptr<PgBranchStore>> Open(const PgOptions& options);
  // Uses an open database (shared with other stores).
  static std::unique_ptr<PgBranchStore> Create(std::shared_ptr<PgDatabase> db);
  // The same, claiming deadlines and writing outbox rows as `owner` (another store's owner():
  // several store objects of one instance).
  static std::unique_ptr<PgBranchStore> Create(std::shared_ptr<PgDatabase> db, std::string owner);

  absl::Status Commit(const folding::BranchWrite& write) override;
  absl::StatusOr<std::optional<folding::Branch>> Get(std::string_view id) override;
  absl::StatusOr<std::vector<folding::Branch>> ListSession(
      const folding::SessionKey& session) override;
  absl::StatusOr<std::vector<folding::Branch>> ListLive() override;
  absl::StatusOr<RecentCharges> GetRecentCharges(std::string_view branch_id, int limit) override;
  // Shared: updates are conditional on BranchUpdate::expected_version (Aborted when the row moved
  // on), and SessionStamp is COUNT(*) + SUM(version) of the session's rows (one index scan of
  // branches_by_session).
  bool shared() const override { return true; }
  absl::StatusOr<int64_t> SessionStamp(const folding::SessionKey& session) override;

  // Claims live branch `id` for its deadline (see BranchStore): in one statement, the row is
  // locked with FOR UPDATE SKIP LOCKED (a claimer racing another skips instead of waiting) and
  // taken if its lease ran out or this store instance holds it. Of any number of instances
  // claiming at once, one gets kClaimed.
  absl::StatusOr<folding::DeadlineClaim> ClaimDeadline(std::string_view id, int64_t now_ms,
                                                       int64_t lease_ms) override;

  // Sessions with a live branch whose deadline passed before `due_before_ms` and whose claim (if
  // any) ran out: the sweep's work (BranchManager::LoadSession arms their timers, which fire at
  // once and claim). At most `limit`, oldest deadline first.
  absl::StatusOr<std::vector<folding::SessionKey>> ListDueSessions(int64_t due_before_ms,
                                                                   int64_t now_ms, int limit);

  // The name this instance claims deadlines under (random per store object).
  const std::string& owner() const { return owner_; }

  PgDatabase& database() { return *db_; }

 private:
  explicit PgBranchStore(std::shared_ptr<PgDatabase> db);
  // Writes `write` (and its outbox rows, as `owner`'s) on `c`, inside the caller's transaction.
  static absl::Status CommitIn(PgConn& c, const folding::BranchWrite& write,
                               const std::string& owner);
  // Reads the rows of `r` (kBranchColumns) and, on `c`, their injected context.
  static absl::StatusOr<std::vector<folding::Branch>> ReadBranches(PgConn& c, const PgResult& r);

  std::shared_ptr<PgDatabase> db_;
  std::string owner_;
};

}  // namespace contextd::store
