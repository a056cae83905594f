// MemoryLessons: the ReasoningBank as the model gateway's LessonSource (model/lessons.h, decision
// 0038). A task's lessons are the bank's injection candidates for the request's project (ranked
// and floored by MemoryBank::Retrieve), less those the conversation already got, at most
// kMaxLessons of them, fitted greedily into the budget as one <contextd-lessons> text.
#pragma once

#include <string>

#include "model/lessons.h"
#include "tokens/token_counter.h"
#include "tools/memory_tools.h"

namespace contextd::server {

class MemoryLessons : public model::LessonSource {
 public:
  // Few and relevant: the ReasoningBank paper found one relevant item better than four.
  static constexpr size_t kMaxLessons = 3;

  // Both must outlive this object.
  MemoryLessons(tools::MemoryTools& tools, const tokens::TokenCounter& counter)
      : tools_(tools), counter_(counter) {}

  absl::StatusOr<model::LessonPick> Pick(const model::LessonQuery& query) override;
  void Injected(const model::LessonQuery& query, const model::LessonPick& pick) override;

 private:
  tools::MemoryTools& tools_;
  const tokens::TokenCounter& counter_;
};

// The text a pick's model reads: `lines` (one per lesson) inside <contextd-lessons>.
std::string LessonsText(const std::vector<std::string>& lines);

}  // namespace contextd::server
