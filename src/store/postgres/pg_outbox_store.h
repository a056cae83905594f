// PgOutboxStore: the folding::OutboxStore in PostgreSQL (table event_outbox, migration 3). Rows
// belong to the instance that wrote them (`owner`, the PgBranchStore's owner name, so rows
// written inside branch writes are this instance's); an instance renews its rows' lease while it
// is alive, and another takes over rows whose lease ran out (a killed instance's) with FOR
// UPDATE SKIP LOCKED, as ClaimDeadline does. Each call is its own transaction, committed before
// it returns. Thread-safe: each call takes a pooled connection.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "folding/outbox_store.h"
#include "store/postgres/pg_database.h"

namespace contextd::store {

// Runs the INSERT of one outbox row on `c` (inside the caller's transaction).
absl::Status PgInsertOutboxRow(PgConn& c, const folding::OutboxEvent& e, const std::string& owner);

class PgOutboxStore final : public folding::OutboxStore {
 public:
  // Rows are written and listed as `owner`'s.
  static std::unique_ptr<PgOutboxStore> Create(std::shared_ptr<PgDatabase> db, std::string owner);

  absl::Status Append(const std::vector<folding::OutboxEvent>& events) override;
  absl::StatusOr<std::vector<folding::OutboxRow>> ListOwn(int64_t after_seq, int limit) override;
  absl::Status Remove(const std::vector<int64_t>& seqs) override;
  absl::StatusOr<int64_t> TakeOver(int64_t now_ms, int64_t lease_ms, int limit) override;
  absl::StatusOr<int64_t> Trim(int64_t created_before_ms, int64_t max_rows) override;
  absl::StatusOr<folding::OutboxStats> Stats() override;
  const std::string& owner() const override { return owner_; }

 private:
  PgOutboxStore(std::shared_ptr<PgDatabase> db, std::string owner)
      : db_(std::move(db)), owner_(std::move(owner)) {}

  std::shared_ptr<PgDatabase> db_;
  const std::string owner_;
};

}  // namespace contextd::store
