// SqliteBranchStore: the folding engine's BranchStore in contextd's SQLite database (tables
// branches, branch_injections, branch_charges of migration 0001_init.sql). Each Commit is atomic
// (Database::BeginWrite/EndWrite): durable against a process crash when it returns, or, when the
// Database groups commits, once its group commits. Thread-safe: calls are
// serialised on the Database's mutex; several stores (connections, processes) may share a file.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "folding/branch_store.h"
#include "store/sqlite/database.h"

namespace contextd::store {

class SqliteBranchStore final : public folding::BranchStore {
 public:
  // Opens (creating and migrating) the database file at `path` with its own connection.
  static absl::StatusOr<std::unique_ptr<SqliteBranchStore>> Open(
      const std::string& path, const DatabaseOptions& options = {});
  // Uses an open database (shared with other stores); prepares the statements.
  static absl::StatusOr<std::unique_ptr<SqliteBranchStore>> Create(std::shared_ptr<Database> db);

  absl::Status Commit(const folding::BranchWrite& write) override;
  absl::StatusOr<std::optional<folding::Branch>> Get(std::string_view id) override;
  absl::StatusOr<std::vector<folding::Branch>> ListSession(
      const folding::SessionKey& session) override;
  absl::StatusOr<std::vector<folding::Branch>> ListLive() override;
  absl::StatusOr<RecentCharges> GetRecentCharges(std::string_view branch_id, int limit) override;

  Database& database() { return *db_; }

 private:
  explicit SqliteBranchStore(std::shared_ptr<Database> db) : db_(std::move(db)) {}
  absl::Status PrepareAll();
  absl::Status CommitLocked(const folding::BranchWrite& write);
  // Reads the rows of `st` (a SELECT of kBranchColumns) with their injected context.
  absl::StatusOr<std::vector<folding::Branch>> ReadBranches(Statement& st);

  std::shared_ptr<Database> db_;
  Statement insert_;
  Statement insert_injection_;
  Statement update_;
  Statement insert_charge_;
  Statement insert_outbox_;
  Statement get_;
  Statement list_session_;
  Statement list_live_;
  Statement injections_;
  Statement recent_charges_;
  Statement count_charges_;
};

}  // namespace contextd::store
