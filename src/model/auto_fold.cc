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
    case AutoFoldOutcome::kToolLoop:
      return "tool_loop";
    case AutoFoldOutcome::kBelowPayback:
      return "below_payback";
  }
  return "unknown";
}

std::optional<AutoFoldThinking> ParseAutoFoldThinking(std::string_view name) {
  if (name == "remove") return AutoFoldThinking::kRemove;
  if (name == "wait") return AutoFoldThinking::kWait;
  if (name == "off") return AutoFoldThinking::kOff;
  return std::nullopt;
}

namespace {

// Whether `message` is a user turn: a user message carrying no tool result.
bool IsUserTurn(const Message& message) {
  if (message.role != Role::kUser || message.blocks.empty()) return false;
  for (const Block& block : message.blocks) {
    if (block.kind == BlockKind::kToolResult) return false;
  }
  return true;
}

}  // namespace

std::optional<size_t> FinalUserTurn(const Transcript& transcript) {
  for (size_t m = transcript.messages.size(); m-- > 0;) {
    if (transcript.messages[m].role == Role::kSystem) continue;
    if (IsUserTurn(transcript.messages[m])) return m;
    return std::nullopt;
  }
  return std::nullopt;
}

bool EndsWithUserTurn(const Transcript& transcript) {
  return FinalUserTurn(transcript).has_value();
}

namespace {

// The tool results a step may fold, each with what folding it saves, and where the thinking
// blocks that bind them are.
struct Candidates {
  std::vector<AutoFoldPick> picks;     // in transcript order
  std::vector<int64_t> gains;          // per pick: its tokens less its handle's
  std::vector<AutoFoldDrop> thinking;  // sent thinking blocks, in transcript order
  size_t model_turns = 0;              // assistant messages: the requests made so far
};

Candidates FindCandidates(const Transcript& transcript, const AutoFoldOptions& options,
                          const AutoFoldContext& context) {
  Candidates out;
  const std::vector<Message>& messages = transcript.messages;
  // Calls by id, with each call's position among the transcript's calls (0 = the first).
  struct Call {
    size_t message, block;
    const Block* block_ptr;
    size_t index;
  };
  std::unordered_map<std::string, Call> calls;
  size_t total_calls = 0;
  for (size_t m = 0; m < messages.size(); ++m) {
    out.model_turns += messages[m].role == Role::kAssistant;
    const bool removed = m < context.removed.size() && context.removed[m];
    for (size_t b = 0; b < messages[m].blocks.size(); ++b) {
      const Block& block = messages[m].blocks[b];
      if (block.kind == BlockKind::kToolCall) {
        calls[block.call_id] = Call{m, b, &block, total_calls++};
      } else if (block.kind == BlockKind::kThinking && context.thinking_binds && !removed &&
                 context.sent(m, b)) {
        out.thinking.push_back({m, b, context.tokens(m, b)});
      }
    }
  }
  const size_t keep = static_cast<size_t>(std::max<int64_t>(0, options.keep));
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
      out.picks.push_back({m, b, call->second.message, call->second.block, tokens});
      out.gains.push_back(std::max<int64_t>(0, tokens - context.handle_tokens));
    }
  }
  return out;
}

// Whether removing `drops` would leave an assistant message with nothing in it (a turn that only
// thought): the provider refuses an empty turn, and keeping its thinking would leave a gap.
bool EmptiesATurn(const Transcript& transcript, const std::vector<AutoFoldDrop>& drops) {
  for (size_t i = 0; i < drops.size();) {
    size_t m = drops[i].message;
    size_t n = 0;
    for (; i < drops.size() && drops[i].message == m; ++i) ++n;
    if (n >= transcript.messages[m].blocks.size()) return true;
  }
  return false;
}

// Whether a step saving `gain` tokens of the `before` that the messages hold pays for itself over
// `future` more requests. The provider reads a cached prefix back only where a breakpoint of an
// earlier request ended, within 20 blocks of one of this request's; clients mark the system prompt
// and the tail, so a step re-writes the messages from their start, not from its fold point.
bool Pays(int64_t gain, int64_t before, int64_t future, const AutoFoldContext& context) {
  const int64_t after = std::max<int64_t>(0, before - gain);
  // Now: the messages are written again instead of read.
  const double extra_now = context.cache_write_price * static_cast<double>(after) -
                           context.cache_read_price * static_cast<double>(before);
  const double saved_later =
      context.cache_read_price * static_cast<double>(gain) * static_cast<double>(future);
  return saved_later >= extra_now;
}

// Whether the request is over the trigger, or, at a new user turn of a conversation whose thinking
// binds its results (mode remove), expected to pass it before it ends: under thinking no step can
// be taken inside a task's tool loop, so the step that keeps the coming tasks under the trigger is
// this one. A conversation is expected to go on about as long as it has gone (the bill's
// estimate): to twice its size. `at_turn`: the request ends with a new user turn; PlanAutoFold
// asks only in mode remove when under the trigger.
bool PassesTrigger(bool at_turn, const AutoFoldOptions& options, const AutoFoldContext& context,
                   const Candidates& found) {
  if (context.input_tokens > options.trigger_tokens) return true;
  if (found.thinking.empty() || !at_turn) return false;
  return 2 * context.input_tokens > options.trigger_tokens;
}

// Which candidates a step takes (indexes into Candidates::picks) and what it saves, the thinking
// it removes, or why it takes none.
struct Choice {
  std::optional<AutoFoldOutcome> none;
  std::vector<size_t> take;
  int64_t gain = 0;
  std::vector<AutoFoldDrop> drops;
};

// Chooses over `found` (`floor`: clear_at_least). Candidates that no sent thinking block follows
// are free. The others are bound: in mode remove, at a new user turn, the step takes them all and
// removes the thinking after the first; inside a tool loop it waits.
Choice Choose(const Transcript& transcript, bool at_turn, const Candidates& found,
              AutoFoldThinking mode, int64_t floor) {
  Choice choice;
  int64_t all = 0;
  for (int64_t gain : found.gains) all += gain;
  const bool thinking = !found.thinking.empty();
  for (size_t i = 0; i < found.picks.size(); ++i) {
    if (thinking && found.picks[i].message <= found.thinking.back().message) continue;
    choice.take.push_back(i);
    choice.gain += found.gains[i];
  }
  const AutoFoldOutcome short_of =
      all >= floor ? AutoFoldOutcome::kThinking : AutoFoldOutcome::kBelowClearAtLeast;
  if (thinking && mode == AutoFoldThinking::kOff) return {short_of, {}, 0, {}};
  const bool bound = all > choice.gain;
  if (bound && mode == AutoFoldThinking::kRemove) {
    std::vector<AutoFoldDrop> drops;
    int64_t removed = 0;
    for (const AutoFoldDrop& drop : found.thinking) {
      if (drop.message <= found.picks.front().message) continue;
      drops.push_back(drop);
      removed += drop.tokens;
    }
    if (at_turn && all + removed >= floor && !EmptiesATurn(transcript, drops)) {
      Choice whole{std::nullopt, {}, all + removed, std::move(drops)};
      for (size_t i = 0; i < found.picks.size(); ++i) whole.take.push_back(i);
      return whole;
    }
    if (!at_turn && choice.gain < floor && all + removed >= floor) {
      return {AutoFoldOutcome::kToolLoop, {}, 0, {}};
    }
  }
  if (choice.gain < floor) return {short_of, {}, 0, {}};
  return choice;
}

}  // namespace

AutoFoldStep PlanAutoFold(const Transcript& transcript, const AutoFoldOptions& options,
                          const AutoFoldContext& context) {
  AutoFoldStep step;
  const AutoFoldThinking mode =
      ParseAutoFoldThinking(options.thinking).value_or(AutoFoldThinking::kRemove);
  const bool at_turn = EndsWithUserTurn(transcript);
  // Most requests are under the trigger and not at a new user turn: they cost no scan.
  if (context.input_tokens <= options.trigger_tokens &&
      (mode != AutoFoldThinking::kRemove || !at_turn)) {
    return step;
  }
  Candidates found = FindCandidates(transcript, options, context);
  if (!PassesTrigger(at_turn, options, context, found)) return step;
  Choice choice =
      Choose(transcript, at_turn, found, mode, std::max<int64_t>(1, options.clear_at_least));
  if (choice.none) {
    step.outcome = *choice.none;
    return step;
  }
  const int64_t future = options.expected_requests > 0 ? options.expected_requests
                                                       : static_cast<int64_t>(found.model_turns);
  if (choice.gain <= 0 || !Pays(choice.gain, context.input_tokens, future, context)) {
    step.outcome = AutoFoldOutcome::kBelowPayback;
    return step;
  }
  for (size_t i : choice.take) {
    step.picks.push_back(found.picks[i]);
    step.tokens_folded += found.picks[i].tokens;
  }
  step.drops = std::move(choice.drops);
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
