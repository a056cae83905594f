#include "server/memory_lessons.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace contextd::server {

std::string LessonsText(const std::vector<std::string>& lines) {
  std::string text =
      "<contextd-lessons>\nLessons contextd's memory holds from earlier work in this project. "
      "Use one where it fits this task and ignore the rest. With contextd's memory tools, "
      "memory_feedback or memory_outcome on its id says whether it helped.";
  for (const std::string& line : lines) absl::StrAppend(&text, "\n- ", line);
  absl::StrAppend(&text, "\n</contextd-lessons>");
  return text;
}

absl::StatusOr<model::LessonPick> MemoryLessons::Pick(const model::LessonQuery& query) {
  tools::MemoryRetrieval found = tools_.RetrieveForTask(query.tenant, query.project, query.task);
  if (!found.warning.empty()) return absl::UnavailableError(found.warning);
  model::LessonPick pick;
  std::vector<std::string> lines;
  for (const folding::InjectedContext& c : found.candidates) {
    if (lines.size() >= kMaxLessons) break;
    if (query.exclude.count(c.ref) != 0) continue;
    lines.push_back(absl::StrCat("[", c.ref, "] ", c.text));
    std::string text = LessonsText(lines);
    const auto tokens = static_cast<int64_t>(counter_.Count(text));
    if (tokens > query.max_tokens) {  // too large for what is left: the next may fit
      lines.pop_back();
      continue;
    }
    pick.ids.push_back(c.ref);
    pick.text = std::move(text);
    pick.tokens = tokens;
  }
  return pick;
}

void MemoryLessons::Injected(const model::LessonQuery& query, const model::LessonPick& pick) {
  tools_.NoteConversationInjected(query.tenant, query.project, query.conversation, pick.ids,
                                  pick.tokens);
}

}  // namespace contextd::server
