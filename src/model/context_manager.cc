#include "model/context_manager.h"

#include <algorithm>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "model/model_api.h"
#include "scrub/private_spans.h"

namespace contextd::model {
namespace {

// The key of a conversation's last request in ContextManager::lasts_.
std::string LastKey(ModelApi api, const std::string& tenant, const std::string& conversation_id) {
  return absl::StrCat(ModelApiName(api), "\n", tenant, "\n", conversation_id);
}

// The branch the root events of a request's calls belong with (TenantCallRecorder's anchor):
// the first folded branch, else the outermost open one; "" when there is none.
std::string AnchorBranch(const FoldPlan& folds) {
  if (!folds.edits.empty()) return folds.edits.front().branch_id;
  return folds.open_branches.empty() ? std::string() : folds.open_branches.front().branch_id;
}

// The handle text inside an auto-fold decision's block (as sent, JSON-escaped), for counting.
std::string_view HandleOf(std::string_view value) {
  size_t begin = value.find("[contextd: ");
  size_t end = value.rfind("}]");
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin) {
    return value;
  }
  return value.substr(begin, end + 2 - begin);
}

bool Scrubbable(const Message& message, const Block& block) {
  return message.role == Role::kUser &&
         (block.kind == BlockKind::kText || block.kind == BlockKind::kToolResult);
}

}  // namespace

ContextManager::ContextManager(ContextManagerOptions options, ConversationStore& store,
                               const scrub::Scrubber& scrubber, const tokens::TokenCounter& counter,
                               folding::BranchLedger* ledger, LessonSource* lessons)
    : options_(options),
      store_(store),
      scrubber_(scrubber),
      counter_(counter),
      ledger_(ledger),
      lessons_(lessons) {}

std::optional<BranchFacts> ContextManager::Find(const std::string& tenant,
                                                const std::string& id) const {
  if (ledger_ == nullptr) return std::nullopt;
  return ledger_->Find(tenant, id);
}

folding::SessionKey ContextManager::SessionOf(const ConversationKey& key,
                                              const std::string& anchor_branch_id) const {
  // The request's project (X-Contextd-Project), so that trail_unfold from an MCP session of the
  // same project finds what the gateway recorded.
  folding::SessionKey session{key.tenant, key.project, "model:" + key.conversation};
  if (!anchor_branch_id.empty()) {
    if (std::optional<BranchFacts> owner = Find(key.tenant, anchor_branch_id)) {
      session = owner->session;
    }
  }
  return session;
}

std::optional<folding::BranchCharge> ContextManager::ChargeBranch(const std::string& tenant,
                                                                  const std::string& id,
                                                                  const std::string& label,
                                                                  const std::string& excerpt,
                                                                  int64_t tokens) {
  std::optional<BranchFacts> branch = Find(tenant, id);
  if (!branch || branch->ended) return std::nullopt;
  // What the model received inside the branch (built-in tools included), counted here;
  // `excerpt` feeds a partial summary if this charge exhausts the branch.
  folding::ChargeRecord record{"tool_result", label, excerpt.empty() ? label : excerpt, tokens};
  auto charged = ledger_->Charge(branch->session, id, record);
  if (!charged.ok()) {
    base::LogWarn(absl::StrCat("model gateway: charging ", id, ": ", charged.status().message()));
    return std::nullopt;
  }
  return *std::move(charged);
}

std::shared_ptr<ContextManager::ThreadState> ContextManager::Thread(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = threads_.find(id);
  if (it != threads_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second.state;
  }
  lru_.push_front(id);
  auto state = std::make_shared<ThreadState>();
  threads_.emplace(id, Entry{state, lru_.begin()});
  while (threads_.size() > std::max<size_t>(1, options_.max_threads_in_memory)) {
    threads_.erase(lru_.back());  // a request holding it keeps its shared_ptr
    lru_.pop_back();
  }
  return state;
}

absl::StatusOr<std::shared_ptr<ModelRequest>> ContextManager::Parse(
    ModelApi api, const std::string& tenant, const std::string& conversation_id, std::string body) {
  const ModelApiRow& row = ApiRow(api);
  std::shared_ptr<ModelRequest> previous;
  if (row.takes_over && !conversation_id.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    // Kept under its API's key: `previous` is a request of the same API.
    auto it = lasts_.find(LastKey(api, tenant, conversation_id));
    if (it != lasts_.end()) {
      previous = std::move(it->second.request);  // spent by the parse: nobody else may use it
      lasts_bytes_ -= previous->body().size();
      lasts_lru_.erase(it->second.lru);
      lasts_.erase(it);
    }
  }
  auto parsed = row.parse(std::move(body), previous.get());
  if (!parsed.ok()) return parsed.status();
  return std::shared_ptr<ModelRequest>(*std::move(parsed));
}

void ContextManager::RememberLast(const std::string& id, std::shared_ptr<ModelRequest> request) {
  if (request->body().size() > options_.max_kept_request_bytes) return;
  std::vector<std::shared_ptr<ModelRequest>> dropped;  // released after the lock
  std::lock_guard<std::mutex> lock(mu_);
  lasts_bytes_ += request->body().size();
  auto it = lasts_.find(id);
  if (it != lasts_.end()) {
    lasts_bytes_ -= it->second.request->body().size();
    dropped.push_back(std::move(it->second.request));
    it->second.request = std::move(request);
    lasts_lru_.splice(lasts_lru_.begin(), lasts_lru_, it->second.lru);
  } else {
    lasts_lru_.push_front(id);
    lasts_.emplace(id, Last{std::move(request), lasts_lru_.begin()});
  }
  while (lasts_.size() > std::max<size_t>(1, options_.max_threads_in_memory) ||
         lasts_bytes_ > options_.max_kept_request_bytes) {
    auto oldest = lasts_.find(lasts_lru_.back());
    lasts_bytes_ -= oldest->second.request->body().size();
    dropped.push_back(std::move(oldest->second.request));
    lasts_.erase(oldest);
    lasts_lru_.pop_back();
  }
}

std::string ContextManager::ThreadId(const ConversationKey& key) {
  return absl::StrCat(key.tenant, "\n", key.conversation, "\n", key.thread);
}

void ContextManager::Forget(ThreadState& state) {
  state.loaded = false;
  state.frontier.clear();
  state.blocks.clear();
  state.withheld.clear();
  state.appends.clear();
  state.folds.clear();
  state.auto_folds.clear();
  state.dropped_thinking.clear();
  state.views.clear();
  state.view_openings.clear();
  state.lessons.clear();
}

void ContextManager::SaveFrontier(const AppliedRequest& applied) {
  if (!applied.deferred) return;
  std::shared_ptr<ThreadState> state =
      Thread(applied.thread_id.empty() ? ThreadId(applied.key) : applied.thread_id);
  std::lock_guard<std::mutex> lock(state->mu);
  if (!state->loaded || state->sequence != applied.sequence) return;
  if (absl::Status saved = store_.Save(applied.key, *applied.deferred); !saved.ok()) {
    base::LogError(
        absl::StrCat("model gateway: saving a conversation's frontier: ", saved.ToString()));
    Forget(*state);
  }
}

absl::StatusOr<bool> ContextManager::Load(const ConversationKey& key, ThreadState& state) {
  ASSIGN_OR_RETURN(std::optional<ConversationState> stored, store_.Load(key));
  if (stored) {
    state.frontier = std::move(stored->frontier);
    for (Rewrite& rewrite : stored->rewrites) {
      switch (rewrite.kind) {
        case RewriteKind::kBlock:
          if (WithheldRewrite::Is(rewrite.value)) {
            ASSIGN_OR_RETURN(WithheldRewrite withheld, WithheldRewrite::Parse(rewrite.value));
            state.withheld.emplace(std::move(rewrite.key), std::move(withheld));
          } else {
            state.blocks.emplace(std::move(rewrite.key), std::move(rewrite.value));
          }
          break;
        case RewriteKind::kAppend:
          state.appends.emplace(std::move(rewrite.key), std::move(rewrite.value));
          break;
        case RewriteKind::kAutoFold:
          state.auto_folds.emplace(std::move(rewrite.key), std::move(rewrite.value));
          break;
        case RewriteKind::kDropThinking:
          state.dropped_thinking.insert(std::move(rewrite.key));
          break;
        case RewriteKind::kFold: {
          auto record = FoldRecord::Parse(rewrite.value);
          if (!record.ok()) return record.status();
          state.folds.emplace(rewrite.key, *std::move(record));
          break;
        }
        case RewriteKind::kView: {
          auto record = ViewRecord::Parse(rewrite.value);
          if (!record.ok()) return record.status();
          state.views.emplace(rewrite.key, *std::move(record));
          break;
        }
        case RewriteKind::kLessons: {
          auto record = LessonRecord::Parse(rewrite.value);
          if (!record.ok()) return record.status();
          state.lessons.emplace(rewrite.key, *std::move(record));
          break;
        }
      }
    }
  }
  state.loaded = true;
  return stored.has_value();
}

int64_t ContextManager::Tokens(ThreadState& state, const ModelRequest& request, size_t m,
                               size_t b) const {
  const Block& block = request.transcript().messages[m].blocks[b];
  auto it = state.tokens.find(block.key);
  if (it != state.tokens.end()) return it->second;
  int64_t n = static_cast<int64_t>(counter_.Count(request.BlockText(m, b)));
  state.tokens.emplace(block.key, n);
  return n;
}

int64_t ContextManager::MessageTokens(ThreadState& state, const ModelRequest& request,
                                      size_t m) const {
  const Message& message = request.transcript().messages[m];
  auto it = state.message_tokens.find(message.key);
  if (it != state.message_tokens.end()) return it->second;
  int64_t n = 0;
  for (size_t b = 0; b < message.blocks.size(); ++b) n += Tokens(state, request, m, b);
  state.message_tokens.emplace(message.key, n);
  return n;
}

int64_t ContextManager::TextTokens(ThreadState& state, const std::string& text) const {
  std::string key = Digest({"generated", text});
  auto it = state.tokens.find(key);
  if (it != state.tokens.end()) return it->second;
  int64_t n = static_cast<int64_t>(counter_.Count(text));
  state.tokens.emplace(std::move(key), n);
  return n;
}

void ContextManager::RecordCalls(const ConversationKey& key, const ModelRequest& request,
                                 size_t old, const FoldPlan& folds, ThreadState& state,
                                 const std::map<std::pair<size_t, size_t>, std::string>& scrubbed) {
  const Transcript& t = request.transcript();
  if (ledger_ == nullptr || old >= t.messages.size()) return;
  struct Where {
    const Block* block;
    size_t m, b;
  };
  std::unordered_map<std::string, Where> calls;
  const std::string anchor = AnchorBranch(folds);
  for (size_t m = 0; m < t.messages.size(); ++m) {
    const std::vector<Block>& blocks = t.messages[m].blocks;
    for (size_t b = 0; b < blocks.size(); ++b) {
      if (blocks[b].kind == BlockKind::kToolCall) calls[blocks[b].call_id] = {&blocks[b], m, b};
    }
  }
  std::vector<ModelToolCall> done;
  for (size_t m = old; m < t.messages.size(); ++m) {
    for (size_t b = 0; b < t.messages[m].blocks.size(); ++b) {
      const Block& block = t.messages[m].blocks[b];
      if (block.kind != BlockKind::kToolResult) continue;
      auto call = calls.find(block.call_id);
      // contextd's own tools and proxied upstreams are recorded by the MCP side.
      if (call == calls.end() || !call->second.block->contextd_tool.empty()) {
        continue;
      }
      ModelToolCall record;
      if (!folds.open_branch_id.empty() && m > folds.open_branch_create_message) {
        record.branch_id = folds.open_branch_id;
      }
      record.tool = call->second.block->tool_name;
      record.arguments = scrubber_.Scrub(request.BlockText(call->second.m, call->second.b));
      record.result =
          scrubbed.count({m, b}) ? scrubbed.at({m, b}) : scrubber_.Scrub(request.BlockText(m, b));
      record.is_error = block.is_error;
      record.tokens_arguments = Tokens(state, request, call->second.m, call->second.b);
      record.tokens_result = Tokens(state, request, m, b);
      done.push_back(std::move(record));
    }
  }
  if (!done.empty()) ledger_->Record(SessionOf(key, anchor), std::move(done));
}

std::string ContextManager::Rebuild(const ModelRequest& request, size_t m, size_t b,
                                    const WithheldRewrite& decision) const {
  const std::vector<TextSpan>& spans = request.TextSpans(m, b);
  // The block with each span's decoded text replaced by `redact(k, text)` (nullopt: give up).
  auto build = [&](const auto& redact) -> std::optional<std::string> {
    std::vector<std::pair<TextSpan, std::string>> replacements;
    for (size_t k = 0; k < spans.size(); ++k) {
      std::string text = DecodeJsonString(
          std::string_view(request.body()).substr(spans[k].begin, spans[k].end - spans[k].begin));
      std::optional<std::string> redacted = redact(k, text);
      if (!redacted) return std::nullopt;
      if (*redacted != text) replacements.emplace_back(spans[k], QuoteJsonString(*redacted));
    }
    return request.RewriteBlock(m, b, replacements);
  };
  if (decision.spans && decision.spans->size() == spans.size()) {
    std::optional<std::string> value =
        build([&](size_t k, const std::string& text) -> std::optional<std::string> {
          auto applied = ApplyRedactions(text, (*decision.spans)[k]);
          if (!applied.ok()) return std::nullopt;
          return *std::move(applied);
        });
    if (value && BlockDigest(*value) == decision.digest) return *std::move(value);
  }
  std::string value = *build([&](size_t, const std::string& text) -> std::optional<std::string> {
    return scrubber_.Scrub(text);
  });
  if (BlockDigest(value) != decision.digest) {
    base::LogWarn(
        "model gateway: a redacted block holding private text could not be repeated byte for "
        "byte (the scrub rules changed since it was sent); it is redacted with the current rules");
  }
  return value;
}

void ContextManager::RunAutoFold(const ModelRequest& request, const FoldPlan& folds,
                                 const std::vector<bool>& removed, size_t first_message,
                                 ThreadState& state, RenderPlan& plan, ConversationUpdate& update,
                                 AppliedRequest& applied) {
  const Transcript& t = request.transcript();
  AutoFoldContext context;
  context.input_tokens = applied.tokens_after;
  context.first_message = first_message;
  context.removed = removed;
  context.tokens = [&](size_t m, size_t b) { return Tokens(state, request, m, b); };
  context.foldable = [&](size_t m, size_t b) {
    // One text span: the handle replaces it (an empty text part is refused by some providers).
    return request.TextSpans(m, b).size() == 1 &&
           !state.auto_folds.count(t.messages[m].blocks[b].key);
  };
  context.handle_tokens = TextTokens(state, AutoFoldHandle(99'999, "Read a/path/of/average/length",
                                                           "ses_0123456789abcdef", 99'999));
  context.thinking_binds = !ApiRow(request.api()).reasoning_binding_configured ||
                           options_.auto_fold.reasoning_items_bound;
  context.sent = [&](size_t m, size_t b) { return !plan.dropped.count({m, b}); };
  // OpenAI's automatic cache writes at the base input price.
  context.cache_write_price = request.api() == ModelApi::kAnthropicMessages ? 1.25 : 1.0;
  AutoFoldStep step = PlanAutoFold(t, options_.auto_fold, context);
  applied.auto_fold_outcome = AutoFoldOutcomeName(step.outcome);
  if (step.picks.empty()) return;
  if (ledger_ == nullptr) {
    applied.auto_fold_outcome = "no_trail";
    return;
  }
  std::vector<ModelToolCall> calls;
  calls.reserve(step.picks.size());
  for (const AutoFoldPick& pick : step.picks) {
    const Block& call = t.messages[pick.call_message].blocks[pick.call_block];
    const Block& result = t.messages[pick.message].blocks[pick.block];
    ModelToolCall record;
    record.tool = call.tool_name;
    record.arguments = scrubber_.Scrub(request.BlockText(pick.call_message, pick.call_block));
    record.result = scrubber_.Scrub(request.BlockText(pick.message, pick.block));
    record.is_error = result.is_error;
    record.tokens_arguments = Tokens(state, request, pick.call_message, pick.call_block);
    record.tokens_result = pick.tokens;
    calls.push_back(std::move(record));
  }
  std::vector<std::optional<TrailRef>> refs =
      ledger_->Archive(SessionOf(applied.key, AnchorBranch(folds)), calls);
  size_t first_folded = t.messages.size();
  for (size_t i = 0; i < step.picks.size() && i < refs.size(); ++i) {
    if (!refs[i]) continue;  // not kept in the trail: not folded
    const AutoFoldPick& pick = step.picks[i];
    const Block& result = t.messages[pick.message].blocks[pick.block];
    if (state.auto_folds.count(result.key)) continue;  // the same bytes, picked twice: decided
    // The gist is what the model wrote (scrubbed); private spans never reach the store.
    std::string gist = scrub::WithholdPrivate(CallGist(calls[i].tool, calls[i].arguments));
    std::string handle = AutoFoldHandle(pick.tokens, gist, refs[i]->scope_id, refs[i]->event);
    const TextSpan span = request.TextSpans(pick.message, pick.block).front();
    std::string value =
        request.RewriteBlock(pick.message, pick.block, {{span, QuoteJsonString(handle)}});
    update.new_rewrites.push_back({RewriteKind::kAutoFold, result.key, value});
    state.auto_folds.emplace(result.key, value);
    // A decision is keyed by the block's bytes, so later requests apply it wherever those bytes
    // stand: so does this one (only an invalid transcript repeats a result, with its call id).
    for (size_t m = 0; m < t.messages.size(); ++m) {
      const Message& message = t.messages[m];
      for (size_t b = 0; b < message.blocks.size(); ++b) {
        if ((m != pick.message || b != pick.block) && message.blocks[b].key == result.key &&
            message.role == Role::kUser && message.blocks[b].kind == BlockKind::kToolResult) {
          plan.blocks[{m, b}] = value;
        }
      }
    }
    plan.blocks[{pick.message, pick.block}] = std::move(value);
    applied.tokens_after += TextTokens(state, handle) - pick.tokens;
    applied.auto_fold_tokens += pick.tokens;
    ++applied.auto_folds_new;
    ++applied.auto_folds_applied;
    first_folded = std::min(first_folded, pick.message);
  }
  DropThinking(step.drops, first_folded, t, state, plan, update, applied);
}

void ContextManager::DropThinking(const std::vector<AutoFoldDrop>& drops, size_t after,
                                  const Transcript& t, ThreadState& state, RenderPlan& plan,
                                  ConversationUpdate& update, AppliedRequest& applied) {
  for (const AutoFoldDrop& drop : drops) {
    // Only the thinking after the first result actually folded: the rest kept its prefix.
    if (drop.message <= after) continue;
    const std::string& key = t.messages[drop.message].blocks[drop.block].key;
    if (state.dropped_thinking.insert(key).second) {
      update.new_rewrites.push_back({RewriteKind::kDropThinking, key, ""});
    }
    plan.dropped.insert({drop.message, drop.block});
    applied.tokens_after -= drop.tokens;
    applied.thinking_removed_tokens += drop.tokens;
    ++applied.thinking_removed;
  }
}

void ContextManager::ReportSkips(const ConversationKey& key, const FoldPlan& folds,
                                 ThreadState& state, AppliedRequest& applied) {
  for (const FoldSkip& skip : folds.skipped) {
    // Counted and logged once per branch: later requests leave it whole without asking again.
    if (!state.settled.insert(skip.create_call_id).second) continue;
    applied.skipped.push_back(skip.reason);
    base::LogWarn(absl::StrCat("model gateway: branch ", skip.branch_id, " of conversation ",
                               key.conversation, " was not folded (", SkipReasonName(skip.reason),
                               ")"));
  }
}

void ContextManager::ChargeSpan(const std::string& tenant, const ModelRequest& request, size_t old,
                                ThreadState& state, FoldPlan& folds, ConversationUpdate& update,
                                AppliedRequest& applied) {
  const Transcript& t = request.transcript();
  if (ledger_ == nullptr || folds.open_branch_id.empty() || t.messages.empty()) return;
  // Calls to contextd's own tools (and proxied upstreams) are charged by the MCP side.
  std::unordered_map<std::string, bool> contextd_call;
  for (const Message& message : t.messages) {
    for (const Block& block : message.blocks) {
      if (block.kind == BlockKind::kToolCall) {
        contextd_call[block.call_id] = !block.contextd_tool.empty();
      }
    }
  }
  int64_t tokens = 0;
  std::vector<std::string> tools;
  std::optional<std::pair<size_t, size_t>> newest_result;
  // The span: the calls made in the turn that opened the branch, and everything after it.
  const size_t create = folds.open_branch_create_message;
  for (size_t m = std::max(old, create); m < t.messages.size(); ++m) {
    for (size_t b = 0; b < t.messages[m].blocks.size(); ++b) {
      const Block& block = t.messages[m].blocks[b];
      if (m == create && block.kind != BlockKind::kToolCall) continue;
      if (block.kind == BlockKind::kToolCall || block.kind == BlockKind::kToolResult) {
        auto it = contextd_call.find(block.call_id);
        if (it != contextd_call.end() && it->second) continue;
      }
      if (block.kind == BlockKind::kToolCall &&
          std::find(tools.begin(), tools.end(), block.tool_name) == tools.end()) {
        tools.push_back(block.tool_name);
      }
      if (block.kind == BlockKind::kToolResult) newest_result = {m, b};
      tokens += Tokens(state, request, m, b);
    }
  }
  if (tokens == 0) return;
  std::string label;
  for (size_t i = 0; i < tools.size(); ++i) label += (i == 0 ? "" : ",") + tools[i];
  if (label.empty()) label = "model turn";
  std::string excerpt;
  if (newest_result) {
    std::string text = request.BlockText(newest_result->first, newest_result->second);
    excerpt = scrubber_.Scrub(std::string_view(text).substr(0, 300));
  }
  std::optional<folding::BranchCharge> charged =
      ChargeBranch(tenant, folds.open_branch_id, label, excerpt, tokens);
  if (!charged) return;
  applied.tokens_charged = tokens;
  const Message& tail = t.messages.back();
  if (charged->outcome.exhausted) {
    // Force-returned now: fold it at this tail, with the notice, as its store entry now says.
    applied.exhausted = true;
    folds = PlanFolds(
        t, state.folds, [&](const std::string& id) { return Find(tenant, id); }, &state.settled);
    return;
  }
  if (!charged->warning.empty() && tail.role == Role::kUser && !state.appends.count(tail.key)) {
    std::string block =
        absl::StrCat("{\"type\":\"text\",\"text\":",
                     QuoteJsonString(absl::StrCat("[contextd] ", charged->warning)), "}");
    update.new_rewrites.push_back({RewriteKind::kAppend, tail.key, block});
    state.appends.emplace(tail.key, std::move(block));
    applied.warned = true;
  }
}

absl::StatusOr<AppliedRequest> ContextManager::Apply(const std::string& tenant,
                                                     const std::string& conversation_id,
                                                     const std::shared_ptr<ModelRequest>& request,
                                                     int64_t now_ms, std::optional<bool> auto_fold,
                                                     const std::string& project, bool lessons) {
  AppliedRequest applied;
  applied.key.project = project;
  std::string first = request->transcript().messages.empty() ? std::string("empty")
                                                             : Hex(request->FirstMessageKey());
  applied.key.tenant = tenant;
  applied.key.conversation = conversation_id.empty() ? "m:" + first : conversation_id;
  applied.key.thread = first;

  applied.thread_id = ThreadId(applied.key);
  std::shared_ptr<ThreadState> state = Thread(applied.thread_id);
  std::lock_guard<std::mutex> lock(state->mu);
  if (!state->loaded) {
    ASSIGN_OR_RETURN(bool found, Load(applied.key, *state));
    state->stored_as.clear();
    if (!found && !conversation_id.empty()) {
      // Stored before contextd read this client's session header: under its first message.
      ConversationKey legacy = applied.key;
      legacy.conversation = "m:" + first;
      ASSIGN_OR_RETURN(bool legacy_found, Load(legacy, *state));
      if (legacy_found) state->stored_as = legacy.conversation;
    }
  }
  if (!state->stored_as.empty()) applied.key.conversation = state->stored_as;
  applied.sequence = ++state->sequence;
  request->ComputeKeys();  // only the new tail: taken-over messages have their keys
  const Transcript& t = request->transcript();
  applied.messages = t.messages.size();

  // The frontier: messages [0, old) were forwarded before and are never decided anew.
  size_t old = 0;
  while (old < t.messages.size() && old < state->frontier.size() &&
         state->frontier[old] == t.messages[old].key) {
    ++old;
  }
  applied.new_messages = t.messages.size() - old;

  ConversationUpdate update;
  update.at_ms = now_ms;
  FoldPlan folds = PlanFolds(
      t, state->folds, [&](const std::string& id) { return Find(tenant, id); }, &state->settled);
  const FoldPlan before_charge = folds;  // where the new calls were made
  ChargeSpan(tenant, *request, old, *state, folds, update, applied);
  ReportSkips(applied.key, folds, *state, applied);
  for (const FoldRecord& record : folds.new_records) {
    update.new_rewrites.push_back({RewriteKind::kFold, record.create_call_id, record.Serialize()});
    state->folds.emplace(record.create_call_id, record);
  }
  applied.folds_new = static_cast<int>(folds.new_records.size());
  applied.folds_applied = static_cast<int>(folds.edits.size());
  applied.open_branch_id = folds.open_branch_id;
  applied.open_branch_create_message = folds.open_branch_create_message;

  RenderPlan plan;
  plan.folds = folds.edits;
  ApplyView(tenant, *request, folds, *state, plan, update, applied);
  // Messages the view hides are not sent (their decisions are still taken: the parent's view
  // sends them again after the return).
  auto hidden = [&](size_t m) {
    return plan.view && m >= plan.view->keep && m < plan.view->resume;
  };
  // Messages a fold removes are not sent: no decision is needed for them, but for the blocks
  // that stay (what a person typed inside the span).
  std::vector<bool> removed(t.messages.size(), false);
  std::set<std::pair<size_t, size_t>> kept_in_folds;
  for (const FoldEdit& edit : plan.folds) {
    for (size_t m = edit.create_message + 1; m < edit.end_message; ++m) removed[m] = true;
    kept_in_folds.insert(edit.kept_blocks.begin(), edit.kept_blocks.end());
    // The create's result lends the fold what the client appended to it: redacted like the rest.
    if (edit.create_result) kept_in_folds.insert(*edit.create_result);
  }
  std::map<std::pair<size_t, size_t>, std::string> scrubbed_texts;  // new blocks, scrubbed
  size_t auto_point = 0;        // one past the last message holding an auto-folded result
  int64_t auto_fold_delta = 0;  // what the stored auto-folds change in the count
  for (size_t m = 0; m < t.messages.size(); ++m) {
    const Message& message = t.messages[m];
    applied.tokens_before += MessageTokens(*state, *request, m);
    auto append = state->appends.find(message.key);
    if (append != state->appends.end()) plan.appends[m] = append->second;
    RenderLessons(*state, message, m, plan);
    for (size_t b = 0; b < message.blocks.size(); ++b) {
      const Block& block = message.blocks[b];
      // Decisions are keyed by a block's bytes: they apply only to blocks of the kind they were
      // taken for (an assistant block with the same bytes as a redacted user block stays).
      const bool scrubbable = Scrubbable(message, block);
      if (block.kind == BlockKind::kThinking && message.role == Role::kAssistant &&
          message.blocks.size() > 1 && state->dropped_thinking.count(block.key)) {
        plan.dropped.insert({m, b});  // removed by an auto-fold step: left out for good
        continue;
      }
      // An auto-folded result goes as its handle, whatever else was decided for it.
      auto folded = state->auto_folds.find(block.key);
      if (folded != state->auto_folds.end() && scrubbable && block.kind == BlockKind::kToolResult) {
        plan.blocks[{m, b}] = folded->second;
        if (!removed[m] && !hidden(m)) {
          ++applied.auto_folds_applied;
          auto_point = m + 1;
          auto_fold_delta += TextTokens(*state, std::string(HandleOf(folded->second))) -
                             Tokens(*state, *request, m, b);
        }
        continue;
      }
      if (!scrubbable) continue;
      auto stored = state->blocks.find(block.key);
      if (stored != state->blocks.end()) {
        plan.blocks[{m, b}] = stored->second;
        continue;
      }
      if (auto withheld = state->withheld.find(block.key); withheld != state->withheld.end()) {
        std::string value = Rebuild(*request, m, b, withheld->second);
        plan.blocks[{m, b}] = value;
        state->blocks.emplace(block.key, std::move(value));  // later requests take it as it is
        continue;
      }
      if (m < old || (removed[m] && !kept_in_folds.count({m, b}))) continue;
      std::vector<std::pair<TextSpan, std::string>> replacements;
      std::string joined;
      bool has_private = false;
      std::vector<std::pair<std::string, std::string>> texts;  // (decoded, scrubbed) per span
      for (const TextSpan& span : request->TextSpans(m, b)) {
        std::string_view token =
            std::string_view(request->body()).substr(span.begin, span.end - span.begin);
        std::string text = DecodeJsonString(token);
        std::string scrubbed = scrubber_.Scrub(text);
        if (!joined.empty()) joined.push_back('\n');
        joined += scrubbed;
        if (scrubbed != text) replacements.emplace_back(span, QuoteJsonString(scrubbed));
        has_private = has_private || scrub::ContainsPrivate(text);
        texts.emplace_back(std::move(text), std::move(scrubbed));
      }
      scrubbed_texts.emplace(std::make_pair(m, b), std::move(joined));
      if (replacements.empty()) continue;
      std::string value = request->RewriteBlock(m, b, replacements);
      // The model receives `value` with its private spans; the store must not keep them: it keeps
      // the redactions over the original texts and the digest of `value` instead.
      std::string kept = value;
      if (has_private) {
        WithheldRewrite withheld;
        withheld.digest = BlockDigest(value);
        withheld.spans.emplace();
        for (const auto& [text, scrubbed] : texts) {
          std::optional<std::vector<RedactionEdit>> edits = AlignRedactions(text, scrubbed);
          if (!edits) {
            withheld.spans.reset();
            break;
          }
          withheld.spans->push_back(*std::move(edits));
        }
        kept = withheld.Serialize();
      }
      update.new_rewrites.push_back({RewriteKind::kBlock, block.key, std::move(kept)});
      state->blocks.emplace(block.key, value);
      plan.blocks[{m, b}] = std::move(value);
      ++applied.redactions_new;
    }
  }
  RecordCalls(applied.key, *request, old, before_charge, *state, scrubbed_texts);
  std::optional<NewLessons> new_lessons;
  if (lessons) {
    new_lessons =
        OfferLessons(applied.key, *request, old, folds, removed, *state, plan, update, applied);
  }
  // What the model receives: the client's count, less what folds and the view removed, plus what
  // they and the appended notices add (redactions change a block's count little and are not
  // recounted).
  applied.tokens_after = PlanTokens(*state, *request, plan, 0, t.messages.size());
  if (plan.view) {
    applied.view_tokens_spared =
        PlanTokens(*state, *request, plan, plan.view->keep, plan.view->resume) -
        TextTokens(*state, plan.view->opening);
    applied.tokens_after -= applied.view_tokens_spared;
    for (size_t m = plan.view->keep; m < plan.view->resume; ++m) removed[m] = true;
  }
  applied.tokens_after += auto_fold_delta;
  if (auto_fold.value_or(options_.auto_fold.enabled)) {
    RunAutoFold(*request, folds, removed, auto_point, *state, plan, update, applied);
  }
  applied.body = request->Render(plan);
  // A decision taken now is checked before it leaves: the rewrite must keep a valid transcript
  // valid (the stored ones were checked when they were taken).
  if (!update.new_rewrites.empty() && ValidateTranscript(t).ok()) {
    if (absl::Status valid = ValidateTranscript(request->RenderedTranscript(plan)); !valid.ok()) {
      base::LogError(absl::StrCat("model gateway: a rewrite broke the transcript (",
                                  valid.message(), "); forwarding the request unchanged"));
      applied.body = request->body();
      applied.fallback = true;
      KeepInheritedView(*state, update, applied);
      DropNewLessons(*state, update, applied, new_lessons);
    }
  }

  update.frontier.reserve(t.messages.size());
  for (const Message& message : t.messages) update.frontier.push_back(message.key);
  bool frontier_changed = update.frontier != state->frontier;
  if (!update.new_rewrites.empty()) {
    // New decisions are durable before the request leaves.
    if (absl::Status saved = store_.Save(applied.key, update); !saved.ok()) {
      Forget(*state);
      return saved;
    }
    state->frontier = std::move(update.frontier);
    if (new_lessons) NoteLessons(applied.key, *new_lessons);
  } else if (frontier_changed) {
    state->frontier = update.frontier;
    applied.deferred = std::move(update);
  }
  // Only a request of an API that takes over is kept for the next (the others name no
  // conversation their body is bound to).
  if (!conversation_id.empty() && ApiRow(request->api()).takes_over) {
    RememberLast(LastKey(request->api(), tenant, conversation_id), request);
  }
  return applied;
}

}  // namespace contextd::model
