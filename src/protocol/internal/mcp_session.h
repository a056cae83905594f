// McpSession: the engine's Session (session.h), one per MCP session, and the small executor
// helpers the engine's files share. Private to the protocol room: mcp_server.cc holds the
// lifecycle, dispatch and server-to-client plumbing, tool_call.cc the tools/call path and
// resources_prompts.cc resources, prompts and completion.
// Threading: Receive, protocol_version, Close and CloseThen may be called from any thread; every
// other member runs on the server's executor.
#pragma once

#include <any>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/executor.h"
#include "protocol/jsonrpc.h"
#include "protocol/mcp_server.h"
#include "protocol/session.h"

namespace contextd::protocol {
namespace internal {

// Runs `fn` now when on the executor, else posts it.
inline void RunOn(base::Executor& ex, std::function<void()> fn) {
  if (ex.InExecutor()) {
    fn();
  } else {
    ex.Post(std::move(fn));
  }
}

// A null JSON-RPC id: the related request id of messages that belong to no request.
inline const Json kNullId = nullptr;

}  // namespace internal

class ToolCallImpl;

// One MCP session: its lifecycle state, the tools/calls it runs and the server-to-client requests
// it waits for. Created by McpServer::CreateSession.
class McpSession final : public Session, public std::enable_shared_from_this<McpSession> {
 public:
  McpSession(McpServer& server, SessionInfo info, std::shared_ptr<MessageSink> sink)
      : server_(server),
        executor_(server.executor_),
        info_(std::make_shared<const SessionInfo>(std::move(info))),
        sink_(std::move(sink)) {}

  ~McpSession() override;

  // A tools/call's arguments are checked against its tool's schema here, on the transport's
  // thread, rather than on the executor that runs every session's work in turn.
  void Receive(Message message) override;

  std::string protocol_version() const override {
    std::lock_guard<std::mutex> lock(version_mu_);
    return version_;
  }

  void Close(std::string_view reason) override;

  void CloseThen(std::string_view reason, std::function<void(const absl::Status&)> done) override;

  // Before the session is shared with any thread: the initialized state negotiated elsewhere.
  void Restore(const SessionResume& resume);

  // ---- Executor only.
  void Register();

  void Send(Json message, const Json& related);

  // Outside the outbound gate: messages it holds reach the sink after the close and are kept
  // for the client's resumption.
  void CloseStream(const Json& related);

  // Sends a message the gate held. A response whose changes did not become durable is replaced
  // by an error: the client must not believe a change that was lost.
  void Deliver(const absl::Status& committed, Json message, const Json& related);

  bool initialized() const { return initialized_; }
  bool subscribed(const std::string& uri) const { return subscriptions_.count(uri) > 0; }

  void SendLog(LoggingLevel level, std::string_view logger, Json data, const Json& related);

  // Sends a server-to-client request; `callback` runs once on the executor.
  void SendRequest(std::string_view method, Json params, std::chrono::milliseconds timeout,
                   ResponseCallback callback, const Json& related,
                   const std::shared_ptr<ToolCallImpl>& call);

  // Called by ToolCallImpl::Finish on the executor.
  void FinishCall(const std::shared_ptr<ToolCallImpl>& call, ToolResult result);
  // Fails the pending requests of a cancelled call.
  void FailRequests(const std::vector<int64_t>& ids, const absl::Status& status);

 private:
  struct Pending {
    ResponseCallback callback;
    base::TimerId timer = 0;
    Json related;
    std::weak_ptr<ToolCallImpl> call;
  };

  // The outcome of validating a tools/call's arguments against `tool`'s input schema, and of
  // its ToolPrepare, found when the message arrived. OnToolsCall uses it only if it finds the
  // same tool entry (a tool replaced meanwhile is validated and prepared again); no tool:
  // nothing was checked.
  struct Prevalidated {
    std::shared_ptr<const McpServer::ToolEntry> tool;
    absl::Status status;
    // The tool's ToolPrepare result, when `status` is OK; prepare_status says if it threw.
    std::any prepared;
    absl::Status prepare_status;
    // The session info the ToolPrepare saw; null when it did not run (the project was not fixed
    // yet): OnToolsCall then runs it with the fixed info.
    std::shared_ptr<const SessionInfo> prepared_with;
  };
  // Any thread: reads `m` and the server's tool table only.
  Prevalidated Prevalidate(const Message& m) const;

  void Handle(Message m, Prevalidated pre = {});
  void HandleRequest(Message& m, Prevalidated& pre);
  void HandleNotification(Message& m);
  void HandleResponse(Message& m);
  void DoClose(const std::string& reason);
  void TimeoutRequest(int64_t id);

  void Reply(const Json& id, Json result) { Send(MakeResult(id, std::move(result)), id); }
  void ReplyError(const Json& id, int code, std::string_view message, const Json& data = nullptr) {
    Send(MakeError(id, code, message, data), id);
  }

  // The session's current info (any thread).
  std::shared_ptr<const SessionInfo> Info() const {
    std::lock_guard<std::mutex> lock(info_mu_);
    return info_;
  }
  // Project fixing (SetProjectResolver). A scoped request (tools/call, resources/read,
  // prompts/get) arriving before the project is fixed is held here until it is.
  bool NeedsProject(const std::string& method) const;
  void HoldForProject(Message m, Prevalidated pre);
  void AskRoots(const Json& related);
  void OnRoots(const absl::StatusOr<Json>& answer);
  void FixProject();

  void OnInitialize(Message& m);
  void OnToolsCall(Message& m, Prevalidated& pre);
  void OnResourcesRead(Message& m);
  void OnSubscribe(Message& m, bool subscribe);
  void OnPromptsGet(Message& m);
  void OnComplete(Message& m);
  void OnSetLevel(Message& m);
  void OnList(Message& m, std::string_view key, const Json& all);

  McpServer& server_;
  base::Executor& executor_;
  mutable std::mutex info_mu_;
  // Replaced once, on the executor, when the project is fixed; guarded by info_mu_ for readers
  // off the executor (Prevalidate).
  std::shared_ptr<const SessionInfo> info_;
  std::atomic<bool> project_fixed_{false};
  const std::shared_ptr<MessageSink> sink_;
  std::atomic<bool> close_requested_{false};

  mutable std::mutex version_mu_;
  std::string version_;  // guarded by version_mu_ (written on the executor)

  // Executor only.
  bool closed_ = false;
  bool initialized_ = false;
  bool client_initialized_ = false;
  bool batches_allowed_ = false;
  Json client_capabilities_ = Json::object();
  Json client_info_;
  LoggingLevel min_level_ = LoggingLevel::kDebug;
  std::unordered_set<std::string> subscriptions_;
  std::map<Json, std::shared_ptr<ToolCallImpl>> calls_;
  std::unordered_map<int64_t, Pending> pending_;
  int64_t next_request_id_ = 1;
  // Project fixing (executor only).
  bool roots_answered_ = false;     // an answer (or an error) to roots/list arrived
  Json roots_ = nullptr;            // the "roots" array of the last answer, null if none
  bool waiting_for_roots_ = false;  // held_ waits for an answer (timer running)
  base::TimerId roots_timer_ = 0;
  std::vector<std::pair<Message, Prevalidated>> held_;
};

}  // namespace contextd::protocol
