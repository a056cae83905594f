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

enum class Role { kUser, kAssistant, kOther };

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

// A tool call's name without the client's MCP prefix: "mcp__contextd__branch_create" and
// "contextd__branch_create" -> "branch_create"; other names unchanged.
std::string_view BareToolName(std::string_view name);

// 16-byte digest (SHA-256, truncated) of `parts` concatenated.
std::string Digest(std::initializer_list<std::string_view> parts);

// Lower-case hex of `bytes`.
std::string Hex(std::string_view bytes);

}  // namespace contextd::model
