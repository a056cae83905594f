// BranchManager: the folding engine. Creates, charges, returns and force-returns branches of
// each session, enforcing the state machine, budgets, deadlines (one executor timer per live
// branch), nesting depth, concurrency and rate limits, and session isolation. Every change is
// committed to the BranchStore before the method returns (where the store groups commits, the
// server holds the reply until the group commits).
// Thread-safety: none of its own. Every method (and the destructor) must run on the engine
// executor passed to the constructor; timers fire there too. Results are plain values.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/executor.h"
#include "folding/branch.h"
#include "folding/branch_store.h"
#include "folding/config.h"
#include "folding/events.h"
#include "scrub/scrubber.h"
#include "tokens/token_counter.h"

namespace contextd::folding {

// Limits on requests, in Unicode characters.
inline constexpr size_t kMaxDescriptionChars = 500;
inline constexpr size_t kMaxPromptChars = 10000;
inline constexpr size_t kMaxReturnMessageChars = 50000;
// The automatic partial summary of a force-returned branch never exceeds this many tokens.
inline constexpr int64_t kPartialSummaryMaxTokens = 500;
// A branch gets one warning when tokens_used first reaches this share of budget_allocated.
inline constexpr double kWarningRatio = 0.8;
// How long a deadline claim (BranchStore::ClaimDeadline) holds off other instances: longer than
// a force-return takes, short enough that a dead instance's claim is soon taken over.
inline constexpr int64_t kDeadlineLeaseMs = 30'000;

class BranchManager;

// A request text scrubbed and token-counted by BranchManager::PrepareText, which any thread may
// call: the costly part of taking a text in, done before the engine executor sees the request.
class PreparedText {
 public:
  // What is stored: scrubbed, with its <private> spans withheld (scrub/private_spans.h).
  const std::string& text() const { return text_; }
  // What is charged: the tokens of the scrubbed text as the model read it (private spans kept).
  int64_t tokens() const { return tokens_; }

 private:
  friend class BranchManager;
  PreparedText(std::string source, std::string text, int64_t tokens)
      : source_(std::move(source)), text_(std::move(text)), tokens_(tokens) {}
  std::string source_;  // what was prepared: used only for the same request text
  std::string text_;
  int64_t tokens_ = 0;
};

// branch_create's arguments (already type-checked against the tool's JSON Schema).
struct CreateRequest {
  std::string description;  // 1-500 characters
  std::string prompt;       // 1-10000 characters
  // PrepareText(description) and PrepareText(prompt), if the caller made them (not owned: they
  // must outlive the call). One made from another text than its field is not used (the field is
  // prepared again).
  const PreparedText* prepared_description = nullptr;
  const PreparedText* prepared_prompt = nullptr;
  std::optional<int64_t> budget;           // 1..max_budget; default see Create()
  std::optional<int64_t> timeout_seconds;  // 1..max_timeout_seconds; default from the config
  bool inject_memories = true;
  // What may be injected, best first (the memory bank's ranking, already above the confidence
  // threshold). Create takes them in order while they fit into injection_budget_ratio of the
  // budget (and what the prompt leaves), at most memory_max_items, and charges their tokens.
  // Ignored unless inject_memories.
  std::vector<InjectedContext> memory_candidates;
  std::optional<std::string> parent_branch_id;  // default: the innermost active branch
};

struct CreateResult {
  std::string branch_id;
  std::string parent_branch_id;  // "" = session root
  int depth = 0;                 // 0 under the session root
  int max_depth = 0;             // the configured limit: depths 0 to max_depth - 1 are allowed
  int64_t budget_allocated = 0;
  // What the parent has left after reserving this budget; nullopt when the parent is the session
  // root, which has no budget limit.
  std::optional<int64_t> parent_budget_remaining;
  int64_t timeout_seconds = 0;
  int64_t deadline_wall_ms = 0;
  int64_t prompt_tokens = 0;                      // charged at creation (tokens_used starts here)
  std::vector<InjectedContext> injected_context;  // what was put into the branch (memories)
  int64_t injected_tokens = 0;                    // their tokens, charged at creation too
};

// branch_return's arguments.
struct ReturnRequest {
  std::optional<std::string> branch_id;  // default: the innermost active branch
  std::string message;  // at most 50000 characters; scrubbed and private spans withheld
  const PreparedText* prepared_message = nullptr;  // PrepareText(message), as in CreateRequest
  // Queue the branch for distillation into memories (stored as the branch's memory_queued and
  // answered as ReturnResult::memory_queued; the caller does the queueing).
  bool extract_memory = false;
};

struct ReturnResult {
  std::string branch_id;
  std::string summary;  // the scrubbed message with private spans withheld, as stored
  int64_t summary_tokens = 0;
  // Everything the branch consumed: prompt, charges, its children's consumption, and the return
  // message (charged at most up to the budget). Equal to the branch's final tokens_used.
  int64_t tokens_used = 0;
  // tokens_used minus summary_tokens (never negative): what the parent's context no longer
  // carries once the branch is replaced by its summary.
  int64_t tokens_folded = 0;
  int64_t budget_allocated = 0;
  std::string parent_branch_id;     // the branch now active in its place ("" = session root)
  std::string active_branch_after;  // the session's innermost active branch ("" = root)
  std::vector<std::string> force_returned_children;  // deepest first
  bool memory_queued = false;                        // queued for distillation into a memory
  // Set when folding this branch into its parent made the parent cross 80% of its budget (the
  // same warning is published as a kWarning event).
  std::optional<std::string> parent_warning;
};

// Something that passed through contextd while a branch was active.
struct ChargeRecord {
  std::string kind;   // "tool_call", "tool_result", ...
  std::string label;  // tool name
  std::string text;   // the arguments or result as delivered (counted; excerpted with private
                      // spans withheld)
  // Token count of `text` if the caller already counted it with the server's TokenCounter (e.g.
  // off the executor); otherwise Charge counts it.
  std::optional<int64_t> tokens;
};

struct ChargeOutcome {
  std::string branch_id;  // the branch charged; "" = the session root (no budget, nothing kept)
  int64_t tokens = 0;     // this record's tokens
  int64_t used = 0;       // branch tokens_used after the charge
  int64_t allocated = 0;  // branch budget_allocated
  // True exactly once per branch: the first charge that brings used to >= 80% of allocated.
  bool warning_crossed = false;
  // True if this record did not fit: the branch was force-returned (budget_exhausted) with an
  // automatic partial summary. Its used is then capped at what was left; the caller must not
  // deliver `text` to the agent and answers isError with ExhaustedText().
  bool exhausted = false;
  std::string partial_summary;      // set when exhausted
  std::string active_branch_after;  // innermost active branch after the charge ("" = root)
};

// One node of branch_status's answer.
struct BranchView {
  std::string branch_id;
  std::string parent_branch_id;
  int depth = 0;
  std::string description;
  BranchStatus status = BranchStatus::kActive;
  int64_t tokens_used = 0;
  int64_t budget_allocated = 0;
  int64_t reserved_for_children = 0;
  std::optional<int64_t> time_left_ms;  // live branches only
  int64_t deadline_wall_ms = 0;
  int64_t created_at_ms = 0;
  int64_t finished_at_ms = 0;
  std::string finish_reason;
  std::string summary;
  std::vector<BranchView> children;  // in creation order
};

struct StatusResult {
  // One branch with its subtree, or every top-level branch of the session with theirs.
  std::vector<BranchView> branches;
  std::string active_branch_id;  // innermost active ("" = root)
  int active_count = 0;          // live branches of the session
};

struct EndSessionResult {
  std::vector<std::string> force_returned;  // deepest first
};

struct RecoverResult {
  std::vector<std::string> force_returned;  // branch ids, deepest first
};

class BranchManager {
 public:
  // `executor`, `store`, `counter`, `scrubber` and `events` (may be null) must outlive the
  // manager. `config` must have passed Validate() (CHECKed).
  BranchManager(FoldingConfig config, base::Executor& executor, BranchStore& store,
                const tokens::TokenCounter& counter, const scrub::Scrubber& scrubber,
                EventBus* events);
  // Cancels every deadline timer. Changes nothing in the store: live branches stay live there
  // and the next manager's Recover() force-returns them.
  ~BranchManager();
  BranchManager(const BranchManager&) = delete;
  BranchManager& operator=(const BranchManager&) = delete;

  // Turns an event into an outbox row (nullopt: not published), or null.
  using OutboxEncoder = std::function<std::optional<OutboxEvent>(const BranchEvent&)>;
  // With an encoder, every event an operation produces is encoded before its store write and
  // written with it (BranchWrite::events): the event is durable exactly when its change is. The
  // event's `branch` is the branch as it is being written. Set before Recover(); executor only.
  void SetOutboxEncoder(OutboxEncoder encoder) { outbox_encoder_ = std::move(encoder); }

  // Call once at startup, before any other method: force-returns every branch the store still
  // has live (status failed, reason "server restarted", automatic partial summary), children
  // first, giving unused budgets back. They stay in the store and visible to their session.
  absl::StatusOr<RecoverResult> Recover();

  // Creates a branch under `request.parent_branch_id` or, by default, the session's innermost
  // active branch (or the session root). The branch starts active, with its (scrubbed) prompt
  // counted and charged, and a deadline timer armed.
  // Budget: `request.budget` or, if absent, default_budget - for a child of a branch at most
  // what the parent has left. A child's budget is reserved from its parent's remaining budget;
  // the session root has no budget limit.
  // Errors: InvalidArgument (a field out of range, naming it; a prompt larger than the budget);
  // NotFound "branch <id> not found" (parent unknown or of another session);
  // FailedPrecondition (parent not active; max_depth reached; parent has less budget left than
  // asked, saying how much); ResourceExhausted (max_concurrent_branches_per_session or
  // _per_instance reached, naming the limit; branch_creation_rate_limit, saying when to retry);
  // Internal/Unavailable from the store (nothing changed).
  absl::StatusOr<CreateResult> Create(const SessionKey& session, const CreateRequest& request);

  // `raw` scrubbed and its tokens counted, for a request's prepared_* field. Any thread (the
  // scrubber and the token counter are immutable and thread-safe).
  PreparedText PrepareText(std::string_view raw) const;

  // Completes `request.branch_id` (default: the innermost active branch): scrubs the message,
  // force-returns its live descendants deepest first (status failed, "parent <id> returned"),
  // charges the message's tokens, gives the unused budget back to the parent, stores the
  // summary, and publishes branch.folded.
  // Errors: InvalidArgument (message too long); NotFound (unknown or another session's id);
  // FailedPrecondition (no active branch; the branch already ended, naming both states).
  absl::StatusOr<ReturnResult> Return(const SessionKey& session, const ReturnRequest& request);

  // Charges `record` to `branch_id` (empty: the innermost active branch; if none, the session
  // root, which has no budget and records nothing). Publishes branch.charged, branch.warning on
  // the first crossing of 80%, and on exhaustion force-returns the branch (see ChargeOutcome).
  // Errors: NotFound (unknown or another session's id); FailedPrecondition (branch not active).
  absl::StatusOr<ChargeOutcome> Charge(const SessionKey& session, std::string_view branch_id,
                                       const ChargeRecord& record);

  // branch_status: `branch_id` with its subtree, or (empty id) the session's whole tree,
  // including ended branches (also those of a previous run kept in the store).
  // Errors: NotFound (unknown or another session's id).
  absl::StatusOr<StatusResult> Status(const SessionKey& session, std::string_view branch_id);

  // Ends a session (DELETE, idle timeout, EOF, shutdown): force-returns all its live branches
  // (status failed, reason "session ended: <reason>"), then forgets the session's in-memory
  // state (its branches stay in the store). Idempotent.
  absl::StatusOr<EndSessionResult> EndSession(const SessionKey& session, std::string_view reason);

  // Drops every session's in-memory state (cancelling its timers) and reloads the sessions that
  // have live branches from the store, as after a start without Recover(). For when the store
  // lost writes the engine had already applied (a failed group commit): from then on the engine
  // follows the store. Rate-limit history is forgotten. Internal/Unavailable from the store (the
  // sessions not reloaded load on their next use).
  absl::Status ReloadFromStore();

  // Drops `session`'s in-memory state (timers cancelled) without ending anything: its branches
  // stay live in the store. For a store several instances share, when this instance stops
  // serving a session another one may continue (shutdown, an idle session seen elsewhere).
  void ReleaseSession(const SessionKey& session);

  // Loads `session`'s branches from the store if it is not in memory, arming the deadline timers
  // of its live ones (those already past their deadline fire at once). For a store several
  // instances share: a sweep loads the sessions whose branches no instance timed out (their
  // instance went away). Internal/Unavailable from the store.
  absl::Status LoadSession(const SessionKey& session);

  // The session's innermost active branch id: the most recently created branch that is still
  // active (always one without active children), or "" for the session root.
  std::string ActiveBranch(const SessionKey& session) const;

  // Live branches across all sessions / sessions held in memory.
  int active_branches() const { return active_count_; }
  size_t sessions_in_memory() const { return sessions_.size(); }
  const FoldingConfig& config() const { return config_; }

 private:
  // `*prepared` if it was made from `raw`, else PrepareText(raw) kept in `own`.
  const PreparedText& Prepared(const PreparedText* prepared, const std::string& raw,
                               std::optional<PreparedText>& own) const;

  struct Excerpt {
    std::string kind, label, text;
  };
  struct Node {
    Branch branch;
    std::vector<std::string> children;  // creation order
    base::TimerId timer = 0;
    std::deque<Excerpt> recent;  // newest at the back, at most kRecentExcerpts
    int64_t records_total = 0;
    bool warned = false;
  };
  struct SessionState {
    // What BranchStore::SessionStamp answers while the cache matches the store: branches
    // loaded or inserted, plus their versions, plus the updates this instance committed.
    int64_t stamp = 0;
    std::vector<std::string> branches;             // top-level branch ids, creation order
    std::vector<std::string> active;               // live branch ids, creation order
    std::deque<base::Clock::TimePoint> creations;  // for the rate limit
  };
  class Txn;
  friend class Txn;

  void CheckOnExecutor() const;
  // Runs `fn` (an operation on `session` returning StatusOr), again after reloading the session
  // when it failed with Aborted (a shared store's row moved on), a bounded number of times.
  template <typename Fn>
  auto Retrying(const SessionKey& session, Fn fn) -> decltype(fn());
  absl::StatusOr<CreateResult> CreateOnce(const SessionKey& session, const CreateRequest& request);
  absl::StatusOr<ReturnResult> ReturnOnce(const SessionKey& session, const ReturnRequest& request);
  absl::StatusOr<ChargeOutcome> ChargeOnce(const SessionKey& session, std::string_view branch_id,
                                           const ChargeRecord& record);
  absl::StatusOr<EndSessionResult> EndSessionOnce(const SessionKey& session,
                                                  std::string_view reason);
  // Loads the session's branches from the store on first use.
  absl::StatusOr<SessionState*> EnsureSession(const SessionKey& session);
  // Finds `id` in `session`; NotFound otherwise (same text for another session's branch).
  absl::StatusOr<Node*> FindNode(const SessionKey& session, std::string_view id);
  void AddNode(Branch branch, SessionState& state);
  void ArmTimer(Node& node);
  // Drops `session`'s in-memory state (timers cancelled, live branches uncounted); the store
  // keeps its branches.
  void ForgetSession(const SessionKey& session);
  void OnDeadline(const std::string& id);
  std::string InnermostActive(const SessionState& state) const;
  // Builds the ≤500-token partial summary of a force-returned branch.
  std::string PartialSummary(const Branch& branch, const std::deque<Excerpt>& recent,
                             int64_t records_total, BranchStatus status,
                             std::string_view reason) const;
  // Short scrubbed one-line excerpt of `text`.
  std::string MakeExcerpt(std::string_view text) const;
  BranchView MakeView(const Node& node) const;
  // Ends live branch `id` inside `txn` with `status` and `reason`: its summary is `summary` or,
  // if absent, the automatic partial summary; its consumption and a record of its return go to
  // its parent, whose reservation is released. Publishes folded/force_returned.
  void FinishInTxn(Txn& txn, const std::string& id, BranchStatus status, std::string reason,
                   std::optional<std::string> summary);
  // Ends every live descendant of `id` (not `id`) deepest first, status failed, `reason`.
  std::vector<std::string> ForceReturnDescendants(Txn& txn, const std::string& id,
                                                  const std::string& reason);
  // Ends `id` and its live descendants because of `status` (timeout, exhaustion, session end).
  absl::Status ForceReturn(const std::string& id, BranchStatus status, std::string reason,
                           std::vector<std::string>* ended);

  FoldingConfig config_;
  RateLimit rate_;
  base::Executor& executor_;
  BranchStore& store_;
  const tokens::TokenCounter& counter_;
  const scrub::Scrubber& scrubber_;
  EventBus* events_;
  OutboxEncoder outbox_encoder_;
  std::unordered_map<std::string, Node> nodes_;
  std::unordered_map<SessionKey, SessionState, SessionKeyHash> sessions_;
  int active_count_ = 0;
  // Timer tasks hold a weak_ptr to this and do nothing once the manager is gone.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace contextd::folding
