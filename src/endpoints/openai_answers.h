// The wire formats of the ReasoningBank's OpenAI-compatible endpoints, as pure functions: the
// /v1/embeddings request and answer, the distillation prompts (a success and a failure variant)
// with the branch trace rendered into a bounded text, and the /v1/chat/completions answer with
// the model's JSON list of memories. Every answer parser takes bytes from a peer: it never throws
// nor asserts, and reports any malformed answer as InvalidArgument. Thread-safe (no state).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "memory/distiller.h"
#include "memory/memory_item.h"

namespace contextd::endpoints {

// --- /v1/embeddings ---

// {"model": model, "input": [texts...]}. Invalid UTF-8 in a text is replaced by U+FFFD.
std::string EmbeddingsRequestBody(std::string_view model, const std::vector<std::string>& texts);

// The vectors of an embeddings answer {"data": [{"index": i, "embedding": [numbers...]}, ...]},
// ordered by `index` (when no element has an index: in array order). InvalidArgument, saying
// what is wrong, when the answer is not JSON, lacks `data` or an `embedding`, holds a number of
// vectors other than `expected`, an index that is not an integer in [0, expected) or appears
// twice, an empty vector, vectors of different lengths, or a component that is not a number or
// not finite as a float.
absl::StatusOr<std::vector<std::vector<float>>> ParseEmbeddingsAnswer(std::string_view body,
                                                                      size_t expected);

// --- distillation over /v1/chat/completions ---

// Bytes of trace text (task, steps, summary) a distillation prompt holds at most.
inline constexpr size_t kMaxTraceTextBytes = size_t{24} * 1024;

// The trace as the model reads it: the task (description, then the prompt), how it ended, its
// steps in order and its final summary, in at most `max_bytes` bytes (>= 1024). Long fields are
// cut (never inside a UTF-8 sequence) and marked; when the steps do not fit, the first and the
// last ones are kept and the count of those left out is said between them.
std::string RenderTrace(const memory::BranchTrace& trace, size_t max_bytes = kMaxTraceTextBytes);

// The system and user messages for `trace`: the success variant (extract strategies that
// transfer) when trace.succeeded, the failure variant (reflect on why it failed, extract
// pitfalls) otherwise.
struct DistillerPrompt {
  std::string system;
  std::string user;
};
DistillerPrompt MakeDistillerPrompt(const memory::BranchTrace& trace);

// {"model": model, "messages": [system, user], "temperature": 0}.
std::string ChatRequestBody(std::string_view model, const DistillerPrompt& prompt);

// The assistant's text of a chat completion answer: choices[0].message.content, a string (or an
// array of {"type": "text", "text": ...} parts, joined). InvalidArgument when the answer is not
// JSON or has no such non-empty text (e.g. a refusal with null content).
absl::StatusOr<std::string> ParseChatAnswer(std::string_view body);

// The candidates in the model's text: a JSON object {"memories": [{"title", "description",
// "content", "tags"}]}, alone or in a fenced ```json block, or the outermost {...} of the text.
// Texts are trimmed; tags are optional (non-strings, empty and over-long ones dropped, at most
// memory::kMaxTags kept, duplicates once). A memory that fails memory::ValidateFields is dropped;
// the first memory::kMaxCandidates valid ones are returned, each with `outcome`. InvalidArgument
// when the text holds no such JSON, or no valid memory (the message gives the first reason).
absl::StatusOr<std::vector<memory::Candidate>> ParseMemoriesAnswer(std::string_view text,
                                                                   memory::Outcome outcome);

}  // namespace contextd::endpoints
