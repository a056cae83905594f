// OutboxStore: the transactional outbox of events (decision 0027) as an interface, beside
// BranchStore whose writes carry the rows; store/ implements it for SQLite and PostgreSQL, and
// events/ (OutboxRelay) publishes what it holds. Rows are written in the same transaction as the
// change they report (folding::BranchWrite::events) or appended (memory events), read by the
// OutboxRelay once committed, and deleted after NATS has them. Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "folding/branch_store.h"

namespace contextd::folding {

// One stored event and its position (increasing in commit order per writer; never reused).
struct OutboxRow {
  int64_t seq = 0;
  OutboxEvent event;
};

struct OutboxStats {
  int64_t rows = 0;               // rows in the table, every instance's
  int64_t oldest_created_ms = 0;  // created_ms of the oldest row; 0 when empty
};

class OutboxStore {
 public:
  virtual ~OutboxStore() = default;

  // Appends `events` as this instance's rows, in one write with the store's usual durability
  // (SQLite: part of the open group commit, if any). Unavailable/Internal on a database error.
  virtual absl::Status Append(const std::vector<OutboxEvent>& events) = 0;

  // Up to `limit` committed rows this instance publishes, with seq > `after_seq`, in seq order.
  // Rows passed to Remove are not listed again even while that removal is not yet committed.
  virtual absl::StatusOr<std::vector<OutboxRow>> ListOwn(int64_t after_seq, int limit) = 0;

  // Deletes the rows `seqs` (published). A removal that is lost (crash before it commits) leaves
  // the rows, which are published again: at least once.
  virtual absl::Status Remove(const std::vector<int64_t>& seqs) = 0;

  // Renews the lease (until now_ms + lease_ms) of this instance's rows whose lease ends within
  // lease_ms / 2, and takes over up to `limit` rows of other instances whose lease ran out by
  // `now_ms` (FOR UPDATE SKIP LOCKED: of racing instances, each row goes to one). Returns how
  // many were taken over. A store one process writes (SQLite) owns every row: 0.
  virtual absl::StatusOr<int64_t> TakeOver(int64_t now_ms, int64_t lease_ms, int limit) = 0;

  // Deletes rows created before `created_before_ms` and, beyond `max_rows`, the oldest (every
  // instance's: events that could not be published for that long are given up). Returns the
  // number deleted.
  virtual absl::StatusOr<int64_t> Trim(int64_t created_before_ms, int64_t max_rows) = 0;

  virtual absl::StatusOr<OutboxStats> Stats() = 0;

  // The owner name this instance writes its rows under ("" for SQLite).
  virtual const std::string& owner() const = 0;
};

}  // namespace contextd::folding
