// Fuzz target for the distiller's parsers and trace rendering: the bytes as a chat completion
// answer (ParseChatAnswer, then ParseMemoriesAnswer on its text), as the model's text itself, and
// cut into a BranchTrace for RenderTrace. Nothing may crash; accepted memories must be at most
// kMaxCandidates, valid and of the outcome asked for; a rendered trace must fit its bound.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "endpoints/openai_answers.h"
#include "memory/memory_item.h"

namespace {

using contextd::memory::Outcome;

void CheckMemories(std::string_view text, Outcome outcome) {
  auto candidates = contextd::endpoints::ParseMemoriesAnswer(text, outcome);
  if (!candidates.ok()) {
    if (candidates.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    return;
  }
  if (candidates->empty() || candidates->size() > contextd::memory::kMaxCandidates) std::abort();
  for (const auto& c : *candidates) {
    contextd::memory::MemoryItem item;
    item.title = c.title;
    item.description = c.description;
    item.content = c.content;
    item.tags = c.tags;
    if (!contextd::memory::ValidateFields(item).ok() || c.outcome != outcome) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto text = contextd::endpoints::ParseChatAnswer(bytes);
  if (text.ok()) {
    CheckMemories(*text, Outcome::kSuccess);
  } else if (text.status().code() != absl::StatusCode::kInvalidArgument) {
    std::abort();
  }
  CheckMemories(bytes, Outcome::kFailure);

  // A trace made of the input: fields split at '\x01', events at '\x02'.
  contextd::memory::BranchTrace trace;
  std::string* fields[] = {&trace.description, &trace.prompt, &trace.summary, &trace.finish_reason};
  size_t field = 0;
  for (char c : bytes) {
    if (c == '\x01' && field < 3) {
      ++field;
    } else if (c == '\x02') {
      trace.events.push_back({"tool_result", "t", "", (trace.events.size() & 1) != 0});
    } else if (!trace.events.empty() && field == 3) {
      trace.events.back().text.push_back(c);
    } else {
      fields[field]->push_back(c);
    }
  }
  trace.succeeded = size % 2 == 0;
  const size_t max = 1024 + (size == 0 ? 0 : data[0]) * 16;
  if (contextd::endpoints::RenderTrace(trace, max).size() > max) std::abort();
  (void)contextd::endpoints::MakeDistillerPrompt(trace);
  return 0;
}
