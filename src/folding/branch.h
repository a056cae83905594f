// Branch: the data model of one context-folding branch (identity, place in the session tree,
// budget, deadline, outcome) and its state machine. Plain values; no synchronisation. The
// transition table is the single authority on which status changes are legal.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/clock.h"

namespace contextd::folding {

// Lifecycle of a branch. kCreated -> kActive -> one of the four terminal states. A branch is
// "live" while created or active. kFailed means force-returned for another reason than its own
// deadline or budget: its parent returned, its session ended, the server restarted.
enum class BranchStatus { kCreated, kActive, kCompleted, kTimeout, kBudgetExhausted, kFailed };

// The wire/storage name (a static string): "created", "active", "completed", "timeout",
// "budget_exhausted", "failed".
const char* BranchStatusName(BranchStatus status);
// Inverse of BranchStatusName. InvalidArgument naming `name` if it is not one of them.
absl::StatusOr<BranchStatus> ParseBranchStatus(std::string_view name);
// True for completed, timeout, budget_exhausted and failed: no transition leaves them.
bool IsTerminal(BranchStatus status);
// True for created and active.
inline bool IsLive(BranchStatus status) { return !IsTerminal(status); }
// True if the transition table allows `from` -> `to`:
//   created -> active | failed;  active -> completed | timeout | budget_exhausted | failed.
bool IsValidTransition(BranchStatus from, BranchStatus to);
// OK if IsValidTransition(from, to); otherwise FailedPrecondition naming the branch and both
// states, e.g. "branch br_x cannot go from completed to completed (completed is final)".
absl::Status CheckTransition(std::string_view branch_id, BranchStatus from, BranchStatus to);

// Who owns a branch. Every lookup is scoped by all three parts (isolation).
struct SessionKey {
  std::string tenant = "local";
  std::string project = "default";
  std::string session_id;

  bool operator==(const SessionKey&) const = default;
  // "tenant/project/session_id", for logs and errors that are not shown to other sessions.
  std::string ToString() const;
};

// Hash for unordered containers keyed by SessionKey.
struct SessionKeyHash {
  size_t operator()(const SessionKey& key) const;
};

// One piece of context put into a branch at creation (a memory).
struct InjectedContext {
  std::string kind;    // e.g. "memory"
  std::string ref;     // id of what was injected
  std::string text;    // the text as injected (scrubbed)
  int64_t tokens = 0;  // its token count, charged to the branch
  // For the structured reply at creation only (not stored; `text` holds all three as the branch
  // read them).
  std::string title;
  std::string content;
  std::string outcome;  // "success" or "failure"
};

// A branch as stored. parent_id empty means the child of the session root. The session root
// itself is not a branch: it has no budget limit and no deadline.
struct Branch {
  std::string id;  // "br_" + 32 hex chars (128 random bits)
  SessionKey session;
  std::string parent_id;  // "" = session root
  int depth = 0;          // 0 for a child of the session root, its child 1, ...
  std::string description;
  std::string prompt;
  BranchStatus status = BranchStatus::kCreated;
  // Budget accounting, all in tokens. tokens_used counts the branch's own prompt, injected
  // context, charges and return message, plus everything its returned children consumed.
  // reserved_for_children is the sum of the budgets of its live children.
  int64_t budget_allocated = 0;
  int64_t tokens_used = 0;
  int64_t reserved_for_children = 0;
  int64_t deadline_wall_ms = 0;            // wall-clock deadline (ms since epoch), as stored
  base::Clock::TimePoint deadline_mono{};  // the same deadline on the executor's clock; not stored
  int64_t created_at_ms = 0;
  int64_t finished_at_ms = 0;  // 0 while live
  std::string summary;         // the return message (scrubbed) or the automatic partial summary
  std::string finish_reason;   // why it ended, e.g. "returned", "server restarted"
  bool memory_queued = false;
  std::vector<InjectedContext> injected_context;
  // How many times the stored row was updated, where the store counts (BranchStore::shared():
  // PostgreSQL); 0 elsewhere. Not part of the branch's meaning: the engine's staleness check.
  int64_t version = 0;

  // Tokens still available to the branch itself: allocated - used - reserved (may be 0).
  int64_t Remaining() const { return budget_allocated - tokens_used - reserved_for_children; }
};

// Returns the number of Unicode code points in UTF-8 `text` (bytes that are not continuation
// bytes); this is what the request limits in characters count.
size_t Utf8Length(std::string_view text);
// Returns at most `max_chars` code points of `text`, never splitting a UTF-8 sequence.
std::string_view Utf8Prefix(std::string_view text, size_t max_chars);

}  // namespace contextd::folding
