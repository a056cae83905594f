// Transcript: the provider-neutral view of a model request's conversation that the fold core
// works on. An API adapter (Anthropic Messages here; OpenAI later) fills it from the request and
// renders the core's decisions back into its own wire format. Every block carries `key`, a hash
// of its original bytes without cache markers (which clients move between requests), so a block
// is recognised on every later request of its conversation. Plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace contextd::model {

// kSystem: a `system` (or `developer`) message in the middle of the conversation, which clients
// add as harness nudges (Claude Code's mid-conversation system messages, Codex's developer
// updates); the request's own system prompt is not a message.
enum class Role { kUser, kAssistant, kOther, kSystem };

enum class BlockKind {
  kText,        // text the model or the user wrote (or the client injected)
  kToolCall,    // the model calls a tool
  kToolResult,  // a tool's answer, sent by the client
  kThinking,    // the model's reasoning (thinking, redacted_thinking): never changed
  kMedia,       // image, document
  kServerTool,  // a provider-run tool's call and result in the model's turn (web search, fetch)
  kOther,       // anything else: passed through, and a branch containing it is not folded
};

struct Block {
  BlockKind kind = BlockKind::kOther;
  std::string type;       // the provider's type name ("tool_use", ...)
  std::string call_id;    // kToolCall: its id; kToolResult: the call it answers
  std::string tool_name;  // kToolCall
  // kToolCall to contextd: its tool without the client's prefix ("branch_create",
  // "fs__read_file"; ContextdToolNames); "" for a call that does not go to contextd.
  std::string contextd_tool;
  bool is_error = false;  // kToolResult
  // What the model reads of it: kText/kThinking text, kToolResult's text content, kToolCall's
  // arguments (raw JSON). Used to find branch ids, count tokens and scrub.
  std::string text;
  bool cache_marker = false;  // carries a cache breakpoint in this request
  std::string key;            // 16-byte hash of the original block without cache markers
};

struct Message {
  Role role = Role::kOther;
  std::vector<Block> blocks;
  std::string key;  // 16-byte hash over the role and the blocks' keys
};

struct Transcript {
  std::vector<Message> messages;
};

// The role as message keys name it: a system message is keyed as every role but user and
// assistant always was, so that keys stored before kSystem existed still match.
inline int KeyRole(Role role) {
  return static_cast<int>(role == Role::kSystem ? Role::kOther : role);
}

// 16-byte digest (SHA-256, truncated) of `parts` concatenated.
std::string Digest(std::initializer_list<std::string_view> parts);

// Lower-case hex of `bytes`.
std::string Hex(std::string_view bytes);

}  // namespace contextd::model
