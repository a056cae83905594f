// BranchManager's operations: sessions, create, return, charge, status and the end of a session.
// How branches end otherwise (force-returns, deadlines) and come back after a restart is in
// branch_endings.cc; the transaction both use is in internal/branch_txn.h.
#include "folding/branch_manager.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/ids.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "folding/internal/branch_txn.h"
#include "folding/internal/sv.h"
#include "folding/text.h"
#include "scrub/private_spans.h"

namespace contextd::folding {
namespace {

using internal::CrossesWarning;
using internal::EventFor;
using internal::kRecentExcerpts;
using internal::Sv;

absl::Status NotFound(std::string_view id) {
  return absl::NotFoundError(absl::StrCat("branch ", Sv(id), " not found"));
}

int64_t ToMillis(base::Clock::Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace

BranchManager::BranchManager(FoldingConfig config, base::Executor& executor, BranchStore& store,
                             const tokens::TokenCounter& counter, const scrub::Scrubber& scrubber,
                             EventBus* events)
    : config_(std::move(config)),
      executor_(executor),
      store_(store),
      counter_(counter),
      scrubber_(scrubber),
      events_(events) {
  absl::Status valid = config_.Validate();
  if (!valid.ok()) {
    std::fprintf(stderr, "BranchManager: invalid config: %s\n", valid.ToString().c_str());
    std::abort();
  }
  rate_ = *ParseRateLimit(config_.branch_creation_rate_limit);
}

BranchManager::~BranchManager() {
  for (auto& [id, node] : nodes_) {
    if (node.timer != 0) executor_.CancelTimer(node.timer);
  }
}

void BranchManager::CheckOnExecutor() const {
  if (!executor_.InExecutor()) {
    std::fprintf(stderr, "BranchManager called off its executor\n");
    std::abort();
  }
}

void BranchManager::AddNode(Branch branch, SessionState& state) {
  std::string id = branch.id;
  bool live = IsLive(branch.status);
  bool top_level = branch.parent_id.empty() || nodes_.count(branch.parent_id) == 0;
  if (!top_level) nodes_.at(branch.parent_id).children.push_back(id);
  Node& node = nodes_[id];
  node.branch = std::move(branch);
  node.warned = CrossesWarning(node.branch);
  if (top_level) state.branches.push_back(id);
  state.stamp += 1 + node.branch.version;
  if (live) {
    state.active.push_back(id);
    ++active_count_;
    ArmTimer(node);
  }
}

void BranchManager::ArmTimer(Node& node) {
  std::string id = node.branch.id;
  std::weak_ptr<int> alive = alive_;
  node.timer = executor_.PostAt(node.branch.deadline_mono, [this, alive, id] {
    // A timer already moved to the run queue cannot be cancelled; it must not outlive us.
    if (alive.expired()) return;
    OnDeadline(id);
  });
}

absl::StatusOr<BranchManager::SessionState*> BranchManager::EnsureSession(
    const SessionKey& session) {
  auto it = sessions_.find(session);
  if (it != sessions_.end()) {
    if (!store_.shared()) return &it->second;
    // Another instance may have written the session's branches since they were cached: one
    // indexed read tells (decision 0025); when it did, reload them.
    ASSIGN_OR_RETURN(int64_t stamp, store_.SessionStamp(session));
    if (stamp == it->second.stamp) return &it->second;
    ForgetSession(session);
  }
  ASSIGN_OR_RETURN(std::vector<Branch> stored, store_.ListSession(session));
  SessionState& state = sessions_[session];
  const base::Clock& clock = executor_.clock();
  for (Branch& b : stored) {
    b.deadline_mono =
        clock.Now() + std::chrono::milliseconds(b.deadline_wall_ms - clock.WallMillis());
    if (IsLive(b.status)) {
      // Only without Recover() (or another writer): keep the partial-summary inputs.
      auto recent = store_.GetRecentCharges(b.id, kRecentExcerpts);
      std::string id = b.id;
      AddNode(std::move(b), state);
      if (recent.ok()) {
        Node& node = nodes_.at(id);
        for (ChargeRow& r : recent->rows) {
          node.recent.push_back(
              Excerpt{std::move(r.kind), std::move(r.label), std::move(r.excerpt)});
        }
        node.records_total = recent->total;
      }
    } else {
      AddNode(std::move(b), state);
    }
  }
  return &state;
}

absl::StatusOr<BranchManager::Node*> BranchManager::FindNode(const SessionKey& session,
                                                             std::string_view id) {
  auto it = nodes_.find(std::string(id));
  if (it == nodes_.end() || !(it->second.branch.session == session)) return NotFound(id);
  return &it->second;
}

std::string BranchManager::InnermostActive(const SessionState& state) const {
  for (auto it = state.active.rbegin(); it != state.active.rend(); ++it) {
    if (nodes_.at(*it).branch.status == BranchStatus::kActive) return *it;
  }
  return "";
}

std::string BranchManager::ActiveBranch(const SessionKey& session) const {
  CheckOnExecutor();
  auto it = sessions_.find(session);
  return it == sessions_.end() ? "" : InnermostActive(it->second);
}

PreparedText BranchManager::PrepareText(std::string_view raw) const {
  std::string text = scrubber_.Scrub(raw);
  // Charged: the text as the model read it (its private spans included).
  const auto tokens = static_cast<int64_t>(counter_.Count(text));
  if (scrub::ContainsPrivate(raw)) {
    // Stored: private spans withheld, before the scrub (a secret inside one is never archived,
    // and no redaction can swallow a tag first).
    text = scrubber_.Scrub(scrub::WithholdPrivate(raw));
  }
  return PreparedText(std::string(raw), std::move(text), tokens);
}

const PreparedText& BranchManager::Prepared(const PreparedText* prepared, const std::string& raw,
                                            std::optional<PreparedText>& own) const {
  if (prepared != nullptr && prepared->source_ == raw) return *prepared;
  return own.emplace(PrepareText(raw));
}

// Where the store is shared, an update computed from a cache another instance made stale fails
// with Aborted and changes nothing: the session is reloaded and the operation runs again on
// what the store holds (decision 0025). A bounded number of times: instances racing on one
// session each win in turn.
template <typename Fn>
auto BranchManager::Retrying(const SessionKey& session, Fn fn) -> decltype(fn()) {
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    auto result = fn();
    if (result.ok() || result.status().code() != absl::StatusCode::kAborted ||
        attempt == kAttempts) {
      return result;
    }
    ForgetSession(session);
  }
}

absl::StatusOr<CreateResult> BranchManager::Create(const SessionKey& session,
                                                   const CreateRequest& request) {
  CheckOnExecutor();
  return Retrying(session, [&] { return CreateOnce(session, request); });
}

absl::StatusOr<ReturnResult> BranchManager::Return(const SessionKey& session,
                                                   const ReturnRequest& request) {
  CheckOnExecutor();
  return Retrying(session, [&] { return ReturnOnce(session, request); });
}

absl::StatusOr<ChargeOutcome> BranchManager::Charge(const SessionKey& session,
                                                    std::string_view branch_id,
                                                    const ChargeRecord& record) {
  CheckOnExecutor();
  return Retrying(session, [&] { return ChargeOnce(session, branch_id, record); });
}

absl::StatusOr<EndSessionResult> BranchManager::EndSession(const SessionKey& session,
                                                           std::string_view reason) {
  CheckOnExecutor();
  return Retrying(session, [&] { return EndSessionOnce(session, reason); });
}

absl::StatusOr<CreateResult> BranchManager::CreateOnce(const SessionKey& session,
                                                       const CreateRequest& request) {
  size_t desc_len = Utf8Length(request.description);
  if (desc_len < 1 || desc_len > kMaxDescriptionChars) {
    return absl::InvalidArgumentError(absl::StrCat("description must be 1-", kMaxDescriptionChars,
                                                   " characters, got ", desc_len));
  }
  size_t prompt_len = Utf8Length(request.prompt);
  if (prompt_len < 1 || prompt_len > kMaxPromptChars) {
    return absl::InvalidArgumentError(
        absl::StrCat("prompt must be 1-", kMaxPromptChars, " characters, got ", prompt_len));
  }
  if (request.budget.has_value() && (*request.budget < 1 || *request.budget > config_.max_budget)) {
    return absl::InvalidArgumentError(absl::StrCat("budget must be 1..", config_.max_budget,
                                                   " (max_budget), got ", *request.budget));
  }
  if (request.timeout_seconds.has_value() &&
      (*request.timeout_seconds < 1 || *request.timeout_seconds > config_.max_timeout_seconds)) {
    return absl::InvalidArgumentError(
        absl::StrCat("timeout_seconds must be 1..", config_.max_timeout_seconds,
                     " (max_timeout_seconds), got ", *request.timeout_seconds));
  }
  ASSIGN_OR_RETURN(SessionState * state, EnsureSession(session));

  std::string parent_id =
      request.parent_branch_id.has_value() ? *request.parent_branch_id : InnermostActive(*state);
  const Branch* parent = nullptr;
  if (!parent_id.empty()) {
    ASSIGN_OR_RETURN(Node * pnode, FindNode(session, parent_id));
    parent = &pnode->branch;
    if (parent->status != BranchStatus::kActive) {
      return absl::FailedPreconditionError(
          absl::StrCat("parent branch ", parent_id, " is ", BranchStatusName(parent->status),
                       "; only an active branch can have children"));
    }
  }
  // Depths count from 0 (a child of the session root), as in the seed API: max_depth levels are
  // depths 0 to max_depth - 1.
  int depth = parent == nullptr ? 0 : parent->depth + 1;
  if (depth >= config_.max_depth) {
    return absl::FailedPreconditionError(absl::StrCat(
        "max_depth (", config_.max_depth, ") reached: parent ", parent_id, " is at depth ",
        parent->depth, ", the deepest allowed (depths 0 to ", config_.max_depth - 1,
        "); return a branch first or create this one under a shallower parent"));
  }
  if (static_cast<int>(state->active.size()) >= config_.max_concurrent_branches_per_session) {
    return absl::ResourceExhaustedError(
        absl::StrCat("max_concurrent_branches_per_session (",
                     config_.max_concurrent_branches_per_session, ") reached: this session has ",
                     state->active.size(), " active branches; return one before creating another"));
  }
  if (active_count_ >= config_.max_concurrent_branches_per_instance) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "max_concurrent_branches_per_instance (", config_.max_concurrent_branches_per_instance,
        ") reached: the server has ", active_count_, " active branches; retry later"));
  }
  const base::Clock::TimePoint now = executor_.clock().Now();
  while (!state->creations.empty() && state->creations.front() + rate_.window <= now) {
    state->creations.pop_front();
  }
  if (static_cast<int64_t>(state->creations.size()) >= rate_.count) {
    base::Clock::Duration wait = state->creations.front() + rate_.window - now;
    int64_t wait_s = (ToMillis(wait) + 999) / 1000;
    if (wait_s < 1) wait_s = 1;
    return absl::ResourceExhaustedError(
        absl::StrCat("branch_creation_rate_limit (", config_.branch_creation_rate_limit,
                     ") reached for this session; retry in ", wait_s, " s"));
  }

  int64_t budget = request.budget.value_or(config_.default_budget);
  if (parent != nullptr) {
    int64_t left = parent->Remaining();
    if (!request.budget.has_value()) budget = std::min(budget, left);
    if (left <= 0 || budget > left) {
      return absl::FailedPreconditionError(absl::StrCat(
          "parent branch ", parent_id, " has only ", std::max<int64_t>(left, 0),
          " tokens left (budget ", parent->budget_allocated, ", used ", parent->tokens_used,
          ", reserved for children ", parent->reserved_for_children, "); ",
          left > 0 ? absl::StrCat("ask for at most ", left) : std::string("return it instead")));
    }
  }

  Branch b;
  b.id = base::TimeOrderedId("br_");
  b.session = session;
  b.parent_id = parent_id;
  b.depth = depth;
  std::optional<PreparedText> own_description, own_prompt;
  b.description =
      Prepared(request.prepared_description, request.description, own_description).text();
  const PreparedText& prompt = Prepared(request.prepared_prompt, request.prompt, own_prompt);
  b.prompt = prompt.text();
  int64_t prompt_tokens = prompt.tokens();
  if (prompt_tokens > budget) {
    return absl::InvalidArgumentError(absl::StrCat("the prompt is ", prompt_tokens,
                                                   " tokens, more than the branch budget of ",
                                                   budget, "; raise budget or shorten the prompt"));
  }
  int64_t timeout_s = request.timeout_seconds.value_or(config_.default_timeout_seconds);
  // Memories: greedily, best first, into their share of the budget (never more than the prompt
  // leaves). A candidate too large for what is left is skipped; a smaller later one may fit.
  int64_t injected_tokens = 0;
  if (request.inject_memories) {
    const auto share =
        static_cast<int64_t>(static_cast<double>(budget) * config_.injection_budget_ratio);
    const int64_t cap = std::min(share, budget - prompt_tokens);
    for (const InjectedContext& c : request.memory_candidates) {
      if (static_cast<int>(b.injected_context.size()) >= config_.memory_max_items) break;
      if (c.tokens <= 0 || injected_tokens + c.tokens > cap) continue;
      b.injected_context.push_back(c);
      injected_tokens += c.tokens;
    }
  }
  b.budget_allocated = budget;
  b.tokens_used = prompt_tokens + injected_tokens;
  b.created_at_ms = executor_.clock().WallMillis();
  b.deadline_wall_ms = b.created_at_ms + timeout_s * 1000;
  b.deadline_mono = now + std::chrono::seconds(timeout_s);
  // created -> active happens before anything is stored: the branch is usable once durable.
  RETURN_IF_ERROR(CheckTransition(b.id, b.status, BranchStatus::kActive));
  b.status = BranchStatus::kActive;

  Txn txn(*this);
  std::optional<int64_t> parent_left;
  if (parent != nullptr) {
    Branch& p = txn.Get(parent_id);
    p.reserved_for_children += budget;
    parent_left = p.Remaining();
  }
  BranchEvent created = EventFor(BranchEventType::kCreated, b);
  created.text_tokens = prompt_tokens;
  txn.Event(std::move(created));
  CreateResult result;
  result.branch_id = b.id;
  result.parent_branch_id = parent_id;
  result.depth = depth;
  result.max_depth = config_.max_depth;
  result.budget_allocated = budget;
  result.parent_budget_remaining = parent_left;
  result.timeout_seconds = timeout_s;
  result.deadline_wall_ms = b.deadline_wall_ms;
  result.prompt_tokens = prompt_tokens;
  result.injected_context = b.injected_context;
  result.injected_tokens = injected_tokens;
  txn.Insert(std::move(b));
  RETURN_IF_ERROR(txn.Commit());
  state = &sessions_.at(session);
  state->creations.push_back(now);
  return result;
}

absl::StatusOr<ReturnResult> BranchManager::ReturnOnce(const SessionKey& session,
                                                       const ReturnRequest& request) {
  size_t len = Utf8Length(request.message);
  if (len > kMaxReturnMessageChars) {
    return absl::InvalidArgumentError(
        absl::StrCat("message must be at most ", kMaxReturnMessageChars, " characters, got ", len));
  }
  ASSIGN_OR_RETURN(SessionState * state, EnsureSession(session));
  std::string id;
  if (request.branch_id.has_value() && !request.branch_id->empty()) {
    id = *request.branch_id;
  } else {
    id = InnermostActive(*state);
    if (id.empty()) {
      return absl::FailedPreconditionError(
          "no active branch in this session: there is nothing to return");
    }
  }
  ASSIGN_OR_RETURN(Node * node, FindNode(session, id));
  RETURN_IF_ERROR(CheckTransition(id, node->branch.status, BranchStatus::kCompleted));

  std::optional<PreparedText> own_message;
  const PreparedText& message = Prepared(request.prepared_message, request.message, own_message);
  // The summary is what is stored, with its private spans withheld, and it is also what the
  // reply carries: the stored summary IS the branch from now on (the model gateway folds the
  // branch to it on this and every later request, across restarts), so the reply agrees with
  // what the agent will see. The agent wrote the message, so it still has it in its own call.
  // Tokens stay as the model read the message (charged).
  std::string summary = message.text();
  int64_t summary_tokens = message.tokens();
  Txn txn(*this);
  std::vector<std::string> kids =
      ForceReturnDescendants(txn, id, absl::StrCat("parent ", id, " returned"));
  Branch& b = txn.Get(id);
  // The return message is always accepted (refusing it would lose the fold), but charged only up
  // to what the branch has left, so that used + reserved <= allocated holds for every branch and
  // a parent is never charged more than it reserved.
  b.tokens_used += std::min(summary_tokens, std::max<int64_t>(b.Remaining(), 0));
  b.memory_queued = request.extract_memory;
  const std::string parent_id = b.parent_id;
  FinishInTxn(txn, id, BranchStatus::kCompleted, "returned", summary);
  ReturnResult result;
  result.branch_id = id;
  result.summary = summary;
  result.summary_tokens = summary_tokens;
  result.tokens_used = txn.Get(id).tokens_used;
  result.tokens_folded = std::max<int64_t>(0, result.tokens_used - summary_tokens);
  result.budget_allocated = txn.Get(id).budget_allocated;
  result.parent_branch_id = parent_id;
  result.force_returned_children = kids;
  result.memory_queued = request.extract_memory;
  if (!parent_id.empty() && nodes_.count(parent_id) > 0) {
    Branch& p = txn.Get(parent_id);
    if (!txn.IsWarned(parent_id) && CrossesWarning(p)) {
      txn.Warned(parent_id);
      txn.Event(EventFor(BranchEventType::kWarning, p));
      result.parent_warning = WarningText(p.id, p.tokens_used, p.budget_allocated);
    }
  }
  RETURN_IF_ERROR(txn.Commit());
  result.active_branch_after = InnermostActive(sessions_.at(session));
  return result;
}

absl::StatusOr<ChargeOutcome> BranchManager::ChargeOnce(const SessionKey& session,
                                                        std::string_view branch_id,
                                                        const ChargeRecord& record) {
  ASSIGN_OR_RETURN(SessionState * state, EnsureSession(session));
  std::string id = branch_id.empty() ? InnermostActive(*state) : std::string(branch_id);
  ChargeOutcome out;
  out.tokens = record.tokens.has_value() ? *record.tokens
                                         : static_cast<int64_t>(counter_.Count(record.text));
  if (out.tokens < 0) return absl::InvalidArgumentError("tokens must be >= 0");
  if (id.empty()) {
    // The session root has no budget: count, publish for metrics, keep nothing.
    if (events_ != nullptr) {
      BranchEvent e;
      e.type = BranchEventType::kCharged;
      e.session = session;
      e.tokens = out.tokens;
      e.reason = record.kind;
      e.at_ms = executor_.clock().WallMillis();
      events_->Publish(e);
    }
    return out;
  }
  ASSIGN_OR_RETURN(Node * node, FindNode(session, id));
  if (node->branch.status != BranchStatus::kActive) {
    return absl::FailedPreconditionError(
        absl::StrCat("branch ", id, " is ", BranchStatusName(node->branch.status),
                     ", not active; nothing can be charged to it"));
  }
  Txn txn(*this);
  Branch& b = txn.Get(id);
  txn.Record(id, record.kind, record.label, MakeExcerpt(record.text), out.tokens);
  BranchEvent charged = EventFor(BranchEventType::kCharged, b);
  charged.tokens = out.tokens;
  charged.reason = record.kind;
  int64_t left = b.Remaining();
  if (out.tokens > left) {
    // The record does not fit: the caller withholds it, so only what was left is consumed.
    b.tokens_used += std::max<int64_t>(left, 0);
    charged.tokens = std::max<int64_t>(left, 0);
    ForceReturnDescendants(txn, id, absl::StrCat("parent ", id, " ran out of budget"));
    Branch& after = txn.Get(id);
    FinishInTxn(txn, id, BranchStatus::kBudgetExhausted,
                absl::StrCat("budget exhausted: ", after.tokens_used, "/", after.budget_allocated,
                             " tokens; ", record.kind, " ", record.label, " needed ", out.tokens,
                             " tokens with ", std::max<int64_t>(left, 0), " left"),
                std::nullopt);
    out.exhausted = true;
    out.partial_summary = txn.Get(id).summary;
  } else {
    b.tokens_used += out.tokens;
    if (!txn.IsWarned(id) && CrossesWarning(b)) {
      txn.Warned(id);
      out.warning_crossed = true;
      txn.Event(EventFor(BranchEventType::kWarning, b));
    }
  }
  charged.tokens_used = txn.Get(id).tokens_used;
  txn.Event(std::move(charged));
  out.branch_id = id;
  out.used = txn.Get(id).tokens_used;
  out.allocated = txn.Get(id).budget_allocated;
  RETURN_IF_ERROR(txn.Commit());
  out.active_branch_after = InnermostActive(sessions_.at(session));
  return out;
}

BranchView BranchManager::MakeView(const Node& node) const {
  const Branch& b = node.branch;
  BranchView v;
  v.branch_id = b.id;
  v.parent_branch_id = b.parent_id;
  v.depth = b.depth;
  v.description = b.description;
  v.status = b.status;
  v.tokens_used = b.tokens_used;
  v.budget_allocated = b.budget_allocated;
  v.reserved_for_children = b.reserved_for_children;
  if (IsLive(b.status)) {
    v.time_left_ms = std::max<int64_t>(0, ToMillis(b.deadline_mono - executor_.clock().Now()));
  }
  v.deadline_wall_ms = b.deadline_wall_ms;
  v.created_at_ms = b.created_at_ms;
  v.finished_at_ms = b.finished_at_ms;
  v.finish_reason = b.finish_reason;
  v.summary = b.summary;
  for (const std::string& c : node.children) v.children.push_back(MakeView(nodes_.at(c)));
  return v;
}

absl::StatusOr<StatusResult> BranchManager::Status(const SessionKey& session,
                                                   std::string_view branch_id) {
  CheckOnExecutor();
  ASSIGN_OR_RETURN(SessionState * state, EnsureSession(session));
  StatusResult result;
  if (!branch_id.empty()) {
    ASSIGN_OR_RETURN(Node * node, FindNode(session, branch_id));
    result.branches.push_back(MakeView(*node));
  } else {
    for (const std::string& id : state->branches)
      result.branches.push_back(MakeView(nodes_.at(id)));
  }
  result.active_branch_id = InnermostActive(*state);
  result.active_count = static_cast<int>(state->active.size());
  return result;
}

absl::StatusOr<EndSessionResult> BranchManager::EndSessionOnce(const SessionKey& session,
                                                               std::string_view reason) {
  EndSessionResult result;
  if (store_.shared()) {
    // The session may have been served (and its branches created) by another instance: end
    // what the store holds, not what this one happens to cache.
    RETURN_IF_ERROR(EnsureSession(session).status());
  }
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return result;
  std::string why = absl::StrCat("session ended: ", Sv(reason));
  std::vector<std::string> live = it->second.active;
  Txn txn(*this);
  std::stable_sort(live.begin(), live.end(), [&](const std::string& a, const std::string& b) {
    return nodes_.at(a).branch.depth > nodes_.at(b).branch.depth;
  });
  for (const std::string& id : live) {
    if (!IsLive(txn.StatusOf(id))) continue;
    FinishInTxn(txn, id, BranchStatus::kFailed, why, std::nullopt);
    result.force_returned.push_back(id);
  }
  RETURN_IF_ERROR(txn.Commit());
  // Forget the session; its branches stay in the store.
  ForgetSession(session);
  return result;
}

void BranchManager::ForgetSession(const SessionKey& session) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  std::vector<std::string> stack = it->second.branches;
  while (!stack.empty()) {
    std::string id = std::move(stack.back());
    stack.pop_back();
    auto nit = nodes_.find(id);
    if (nit == nodes_.end()) continue;
    stack.insert(stack.end(), nit->second.children.begin(), nit->second.children.end());
    if (nit->second.timer != 0) executor_.CancelTimer(nit->second.timer);
    if (IsLive(nit->second.branch.status)) --active_count_;
    nodes_.erase(nit);
  }
  sessions_.erase(it);
}

void BranchManager::ReleaseSession(const SessionKey& session) {
  CheckOnExecutor();
  ForgetSession(session);
}

absl::Status BranchManager::LoadSession(const SessionKey& session) {
  CheckOnExecutor();
  return EnsureSession(session).status();
}

}  // namespace contextd::folding
