// Auto-fold: F(.) for agents that never branch. When a request's input passes a trigger, tool
// results older than the last few tool uses are replaced by a handle naming where the trail keeps
// them (trail_unfold brings one back). Unlike Anthropic's clear_tool_uses it is reversible, works
// on every API, and is cache-aware: a fold step happens only when it removes at least
// `clear_at_least` tokens, every step's decisions are stored and repeated byte for byte, and a
// step only moves the fold point forward, so the folded prefix stays the same between steps and
// the provider's cache is rewritten rarely. A step is taken when the bill says it pays: what the
// requests that follow save on the smaller prefix against what re-writing the messages' cache
// costs now. Under a thinking model (decision 0036) a changed prefix invalidates every later
// thinking block, so a step either removes the thinking of the turns after its fold point, which
// the provider allows outside a tool loop only (mode `remove`: at a request ending with a new user
// turn), or folds only results no thinking block follows (`wait`), or does nothing (`off`). This
// file plans a step; the context manager stores and renders it. Pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/transcript.h"

namespace contextd::model {

// model_gateway.auto_fold.thinking: what a step does when thinking blocks (or bound reasoning
// items) follow the results it would fold.
enum class AutoFoldThinking {
  kRemove,  // at a new user turn, remove the thinking of every turn after the fold point
  kWait,    // fold only results that no thinking block follows
  kOff,     // no step in a conversation that carries thinking
};
// "remove", "wait", "off"; nullopt for anything else.
std::optional<AutoFoldThinking> ParseAutoFoldThinking(std::string_view name);

// model_gateway.auto_fold.
struct AutoFoldOptions {
  bool enabled = false;              // per request: the x-contextd-auto-fold header overrides
  int64_t trigger_tokens = 100'000;  // the request's messages, as they would be forwarded
  int64_t keep = 3;                  // the last `keep` tool uses keep their results
  int64_t min_result_tokens = 200;   // smaller results stay (a handle would save little)
  int64_t clear_at_least = 20'000;   // a step folds at least this many tokens, or waits
  // Whether an OpenAI Responses reasoning item binds the items before it, as a Claude thinking
  // block does (decision 0020: undocumented either way). true: results before one are never
  // folded; false (the operator's choice for a provider known not to bind): they are.
  bool reasoning_items_bound = true;
  std::string thinking = "remove";  // AutoFoldThinking by name
  // How many requests a step is expected to be followed by, for the bill that decides whether it
  // pays; 0: as many as the model turns so far (a conversation is expected to go on about as long
  // as it has gone).
  int64_t expected_requests = 0;
};

// One tool result a step folds.
struct AutoFoldPick {
  size_t message = 0;  // of the tool result
  size_t block = 0;
  size_t call_message = 0;  // of the call it answers
  size_t call_block = 0;
  int64_t tokens = 0;  // the result's tokens
};

// A thinking block a step removes (it follows the fold point).
struct AutoFoldDrop {
  size_t message = 0;
  size_t block = 0;
  int64_t tokens = 0;
};

// Why a step folded nothing (a metric label), or kFolded.
enum class AutoFoldOutcome {
  kFolded,
  kBelowTrigger,       // the request is under trigger_tokens
  kBelowClearAtLeast,  // what could be folded is under clear_at_least
  kThinking,           // only results before a thinking block would reach clear_at_least
  kToolLoop,           // they would, removing thinking, but a tool loop is in flight: wait
  kBelowPayback,       // the step would cost more now than the requests after it would save
};
const char* AutoFoldOutcomeName(AutoFoldOutcome outcome);

struct AutoFoldStep {
  AutoFoldOutcome outcome = AutoFoldOutcome::kBelowTrigger;
  std::vector<AutoFoldPick> picks;  // in transcript order
  int64_t tokens_folded = 0;        // the picks' tokens, before their handles replace them
  // The thinking blocks after the first pick (mode remove), in transcript order. The context
  // manager removes those after the first pick it actually folds.
  std::vector<AutoFoldDrop> drops;
};

// What the planner needs to know of a request beyond its transcript.
struct AutoFoldContext {
  int64_t input_tokens = 0;  // the request's messages as they would be forwarded
  // Messages before this one are not considered: the fold point only moves forward (one past
  // the last message holding a stored auto-fold decision).
  size_t first_message = 0;
  std::vector<bool> removed;  // messages a branch fold removes (not sent)
  // Tokens of block (message, block).
  std::function<int64_t(size_t, size_t)> tokens;
  // Whether block (message, block) may be replaced by a handle (one text span, no decision that
  // forbids it).
  std::function<bool(size_t, size_t)> foldable;
  int64_t handle_tokens = 60;  // what a handle costs, estimated
  bool thinking_binds = true;  // false: thinking blocks do not hold results back
  // Whether block (message, block) is sent (a thinking block an earlier step removed is not).
  std::function<bool(size_t, size_t)> sent = [](size_t, size_t) { return true; };
  // The provider's cache prices relative to uncached input: a read, and a write (Anthropic's
  // 5-minute entries 1.25; OpenAI's automatic cache writes at the base price).
  double cache_read_price = 0.1;
  double cache_write_price = 1.25;
};

// Whether the request ends with a new user turn (its last message that is not a mid-conversation
// system message is a user message carrying no tool result): no tool loop is in flight, and the
// thinking of earlier turns may be left out.
bool EndsWithUserTurn(const Transcript& transcript);
// The index of that user turn, if the request ends with one.
std::optional<size_t> FinalUserTurn(const Transcript& transcript);

// Plans one step over `transcript`. Candidates: tool results of user messages at or after
// `first_message`, not removed, answering a call that is not among the last `keep` tool calls
// and not one of contextd's own tools, with at least min_result_tokens, foldable. A sent
// thinking block in a later message binds a candidate: in mode remove at a new user turn the step
// takes it and removes every sent thinking block after the first pick; otherwise it stays. The
// step takes every free candidate when the request is over trigger_tokens, what it saves (the
// candidates less their handles, and the thinking removed) reaches clear_at_least, and it pays:
// the requests still to come, estimated as many as the model turns so far, read that much less
// at cache_read_price, against re-writing the messages (input_tokens) now at cache_write_price
// instead of reading them. At a new user turn under thinking the trigger looks ahead: twice
// input_tokens.
AutoFoldStep PlanAutoFold(const Transcript& transcript, const AutoFoldOptions& options,
                          const AutoFoldContext& context);

// The handle a folded result becomes, e.g.
//   [contextd: 4,210 tokens of Read /src/app.py folded; trail_unfold {"scope_id":"ses_..",
//   "event":12}]
// `what`: the tool and a one-line gist of its arguments.
std::string AutoFoldHandle(int64_t tokens, std::string_view what, std::string_view scope_id,
                           int64_t event);

// A one-line gist of a call for a handle: the tool name and the argument that says what it read
// (file_path, path, command, url, pattern, query; else the first string argument), cut to
// `max_chars` characters at a UTF-8 boundary. Not scrubbed: the caller scrubs it.
std::string CallGist(std::string_view tool, std::string_view arguments_json, size_t max_chars = 80);

}  // namespace contextd::model
