// ContextManager: F(.) for one model request. Binds the request to its conversation thread, folds
// the branches that returned (FoldPlan), redacts secrets in the tool results and user text that
// arrive for the first time, repeats every earlier decision byte for byte, and makes the new
// decisions durable (ConversationStore) before the caller forwards the result. What the model
// receives keeps <private> spans; what is stored never holds one (withheld_rewrite.h). Seen from
// the provider each thread only grows: content before the frontier (the messages already forwarded)
// is never rewritten anew, so rule changes and restarts cannot change a prefix already sent.
// Thread-safe: requests of one thread are serialised on its lock; different threads run in
// parallel. The store, scrubber, counter and lookup must be thread-safe and outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "folding/branch_ledger.h"
#include "model/anthropic_request.h"
#include "model/auto_fold.h"
#include "model/branch_view.h"
#include "model/conversation_store.h"
#include "model/fold.h"
#include "model/lessons.h"
#include "model/model_request.h"
#include "model/withheld_rewrite.h"
#include "scrub/scrubber.h"
#include "tokens/token_counter.h"

namespace contextd::model {

// A tool call the model made and its result, as they reached the model (scrubbed); `branch_id`
// is the branch open when it was made ("" = root), `tool` as named in the transcript ("Read").
using ModelToolCall = folding::ToolCallRecord;
// Where the trail keeps a tool result (trail_unfold's scope_id and event).
using TrailRef = folding::TrailRef;

struct ContextManagerOptions {
  // Least recently used threads beyond this are dropped from memory (their state reloads from
  // the store).
  size_t max_threads_in_memory = 64;
  // The last request of each conversation is kept for the next one to take over, while the
  // bodies kept stay within this many bytes (least recently used dropped first; a larger body
  // is not kept).
  size_t max_kept_request_bytes = 256u << 20;
  // model_gateway.auto_fold (needs a ledger to fold anything: the trail keeps what it folds).
  AutoFoldOptions auto_fold;
  // context_folding.branch_view and branch_view_keep_opening: what the model sees while a branch
  // is open (branch_view.h). Decided once per branch: a change applies to branches opened after.
  BranchViewOptions branch_view;
  // memory.session_injection(_tokens): lessons at the start of a task (lessons.h; needs a
  // LessonSource).
  LessonOptions lessons;
};

// What Apply did to one request.
struct AppliedRequest {
  ConversationKey key;
  std::string body;            // what to forward
  std::string open_branch_id;  // innermost branch open at the tail ("" = root)
  size_t open_branch_create_message = 0;
  size_t messages = 0;
  size_t new_messages = 0;          // messages past the frontier
  int folds_applied = 0;            // folds in this request (stored or new)
  int folds_new = 0;                // decided by this request
  std::vector<SkipReason> skipped;  // branches left whole, each reported once
  int redactions_new = 0;           // blocks redacted for the first time
  int64_t tokens_charged = 0;       // charged to the open branch by this request
  bool warned = false;              // a budget warning was added to the tail
  bool exhausted = false;           // the open branch was force-returned by this request
  int64_t tokens_before = 0;        // messages as the client sent them
  int64_t tokens_after = 0;         // as forwarded
  bool fallback = false;            // the rewrite was not valid: the original body is forwarded
  int auto_folds_applied = 0;       // tool results sent as auto-fold handles (stored or new)
  int auto_folds_new = 0;           // folded by this request's step
  int64_t auto_fold_tokens = 0;     // tokens of the results this request's step folded
  int thinking_removed = 0;         // thinking blocks this request's step removed (0036)
  int64_t thinking_removed_tokens = 0;
  // The view the open branch got (BranchViewName; "summary" for a summary request in an isolated
  // branch: the parent's view, open branches folded as they stand), "" when no branch is open.
  std::string view;
  int64_t view_tokens_spared = 0;  // what the isolated view left out, less its opening turn
  // What this request's auto-fold step did (AutoFoldOutcomeName); "" when auto-fold was off.
  std::string auto_fold_outcome;
  // The memory items this request appended to its user turn (lessons.h; decided now), and the
  // tokens of their text.
  std::vector<std::string> lessons_injected;
  int64_t lessons_tokens = 0;
  // Set when this request decided nothing new and only moved the frontier: that write is left
  // to SaveFrontier, after the request is on its way (see there).
  std::optional<ConversationUpdate> deferred;
  uint64_t sequence = 0;  // of this request in its thread
  // Which in-memory thread this request was applied in (SaveFrontier finds it again by it). Not
  // always ThreadId(key): a thread stored before its client's session header was read keeps
  // the key it was stored under.
  std::string thread_id;
};

class ContextManager {
 public:
  // `ledger` (may be null: no branch is then known, charged or recorded, and nothing is
  // auto-folded) looks up the branches a conversation names within the request's tenant, charges
  // each open branch with the tokens of its span (what the model received inside it since the
  // last request: built-in tool calls and results, the model's own turns), records the calls
  // that completed in a request in the trail (each in its branch's scope, or the root scope of
  // the session of the conversation's anchor branch, else of a session named after the
  // conversation), and keeps in the trail the results auto-fold folds.
  // `lessons` (may be null: none are offered) is the bank lessons.h asks at a new task.
  ContextManager(ContextManagerOptions options, ConversationStore& store,
                 const scrub::Scrubber& scrubber, const tokens::TokenCounter& counter,
                 folding::BranchLedger* ledger, LessonSource* lessons = nullptr);

  // Parses a request body of `api` (its row's adapter, model_api.h) of `tenant`'s conversation
  // `conversation_id` (the client's session id; "" when absent). For an API that takes over
  // (Messages), what the conversation's last applied request held byte for byte is taken over, so
  // that a resent history is not read again. InvalidArgument as the adapter's Parse.
  absl::StatusOr<std::shared_ptr<ModelRequest>> Parse(ModelApi api, const std::string& tenant,
                                                      const std::string& conversation_id,
                                                      std::string body);

  // Applies F(.) to `request` for `tenant`. `conversation_id`: the client's session id header
  // ("" when absent). `auto_fold`: this request's choice (the x-contextd-auto-fold header),
  // nullopt for options.auto_fold.enabled; stored auto-fold decisions are repeated either way.
  // `project`: the request's (AppliedRequest::key.project; where its trail events go).
  // `lessons`: false when the request turned lessons off (the x-contextd-memory header); stored
  // lesson decisions are repeated either way.
  // Errors only from the store (Internal/Unavailable): the request must then not be forwarded,
  // since its decisions could not be kept.
  // The request is kept as its conversation's last one (Parse takes over from it): the caller
  // must not use it after this returns.
  absl::StatusOr<AppliedRequest> Apply(const std::string& tenant,
                                       const std::string& conversation_id,
                                       const std::shared_ptr<ModelRequest>& request, int64_t now_ms,
                                       std::optional<bool> auto_fold = {},
                                       const std::string& project = "default", bool lessons = true);

  // Writes the frontier `applied` left to be written (AppliedRequest::deferred), unless a later
  // request of the thread came first (it writes its own). Call it once the request is
  // forwarded: only the frontier waits, never a decision, so a crash in between can only make
  // the next request decide that tail again, under the same rules unless they changed in the
  // same instant. A failure is logged and the thread reloaded from the store.
  void SaveFrontier(const AppliedRequest& applied);

 private:
  struct ThreadState {
    std::mutex mu;
    bool loaded = false;
    std::vector<std::string> frontier;
    std::unordered_map<std::string, std::string> blocks;  // RewriteKind::kBlock
    // RewriteKind::kBlock decisions stored without their text (blocks holding <private> text),
    // until a request holding the block rebuilds them into `blocks`.
    std::unordered_map<std::string, WithheldRewrite> withheld;
    std::unordered_map<std::string, std::string> appends;     // RewriteKind::kAppend
    std::map<std::string, FoldRecord> folds;                  // RewriteKind::kFold
    std::unordered_map<std::string, std::string> auto_folds;  // RewriteKind::kAutoFold
    std::unordered_set<std::string> dropped_thinking;         // RewriteKind::kDropThinking
    std::map<std::string, ViewRecord> views;                  // RewriteKind::kView
    std::unordered_map<std::string, LessonRecord> lessons;    // RewriteKind::kLessons
    // The openings of views whose text held a <private> span (ViewRecord::opening empty), built
    // again in memory once per thread, by create call id: never stored.
    std::unordered_map<std::string, std::string> view_openings;
    std::unordered_map<std::string, int64_t> tokens;          // block key -> tokens
    std::unordered_map<std::string, int64_t> message_tokens;  // message key -> tokens
    // Create call ids of branches whose skip was reported (FoldPlan::skipped): left whole without
    // a lookup on later requests, and reported once.
    std::set<std::string> settled;
    uint64_t sequence = 0;  // requests applied
    // The conversation its state is stored under when that is not the request's: "m:<first
    // message>", for a thread stored before contextd read its client's session header (0033).
    std::string stored_as;
  };
  struct Entry {
    std::shared_ptr<ThreadState> state;
    std::list<std::string>::iterator lru;
  };
  std::shared_ptr<ThreadState> Thread(const std::string& id);
  static std::string ThreadId(const ConversationKey& key);
  // Forgets what the thread decided in memory, so that its next request reloads the store.
  static void Forget(ThreadState& state);
  void RememberLast(const std::string& id, std::shared_ptr<ModelRequest> request);
  // Loads the stored state of `key` into `state`; true if there was one.
  absl::StatusOr<bool> Load(const ConversationKey& key, ThreadState& state);
  // Token counts, cached per thread by key.
  int64_t Tokens(ThreadState& state, const ModelRequest& request, size_t m, size_t b) const;
  int64_t MessageTokens(ThreadState& state, const ModelRequest& request, size_t m) const;
  int64_t TextTokens(ThreadState& state, const std::string& text) const;
  // Hands the calls completed by the new messages (past `old`) to the recorder.
  // `scrubbed`: the new blocks this request scrubbed, by (message, block), as scrubbed text.
  void RecordCalls(const ConversationKey& key, const ModelRequest& request, size_t old,
                   const FoldPlan& folds, ThreadState& state,
                   const std::map<std::pair<size_t, size_t>, std::string>& scrubbed);
  // The block (message m, block b) a withheld decision stands for, rebuilt from the original
  // the client resent: by its stored redactions, else by scrubbing it again; a rebuild whose
  // digest differs from the stored one (the rules changed, and the redactions could not be
  // stored) is used anyway, and logged.
  std::string Rebuild(const ModelRequest& request, size_t m, size_t b,
                      const WithheldRewrite& decision) const;
  // Charges the open branch with the new part of its span; may append a warning decision or
  // force-return the branch (then `folds` is planned again, folding it at the tail).
  // Runs an auto-fold step over `request` (see auto_fold.h): archives the picks in the trail,
  // adds their handles to `plan` and their decisions to `update`. `first_message`: one past the
  // last message holding a stored auto-fold decision.
  void RunAutoFold(const ModelRequest& request, const FoldPlan& folds,
                   const std::vector<bool>& removed, size_t first_message, ThreadState& state,
                   RenderPlan& plan, ConversationUpdate& update, AppliedRequest& applied);
  // Removes the thinking blocks of `drops` that follow message `after` (the first result the step
  // folded): stores each decision, leaves the block out of `plan`, counts it in `applied`.
  void DropThinking(const std::vector<AutoFoldDrop>& drops, size_t after, const Transcript& t,
                    ThreadState& state, RenderPlan& plan, ConversationUpdate& update,
                    AppliedRequest& applied);
  // Counts and logs the skips of `folds` not reported before (AppliedRequest::skipped).
  void ReportSkips(const ConversationKey& key, const FoldPlan& folds, ThreadState& state,
                   AppliedRequest& applied);
  // Branch `id` of `tenant`, through the ledger (nullopt without one).
  std::optional<BranchFacts> Find(const std::string& tenant, const std::string& id) const;
  // The trail session the root events of `key`'s calls belong to: that of `anchor_branch_id`
  // (a branch of the conversation, may be empty), else "model:<conversation>".
  folding::SessionKey SessionOf(const ConversationKey& key,
                                const std::string& anchor_branch_id) const;
  // Charges `tokens` to open branch `id` of `tenant` (`label` names the tools, `excerpt` the
  // newest result: for a partial summary); nullopt when it cannot be charged (unknown, ended,
  // another tenant's, a failed charge: logged).
  std::optional<folding::BranchCharge> ChargeBranch(const std::string& tenant,
                                                    const std::string& id, const std::string& label,
                                                    const std::string& excerpt, int64_t tokens);
  // The view of `folds`' open branches (branch_view.h): decides the innermost one's (a record
  // added to `update`) unless stored, then sets plan.view from the innermost branch whose view is
  // isolated (or, for a summary request, folds them as they stand), and applied.view. `plan`
  // holds the request's folds.
  void ApplyView(const std::string& tenant, const ModelRequest& request, const FoldPlan& folds,
                 ThreadState& state, RenderPlan& plan, ConversationUpdate& update,
                 AppliedRequest& applied) const;
  // Decides the view of `branch` (stored in `state` and `update`).
  void DecideView(const ModelRequest& request, const OpenBranch& branch, ThreadState& state,
                  const RenderPlan& plan, ConversationUpdate& update) const;
  // Where `record`'s view of `branch` goes in this request; nullopt without the create's answer.
  std::optional<ViewEdit> ViewOf(const ModelRequest& request, const OpenBranch& branch,
                                 const ViewRecord& record, ThreadState& state) const;
  // A summary request (IsSummaryRequest) in an isolated branch: `plan` folds every open branch
  // as it stands (OpenBranchText), so the summary covers the parent's work; nothing is stored.
  void FoldForSummary(const std::string& tenant, const ModelRequest& request, const FoldPlan& folds,
                      const ThreadState& state, RenderPlan& plan) const;
  // After a fallback (the request forwarded as sent): a view decided by this request becomes
  // inherited, since the model now answers on the parent's history.
  static void KeepInheritedView(ThreadState& state, ConversationUpdate& update,
                                AppliedRequest& applied);
  // The text of the user turn that opens the view of `branch`, whose create's calls message
  // `answer` answers (scrubbed; the notices contextd appended to the answer ride on).
  std::string BuildOpening(const ModelRequest& request, const OpenBranch& branch, size_t answer,
                           const ThreadState& state) const;
  // What messages [from, to) weigh as `plan` renders them (folds, appends; not auto-fold).
  int64_t PlanTokens(ThreadState& state, const ModelRequest& request, const RenderPlan& plan,
                     size_t from, size_t to) const;
  // Lessons decided by a request, told to the source once they are durable.
  struct NewLessons {
    std::string message_key;  // the user turn they were appended to
    LessonQuery query;
    LessonPick pick;
  };
  // At a new user task: asks the source for lessons and appends them to the turn (a decision in
  // `state` and `update`, the block in `plan`); nullopt when none were added. Defined in
  // context_manager_lessons.cc.
  std::optional<NewLessons> OfferLessons(const ConversationKey& key, const ModelRequest& request,
                                         size_t old, const FoldPlan& folds,
                                         const std::vector<bool>& removed, ThreadState& state,
                                         RenderPlan& plan, ConversationUpdate& update,
                                         AppliedRequest& applied);
  // After a fallback (the request forwarded as sent): lessons this request decided were not sent,
  // so they are not kept either.
  static void DropNewLessons(ThreadState& state, ConversationUpdate& update,
                             AppliedRequest& applied, std::optional<NewLessons>& lessons);
  // After the request's decisions are durable: tells the source, records the injection in the
  // trail, and remembers its items for the conversation's other threads.
  void NoteLessons(const ConversationKey& key, const NewLessons& lessons);
  // Items already injected into `key`'s conversation: the thread's, and those other threads of
  // it noted in memory.
  std::set<std::string> InjectedInConversation(const ConversationKey& key,
                                               const ThreadState& state) const;
  // A stored lesson decision for message `m` (if any) joined to the appends `plan` holds for it.
  static void RenderLessons(const ThreadState& state, const Message& message, size_t m,
                            RenderPlan& plan);
  void ChargeSpan(const std::string& tenant, const ModelRequest& request, size_t old,
                  ThreadState& state, FoldPlan& folds, ConversationUpdate& update,
                  AppliedRequest& applied);

  const ContextManagerOptions options_;
  ConversationStore& store_;
  const scrub::Scrubber& scrubber_;
  const tokens::TokenCounter& counter_;
  folding::BranchLedger* const ledger_;
  LessonSource* const lessons_;
  mutable std::mutex mu_;  // guards threads_, lru_ and conversation_lessons_
  std::unordered_map<std::string, Entry> threads_;
  std::list<std::string> lru_;  // most recent first
  // The last applied request of each conversation (api + tenant + id), for Parse; taken out
  // while a Parse uses it. Bounded by max_threads_in_memory and max_kept_request_bytes.
  struct Last {
    std::shared_ptr<ModelRequest> request;
    std::list<std::string>::iterator lru;
  };
  std::unordered_map<std::string, Last> lasts_;
  std::list<std::string> lasts_lru_;
  size_t lasts_bytes_ = 0;  // body bytes of the requests in lasts_
  // Items injected per conversation (tenant + "\n" + conversation) in this process, so that a
  // conversation's other threads (a subagent's) are not given them again. Bounded: cleared
  // whole past kMaxConversationLessons conversations.
  std::unordered_map<std::string, std::set<std::string>> conversation_lessons_;
};

}  // namespace contextd::model
