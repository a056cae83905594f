// Trail: the foldable trail of every session, over a TrailStore. It opens a root scope per
// session, a scope per branch (server/ feeds it the folding engine's branch events), records
// tool calls and results in the scope they belong to (the gateway calls RecordToolCall), folds
// scopes when their branch returns, groups calls made outside any branch into auto-scopes that
// fold by themselves (when enabled), and builds the folded view the model should see.
// Every text handed in must already be scrubbed by the caller (the server scrubs before calling);
// the trail stores it with TrailOptions::withhold applied (private spans withheld) and nothing
// else changed. One root per session in the store, whichever process opened it (decision 0028).
// Thread-safety: none of its own; every method runs on the engine executor, like the
// BranchManager.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/clock.h"
#include "trail/auto_scope.h"
#include "trail/trail_store.h"

namespace contextd::trail {

// Default and largest page of trail_unfold.
inline constexpr int64_t kDefaultUnfoldLimit = 20;
inline constexpr int64_t kMaxUnfoldLimit = 200;

// What RecordToolCall wrote.
struct RecordedCall {
  std::string scope_id;  // the scope the call was recorded in
  int64_t call_seq = 0;
  int64_t result_seq = 0;
};

// The session as the model should see it.
struct FoldedView {
  std::string root_scope_id;
  // One entry per line group: open scopes with their events' payloads in full, folded scopes as
  // one summary line, scopes deeper than the requested depth as one line.
  std::string text;
  int64_t tokens_unfolded = 0;  // every event of every scope of the session
  int64_t tokens_folded = 0;    // open scopes' events + folded scopes' summaries
  int64_t scopes_open = 0;      // branch scopes only
  int64_t scopes_folded = 0;
  int64_t auto_scopes_open = 0;  // auto-scopes
  int64_t auto_scopes_folded = 0;
  int64_t events = 0;
};

struct TrailOptions {
  // trail.auto_scope_upstreams: RecordUpstreamCall groups consecutive calls to one upstream
  // outside any branch into an auto-scope, folded by itself (see RecordUpstreamCall).
  bool auto_scope_upstreams = false;
  // Counts auto-scope summaries (the server's token counter). Null: whitespace-separated words.
  CountTokensFn count_tokens;
  // Applied to every text the trail stores (event labels and payloads, scope descriptions and
  // summaries) before it reaches the TrailStore: the server passes scrub::WithholdPrivate, so
  // that <private> spans are never stored. Token counts are stored as the caller charged them.
  // Must be idempotent. Null: texts are stored as given.
  std::function<std::string(std::string_view)> withhold;
  // Session ids that name a process rather than a conversation (the server passes "stdio", the
  // id of every stdio session): for them each Trail opens a root of its own (TrailStore::
  // OpenScope), so that each run of a stdio server has its own trail. Every other session has
  // one root in the store (TrailStore::OpenSessionRoot), whichever process or run opened it.
  std::vector<std::string> process_sessions;
};

class Trail {
 public:
  // `store` and `clock` must outlive the trail.
  Trail(TrailStore& store, const base::Clock& clock, TrailOptions options = {});
  Trail(const Trail&) = delete;
  Trail& operator=(const Trail&) = delete;

  // The id of the session's root scope: the one the store holds for its tenant, project and
  // session id, opened ("ses_" + a time-ordered id) if there is none yet. Every process sharing
  // the store, and every run of this one, gets the same root, so a session served by several
  // instances, or resumed after a restart (a model-gateway conversation), continues one tree.
  // TrailOptions::process_sessions are the exception: a root per Trail. Cached while the
  // session is served here. Unavailable/Internal from the store.
  absl::StatusOr<std::string> RootScope(const SessionRef& session);

  // A branch was created: opens scope `branch_id` under `parent_branch_id` (or the session root
  // if empty) with `description`, and records branch_created (payload: description and prompt)
  // in the parent scope. NotFound if the parent scope is unknown; AlreadyExists if the scope is.
  absl::Status OnBranchCreated(const SessionRef& session, std::string_view branch_id,
                               std::string_view parent_branch_id, std::string_view description,
                               std::string_view prompt, int64_t prompt_tokens);
  // A branch crossed its warning threshold: records a warning event in its scope.
  absl::Status OnBranchWarning(std::string_view branch_id, std::string_view text);
  // A branch ended: records branch_returned (`forced` false) or force_return (payload `reason`
  // and the summary) in its scope, then folds the scope with `summary`. NotFound for an unknown
  // scope; an already folded scope is left as it is (OK).
  absl::Status OnBranchFolded(std::string_view branch_id, std::string_view summary,
                              int64_t summary_tokens, bool forced, std::string_view reason);

  // For the gateway: records one proxied tool call as a tool_call event (payload
  // `arguments_text`, `tokens_args`) and a tool_result event (payload `result_text`,
  // `tokens_result`, `is_error`) in scope `scope_id` (a branch id), or in the session's root
  // scope if `scope_id` is empty. One durable transaction. NotFound if the scope is unknown or
  // belongs to another session.
  absl::StatusOr<RecordedCall> RecordToolCall(const SessionRef& session, std::string_view scope_id,
                                              std::string_view tool,
                                              std::string_view arguments_text,
                                              std::string_view result_text, int64_t tokens_args,
                                              int64_t tokens_result, bool is_error);

  // For the model gateway's auto-fold: where the trail keeps a tool result that is about to be
  // folded out of the model's context. The newest tool_result event of the session whose payload
  // is `result_text` (as stored: withheld) when there is one (the call was recorded when its
  // result arrived); otherwise RecordToolCall(...) now. Errors as RecordToolCall's.
  absl::StatusOr<RecordedCall> FindOrRecordToolCall(
      const SessionRef& session, std::string_view scope_id, std::string_view tool,
      std::string_view arguments_text, std::string_view result_text, int64_t tokens_args,
      int64_t tokens_result, bool is_error);

  // For the gateway: one proxied call made outside any branch, to upstream `upstream` (`tool`:
  // what RecordToolCall records as the label, "<upstream>__<tool>" or an exposed resource uri).
  // Without auto_scope_upstreams: RecordToolCall in the session root. With it: the call goes to
  // the session's open auto-scope if that is for `upstream`; otherwise the open auto-scope (of
  // another upstream) is folded first, and a new one is opened under the root (id "auto_" +
  // a time-ordered id, description "upstream <upstream>", an auto_scope_opened event in the root).
  // NotFound/Unavailable/Internal from the store; the call is then not recorded.
  absl::StatusOr<RecordedCall> RecordUpstreamCall(const SessionRef& session,
                                                  std::string_view upstream, std::string_view tool,
                                                  std::string_view arguments_text,
                                                  std::string_view result_text, int64_t tokens_args,
                                                  int64_t tokens_result, bool is_error);
  // Folds the session's open auto-scope, if any, with its structural summary (AutoScopeDigest;
  // bounds in auto_scope.h). OK when there is none or when it was already folded (by another
  // process's recovery). Unavailable/Internal from the store (it stays open then). On a shared
  // store (TrailStore::shared) with auto_scope_upstreams, the session's open auto-scope is read
  // from the store first (here and in RecordUpstreamCall): one another instance opened is
  // adopted, one it folded is forgotten, and the digest is rebuilt from the recorded events
  // when another instance appended to it.
  absl::Status FoldAutoScope(const SessionRef& session);
  // The id of the session's open auto-scope, or "" (tests, status).
  std::string OpenAutoScope(const SessionRef& session) const;
  // Recovery, at start before any session records or right after ForgetCachedScopes (when this
  // trail tracks no open auto-scope): folds every auto-scope the store holds open
  // (left by a process that crashed), whatever auto_scope_upstreams says, with a summary built
  // from its recorded events. Returns how many it folded. Unavailable/Internal from the store.
  absl::StatusOr<int64_t> RecoverAutoScopes();

  // The folded view of the session. `depth` < 0: unlimited; otherwise scopes nested deeper than
  // `depth` levels below the root are shown as one line (the token totals do not change).
  absl::StatusOr<FoldedView> View(const SessionRef& session, int depth);
  // The folded view of the session rooted at `root_scope_id` (any session, for the CLI and
  // resources: callers check ownership). NotFound if there is no such root.
  absl::StatusOr<FoldedView> ViewRoot(std::string_view root_scope_id, int depth);

  // A page of scope `scope_id`'s events, from any session of `session`'s tenant and project.
  // NotFound otherwise; InvalidArgument for a negative offset or a limit outside
  // 1..kMaxUnfoldLimit.
  absl::StatusOr<EventPage> Unfold(const SessionRef& session, std::string_view scope_id,
                                   int64_t offset, int64_t limit);
  // Event `seq` of scope `scope_id` (from any session of `session`'s tenant and project), with
  // the tool_call event it answers first when it is a tool_result recorded with its call.
  // NotFound when the scope is not the session's tenant and project's or holds no such event.
  absl::StatusOr<std::vector<Event>> UnfoldEvent(const SessionRef& session,
                                                 std::string_view scope_id, int64_t seq);
  // Scope `scope_id` if it belongs to `session`'s tenant and project; NotFound otherwise.
  absl::StatusOr<Scope> GetScope(const SessionRef& session, std::string_view scope_id);

  // Full-text search over descriptions and summaries of `session`'s tenant and project.
  absl::StatusOr<std::vector<SearchHit>> Search(const SessionRef& session, std::string_view query,
                                                int64_t limit);

  // The session ended: folds its open auto-scope (FoldAutoScope) and forgets it
  // (ReleaseSession; its trail stays in the store). The session is forgotten even when the fold
  // fails, whose status is returned (recovery at the next start folds what stayed open).
  absl::Status EndSession(const SessionRef& session);
  // The session continues elsewhere (another instance sharing the store): forgets its root
  // scope id, open auto-scope and scope owners without folding anything. Its next use here
  // finds them in the store again.
  void ReleaseSession(const SessionRef& session);
  // After a retention sweep (here or on another instance): forgets (as ReleaseSession does)
  // every cached session whose root scope is no longer in the store, so that its next use opens
  // a new root instead of appending to a deleted one. One read per cached session; returns how many
  // were forgotten. Unavailable/Internal from the store (nothing is forgotten then).
  absl::StatusOr<int> ForgetSweptSessions();

  // Forgets every cached root scope id, scope owner and open auto-scope, so that the trail
  // follows the store again after it lost writes (a failed group commit): a session's next event
  // finds its root in the store again (or opens it, if its opening was lost). Auto-scopes still
  // open in the store stay so until RecoverAutoScopes (or, on a shared store, until the
  // session's next upstream call or contextd tool adopts them).
  void ForgetCachedScopes();

  bool auto_scope_upstreams() const { return options_.auto_scope_upstreams; }
  TrailStore& store() { return store_; }

 private:
  // A session's open auto-scope.
  struct OpenAuto {
    std::string scope_id;
    AutoScopeDigest digest;
    int64_t events = 0;  // events the digest holds (the scope's own: 2 per call)
  };
  bool IsProcessSession(const SessionRef& session) const;
  // Drops everything cached of the session whose SessionRef::ToString() is `key`.
  void Forget(const std::string& key);
  // Shared store and auto_scope_upstreams only (else OK at once): makes autos_[session] what the
  // store holds open for the session (see FoldAutoScope); folds all but the newest when two
  // processes opened one each. Unavailable/Internal from the store.
  absl::Status SyncAutoScope(const SessionRef& session);
  // Folds the auto-scope autos_ holds for the session, if any (FoldAutoScope without the sync).
  absl::Status FoldCachedAuto(const SessionRef& session);
  // The digest of auto-scope `scope`, rebuilt from its recorded events.
  absl::StatusOr<AutoScopeDigest> DigestOf(const Scope& scope);
  // Folds auto-scope `scope_id` with `digest`'s summary (already folded: OK).
  absl::Status FoldAuto(const std::string& scope_id, const AutoScopeDigest& digest);
  int64_t CountTokens(std::string_view text) const;
  // `text` as the store may keep it (options_.withhold applied).
  std::string Kept(std::string_view text) const;
  // Kept() of every event's label and payload.
  void KeepEvents(std::vector<NewEvent>& events) const;
  // The only ways texts reach store_: its writes, with every text passed through Kept().
  absl::Status WriteScope(Scope scope);
  absl::StatusOr<std::vector<int64_t>> WriteEvents(std::vector<NewEvent> events);
  absl::Status WriteScopeWithEvents(Scope scope, std::vector<NewEvent> events);
  absl::Status WriteFold(std::string_view id, std::string_view summary, int64_t summary_tokens,
                         int64_t at_ms);
  absl::Status WriteFoldAfterEvents(std::vector<NewEvent> events, std::string_view id,
                                    std::string_view summary, int64_t summary_tokens,
                                    int64_t at_ms);

  TrailStore& store_;
  const base::Clock& clock_;
  const TrailOptions options_;
  std::unordered_map<std::string, OpenAuto> autos_;     // SessionRef::ToString() -> open auto-scope
  std::unordered_map<std::string, std::string> roots_;  // SessionRef::ToString() -> root id
  // Owners of the scopes still open that this process opened, so that RecordToolCall checks
  // ownership without a read (unknown scopes fall back to the store). An owner never changes, so
  // another process's writes cannot make an entry wrong; one it folded meanwhile is still
  // listed here (OnBranchFolded then finds it folded in the store; appending stays allowed).
  std::unordered_map<std::string, SessionRef> open_scopes_;
};

// Renders `view`'s header and totals plus its text (what context_view shows).
std::string FoldedViewText(const FoldedView& view);

}  // namespace contextd::trail
