// The tool-author side of the MCP engine: ToolDefinition (what tools/list shows), ToolResult and
// its builders, the ToolCall handed to a tool's handler (progress, logging, server-to-client
// requests, cancellation, Finish), ToolHandler and ToolPrepare, and the MCP logging levels a call
// logs at. McpServer::AddTool (mcp_server.h) registers tools.
// Threading: ToolCall methods may be called from any thread (they post to the executor when
// needed); the free functions are pure.
#pragma once

#include <any>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "base/executor.h"
#include "protocol/jsonrpc.h"
#include "protocol/session.h"

namespace contextd::protocol {

// MCP logging levels (RFC 5424 order), as used by logging/setLevel and notifications/message.
enum class LoggingLevel { kDebug, kInfo, kNotice, kWarning, kError, kCritical, kAlert, kEmergency };
// "debug", "info", ... "emergency".
std::string_view LoggingLevelName(LoggingLevel level);
// Parses a level name; nullopt for anything else.
std::optional<LoggingLevel> ParseLoggingLevel(std::string_view name);

// A tool as tools/list shows it.
struct ToolDefinition {
  std::string name;         // unique; 1-128 of [A-Za-z0-9_.-]
  std::string title;        // optional
  std::string description;  // shown to the model
  // JSON Schema of the arguments (type "object"); null means {"type":"object"}. The arguments of
  // every call are validated against it before the handler runs; a violation becomes a tool
  // result with isError:true naming the field and the rule.
  Json input_schema;
  Json output_schema;   // optional (null = none)
  Json annotations;     // optional ToolAnnotations object (null = none)
  Json meta = nullptr;  // optional `_meta` object of the listing (null = none)
};

// What a tool returns.
struct ToolResult {
  Json content = Json::array();  // content blocks: {"type":"text","text":...}, image, audio, ...
  Json structured_content;       // optional object (null = none)
  bool is_error = false;         // a tool execution error the model should see
};

// A result holding one text block.
ToolResult TextResult(std::string text);
// A result holding one text block with isError:true.
ToolResult ErrorResult(std::string text);
// The wire form {content, structuredContent?, isError?} of `result`.
Json ToolResultToJson(ToolResult result);

// Completion callback of a server-to-client request: the client's result, or
// FailedPrecondition (client lacks the capability), DeadlineExceeded (timeout), Cancelled (call
// cancelled or session closed), Unknown (the client answered with an error; message holds its
// code and message).
using ResponseCallback = std::function<void(absl::StatusOr<Json>)>;

// One tools/call in flight. Handed to the tool's handler, which must call Finish exactly once
// (later calls are ignored). Every method is thread-safe; callbacks run on the executor.
class ToolCall {
 public:
  virtual ~ToolCall() = default;
  // The tool's name.
  virtual const std::string& tool_name() const = 0;
  // The arguments, already validated against the tool's input schema (an object).
  virtual const Json& arguments() const = 0;
  // Who called.
  virtual const SessionInfo& session() const = 0;
  // The id of the tools/call request.
  virtual const Json& request_id() const = 0;
  // True when the request carried params._meta.progressToken.
  virtual bool has_progress_token() const = 0;
  // Sends notifications/progress (only if a progress token was given; no-op otherwise).
  // `total` <= 0 means unknown; `message` may be empty.
  virtual void SendProgress(double progress, double total = 0, std::string_view message = {}) = 0;
  // Sends notifications/message at `level` unless the session's logging/setLevel filters it out.
  // `logger` may be empty.
  virtual void Log(LoggingLevel level, std::string_view logger, Json data) = 0;
  // Sends a server-to-client request (sampling/createMessage, elicitation/create, roots/list,
  // ping...) related to this call. `timeout` <= 0 uses ServerOptions::request_timeout.
  // `callback` runs exactly once on the executor (see ResponseCallback).
  virtual void SendRequest(std::string_view method, Json params, std::chrono::milliseconds timeout,
                           ResponseCallback callback) = 0;
  // True once the client cancelled the call (notifications/cancelled) or the session closed.
  virtual bool cancelled() const = 0;
  // Runs `fn` on the executor when the call is cancelled (at once if it already was).
  virtual void OnCancelled(std::function<void()> fn) = 0;
  // Sends the result (unless the call was cancelled: then nothing is sent). Once only.
  virtual void Finish(ToolResult result) = 0;
  // The engine's executor (for timers and for posting completions back).
  virtual base::Executor& executor() = 0;
  // What the tool's ToolPrepare made of the arguments; empty if the tool has none.
  virtual const std::any& prepared() const = 0;
  // Asks the transport to close the stream carrying this call's messages before the result, for
  // a client that resumes it (MessageSink::CloseStream; SEP-1699 polling). Messages sent before
  // it precede the close. Does nothing where the transport cannot.
  virtual void CloseStream() {}
};

// Runs a call. Called on the executor; may finish later from any thread. If it throws, the call
// finishes with an error result.
using ToolHandler = std::function<void(std::shared_ptr<ToolCall>)>;

// Work a tool does on its validated arguments before its handler runs, on the thread that
// received the request (any thread, concurrently with anything else), so that costly stateless
// steps (scrubbing, token counting) do not hold the executor every session shares. It must read
// only `arguments`, the calling `session`'s identity and state that is thread-safe (it may read
// a database through its own connection), and keep no reference into either. Its result reaches the
// handler as ToolCall::prepared(). Runs on the executor instead when the tool was replaced after
// the request arrived. If it throws, the call finishes with an error result and the handler does
// not run.
using ToolPrepare = std::function<std::any(const Json& arguments, const SessionInfo& session)>;

}  // namespace contextd::protocol
