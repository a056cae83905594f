#include "model/auto_fold.h"

#include <algorithm>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "model/raw_json.h"
#include "nlohmann/json.hpp"

namespace contextd::model {
namespace {

// 4210 -> "4,210".
std::string Grouped(int64_t n) {
  std::string digits = absl::StrCat(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return n < 0 ? "-" + out : out;
}

// `text` on one line (runs of whitespace as one space), at most `max_chars` characters.
std::string OneLine(std::string_view text, size_t max_chars) {
  std::string out;
  size_t chars = 0;
  bool space = false;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      space = !out.empty();
      continue;
    }
    bool lead = (c & 0xC0) != 0x80;  // a character starts here
    if (lead) {
      if (chars + (space ? 1 : 0) >= max_chars) {
        out += "...";
        return out;
      }
      if (space) {
        out.push_back(' ');
        ++chars;
        space = false;
      }
      ++chars;
    }
    out.push_back(static_cast<char>(c));
  }
  return out;
}

}  // namespace

const char* AutoFoldOutcomeName(AutoFoldOutcome outcome) {
  switch (outcome) {
    case AutoFoldOutcome::kFolded:
      return "folded";
    case AutoFoldOutcome::kBelowTrigger:
      return "below_trigger";
    case AutoFoldOutcome::kBelowClearAtLeast:
      return "below_clear_at_least";
    case AutoFoldOutcome::kThinking:
      return "thinking";
  }
  return "unknown";
}

AutoFoldStep PlanAutoFold(const Transcript& transcript, const AutoFoldOptions& options,
                          const AutoFoldContext& context) {
  AutoFoldStep step;
  if (context.input_tokens <= options.trigger_tokens) return step;
  const std::vector<Message>& messages = transcript.messages;
  // Calls by id, with each call's position among the transcript's calls (0 = the first).
  struct Call {
    size_t message, block;
    const Block* block_ptr;
    size_t index;
  };
  std::unordered_map<std::string, Call> calls;
  size_t total_calls = 0;
  size_t last_thinking = 0;
  bool any_thinking = false;
  for (size_t m = 0; m < messages.size(); ++m) {
    for (size_t b = 0; b < messages[m].blocks.size(); ++b) {
      const Block& block = messages[m].blocks[b];
      if (block.kind == BlockKind::kToolCall) {
        calls[block.call_id] = Call{m, b, &block, total_calls++};
      } else if (block.kind == BlockKind::kThinking && context.thinking_binds) {
        last_thinking = m;
        any_thinking = true;
      }
    }
  }
  const size_t keep = static_cast<size_t>(std::max<int64_t>(0, options.keep));
  int64_t saved = 0;
  int64_t saved_before_thinking = 0;
  for (size_t m = context.first_message; m < messages.size(); ++m) {
    if (messages[m].role != Role::kUser) continue;
    if (m < context.removed.size() && context.removed[m]) continue;
    for (size_t b = 0; b < messages[m].blocks.size(); ++b) {
      const Block& block = messages[m].blocks[b];
      if (block.kind != BlockKind::kToolResult) continue;
      auto call = calls.find(block.call_id);
      if (call == calls.end() || call->second.message >= m) continue;
      // Among the last `keep` calls: kept.
      if (total_calls - call->second.index <= keep) continue;
      // contextd's own tools (branch results, trail_unfold's answers) stay.
      if (!call->second.block_ptr->contextd_tool.empty()) continue;
      int64_t tokens = context.tokens(m, b);
      if (tokens < options.min_result_tokens || !context.foldable(m, b)) continue;
      int64_t gain = std::max<int64_t>(0, tokens - context.handle_tokens);
      if (any_thinking && m <= last_thinking) {
        saved_before_thinking += gain;  // a later thinking block binds this prefix
        continue;
      }
      step.picks.push_back({m, b, call->second.message, call->second.block, tokens});
      step.tokens_folded += tokens;
      saved += gain;
    }
  }
  if (saved < std::max<int64_t>(1, options.clear_at_least)) {
    step.outcome = saved + saved_before_thinking >= std::max<int64_t>(1, options.clear_at_least)
                       ? AutoFoldOutcome::kThinking
                       : AutoFoldOutcome::kBelowClearAtLeast;
    step.picks.clear();
    step.tokens_folded = 0;
    return step;
  }
  step.outcome = AutoFoldOutcome::kFolded;
  return step;
}

std::string AutoFoldHandle(int64_t tokens, std::string_view what, std::string_view scope_id,
                           int64_t event) {
  return absl::StrCat("[contextd: ", Grouped(tokens), " tokens of ", std::string(what),
                      " folded; trail_unfold {\"scope_id\":",
                      QuoteJsonString(std::string(scope_id)), ",\"event\":", event, "}]");
}

std::string CallGist(std::string_view tool, std::string_view arguments_json, size_t max_chars) {
  std::string gist(tool);
  nlohmann::json args = nlohmann::json::parse(arguments_json, nullptr, false);
  if (!args.is_object()) return gist;
  auto text = [](const nlohmann::json& value) -> const std::string* {
    return value.is_string() && !value.get_ref<const std::string&>().empty()
               ? &value.get_ref<const std::string&>()
               : nullptr;
  };
  const std::string* found = nullptr;
  // The argument that says what a call read, in the names agents' tools use.
  for (const char* name : {"file_path", "path", "command", "cmd", "url", "pattern", "query"}) {
    auto it = args.find(name);
    if (it != args.end() && (found = text(*it)) != nullptr) break;
  }
  for (auto it = args.begin(); found == nullptr && it != args.end(); ++it) found = text(*it);
  if (found == nullptr && args.contains("command") && args["command"].is_array()) {
    std::string joined;  // Codex's shell: {"command": ["bash", "-lc", "..."]}
    for (const auto& part : args["command"]) {
      if (part.is_string()) joined += (joined.empty() ? "" : " ") + part.get<std::string>();
    }
    if (!joined.empty()) return gist + " " + OneLine(joined, max_chars);
  }
  if (found != nullptr) gist += " " + OneLine(*found, max_chars);
  return gist;
}

}  // namespace contextd::model
