#include "model/context_manager.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"

namespace contextd::model {
namespace {

bool Scrubbable(const Message& message, const Block& block) {
  return message.role == Role::kUser &&
         (block.kind == BlockKind::kText || block.kind == BlockKind::kToolResult);
}

}  // namespace

ContextManager::ContextManager(ContextManagerOptions options, ConversationStore& store,
                               const scrub::Scrubber& scrubber,
                               const tokens::TokenCounter& counter, TenantBranchLookup lookup,
                               TenantBranchCharger charger, TenantCallRecorder recorder)
    : options_(options), store_(store), scrubber_(scrubber), counter_(counter),
      lookup_(std::move(lookup)), charger_(std::move(charger)), recorder_(std::move(recorder)) {}

size_t ContextManager::threads_in_memory() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_.size();
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

absl::Status ContextManager::Load(const ConversationKey& key, ThreadState& state) {
  ASSIGN_OR_RETURN(std::optional<ConversationState> stored, store_.Load(key));
  if (stored) {
    state.frontier = std::move(stored->frontier);
    for (Rewrite& rewrite : stored->rewrites) {
      switch (rewrite.kind) {
        case RewriteKind::kBlock:
          state.blocks.emplace(std::move(rewrite.key), std::move(rewrite.value));
          break;
        case RewriteKind::kAppend:
          state.appends.emplace(std::move(rewrite.key), std::move(rewrite.value));
          break;
        case RewriteKind::kFold: {
          auto record = FoldRecord::Parse(rewrite.value);
          if (!record.ok()) return record.status();
          state.folds.emplace(rewrite.key, *std::move(record));
          break;
        }
      }
    }
  }
  state.loaded = true;
  return absl::OkStatus();
}

int64_t ContextManager::Tokens(ThreadState& state, const Block& block) const {
  auto it = state.tokens.find(block.key);
  if (it != state.tokens.end()) return it->second;
  int64_t n = static_cast<int64_t>(counter_.Count(block.text));
  state.tokens.emplace(block.key, n);
  return n;
}

void ContextManager::RecordCalls(const ConversationKey& key, const Transcript& t, size_t old,
                                 const FoldPlan& folds, ThreadState& state) {
  if (!recorder_ || old >= t.messages.size()) return;
  std::unordered_map<std::string, const Block*> calls;
  std::string anchor;
  for (const Message& message : t.messages) {
    for (const Block& block : message.blocks) {
      if (block.kind == BlockKind::kToolCall) calls[block.call_id] = &block;
    }
  }
  for (const FoldEdit& edit : folds.edits) {
    if (anchor.empty()) anchor = edit.branch_id;
  }
  if (anchor.empty() && !folds.open_branch_ids.empty()) anchor = folds.open_branch_ids.front();
  std::vector<ModelToolCall> done;
  for (size_t m = old; m < t.messages.size(); ++m) {
    for (const Block& block : t.messages[m].blocks) {
      if (block.kind != BlockKind::kToolResult) continue;
      auto call = calls.find(block.call_id);
      // contextd's own tools and proxied upstreams are recorded by the MCP side.
      if (call == calls.end() ||
          call->second->tool_name.find("contextd__") != std::string::npos) {
        continue;
      }
      ModelToolCall record;
      if (!folds.open_branch_id.empty() && m > folds.open_branch_create_message) {
        record.branch_id = folds.open_branch_id;
      }
      record.tool = call->second->tool_name;
      record.arguments = scrubber_.Scrub(call->second->text);
      record.result = scrubber_.Scrub(block.text);
      record.is_error = block.is_error;
      record.tokens_arguments = Tokens(state, *call->second);
      record.tokens_result = Tokens(state, block);
      done.push_back(std::move(record));
    }
  }
  if (!done.empty()) recorder_(key, anchor, done);
}

void ContextManager::ChargeSpan(const std::string& tenant, const Transcript& t, size_t old,
                                ThreadState& state, FoldPlan& folds, ConversationUpdate& update,
                                AppliedRequest& applied) {
  if (!charger_ || folds.open_branch_id.empty() || t.messages.empty()) return;
  // Calls to contextd's own tools (and proxied upstreams) are charged by the MCP side.
  std::unordered_map<std::string, bool> contextd_call;
  for (const Message& message : t.messages) {
    for (const Block& block : message.blocks) {
      if (block.kind == BlockKind::kToolCall) {
        contextd_call[block.call_id] = block.tool_name.find("contextd__") != std::string::npos;
      }
    }
  }
  int64_t tokens = 0;
  std::vector<std::string> tools;
  const Block* newest_result = nullptr;
  // The span: the calls made in the turn that opened the branch, and everything after it.
  const size_t create = folds.open_branch_create_message;
  for (size_t m = std::max(old, create); m < t.messages.size(); ++m) {
    for (const Block& block : t.messages[m].blocks) {
      if (m == create && block.kind != BlockKind::kToolCall) continue;
      if (block.kind == BlockKind::kToolCall || block.kind == BlockKind::kToolResult) {
        auto it = contextd_call.find(block.call_id);
        if (it != contextd_call.end() && it->second) continue;
      }
      if (block.kind == BlockKind::kToolCall &&
          std::find(tools.begin(), tools.end(), block.tool_name) == tools.end()) {
        tools.push_back(block.tool_name);
      }
      if (block.kind == BlockKind::kToolResult) newest_result = &block;
      tokens += Tokens(state, block);
    }
  }
  if (tokens == 0) return;
  std::string label;
  for (size_t i = 0; i < tools.size(); ++i) label += (i == 0 ? "" : ",") + tools[i];
  if (label.empty()) label = "model turn";
  std::string excerpt;
  if (newest_result != nullptr) {
    excerpt = scrubber_.Scrub(std::string_view(newest_result->text).substr(0, 300));
  }
  std::optional<SpanCharge> charged =
      charger_(tenant, folds.open_branch_id, label, excerpt, tokens);
  if (!charged) return;
  applied.tokens_charged = tokens;
  const Message& tail = t.messages.back();
  if (charged->exhausted) {
    // Force-returned now: fold it at this tail, with the notice, as its store entry now says.
    applied.exhausted = true;
    folds = PlanFolds(t, state.folds, [&](const std::string& id) {
      return lookup_ ? lookup_(tenant, id) : std::nullopt;
    });
    return;
  }
  if (!charged->warning.empty() && tail.role == Role::kUser &&
      !state.appends.count(tail.key)) {
    std::string block = absl::StrCat("{\"type\":\"text\",\"text\":",
                                     QuoteJsonString(absl::StrCat("[contextd] ", charged->warning)),
                                     "}");
    update.new_rewrites.push_back({RewriteKind::kAppend, tail.key, block});
    state.appends.emplace(tail.key, std::move(block));
    applied.warned = true;
  }
}

absl::StatusOr<AppliedRequest> ContextManager::Apply(const std::string& tenant,
                                                     const std::string& conversation_id,
                                                     const AnthropicRequest& request,
                                                     int64_t now_ms) {
  const Transcript& t = request.transcript();
  AppliedRequest applied;
  applied.messages = t.messages.size();
  std::string first = t.messages.empty() ? std::string("empty") : Hex(t.messages[0].key);
  applied.key.tenant = tenant;
  applied.key.conversation = conversation_id.empty() ? "m:" + first : conversation_id;
  applied.key.thread = first;

  std::shared_ptr<ThreadState> state =
      Thread(absl::StrCat(tenant, "\n", applied.key.conversation, "\n", applied.key.thread));
  std::lock_guard<std::mutex> lock(state->mu);
  if (!state->loaded) RETURN_IF_ERROR(Load(applied.key, *state));

  // The frontier: messages [0, old) were forwarded before and are never decided anew.
  size_t old = 0;
  while (old < t.messages.size() && old < state->frontier.size() &&
         state->frontier[old] == t.messages[old].key) {
    ++old;
  }
  applied.new_messages = t.messages.size() - old;

  ConversationUpdate update;
  update.at_ms = now_ms;
  FoldPlan folds = PlanFolds(t, state->folds, [&](const std::string& id) {
    return lookup_ ? lookup_(tenant, id) : std::nullopt;
  });
  RecordCalls(applied.key, t, old, folds, *state);
  ChargeSpan(tenant, t, old, *state, folds, update, applied);
  for (const FoldRecord& record : folds.new_records) {
    update.new_rewrites.push_back({RewriteKind::kFold, record.create_call_id, record.Serialize()});
    state->folds.emplace(record.create_call_id, record);
  }
  applied.folds_new = static_cast<int>(folds.new_records.size());
  applied.folds_applied = static_cast<int>(folds.edits.size());
  applied.skipped = folds.skipped;
  applied.open_branch_id = folds.open_branch_id;
  applied.open_branch_ids = folds.open_branch_ids;
  applied.open_branch_create_message = folds.open_branch_create_message;

  RenderPlan plan;
  plan.folds = folds.edits;
  // Messages a fold removes are not sent: no decision is needed for them.
  std::vector<bool> removed(t.messages.size(), false);
  for (const FoldEdit& edit : plan.folds) {
    for (size_t m = edit.create_message + 1; m < edit.end_message; ++m) removed[m] = true;
  }
  for (size_t m = 0; m < t.messages.size(); ++m) {
    const Message& message = t.messages[m];
    auto append = state->appends.find(message.key);
    if (append != state->appends.end()) plan.appends[m] = append->second;
    for (size_t b = 0; b < message.blocks.size(); ++b) {
      const Block& block = message.blocks[b];
      applied.tokens_before += Tokens(*state, block);
      auto stored = state->blocks.find(block.key);
      if (stored != state->blocks.end()) {
        plan.blocks[{m, b}] = stored->second;
        continue;
      }
      if (m < old || removed[m] || !Scrubbable(message, block)) continue;
      std::vector<std::pair<AnthropicRequest::TextSpan, std::string>> replacements;
      for (const AnthropicRequest::TextSpan& span : request.TextSpans(m, b)) {
        std::string_view token = std::string_view(request.body()).substr(span.begin, span.end - span.begin);
        std::string text = DecodeJsonString(token);
        std::string scrubbed = scrubber_.Scrub(text);
        if (scrubbed != text) replacements.emplace_back(span, QuoteJsonString(scrubbed));
      }
      if (replacements.empty()) continue;
      std::string value = request.RewriteBlock(m, b, replacements);
      update.new_rewrites.push_back({RewriteKind::kBlock, block.key, value});
      state->blocks.emplace(block.key, value);
      plan.blocks[{m, b}] = std::move(value);
      ++applied.redactions_new;
    }
  }

  applied.body = request.Render(plan);
  Transcript rendered = request.RenderedTranscript(plan);
  for (const Message& message : rendered.messages) {
    for (const Block& block : message.blocks) {
      if (!block.key.empty()) {
        applied.tokens_after += Tokens(*state, block);
      } else {
        applied.tokens_after += static_cast<int64_t>(counter_.Count(block.text));
      }
    }
  }
  if (ValidateTranscript(t).ok()) {
    if (absl::Status valid = ValidateTranscript(rendered); !valid.ok()) {
      base::LogError(absl::StrCat("model gateway: a rewrite broke the transcript (",
                                  valid.message(), "); forwarding the request unchanged"));
      applied.body = request.body();
      applied.fallback = true;
    }
  }

  update.frontier.reserve(t.messages.size());
  for (const Message& message : t.messages) update.frontier.push_back(message.key);
  bool frontier_changed = update.frontier != state->frontier;
  if (frontier_changed || !update.new_rewrites.empty()) {
    if (absl::Status saved = store_.Save(applied.key, update); !saved.ok()) {
      // The decisions above are not durable: forget them, so the next request reloads.
      state->loaded = false;
      state->frontier.clear();
      state->blocks.clear();
      state->appends.clear();
      state->folds.clear();
      return saved;
    }
    state->frontier = std::move(update.frontier);
  }
  return applied;
}

}  // namespace contextd::model
