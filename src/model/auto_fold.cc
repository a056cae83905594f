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

// Whether message `m` is a user turn: a user message carrying no tool result.
bool IsUserTurn(const Message& message) {
  if (message.role != Role::kUser || message.blocks.empty()) return false;
  for (const Block& block : message.blocks) {
    if (block.kind == BlockKind::kToolResult) return false;
  }
  return true;
}

// The index of the request's last message that is not a system message, if it is a user turn.
std::optional<size_t> FinalUserTurn(const Transcript& transcript) {
  for (size_t m = transcript.messages.size(); m-- > 0;) {
    if (transcript.messages[m].role == Role::kSystem) continue;
    if (IsUserTurn(transcript.messages[m])) return m;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

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

// Whether a step saving `gain` tokens, whose fold point leaves `after` tokens to be sent from it
// on (`before` until now), pays for itself over `future` more requests.
bool Pays(int64_t gain, int64_t before, int64_t future, const AutoFoldContext& context) {
  if (!context.tokens_from) return true;
  const int64_t after = std::max<int64_t>(0, before - gain);
  // Now: the prefix from the fold point is written again instead of read.
  const double extra_now = context.cache_write_price * static_cast<double>(after) -
                           context.cache_read_price * static_cast<double>(before);
  const double saved_later =
      context.cache_read_price * static_cast<double>(gain) * static_cast<double>(future);
  return saved_later >= extra_now;
}

// Whether the request is over the trigger, or, at a new user turn of a conversation whose thinking
// binds its results (mode remove), expected to pass it in the task that starts: under thinking no
// step can be taken inside that task's tool loop, so this is the last one before it. The task is
// expected to add as many tokens as the one before it did.
bool PassesTrigger(const Transcript& transcript, const AutoFoldOptions& options,
                   const AutoFoldContext& context, const Candidates& found) {
  if (context.input_tokens > options.trigger_tokens) return true;
  if (found.thinking.empty() || !context.tokens_from) return false;
  std::optional<size_t> turn = FinalUserTurn(transcript);
  if (!turn) return false;
  size_t previous = 0;
  for (size_t m = *turn; m-- > 0;) {
    if (IsUserTurn(transcript.messages[m])) {
      previous = m;
      break;
    }
  }
  const int64_t growth = context.tokens_from(previous) - context.tokens_from(*turn);
  return context.input_tokens + growth > options.trigger_tokens;
}

}  // namespace

AutoFoldStep PlanAutoFold(const Transcript& transcript, const AutoFoldOptions& options,
                          const AutoFoldContext& context) {
  AutoFoldStep step;
  const AutoFoldThinking mode =
      ParseAutoFoldThinking(options.thinking).value_or(AutoFoldThinking::kRemove);
  // Most requests are under the trigger and not at a new user turn: they cost no scan.
  if (context.input_tokens <= options.trigger_tokens &&
      (mode != AutoFoldThinking::kRemove || !EndsWithUserTurn(transcript))) {
    return step;
  }
  Candidates found = FindCandidates(transcript, options, context);
  if (!PassesTrigger(transcript, options, context, found)) return step;
  const int64_t floor = std::max<int64_t>(1, options.clear_at_least);
  int64_t all = 0;
  for (int64_t gain : found.gains) all += gain;
  const size_t last_thinking = found.thinking.empty() ? 0 : found.thinking.back().message;
  // Free: no sent thinking block follows it. The rest are bound.
  int64_t free_gain = 0;
  std::vector<size_t> take;
  for (size_t i = 0; i < found.picks.size(); ++i) {
    if (!found.thinking.empty() && found.picks[i].message <= last_thinking) continue;
    take.push_back(i);
    free_gain += found.gains[i];
  }
  int64_t gain = free_gain;
  if (!found.thinking.empty() && mode == AutoFoldThinking::kOff) {
    step.outcome = all >= floor ? AutoFoldOutcome::kThinking : AutoFoldOutcome::kBelowClearAtLeast;
    return step;
  }
  if (all > free_gain && mode == AutoFoldThinking::kRemove) {
    // Removing the thinking after the first candidate frees them all.
    std::vector<AutoFoldDrop> drops;
    int64_t removed = 0;
    for (const AutoFoldDrop& drop : found.thinking) {
      if (drop.message <= found.picks.front().message) continue;
      drops.push_back(drop);
      removed += drop.tokens;
    }
    if (all + removed >= floor) {
      if (!EndsWithUserTurn(transcript)) {
        if (free_gain < floor) {
          step.outcome = AutoFoldOutcome::kToolLoop;
          return step;
        }
      } else if (!EmptiesATurn(transcript, drops)) {
        take.resize(found.picks.size());
        for (size_t i = 0; i < take.size(); ++i) take[i] = i;
        gain = all + removed;
        step.drops = std::move(drops);
      }
    }
  }
  if (gain < floor) {
    step.outcome = all >= floor ? AutoFoldOutcome::kThinking : AutoFoldOutcome::kBelowClearAtLeast;
    step.drops.clear();
    return step;
  }
  const size_t point = found.picks[take.front()].message;
  const int64_t before = context.tokens_from ? context.tokens_from(point) : 0;
  const int64_t future = options.expected_requests > 0 ? options.expected_requests
                                                       : static_cast<int64_t>(found.model_turns);
  if (!Pays(gain, before, future, context)) {
    step.outcome = AutoFoldOutcome::kBelowPayback;
    step.drops.clear();
    return step;
  }
  for (size_t i : take) {
    step.picks.push_back(found.picks[i]);
    step.tokens_folded += found.picks[i].tokens;
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
