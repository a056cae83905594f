// TrailStore: the durable storage of the foldable trail, as an interface (store/ implements it
// with SQLite). The trail is a tree of scopes per session: the session is the root scope, each
// branch a scope under its parent; events are the leaves. Payloads are content-addressed blobs
// (SHA-256) stored once. Every write is atomic and durable against a process crash when it
// returns OK, or, where the server groups commits, once that group commits (no reply is sent
// before then: server/group_commit.h). Implementations are thread-safe. All text handed in must
// already be scrubbed and have its private spans withheld (Trail applies TrailOptions::withhold to
// every text it writes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace contextd::trail {

// Who owns a trail: the same three parts as the folding engine's SessionKey.
struct SessionRef {
  std::string tenant = "local";
  std::string project = "default";
  std::string session_id;
  bool operator==(const SessionRef&) const = default;
  // "tenant/project/session_id" (map keys, logs).
  std::string ToString() const;
};

// What a scope stands for: the session root, a branch (its id is the branch id), or an
// auto-scope ("auto_" + random hex: consecutive calls to one upstream outside any branch, see
// Trail::RecordUpstreamCall; it folds by itself).
enum class ScopeKind { kSession, kBranch, kAuto };
// An open scope shows its events; a folded one is replaced by its summary.
enum class ScopeStatus { kOpen, kFolded };

// "session" / "branch" / "auto"; "open" / "folded".
const char* ScopeKindName(ScopeKind kind);
const char* ScopeStatusName(ScopeStatus status);
// Inverse of ScopeKindName; InvalidArgument naming `name` otherwise.
absl::StatusOr<ScopeKind> ParseScopeKind(std::string_view name);

// The leaves of the trail.
enum class EventKind {
  kToolCall,         // "tool_call": a tool's arguments (label: tool name)
  kToolResult,       // "tool_result": a tool's result (label: tool name)
  kBranchCreated,    // "branch_created": in the parent scope (label: the child's scope id)
  kBranchReturned,   // "branch_returned": in the branch's own scope, payload the summary
  kWarning,          // "warning": the branch crossed 80% of its budget
  kForceReturn,      // "force_return": in the branch's own scope, payload reason + summary
  kAutoScopeOpened,  // "auto_scope_opened": in the session root (label: the auto-scope's id,
                     // payload: its description, 0 tokens), placing it among the root's events
};
// The storage/wire name of `kind` (a static string).
const char* EventKindName(EventKind kind);
// Inverse of EventKindName; InvalidArgument naming `name` otherwise.
absl::StatusOr<EventKind> ParseEventKind(std::string_view name);

struct Scope {
  std::string id;  // "ses_..." for a session root, the branch id for a branch, "auto_..."
  SessionRef session;
  ScopeKind kind = ScopeKind::kBranch;
  std::string parent_id;  // "" for a session root; the root's id for a top-level branch or an
                          // auto-scope
  std::string description;
  ScopeStatus status = ScopeStatus::kOpen;
  std::string summary;         // set when folded
  int64_t summary_tokens = 0;  // tokens of the summary
  int64_t created_at_ms = 0;
  int64_t folded_at_ms = 0;  // 0 while open
  // Filled by reads: the scope's own events (not its children's).
  int64_t event_count = 0;
  int64_t event_tokens = 0;
};

// An event to append. `payload` is stored as a blob keyed by its SHA-256.
struct NewEvent {
  std::string scope_id;
  EventKind kind = EventKind::kToolCall;
  std::string label;
  std::string payload;  // already scrubbed
  int64_t tokens = 0;   // the payload's token count, as charged
  bool is_error = false;
  int64_t at_ms = 0;
};

// A stored event.
struct Event {
  int64_t seq = 0;  // increasing across the whole trail
  std::string scope_id;
  EventKind kind = EventKind::kToolCall;
  std::string label;
  std::string payload;
  std::string payload_hash;  // lowercase hex SHA-256 of payload
  int64_t tokens = 0;
  bool is_error = false;
  int64_t at_ms = 0;
};

// One page of a scope's events and how many it has in all.
struct EventPage {
  std::vector<Event> events;
  int64_t total = 0;
};

// A session known to the trail.
struct SessionEntry {
  std::string root_scope_id;
  SessionRef session;
  int64_t created_at_ms = 0;
  int64_t scope_count = 0;   // including the root
  int64_t event_tokens = 0;  // sum over every scope of the session
};

// One full-text match.
struct SearchHit {
  Scope scope;
  std::string snippet;  // the matching part, terms in [brackets]
};

class TrailStore {
 public:
  virtual ~TrailStore() = default;
  // Inserts an open scope (folded fields ignored). AlreadyExists if the id is taken; NotFound if
  // `parent_id` is set and unknown; Unavailable/Internal if the database fails. A session scope
  // inserted here is a root of its own, not the one OpenSessionRoot finds (the server opens
  // those for sessions that name a process, not a conversation: TrailOptions::process_sessions).
  virtual absl::Status OpenScope(const Scope& scope) = 0;
  // The id of the root scope of `root.session` (tenant, project and session id): the session's
  // root if the store holds one, else `root.id` after inserting `root` as it. One root per
  // session for every process sharing the store: of concurrent calls for one session, all get
  // the id of the one inserted first (a unique index and an insert-or-get). InvalidArgument
  // unless `root` is a session scope without a parent; AlreadyExists if `root.id` is taken by
  // another scope; Unavailable/Internal if the database fails.
  virtual absl::StatusOr<std::string> OpenSessionRoot(const Scope& root) = 0;
  // Appends `events` in order, in one transaction; returns their sequence numbers. NotFound if a
  // scope is unknown (nothing is written). Identical payloads share one blob.
  virtual absl::StatusOr<std::vector<int64_t>> AppendEvents(
      const std::vector<NewEvent>& events) = 0;
  // Marks scope `id` folded with `summary`. NotFound if unknown; FailedPrecondition if already
  // folded.
  virtual absl::Status FoldScope(std::string_view id, std::string_view summary,
                                 int64_t summary_tokens, int64_t at_ms) = 0;
  // OpenScope(scope), then AppendEvents(events) (to this scope or others), as one write: both
  // or neither. Errors as theirs.
  virtual absl::Status OpenScopeWithEvents(const Scope& scope,
                                           const std::vector<NewEvent>& events) = 0;
  // AppendEvents(events), then FoldScope(id, ...), as one write: both or neither. Errors as
  // theirs.
  virtual absl::Status FoldScopeAfterEvents(const std::vector<NewEvent>& events,
                                            std::string_view id, std::string_view summary,
                                            int64_t summary_tokens, int64_t at_ms) = 0;
  // The scope with its event totals, or nullopt.
  virtual absl::StatusOr<std::optional<Scope>> GetScope(std::string_view id) = 0;
  // Events `offset`..`offset+limit-1` of scope `id` (oldest first) and the scope's total.
  virtual absl::StatusOr<EventPage> ListEvents(std::string_view scope_id, int64_t offset,
                                               int64_t limit) = 0;
  // The event with sequence number `seq`, or nullopt.
  virtual absl::StatusOr<std::optional<Event>> GetEvent(int64_t seq) = 0;
  // The newest event of scope `scope_id` older than `seq` (a tool_result's call), or nullopt.
  // Sequence numbers are increasing, not consecutive per scope: writers sharing a database
  // interleave theirs.
  virtual absl::StatusOr<std::optional<Event>> PreviousEvent(std::string_view scope_id,
                                                             int64_t seq) = 0;
  // The newest event of `kind` whose payload hashes to `payload_hash` (ContentHash) in any scope
  // of the session rooted at `root_scope_id`, or nullopt.
  virtual absl::StatusOr<std::optional<Event>> FindEvent(std::string_view root_scope_id,
                                                         std::string_view payload_hash,
                                                         EventKind kind) = 0;
  // Sessions, newest first; an empty tenant lists every tenant's.
  virtual absl::StatusOr<std::vector<SessionEntry>> ListSessions(std::string_view tenant,
                                                                 int64_t limit) = 0;
  // Every scope of the session rooted at `root_scope_id` (root first, then creation order).
  virtual absl::StatusOr<std::vector<Scope>> ListScopes(std::string_view root_scope_id) = 0;
  // Open scopes of `kind` in every session of every tenant, oldest first, at most `limit` (restart
  // recovery: auto-scopes a crashed process left open).
  virtual absl::StatusOr<std::vector<Scope>> ListOpenScopes(ScopeKind kind, int64_t limit) = 0;
  // Open scopes of `kind` of the session rooted at `root_scope_id`, oldest first (the open
  // auto-scope of a session another process may have opened).
  virtual absl::StatusOr<std::vector<Scope>> ListOpenScopesOf(std::string_view root_scope_id,
                                                              ScopeKind kind) = 0;
  // Full-text search over scope descriptions and summaries of one tenant and project, best
  // first. Any word may match (scopes matching more words rank higher); a trailing '*' matches a
  // prefix; FTS syntax is never interpreted. InvalidArgument if the query holds no word.
  virtual absl::StatusOr<std::vector<SearchHit>> Search(std::string_view tenant,
                                                        std::string_view project,
                                                        std::string_view query, int64_t limit) = 0;
  // True when other processes may write the same store at the same time (PostgreSQL): the Trail
  // then checks what it caches about a session's open auto-scope against the store.
  virtual bool shared() const { return false; }
};

}  // namespace contextd::trail
