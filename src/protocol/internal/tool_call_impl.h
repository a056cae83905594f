// ToolCallImpl: the engine's ToolCall (tool_call.h), one per tools/call in flight, made by
// McpSession::OnToolsCall. Private to the protocol room; its methods are in tool_call.cc.
// Threading: the ToolCall methods may be called from any thread (they post to the executor);
// Cancel, MarkResponded, AddPending and RemovePending run on the executor.
#pragma once

#include <algorithm>
#include <any>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/executor.h"
#include "protocol/jsonrpc.h"
#include "protocol/session.h"
#include "protocol/tool_call.h"

namespace contextd::protocol {

class McpSession;

class ToolCallImpl final : public ToolCall, public std::enable_shared_from_this<ToolCallImpl> {
 public:
  ToolCallImpl(std::weak_ptr<McpSession> session, base::Executor& executor,
               std::shared_ptr<const SessionInfo> info, std::string tool_name, Json arguments,
               Json id, Json progress_token, std::chrono::milliseconds default_timeout,
               std::any prepared)
      : session_(std::move(session)),
        executor_(executor),
        info_(std::move(info)),
        tool_name_(std::move(tool_name)),
        arguments_(std::move(arguments)),
        id_(std::move(id)),
        progress_token_(std::move(progress_token)),
        default_timeout_(default_timeout),
        prepared_(std::move(prepared)) {}

  const std::string& tool_name() const override { return tool_name_; }
  const Json& arguments() const override { return arguments_; }
  const std::any& prepared() const override { return prepared_; }
  const SessionInfo& session() const override { return *info_; }
  const Json& request_id() const override { return id_; }
  bool has_progress_token() const override { return !progress_token_.is_null(); }
  bool cancelled() const override { return cancelled_.load(); }
  base::Executor& executor() override { return executor_; }

  void SendProgress(double progress, double total, std::string_view message) override;
  void CloseStream() override;
  void Log(LoggingLevel level, std::string_view logger, Json data) override;
  void SendRequest(std::string_view method, Json params, std::chrono::milliseconds timeout,
                   ResponseCallback callback) override;
  void OnCancelled(std::function<void()> fn) override;
  void Finish(ToolResult result) override;

  // ---- Executor only.
  // Marks the call cancelled, runs the callbacks and fails its pending client requests.
  void Cancel(McpSession* session, const absl::Status& why);
  // Called when the response has been sent (or suppressed): nothing more goes out for the call.
  void MarkResponded() { responded_ = true; }
  void AddPending(int64_t id) { pending_.push_back(id); }
  void RemovePending(int64_t id) {
    pending_.erase(std::remove(pending_.begin(), pending_.end(), id), pending_.end());
  }

 private:
  const std::weak_ptr<McpSession> session_;
  base::Executor& executor_;
  const std::shared_ptr<const SessionInfo> info_;
  const std::string tool_name_;
  const Json arguments_;
  const Json id_;
  const Json progress_token_;
  const std::chrono::milliseconds default_timeout_;
  const std::any prepared_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> finished_{false};
  std::vector<std::function<void()>> on_cancel_;  // executor only
  std::vector<int64_t> pending_;                  // executor only
  bool responded_ = false;                        // executor only
};

}  // namespace contextd::protocol
