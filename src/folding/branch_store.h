// BranchStore: the durable storage the folding engine needs, as an interface (store/ implements
// it with SQLite; folding/testing/ has an in-memory fake). A Commit is atomic and durable when it
// returns OK, or, where the server groups commits, once that group commits (the server sends no
// reply before then: server/group_commit.h). Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "folding/branch.h"

namespace contextd::folding {

// The mutable part of a stored branch; Commit overwrites these columns of branch `id`.
struct BranchUpdate {
  std::string id;
  BranchStatus status = BranchStatus::kActive;
  int64_t tokens_used = 0;
  int64_t reserved_for_children = 0;
  std::string summary;
  std::string finish_reason;
  int64_t finished_at_ms = 0;
  bool memory_queued = false;
  // For a shared store: the row's version this update was computed from (Branch::version); the
  // Commit fails with Aborted, applying nothing, when the row has moved on (another instance
  // wrote it). -1: unconditional. Stores that are not shared ignore it.
  int64_t expected_version = -1;
};

// One thing charged to or recorded in a branch: a tool call, its result, a child's return.
// Only a short scrubbed excerpt is kept (the trail keeps full content).
struct ChargeRow {
  std::string branch_id;
  int64_t at_ms = 0;
  std::string kind;     // "tool_call", "tool_result", "branch_return", ...
  std::string label;    // tool name, child branch id, ...
  std::string excerpt;  // scrubbed, short, single line
  int64_t tokens = 0;   // tokens this record counted (0 for records that charge nothing)
};

// An event for the transactional outbox (decision 0027), written in the same transaction as the
// change it reports and published from there after the commit. Opaque to the folding engine:
// the encoder the server gives the BranchManager builds it from a BranchEvent.
struct OutboxEvent {
  std::string id;              // the event id: unique, also the JetStream Nats-Msg-Id
  std::string type;            // "branch.created", "memory.recorded", ...
  std::string subject;         // the NATS subject
  std::string payload;         // the JSON message
  int64_t created_ms = 0;      // when it was written
  int64_t lease_until_ms = 0;  // until then only the writing instance publishes it
};

// Everything one engine operation changes, written in one transaction.
struct BranchWrite {
  std::vector<Branch> inserts;
  std::vector<BranchUpdate> updates;
  std::vector<ChargeRow> charges;
  // Outbox rows of the operation's events: stores that keep an outbox write them in the same
  // transaction; the others ignore them. Never written without changes (see empty()).
  std::vector<OutboxEvent> events = {};

  bool empty() const { return inserts.empty() && updates.empty() && charges.empty(); }
};

// What ClaimDeadline found.
enum class DeadlineClaim {
  kClaimed,        // this caller force-returns the branch now
  kHeldElsewhere,  // another instance holds the claim (its lease has not run out): not now
  kEnded,          // the branch is no longer live in the store (another instance ended it)
};

class BranchStore {
 public:
  virtual ~BranchStore() = default;

  // Applies `write` atomically: inserts first (in order; a parent before its child), then
  // updates, then charge rows. Durable against a process crash once it returns OK (or its group
  // commits, see above). On error
  // nothing is applied: AlreadyExists (duplicate id), NotFound (update of an unknown id),
  // Unavailable/Internal (the database failed).
  virtual absl::Status Commit(const BranchWrite& write) = 0;

  // The branch with `id` of any session, or nullopt. Internal on a database error.
  virtual absl::StatusOr<std::optional<Branch>> Get(std::string_view id) = 0;

  // All branches of `session` in creation order.
  virtual absl::StatusOr<std::vector<Branch>> ListSession(const SessionKey& session) = 0;

  // Every branch still created or active, of every session, in creation order (for Recover).
  virtual absl::StatusOr<std::vector<Branch>> ListLive() = 0;

  // The last `limit` charge rows of `branch_id`, oldest first, and how many it has in all.
  struct RecentCharges {
    std::vector<ChargeRow> rows;
    int64_t total = 0;
  };
  virtual absl::StatusOr<RecentCharges> GetRecentCharges(std::string_view branch_id, int limit) = 0;

  // Before a deadline force-returns live branch `id`: claims it, so that of several instances
  // sharing the store exactly one does (the claim is a lease of `lease_ms` from `now_ms`, renewed
  // by the same store instance, taken over by another once it runs out: an instance that dies
  // holding it does not keep the branch alive). A store only one process writes (SQLite, the
  // fake) always answers kClaimed. Unavailable/Internal on a database error.
  virtual absl::StatusOr<DeadlineClaim> ClaimDeadline(std::string_view id, int64_t now_ms,
                                                      int64_t lease_ms) {
    (void)id;
    (void)now_ms;
    (void)lease_ms;
    return DeadlineClaim::kClaimed;
  }
  // True when other processes may write the same branches (PostgreSQL): the engine then checks
  // SessionStamp before it trusts what it cached and sends expected_version with its updates.
  virtual bool shared() const { return false; }
  // For a shared store: a number that changes whenever a branch of `session` is inserted or
  // updated (PostgreSQL: the count of its branches plus the sum of their versions). 0 where not
  // shared. Unavailable/Internal on a database error.
  virtual absl::StatusOr<int64_t> SessionStamp(const SessionKey& session) {
    (void)session;
    return 0;
  }
};

}  // namespace contextd::folding
