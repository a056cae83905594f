// Fuzzes the structural distiller and the query/stem/overlap helpers with arbitrary bytes: the
// input is split on NUL bytes into description, prompt, summary and event texts (tool calls and
// results alternate). Every candidate must pass the field limits the bank checks, and nothing
// may crash or run long.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "memory/distiller.h"
#include "memory/memory_bank.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace contextd::memory;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= input.size() && parts.size() < 64) {
    size_t end = input.find('\0', start);
    if (end == std::string_view::npos) end = input.size();
    parts.emplace_back(input.substr(start, end - start));
    start = end + 1;
  }
  BranchTrace trace;
  trace.description = parts.size() > 0 ? parts[0] : "";
  trace.prompt = parts.size() > 1 ? parts[1] : "";
  trace.summary = parts.size() > 2 ? parts[2] : "";
  trace.succeeded = size % 2 == 0;
  trace.finish_reason = parts.size() > 3 ? parts[3] : "";
  for (size_t i = 4; i < parts.size(); ++i) {
    trace.events.push_back(
        TraceEvent{i % 2 == 0 ? "tool_call" : "tool_result", "bash", parts[i], i % 3 == 0});
  }
  StructuralDistiller distiller;
  auto candidates = distiller.Distill(trace);
  if (!candidates.ok() || candidates->size() > kMaxCandidates) std::abort();
  for (const Candidate& c : *candidates) {
    MemoryItem item;
    item.title = std::string(Utf8Head(c.title, kMaxTitleChars));
    item.description = std::string(Utf8Head(c.description, kMaxDescriptionChars));
    item.content = std::string(Utf8Head(c.content, kMaxContentChars));
    if (Utf8Chars(c.content) > kMaxContentChars + 8) std::abort();  // the distiller bounds it
    (void)ValidateFields(item);
  }
  std::vector<std::string> terms = QueryTerms(input);
  if (terms.size() > 64) std::abort();
  // The stemmer sees every word (non-ASCII bytes included): each stem is a non-empty word of
  // StemText's, which a store indexes, and no stem is repeated in a query.
  const std::string stems = StemText(input);
  for (const std::string& t : terms) {
    if (t.empty() || t.find(' ') != std::string::npos) std::abort();
  }
  for (std::string_view s : SplitStems(stems)) {
    if (s.empty()) std::abort();
  }
  double overlap = WordOverlap(trace.description, trace.summary);
  if (overlap < 0 || overlap > 1) std::abort();
  return 0;
}
