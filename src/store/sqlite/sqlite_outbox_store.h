// SqliteOutboxStore: the folding::OutboxStore in contextd's SQLite database (table event_outbox,
// migration 0014). Writes (Append, Remove, Trim) go through the engine's Database, so they join
// its group commit; reads (ListOwn, Stats) use a connection of their own, which sees committed
// rows only: an event is never read before the change it reports is durable. One process writes
// a SQLite file, so every row is this process's (a previous run's included): TakeOver does
// nothing. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "folding/outbox_store.h"
#include "store/sqlite/database.h"

namespace contextd::store {

// The INSERT of one outbox row (parameters: id, type, subject, payload, created_ms, owner,
// lease_until_ms), for stores that write rows inside their own transactions.
inline constexpr char kSqliteInsertOutboxSql[] =
    "INSERT INTO event_outbox (id, type, subject, payload, created_ms, owner, lease_until_ms) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)";

// Binds and runs `insert` (prepared from kSqliteInsertOutboxSql) for `e`. Caller holds the
// database's mutex inside a write.
absl::Status InsertOutboxRow(Statement& insert, const folding::OutboxEvent& e,
                             std::string_view owner);

class SqliteOutboxStore final : public folding::OutboxStore {
 public:
  // Writes through `db` (shared with the engine's stores); reads through a new connection to the
  // same file. Unavailable if that connection cannot be opened.
  static absl::StatusOr<std::unique_ptr<SqliteOutboxStore>> Create(std::shared_ptr<Database> db);
  // Opens the file at `path` with a connection of its own for writes (tests, tools).
  static absl::StatusOr<std::unique_ptr<SqliteOutboxStore>> Open(const std::string& path);

  absl::Status Append(const std::vector<folding::OutboxEvent>& events) override;
  absl::StatusOr<std::vector<folding::OutboxRow>> ListOwn(int64_t after_seq, int limit) override;
  absl::Status Remove(const std::vector<int64_t>& seqs) override;
  absl::StatusOr<int64_t> TakeOver(int64_t now_ms, int64_t lease_ms, int limit) override;
  absl::StatusOr<int64_t> Trim(int64_t created_before_ms, int64_t max_rows) override;
  absl::StatusOr<folding::OutboxStats> Stats() override;
  const std::string& owner() const override { return owner_; }

 private:
  SqliteOutboxStore(std::shared_ptr<Database> db, std::unique_ptr<Database> reader)
      : db_(std::move(db)), reader_(std::move(reader)) {}

  std::shared_ptr<Database> db_;
  std::unique_ptr<Database> reader_;
  const std::string owner_;
  // Rows passed to Remove whose deletion the reader may not see yet (it commits with the group).
  // Forgotten once a listing shows they are gone.
  std::mutex removed_mu_;
  std::set<int64_t> removed_;
};

}  // namespace contextd::store
