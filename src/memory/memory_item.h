// MemoryItem: one ReasoningBank entry (a strategy that worked or a pitfall to avoid), its scope,
// its source task, its evidence counts and the confidence derived from them; HistoryEntry: one
// row of an item's append-only history. Plain values and pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace contextd::memory {

// What the item records: a way that worked, or one to avoid.
enum class Outcome { kSuccess, kFailure };
// Who may see the item: its project, its tenant (the team), or every tenant of this server.
enum class Scope { kProject, kTeam, kOrg };
// Pending: a distilled candidate waiting for confirmation (searchable, never injected).
// Active: confirmed (recorded by an agent, confirmed by feedback or an outcome, or auto-confirmed).
// Retired: kept with its history, neither searched nor injected.
enum class Status { kPending, kActive, kRetired };

const char* OutcomeName(Outcome o);  // "success", "failure"
const char* ScopeName(Scope s);      // "project", "team", "org"
const char* StatusName(Status s);    // "pending", "active", "retired"
// Inverses; InvalidArgument naming the value and the accepted names.
absl::StatusOr<Outcome> ParseOutcome(std::string_view name);
absl::StatusOr<Scope> ParseScope(std::string_view name);
absl::StatusOr<Status> ParseStatus(std::string_view name);

// Field limits, in Unicode characters (tags: count and characters each).
inline constexpr size_t kMaxTitleChars = 200;
inline constexpr size_t kMaxDescriptionChars = 500;
inline constexpr size_t kMaxContentChars = 2000;
inline constexpr size_t kMaxTags = 16;
inline constexpr size_t kMaxTagChars = 64;
inline constexpr size_t kMaxQueryChars = 10500;  // a branch's description and prompt

// The confidence prior: Beta(kPriorHelpful, kPriorUnhelpful). A new item starts at 3/4, above the
// default injection threshold (0.7); one negative signal takes it below (3/5), two more positive
// ones bring it back. Feedback and outcomes count alike: helpful/succeeded add to the first
// parameter, unhelpful/failed to the second.
inline constexpr double kPriorHelpful = 3.0;
inline constexpr double kPriorUnhelpful = 1.0;

// Where an item came from: the branch whose work it distils and that branch's task, which new
// tasks are matched against (ReasoningBank retrieves by task similarity).
struct Source {
  std::string branch_id;    // "" when recorded outside a branch or imported without one
  std::string description;  // the branch's description (task in a line)
  std::string prompt;       // the branch's prompt
};

struct MemoryItem {
  std::string id;  // "mem_" + a time-ordered id
  std::string tenant;
  std::string project;
  std::string title;        // short name of the strategy or pitfall
  std::string description;  // one sentence: when it applies
  std::string content;      // 1-3 sentences: what to do (or avoid) and why
  Outcome outcome = Outcome::kSuccess;
  std::vector<std::string> tags;
  Scope scope = Scope::kProject;
  Source source;
  Status status = Status::kActive;
  std::string origin;  // "recorded", "extracted", "distilled" (by a model), "imported"
  int64_t created_at_ms = 0;
  int64_t updated_at_ms = 0;
  int64_t use_count = 0;  // times injected into a branch
  int64_t helpful_count = 0;
  int64_t unhelpful_count = 0;
  int64_t success_count = 0;
  int64_t failure_count = 0;
  std::string merged_into;  // set when retired by a merge

  // Posterior mean of Beta(prior + helpful + successes, prior + unhelpful + failures).
  double Confidence() const;
};

// One change to an item. `action`: recorded, extracted, imported, confirmed, feedback, outcome,
// merged (the absorbing item: `detail` names the candidate), retired, injected (`actor` the
// branch). Append-only; the retention sweep deletes entries older than
// retention.memory_history_days except each item's newest (decision 0031).
struct HistoryEntry {
  int64_t seq = 0;  // set by the store
  std::string memory_id;
  std::string action;
  std::string actor;   // the session or branch that caused it, or "cli"
  std::string detail;  // human-readable
  int64_t at_ms = 0;
};

// OK if every field is within limits and title, description and content are not blank;
// otherwise InvalidArgument naming the field, e.g. "title must be 1-200 characters, got 0".
absl::Status ValidateFields(const MemoryItem& item);

// The text injected into a branch for `item`: "[worked] <title>: <content>" or
// "[avoid] <title>: <content>" (a failure item).
std::string InjectionText(const MemoryItem& item);

// Number of Unicode code points in UTF-8 `text`.
size_t Utf8Chars(std::string_view text);
// At most `max_chars` code points of `text`, never splitting a UTF-8 sequence.
std::string_view Utf8Head(std::string_view text, size_t max_chars);

}  // namespace contextd::memory
