// Auto-fold: F(.) for agents that never branch. When a request's input passes a trigger, tool
// results older than the last few tool uses are replaced by a handle naming where the trail keeps
// them (trail_unfold brings one back). Unlike Anthropic's clear_tool_uses it is reversible, works
// on every API, and is cache-aware: a fold step happens only when it removes at least
// `clear_at_least` tokens, every step's decisions are stored and repeated byte for byte, and a
// step only moves the fold point forward, so the folded prefix stays the same between steps and
// the provider's cache is rewritten rarely. Results before a thinking block are never folded (a
// changed prefix under a replayed thinking block is refused). This file plans a step; the context
// manager stores and renders it. Pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "model/transcript.h"

namespace contextd::model {

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
};

// One tool result a step folds.
struct AutoFoldPick {
  size_t message = 0;  // of the tool result
  size_t block = 0;
  size_t call_message = 0;  // of the call it answers
  size_t call_block = 0;
  int64_t tokens = 0;  // the result's tokens
};

// Why a step folded nothing (a metric label), or kFolded.
enum class AutoFoldOutcome {
  kFolded,
  kBelowTrigger,       // the request is under trigger_tokens
  kBelowClearAtLeast,  // what could be folded is under clear_at_least
  kThinking,           // only results before a thinking block would reach clear_at_least
};
const char* AutoFoldOutcomeName(AutoFoldOutcome outcome);

struct AutoFoldStep {
  AutoFoldOutcome outcome = AutoFoldOutcome::kBelowTrigger;
  std::vector<AutoFoldPick> picks;  // in transcript order
  int64_t tokens_folded = 0;        // the picks' tokens, before their handles replace them
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
};

// Plans one step over `transcript`. Candidates: tool results of user messages at or after
// `first_message`, not removed, answering a call that is not among the last `keep` tool calls
// and not one of contextd's own tools, with at least min_result_tokens, foldable, and with no
// thinking block in a later message. The step takes every candidate when the request is over
// trigger_tokens and their tokens less their handles' reach clear_at_least; otherwise none.
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
