// ContextManager's lessons at the start of a task (lessons.h, decision 0038).
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/foreign_text.h"
#include "base/logging.h"
#include "model/auto_fold.h"
#include "model/context_manager.h"
#include "nlohmann/json.hpp"

namespace contextd::model {
namespace {

// Conversations whose injected items are remembered in memory (beyond it the map starts again:
// a thread's own decisions still keep its items apart).
constexpr size_t kMaxConversationLessons = 4096;

std::string ConversationId(const ConversationKey& key) {
  return absl::StrCat(key.tenant, "\n", key.conversation);
}

// The texts of the user turn `m`, scrubbed (the task is read by the bank, which may embed it).
std::vector<std::string> TurnTexts(const ModelRequest& request, size_t m,
                                   const scrub::Scrubber& scrubber) {
  std::vector<std::string> texts;
  const Message& message = request.transcript().messages[m];
  for (size_t b = 0; b < message.blocks.size(); ++b) {
    if (message.blocks[b].kind == BlockKind::kText) {
      texts.push_back(scrubber.Scrub(request.BlockText(m, b)));
    }
  }
  return texts;
}

}  // namespace

void ContextManager::RenderLessons(const ThreadState& state, const Message& message, size_t m,
                                   RenderPlan& plan) {
  if (message.role != Role::kUser) return;
  auto lesson = state.lessons.find(message.key);
  if (lesson == state.lessons.end()) return;
  std::string& appended = plan.appends[m];
  appended =
      appended.empty() ? lesson->second.block : absl::StrCat(appended, ",", lesson->second.block);
}

std::set<std::string> ContextManager::InjectedInConversation(const ConversationKey& key,
                                                             const ThreadState& state) const {
  std::set<std::string> ids;
  for (const auto& [message_key, record] : state.lessons)
    ids.insert(record.ids.begin(), record.ids.end());
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = conversation_lessons_.find(ConversationId(key));
      it != conversation_lessons_.end()) {
    ids.insert(it->second.begin(), it->second.end());
  }
  return ids;
}

std::optional<ContextManager::NewLessons> ContextManager::OfferLessons(
    const ConversationKey& key, const ModelRequest& request, size_t old, const FoldPlan& folds,
    const std::vector<bool>& removed, ThreadState& state, RenderPlan& plan,
    ConversationUpdate& update, AppliedRequest& applied) {
  if (lessons_ == nullptr || !options_.lessons.enabled || options_.lessons.max_tokens <= 0) {
    return std::nullopt;
  }
  // An agent at work (tools offered), at its conversation's root: a side request (a title, a
  // summary) is not a task, and a branch got its lessons from branch_create.
  if (!request.offers_tools() || request.asks_summary() || !folds.open_branch_id.empty() ||
      plan.view) {
    return std::nullopt;
  }
  std::optional<size_t> turn = FinalUserTurn(request.transcript());
  // A turn already forwarded was decided then (with lessons or without): never anew.
  if (!turn || *turn < old || removed[*turn]) return std::nullopt;
  const Message& message = request.transcript().messages[*turn];
  if (state.lessons.count(message.key) != 0) return std::nullopt;
  NewLessons out;
  out.message_key = message.key;
  out.query.tenant = key.tenant;
  out.query.project = key.project;
  out.query.conversation = key.conversation;
  out.query.task = TaskText(TurnTexts(request, *turn, scrubber_));
  out.query.max_tokens = options_.lessons.max_tokens;
  if (out.query.task.empty()) return std::nullopt;
  out.query.exclude = InjectedInConversation(key, state);
  absl::StatusOr<LessonPick> pick = lessons_->Pick(out.query);
  if (!pick.ok()) {
    base::LogWarn(
        absl::StrCat("model gateway: lessons were not offered: ", pick.status().message()));
    return std::nullopt;
  }
  if (pick->ids.empty() || pick->text.empty()) return std::nullopt;
  out.pick = *std::move(pick);
  LessonRecord record{LessonBlock(out.pick.text), out.pick.ids, out.pick.tokens};
  update.new_rewrites.push_back({RewriteKind::kLessons, message.key, record.Serialize()});
  state.lessons.emplace(message.key, std::move(record));
  RenderLessons(state, message, *turn, plan);
  applied.lessons_injected = out.pick.ids;
  applied.lessons_tokens = out.pick.tokens;
  return out;
}

void ContextManager::DropNewLessons(ThreadState& state, ConversationUpdate& update,
                                    AppliedRequest& applied, std::optional<NewLessons>& lessons) {
  if (!lessons) return;
  std::erase_if(update.new_rewrites, [&](const Rewrite& r) {
    return r.kind == RewriteKind::kLessons && r.key == lessons->message_key;
  });
  state.lessons.erase(lessons->message_key);
  applied.lessons_injected.clear();
  applied.lessons_tokens = 0;
  lessons.reset();
}

void ContextManager::NoteLessons(const ConversationKey& key, const NewLessons& lessons) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (conversation_lessons_.size() >= kMaxConversationLessons) conversation_lessons_.clear();
    conversation_lessons_[ConversationId(key)].insert(lessons.pick.ids.begin(),
                                                      lessons.pick.ids.end());
  }
  lessons_->Injected(lessons.query, lessons.pick);
  if (ledger_ == nullptr) return;
  // The trail keeps what the model was given, in the conversation's root scope.
  nlohmann::ordered_json arguments;
  arguments["memory_ids"] = lessons.pick.ids;
  arguments["task"] = lessons.query.task.substr(0, 300);
  folding::ToolCallRecord record;
  record.tool = "contextd_lessons";
  record.arguments = base::DumpJson(arguments);
  record.result = lessons.pick.text;
  record.tokens_result = lessons.pick.tokens;
  ledger_->Record(SessionOf(key, ""), {std::move(record)});
}

}  // namespace contextd::model
