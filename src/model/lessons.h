// Lessons at the start of a task (issue 35, decision 0038): the model gateway offers the few
// ReasoningBank items most relevant to a task to an agent that may never branch. At a request
// whose last turn is a new user task (the conversation's first, or a person's next message) that
// offers tools, the context manager asks a LessonSource for lessons and appends them to that user
// turn as one text block: user-side text at the tail, so the prefix the provider cached and every
// thinking block's prefix stay as they were. The decision is kept (RewriteKind::kLessons) and
// repeated byte for byte on every later request. At most one injection per task, never an item
// twice in a conversation, at most LessonOptions::max_tokens.
// The model room knows no memory bank: the server implements LessonSource over it.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace contextd::model {

// memory.session_injection and memory.session_injection_tokens.
struct LessonOptions {
  bool enabled = true;
  int64_t max_tokens = 1500;  // of the appended text; 0: nothing is injected
};

// What a task asks the bank.
struct LessonQuery {
  std::string tenant;
  std::string project;
  std::string conversation;       // ConversationKey::conversation
  std::string task;               // TaskText of the user turn (already scrubbed)
  std::set<std::string> exclude;  // items already injected into this conversation
  int64_t max_tokens = 0;
};

// What to inject: the items and the one text the model reads (empty ids: nothing).
struct LessonPick {
  std::vector<std::string> ids;
  std::string text;
  int64_t tokens = 0;
};

// The bank, as the context manager needs it. Thread-safe; Pick runs on the gateway's workers and
// must not write; Injected is told once the decision is durable (history, metrics, events) and
// must not block.
class LessonSource {
 public:
  virtual ~LessonSource() = default;
  // The lessons for `query`, best first, within its budget; an empty pick when nothing is
  // relevant enough. An error is logged by the caller and the request goes without lessons.
  virtual absl::StatusOr<LessonPick> Pick(const LessonQuery& query) = 0;
  virtual void Injected(const LessonQuery& query, const LessonPick& pick) = 0;
};

// A stored lesson decision (RewriteKind::kLessons, keyed by the user turn's message key).
struct LessonRecord {
  std::string block;  // the appended block as sent: {"type":"text","text":...}
  std::vector<std::string> ids;
  int64_t tokens = 0;

  std::string Serialize() const;
  // InternalError for a malformed record (the store's bytes are not trusted blindly).
  static absl::StatusOr<LessonRecord> Parse(std::string_view text);
};

// The task a user turn states, from its text blocks: what the client added for the model
// (<system-reminder> spans, Claude Code's) is left out, whitespace trimmed.
std::string TaskText(const std::vector<std::string>& texts);

// The block that carries `text`, in the shape RenderPlan::appends holds.
std::string LessonBlock(std::string_view text);

}  // namespace contextd::model
