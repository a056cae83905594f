// McpServer: the MCP engine. It owns a registry of tools, resources, resource templates, prompts
// and completion providers shared by all sessions, and creates Sessions (session.h) that speak
// the MCP lifecycle over JSON-RPC: initialize and version negotiation, ping, tools, resources,
// prompts, logging, completion, progress, cancellation and server-to-client requests with
// timeouts. What a tool's handler sees (ToolCall, ToolResult, ...) is in tool_call.h.
// Threading: every piece of engine state lives on one base::Executor. Session::Receive/Close and
// the McpServer registration and Notify* methods may be called from any thread (they lock or post
// to the executor). Handlers (tools, resources, prompts, completions, hooks) run on the executor;
// ToolCall methods may be called from any thread (they post to the executor when needed).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/executor.h"
#include "protocol/jsonrpc.h"
#include "protocol/session.h"
#include "protocol/tool_call.h"  // IWYU pragma: export

namespace contextd::protocol {

class McpSession;

// What the server says about itself in the initialize result.
struct ServerInfo {
  std::string name;
  std::string version;
  std::string instructions;  // optional; omitted when empty
};

// Engine limits and defaults.
struct ServerOptions {
  // Default timeout of server-to-client requests (sampling, elicitation, roots).
  std::chrono::milliseconds request_timeout{60'000};
  // Items per page of tools/list, resources/list, resources/templates/list, prompts/list.
  size_t page_size = 100;
  // How long a session's first tools/call, resources/read or prompts/get waits for the client's
  // answer to roots/list before its project is fixed without roots (SetProjectResolver).
  std::chrono::milliseconds roots_wait{2'000};
};

// Fixes a session's project (SessionInfo::project, project_label) once, on the executor, when
// its first tools/call, resources/read or prompts/get arrives: `roots` is the "roots" array of the
// client's last roots/list answer, or null when the client declared no roots capability, answered
// with an error, or did not answer within ServerOptions::roots_wait.
using ProjectResolver = std::function<void(const Json& roots, SessionInfo& info)>;

// The protocol versions this engine negotiates, newest first.
const std::vector<std::string>& SupportedProtocolVersions();

// One resources/read. `done` receives the "contents" array ([{uri, mimeType?, text|blob}]), or
// NotFound (-> -32002) or another error (-> -32603 with its message). May be called later from
// any thread, exactly once.
using ResourceDone = std::function<void(absl::StatusOr<Json>)>;
struct ResourceRead {
  std::string uri;
  std::map<std::string, std::string> variables;  // template variables ({id} -> "123")
  SessionInfo session;
};
using ResourceReader = std::function<void(const ResourceRead& read, ResourceDone done)>;

// A concrete resource for resources/list.
struct ResourceDefinition {
  std::string uri;
  std::string name;
  std::string title;        // optional
  std::string description;  // optional
  std::string mime_type;    // optional
};

// A resource template (RFC 6570 level 1: "{var}" matches one path segment without '/').
struct ResourceTemplateDefinition {
  std::string uri_template;
  std::string name;
  std::string title;
  std::string description;
  std::string mime_type;
};

// A prompt argument for prompts/list.
struct PromptArgument {
  std::string name;
  std::string description;
  bool required = false;
};

struct PromptDefinition {
  std::string name;
  std::string title;
  std::string description;
  std::vector<PromptArgument> arguments;
};

// Builds prompts/get's result ({description?, messages: [...]}) from the given string arguments
// (required ones are checked by the engine). An error status becomes -32602 (InvalidArgument)
// or -32603.
using PromptHandler = std::function<absl::StatusOr<Json>(
    const std::map<std::string, std::string>& arguments, const SessionInfo& session)>;
// Completion of an asynchronous prompts/get: the result ({description?, messages}), or an error
// status (InvalidArgument -> -32602, anything else -> -32603 with its message). Call exactly once
// (later calls are ignored), from any thread.
using PromptDone = std::function<void(absl::StatusOr<Json>)>;
// Builds prompts/get's result later (e.g. from an upstream server). Called on the executor with
// the string arguments (required ones already checked); must eventually call `done`. If it throws
// before calling `done`, the request fails with -32603.
using AsyncPromptHandler = std::function<void(const std::map<std::string, std::string>& arguments,
                                              const SessionInfo& session, PromptDone done)>;

// completion/complete: returns candidate values for `value` of the argument; `context` holds the
// other already-resolved arguments. At most 100 values are sent; total and hasMore are set.
using CompletionProvider = std::function<std::vector<std::string>(
    std::string_view value, const std::map<std::string, std::string>& context)>;

// Holds outbound messages until the engine state they reflect is durable (group commit: the
// server's GroupCommit implements it over the database). Executor only.
class OutboundGate {
 public:
  virtual ~OutboundGate() = default;
  // True while writes are waiting for a commit: messages must then go through Hold.
  virtual bool Holding() const = 0;
  // Takes `deliver` (only while Holding()) and calls it exactly once, on the executor and in the
  // order Hold was called, after that commit: with OK if it succeeded, else with the error (the
  // writes were lost).
  virtual void Hold(std::function<void(const absl::Status&)> deliver) = 0;
};

// Called on the executor when a session is created or resumed (on_open), when initialize
// succeeded, before its reply (on_initialized: an error fails the initialize with -32603 and the
// session stays uninitialized; what it writes is durable before the reply, through the outbound
// gate where there is one), and when it ends (on_close).
struct SessionHooks {
  std::function<void(const SessionInfo&)> on_open;
  std::function<void(const SessionInfo&, std::string_view reason)> on_close;
  std::function<absl::Status(const SessionInfo&, const SessionResume&)> on_initialized;
};

class McpServer final : public SessionFactory {
 public:
  // `executor` must outlive the server. The server must outlive its sessions and the tasks they
  // queued on the executor (stop the transports, then the executor, then destroy the server).
  McpServer(base::Executor& executor, ServerInfo info, ServerOptions options = {});
  ~McpServer() override;
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  // ---- Registration (any thread). Changes do not notify clients by themselves: call the
  // matching Notify*ListChanged() afterwards.

  // Registers a tool. InvalidArgument for a bad name or schema; AlreadyExists for a duplicate.
  absl::Status AddTool(ToolDefinition definition, ToolHandler handler,
                       ToolPrepare prepare = nullptr);
  // Removes a tool; NotFound if absent. Calls in flight are not affected.
  absl::Status RemoveTool(std::string_view name);
  // Registers a concrete resource. AlreadyExists for a duplicate uri; InvalidArgument if empty.
  absl::Status AddResource(ResourceDefinition definition, ResourceReader reader);
  // Registers a template; its reader gets the matched variables. InvalidArgument if malformed.
  absl::Status AddResourceTemplate(ResourceTemplateDefinition definition, ResourceReader reader);
  // Registers a prompt. AlreadyExists for a duplicate name.
  absl::Status AddPrompt(PromptDefinition definition, PromptHandler handler);
  // Registers a prompt whose result is built asynchronously. Errors as AddPrompt.
  absl::Status AddAsyncPrompt(PromptDefinition definition, AsyncPromptHandler handler);
  // Removes a prompt; NotFound if absent. Requests in flight are not affected.
  absl::Status RemovePrompt(std::string_view name);
  // Removes a concrete resource; NotFound if absent. Reads in flight are not affected;
  // subscriptions to it simply receive no more updates.
  absl::Status RemoveResource(std::string_view uri);
  // Removes a resource template by its uriTemplate; NotFound if absent.
  absl::Status RemoveResourceTemplate(std::string_view uri_template);
  // Registers completions for argument `argument` of a prompt (`ref_type` "ref/prompt", `ref` its
  // name) or a resource template ("ref/resource", `ref` the uri template).
  absl::Status AddCompletion(std::string_view ref_type, std::string_view ref,
                             std::string_view argument, CompletionProvider provider);
  // Sets the session open/close hooks (replaces earlier ones).
  void SetSessionHooks(SessionHooks hooks);
  // Sets how sessions get their project (null: none; SessionInfo::project stays ""). With a
  // resolver, a session whose client declared the `roots` capability is asked roots/list after
  // notifications/initialized (and again on notifications/roots/list_changed until the project
  // is fixed); its first tools/call, resources/read or prompts/get waits (on the executor, at
  // most ServerOptions::roots_wait) for an answer, then the resolver fixes the project for the
  // session's life. Set it before sessions are created.
  void SetProjectResolver(ProjectResolver resolver) { project_resolver_ = std::move(resolver); }
  // Routes every message the sessions send (responses, notifications, requests) through `gate`
  // (null: none), so that no reply acknowledges a change before it is durable. When a held
  // response's commit fails, the client gets a -32603 error saying the change was not saved.
  // `gate` must outlive the server; set it before sessions are created.
  void SetOutboundGate(OutboundGate* gate) { gate_ = gate; }

  // ---- Notifications to every initialized session (any thread; related_request_id null).
  void NotifyToolsListChanged();
  void NotifyResourcesListChanged();
  void NotifyPromptsListChanged();
  // Sends notifications/resources/updated to the sessions subscribed to `uri`.
  void NotifyResourceUpdated(std::string_view uri);

  // ---- SessionFactory. The session registers itself on the executor.
  std::shared_ptr<Session> CreateSession(SessionInfo info,
                                         std::shared_ptr<MessageSink> sink) override;
  // A session initialized by another process: initialized with `resume`'s version and client
  // capabilities, its project fixed when `info.project` is set (else fixed as for a new one).
  std::shared_ptr<Session> ResumeSession(SessionInfo info, const SessionResume& resume,
                                         std::shared_ptr<MessageSink> sink) override;

  // Sessions alive (created and not closed). Executor only.
  size_t session_count() const { return sessions_.size(); }
  base::Executor& executor() { return executor_; }
  const ServerOptions& options() const { return options_; }

 private:
  friend class McpSession;
  struct ToolEntry {
    ToolDefinition definition;
    Json listing;  // the tools/list entry
    ToolHandler handler;
    ToolPrepare prepare;  // may be empty
  };
  struct ResourceEntry {
    ResourceDefinition definition;
    Json listing;
    ResourceReader reader;
  };
  struct TemplateEntry {
    ResourceTemplateDefinition definition;
    Json listing;
    std::vector<std::string> parts;  // literal, var, literal, var, ... (even index = literal)
    ResourceReader reader;
  };
  struct PromptEntry {
    PromptDefinition definition;
    Json listing;
    AsyncPromptHandler handler;
  };

  std::shared_ptr<const ToolEntry> FindTool(std::string_view name) const;
  // A page of `listing` entries from `cursor` on; -32602 for a bad cursor.
  absl::StatusOr<Json> Page(const Json& params, std::string_view key, const Json& all) const;
  Json Capabilities() const;
  std::shared_ptr<const Json> ToolsListing() const;  // cached; rebuilt after changes
  Json ResourcesListing() const;
  Json TemplatesListing() const;
  Json PromptsListing() const;
  void Broadcast(std::string_view method, Json params);

  base::Executor& executor_;
  const ServerInfo info_;
  const ServerOptions options_;

  mutable std::mutex mu_;  // guards the registry below
  std::vector<std::shared_ptr<const ToolEntry>> tools_;
  std::unordered_map<std::string, std::shared_ptr<const ToolEntry>> tools_by_name_;
  mutable std::shared_ptr<const Json> tools_listing_;  // cached tools/list array
  std::vector<std::shared_ptr<const ResourceEntry>> resources_;
  std::vector<std::shared_ptr<const TemplateEntry>> templates_;
  std::vector<std::shared_ptr<const PromptEntry>> prompts_;
  std::map<std::string, CompletionProvider> completions_;  // "type\nref\nargument"
  SessionHooks hooks_;
  OutboundGate* gate_ = nullptr;
  ProjectResolver project_resolver_;  // set before sessions exist; read on the executor

  // Executor only.
  std::unordered_map<McpSession*, std::weak_ptr<McpSession>> sessions_;
};

}  // namespace contextd::protocol
